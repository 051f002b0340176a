// Storing keys (rotated at their positions) and values into the pool's slots: a step's token, a prefill's rows.
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

// The token's keys (rotated at its position, "rotate half" pairs i, i + D/2, angles in double as
// on the host) and values into the pool at (slot, t) of `layer`, and into the step's outputs
// ([layer][row][kvHeads · headDim]). Grid y: the row (a batch's sequence), with params[row].
__global__ void StoreKvKernel(const float* k, const float* v, float* pool, const StepParams* params, int layer,
                              int layers, int kvHeads, int headDim, const double* invFreq, float* keysOut,
                              float* valuesOut) {
    const int half = headDim / 2, KV = kvHeads * headDim, row = blockIdx.y, rows = gridDim.y;
    const size_t halfFloats = size_t(layers) * kvHeads * kBlockTokens * headDim;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    const StepParams p = params[row];
    k += size_t(row) * KV, v += size_t(row) * KV;
    keysOut += (size_t(layer) * rows + row) * KV, valuesOut += (size_t(layer) * rows + row) * KV;
    float* block = pool + size_t(p.slot) * 2 * halfFloats;
    if (idx < kvHeads * half) {
        const int g = idx / half, i = idx % half;
        const double a = double(p.pos) * invFreq[i];
        const float c = float(cos(a)), s = float(sin(a));
        const float x0 = k[g * headDim + i], x1 = k[g * headDim + i + half];
        const float r0 = x0 * c - x1 * s, r1 = x0 * s + x1 * c;
        float* dst = block + ((size_t(layer) * kvHeads + g) * kBlockTokens + p.t) * headDim;
        dst[i] = r0, dst[i + half] = r1;
        keysOut[g * headDim + i] = r0;
        keysOut[g * headDim + i + half] = r1;
    }
    if (idx < KV) {
        const int g = idx / headDim, i = idx % headDim;
        block[halfFloats + ((size_t(layer) * kvHeads + g) * kBlockTokens + p.t) * headDim + i] = v[idx];
        valuesOut[idx] = v[idx];
    }
}

// A page's keys (rotated at pos0 + t) and values into its blocks' slots, layer `layer`.
__global__ void StoreKvRowsKernel(const float* k, const float* v, float* pool, const int32_t* slots, int64_t pos0, int tokens,
                                  int layer, int layers, int kvHeads, int headDim, const double* invFreq) {
    const int half = headDim / 2, KV = kvHeads * headDim;
    const size_t halfFloats = size_t(layers) * kvHeads * kBlockTokens * headDim;
    const long idx = long(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= long(tokens) * KV) return;
    const int t = int(idx / KV), r = int(idx % KV), g = r / headDim, i = r % headDim;
    float* block = pool + size_t(slots[t / kBlockTokens]) * 2 * halfFloats;
    const size_t at = ((size_t(layer) * kvHeads + g) * kBlockTokens + t % kBlockTokens) * headDim;
    block[halfFloats + at + i] = v[idx];
    if (i < half) {
        const double a = double(pos0 + t) * invFreq[i];
        const float c = float(cos(a)), s = float(sin(a));
        const float x0 = k[size_t(t) * KV + g * headDim + i], x1 = k[size_t(t) * KV + g * headDim + i + half];
        block[at + i] = x0 * c - x1 * s;
        block[at + i + half] = x0 * s + x1 * c;
    }
}

}  // namespace
}  // namespace quire::cuda
