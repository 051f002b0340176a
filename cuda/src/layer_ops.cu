// A decoder layer's row-wise operations the step runs between its matrix products: RMSNorm,
// SwiGLU, and the token embedding.
#include <cuda_runtime.h>

#include "cuda_status.cuh"
#include "quire_cuda/ops.h"

namespace quire::cuda {

using detail::launched;
using detail::S;

// ---- RMSNorm: one block per row ----
__global__ void RmsNormKernel(const float* x, const float* w, float* out, int n, float eps) {
    const float* row = x + size_t(blockIdx.x) * n;
    float* o = out + size_t(blockIdx.x) * n;
    __shared__ float partial[32];
    float ss = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) ss += row[i] * row[i];
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_down_sync(0xffffffff, ss, off);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        ss = threadIdx.x < (blockDim.x + 31) / 32 ? partial[threadIdx.x] : 0.f;
        for (int off = 16; off > 0; off >>= 1) ss += __shfl_down_sync(0xffffffff, ss, off);
        if (threadIdx.x == 0) partial[0] = rsqrtf(ss / n + eps);
    }
    __syncthreads();
    const float r = partial[0];
    for (int i = threadIdx.x; i < n; i += blockDim.x) o[i] = row[i] * r * w[i];
}

std::string rmsNorm(const float* x, const float* w, float* out, int rows, int n, float eps, void* stream) {
    RmsNormKernel<<<rows, 256, 0, S(stream)>>>(x, w, out, n, eps);
    return launched("rmsNorm");
}

// ---- SwiGLU ----
__global__ void SwigluKernel(const float* g, const float* u, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = g[i] / (1.f + __expf(-g[i])) * u[i];
}

std::string swiglu(const float* gate, const float* up, float* out, int n, void* stream) {
    SwigluKernel<<<(n + 255) / 256, 256, 0, S(stream)>>>(gate, up, out, n);
    return launched("swiglu");
}

// ---- Embedding ----
__global__ void EmbeddingKernel(const int32_t* tokens, const float* table, float* out, int hidden) {
    const float* src = table + size_t(tokens[blockIdx.x]) * hidden;
    float* dst = out + size_t(blockIdx.x) * hidden;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) dst[i] = src[i];
}

std::string embedding(const int32_t* tokens, const float* table, float* out, int count, int hidden, void* stream) {
    EmbeddingKernel<<<count, 256, 0, S(stream)>>>(tokens, table, out, hidden);
    return launched("embedding");
}

}  // namespace quire::cuda
