// Elementwise work on rows: residual adds, a bias per row, the visual tokens' id embeddings, and
// rows to bf16 for the products.
// Kernels of the decoder's step (decoder_step.cu includes this file once); they read what changes
// from step to step from device memory, so one captured CUDA graph serves every step.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "step_common.cuh"

namespace quire::cuda {
namespace {

// ---- x += y ----
__global__ void AddKernel(float* x, const float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += y[i];
}

// x[rows, n] += b[n]
__global__ void AddRowsKernel(float* x, const float* b, int rows, int n) {
    const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < long(rows) * n) x[i] += b[i % n];
}

// x[t] += embed[id of visual token t] (the id stored after its features).
__global__ void AddVisualIdsKernel(float* x, const float* visual, int stride, int visualDim, const float* embed, int hidden,
                                   const float* evidenceGain, int evidenceIds) {
    const int t = blockIdx.x;
    const int id = int(visual[size_t(t) * stride + visualDim]);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        float v = x[size_t(t) * hidden + i] + embed[size_t(id) * hidden + i];
        for (int k = 0; k < evidenceIds; ++k) {  // the evidence ids (-1: none), in the CPU's order
            const float e = visual[size_t(t) * stride + visualDim + 1 + k];
            if (e >= 0) v += evidenceGain[size_t(k) * hidden + i] * embed[size_t(e) * hidden + i];
        }
        x[size_t(t) * hidden + i] = v;
    }
}

// rows of `cols` floats, `ld` apart, to contiguous bf16.
__global__ void ToBf16RowsKernel(const float* in, int ld, int cols, int rows, __nv_bfloat16* out) {
    const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < long(rows) * cols) out[i] = __float2bfloat16(in[size_t(i / cols) * ld + i % cols]);
}

}  // namespace
}  // namespace quire::cuda
