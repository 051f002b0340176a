// The step's launch constants and the per-step parameters its kernels read.
// Kernels of the decoder's step (decoder_step.cu includes this file once); they read what changes
// from step to step from device memory, so one captured CUDA graph serves every step.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "quire_cuda/ops.h"

namespace quire::cuda {
namespace {

constexpr int kBlockTokens = 16;
constexpr int kAttnThreads = 128;  // four warps per (head, split)
constexpr int kMaxHeadDim = 256;

// What changes from step to step, read by the kernels from device memory (so one captured graph
// serves every step).
struct StepParams {
    int32_t token, slot, t, pad;
    int64_t pos;
};

int blocksFor(long n, int threads = 256) { return int((n + threads - 1) / threads); }

}  // namespace
}  // namespace quire::cuda
