// Paged attention over spans of pool slots, split over the keys and combined, with the query rotated
// per span (the position frame); and the attention a tracked page's visual tokens receive.
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

// Head h's query rotated to position `pos` ("rotate half" pairs, angles in double as on the host)
// into qr[headDim] (shared memory); every thread of the block takes part.
__device__ void RotateQueryInto(const float* q, int h, int headDim, const double* invFreq, int64_t pos, float* qr) {
    const int half = headDim / 2;
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
        const int i = d < half ? d : d - half;
        const double a = double(pos) * invFreq[i];
        const float c = float(cos(a)), sn = float(sin(a));
        const float x0 = q[size_t(h) * headDim + i], x1 = q[size_t(h) * headDim + i + half];
        qr[d] = d < half ? x0 * c - x1 * sn : x0 * sn + x1 * c;
    }
}

// Query z's spans: from offsets[z] to offsets[z + 1] (a prefill's token, a batch's sequence; `spans`
// moved to the first), or a step's `count`. Returns how many.
__device__ int QuerySpans(const AttentionSpan*& spans, const int* count, const int* offsets, int z) {
    if (!offsets) return *count;
    spans += offsets[z];
    return offsets[z + 1] - offsets[z];
}

// Paged decode attention of one query (all heads) over the layer's spans, split over the KV:
// grid (heads, splits), four warps a block. The spans' tokens, in order, are cut into `splits`
// equal ranges; in each, warps take tokens in turn (a lane holds every 32nd dimension), keep an
// online softmax, and the block's warps are merged into (max, sum, acc[D]) in the workspace.
// The query is rotated to each span's frame position in shared memory.
// Prefill: grid z is the query (token) and `offsets` gives each its own spans; a step: one query
// and `count` spans.
__global__ void AttentionSplitKernel(const float* q, size_t qStride, const float* pool, const AttentionSpan* spans,
                                     const int* count, const int* offsets, int layer, int layers, int kvHeads, int headDim,
                                     int group, const double* invFreq, float scale, float* workspace) {
    __shared__ float qr[kMaxHeadDim];
    __shared__ float wm[kAttnThreads / 32], wl[kAttnThreads / 32];
    __shared__ float wacc[kAttnThreads / 32][kMaxHeadDim];
    const int h = blockIdx.x, split = blockIdx.y, splits = gridDim.y;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    const int g = h / group;
    const size_t halfFloats = size_t(layers) * kvHeads * kBlockTokens * headDim;
    const int z = blockIdx.z;
    const int n = QuerySpans(spans, count, offsets, z);
    q += size_t(z) * qStride;
    workspace += size_t(z) * gridDim.x * splits * (headDim + 2);
    int total = 0;
    for (int s = 0; s < n; ++s) total += spans[s].count;
    const int per = (total + splits - 1) / splits;
    const int lo = split * per, hi = min(total, lo + per);
    float m = -INFINITY, l = 0.f;
    float acc[kMaxHeadDim / 32];
    for (int j = 0; j < kMaxHeadDim / 32; ++j) acc[j] = 0.f;
    int base = 0;
    bool rotated = false;
    int64_t rotatedFor = 0;
    for (int s = 0; s < n && base < hi; ++s) {
        const AttentionSpan sp = spans[s];
        const int s0 = base, s1 = base + sp.count;
        base = s1;
        if (s1 <= lo) continue;
        if (!rotated || sp.queryPos != rotatedFor) {  // uniform across the block
            __syncthreads();
            RotateQueryInto(q, h, headDim, invFreq, sp.queryPos, qr);
            __syncthreads();
            rotated = true, rotatedFor = sp.queryPos;
        }
        const int from = max(lo, s0) - s0 + sp.first, to = min(hi, s1) - s0 + sp.first;
        const float* kb = pool + size_t(sp.block) * 2 * halfFloats + (size_t(layer) * kvHeads + g) * kBlockTokens * headDim;
        const float* vb = kb + halfFloats;
        for (int t = from + warp; t < to; t += warps) {
            float part = 0.f;
            for (int d = lane; d < headDim; d += 32) part += qr[d] * kb[size_t(t) * headDim + d];
            for (int off = 16; off > 0; off >>= 1) part += __shfl_xor_sync(0xffffffffu, part, off);
            const float score = part * scale;
            const float mNew = fmaxf(m, score);
            const float corr = expf(m - mNew), p = expf(score - mNew);
            l = l * corr + p;
            for (int d = lane, j = 0; d < headDim; d += 32, ++j) acc[j] = acc[j] * corr + p * vb[size_t(t) * headDim + d];
            m = mNew;
        }
    }
    if (lane == 0) wm[warp] = m, wl[warp] = l;
    for (int d = lane, j = 0; d < headDim; d += 32, ++j) wacc[warp][d] = acc[j];
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < warps; ++w)
        if (wl[w] > 0.f) M = fmaxf(M, wm[w]);
    float* ws = workspace + (size_t(h) * splits + split) * (headDim + 2);
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
        float a = 0.f;
        for (int w = 0; w < warps; ++w)
            if (wl[w] > 0.f) a += wacc[w][d] * expf(wm[w] - M);
        ws[2 + d] = a;
    }
    if (threadIdx.x == 0) {
        float L = 0.f;
        for (int w = 0; w < warps; ++w)
            if (wl[w] > 0.f) L += wl[w] * expf(wm[w] - M);
        ws[0] = M, ws[1] = L;
    }
}

// headStats (may be null): each head's softmax maximum and sum, for attention tracking (a batch's:
// query z's at 2 · heads · z).
__global__ void AttentionCombineKernel(const float* workspace, int splits, int headDim, float* out, float* headStats) {
    const int h = blockIdx.x, z = blockIdx.y;  // y: the query (prefill, batch)
    workspace += size_t(z) * gridDim.x * splits * (headDim + 2);
    out += size_t(z) * gridDim.x * headDim;
    if (headStats) headStats += size_t(z) * 2 * gridDim.x;
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) {
        const float* ws = workspace + (size_t(h) * splits + s) * (headDim + 2);
        if (ws[1] > 0.f) M = fmaxf(M, ws[0]);
    }
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
        float L = 0.f, A = 0.f;
        for (int s = 0; s < splits; ++s) {
            const float* ws = workspace + (size_t(h) * splits + s) * (headDim + 2);
            if (ws[1] <= 0.f) continue;
            const float w = expf(ws[0] - M);
            L += ws[1] * w;
            A += ws[2 + d] * w;
        }
        out[size_t(h) * headDim + d] = L > 0.f ? A / L : 0.f;
        if (headStats && d == 0) headStats[2 * h] = M, headStats[2 * h + 1] = L;
    }
}

// Attention tracking: each tracked token's softmax weight (its score again, against the head's
// final maximum and sum) added to mass[track + t - first]. Grid (heads, blocks walking the spans,
// queries). A step: one query, `count` spans, mass[massCap]. A batch (`offsets`, `massOffsets`
// given): query z at q + z · qStride, its spans from offsets[z] to offsets[z + 1], its head
// statistics at 2 · heads · z and its mass from massOffsets[z] to massOffsets[z + 1].
__global__ void TrackKernel(const float* q, size_t qStride, const float* pool, const AttentionSpan* spans, const int* count,
                            const int* offsets, int layer, int layers, int kvHeads, int headDim, int group,
                            const double* invFreq, float scale, const float* headStats, float* mass, int massCap,
                            const int* massOffsets) {
    __shared__ float qr[kMaxHeadDim];
    const int h = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    const int g = h / group, z = blockIdx.z;
    const int n = QuerySpans(spans, count, offsets, z);
    q += size_t(z) * qStride;
    headStats += size_t(z) * 2 * gridDim.x;
    if (massOffsets) mass += massOffsets[z], massCap = massOffsets[z + 1] - massOffsets[z];
    const size_t halfFloats = size_t(layers) * kvHeads * kBlockTokens * headDim;
    const float M = headStats[2 * h], L = headStats[2 * h + 1];
    if (!(L > 0.f) || massCap <= 0) return;  // uniform across the block
    for (int s = blockIdx.y; s < n; s += gridDim.y) {
        const AttentionSpan sp = spans[s];
        if (sp.track < 0) continue;  // uniform across the block
        __syncthreads();
        RotateQueryInto(q, h, headDim, invFreq, sp.queryPos, qr);
        __syncthreads();
        const float* kb = pool + size_t(sp.block) * 2 * halfFloats + (size_t(layer) * kvHeads + g) * kBlockTokens * headDim;
        for (int t = sp.first + warp; t < sp.first + sp.count; t += warps) {
            float part = 0.f;
            for (int d = lane; d < headDim; d += 32) part += qr[d] * kb[size_t(t) * headDim + d];
            for (int off = 16; off > 0; off >>= 1) part += __shfl_xor_sync(0xffffffffu, part, off);
            const int at = sp.track + t - sp.first;
            if (lane == 0 && at < massCap) atomicAdd(&mass[at], expf(part * scale - M) / L);
        }
    }
}

}  // namespace
}  // namespace quire::cuda
