#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdio>
#include <mutex>

#include "cuda_status.cuh"
#include "quire_cuda/ops.h"

namespace quire::cuda {

namespace {

using detail::check;
using detail::launched;
using detail::S;

constexpr int kBlockTokens = 16;

}  // namespace

DeviceBuffer::DeviceBuffer(size_t bytes) : m_bytes(bytes) {
    if (bytes && cudaMalloc(&m_ptr, bytes) != cudaSuccess) m_ptr = nullptr;
}
DeviceBuffer::~DeviceBuffer() {
    if (m_ptr) cudaFree(m_ptr);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : m_ptr(o.m_ptr), m_bytes(o.m_bytes) { o.m_ptr = nullptr, o.m_bytes = 0; }
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        if (m_ptr) cudaFree(m_ptr);
        m_ptr = o.m_ptr, m_bytes = o.m_bytes;
        o.m_ptr = nullptr, o.m_bytes = 0;
    }
    return *this;
}
std::string DeviceBuffer::upload(const void* host, size_t bytes) {
    return check(cudaMemcpy(m_ptr, host, bytes, cudaMemcpyHostToDevice), "upload");
}
std::string DeviceBuffer::download(void* host, size_t bytes) const {
    return check(cudaMemcpy(host, m_ptr, bytes, cudaMemcpyDeviceToHost), "download");
}

std::string synchronize() { return check(cudaDeviceSynchronize(), "synchronize"); }

std::string copyDevice(void* dst, const void* src, size_t bytes, void* stream) {
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S(stream)), "device copy");
}

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

// ---- Rotary: one thread per (row, head, pair) ----
__global__ void RopeKernel(float* x, const int64_t* positions, int rows, int heads, int headDim, double theta) {
    const int half = headDim / 2;
    const long idx = long(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= long(rows) * heads * half) return;
    const int i = int(idx % half);
    const long rh = idx / half;
    const int row = int(rh / heads);
    float* v = x + rh * headDim;
    const double a = double(positions[row]) * pow(theta, -2.0 * i / headDim);
    const float c = float(cos(a)), s = float(sin(a));
    const float x0 = v[i], x1 = v[i + half];
    v[i] = x0 * c - x1 * s;
    v[i + half] = x0 * s + x1 * c;
}

std::string rope(float* x, const int64_t* positions, int rows, int heads, int headDim, double theta, void* stream) {
    const long n = long(rows) * heads * (headDim / 2);
    RopeKernel<<<int((n + 255) / 256), 256, 0, S(stream)>>>(x, positions, rows, heads, headDim, theta);
    return launched("rope");
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

// ---- Paged decode attention, split-KV ----
// Grid (heads, splits); block of headDim threads (headDim <= 256). Each split walks its share of the
// spans with an online softmax and writes (max, sum, acc[headDim]) to the workspace; a second kernel
// combines the splits.
size_t attentionWorkspaceBytes(int heads, int headDim, int splits) {
    return size_t(heads) * splits * (headDim + 2) * sizeof(float);
}

__global__ void DecodeAttentionSplitKernel(const float* q, const float* pool, const AttentionSpan* spans, int numSpans,
                                           int layer, int numLayers, int kvHeads, int headDim, int group, double theta,
                                           float* workspace) {
    extern __shared__ float smem[];
    float* qr = smem;            // [headDim] rotated query
    float* red = smem + headDim; // [32] reduction scratch
    const int h = blockIdx.x, split = blockIdx.y, splits = gridDim.y, d = threadIdx.x;
    const int g = h / group, half = headDim / 2;
    const size_t halfFloats = size_t(numLayers) * kvHeads * kBlockTokens * headDim;
    const float scale = rsqrtf(float(headDim));
    float m = -FLT_MAX, l = 0.f, acc = 0.f;
    const int per = (numSpans + splits - 1) / splits;
    const int s0 = split * per, s1 = min(numSpans, s0 + per);
    for (int s = s0; s < s1; ++s) {
        const AttentionSpan sp = spans[s];
        // Rotate the query to this span's frame position.
        const float qd = q[size_t(h) * headDim + d];
        const float qo = q[size_t(h) * headDim + (d < half ? d + half : d - half)];
        const int i = d < half ? d : d - half;
        const double a = double(sp.queryPos) * pow(theta, -2.0 * i / headDim);
        const float c = float(cos(a)), sn = float(sin(a));
        qr[d] = d < half ? qd * c - qo * sn : qo * sn + qd * c;
        __syncthreads();
        const float* block = pool + size_t(sp.block) * 2 * halfFloats;
        const float* kbase = block + (size_t(layer) * kvHeads + g) * kBlockTokens * headDim;
        const float* vbase = kbase + halfFloats;
        for (int t = sp.first; t < sp.first + sp.count; ++t) {
            float part = qr[d] * kbase[size_t(t) * headDim + d];
            for (int off = 16; off > 0; off >>= 1) part += __shfl_down_sync(0xffffffff, part, off);
            if ((d & 31) == 0) red[d >> 5] = part;
            __syncthreads();
            float score = 0.f;
            for (int w = 0; w < (headDim + 31) / 32; ++w) score += red[w];
            score *= scale;
            __syncthreads();
            const float mNew = fmaxf(m, score);
            const float corr = __expf(m - mNew), p = __expf(score - mNew);
            l = l * corr + p;
            acc = acc * corr + p * vbase[size_t(t) * headDim + d];
            m = mNew;
        }
    }
    float* ws = workspace + (size_t(h) * splits + split) * (headDim + 2);
    ws[2 + d] = acc;
    if (d == 0) ws[0] = m, ws[1] = l;
}

__global__ void DecodeAttentionCombineKernel(const float* workspace, int splits, int headDim, float* out) {
    const int h = blockIdx.x, d = threadIdx.x;
    float m = -FLT_MAX;
    for (int s = 0; s < splits; ++s) m = fmaxf(m, workspace[(size_t(h) * splits + s) * (headDim + 2)]);
    float l = 0.f, acc = 0.f;
    for (int s = 0; s < splits; ++s) {
        const float* ws = workspace + (size_t(h) * splits + s) * (headDim + 2);
        if (ws[1] == 0.f) continue;
        const float w = __expf(ws[0] - m);
        l += ws[1] * w;
        acc += ws[2 + d] * w;
    }
    out[size_t(h) * headDim + d] = l > 0.f ? acc / l : 0.f;
}

std::string pagedDecodeAttention(const float* q, const float* pool, const AttentionSpan* spans, int numSpans, int layer,
                                 int numLayers, int heads, int kvHeads, int headDim, double theta, int splits,
                                 void* workspace, float* out, void* stream) {
    if (headDim > 256 || headDim % 32) return "pagedDecodeAttention: headDim must be a multiple of 32 up to 256";
    if (splits < 1) splits = 1;
    const dim3 grid(heads, splits);
    const size_t shared = (headDim + 32) * sizeof(float);
    DecodeAttentionSplitKernel<<<grid, headDim, shared, S(stream)>>>(q, pool, spans, numSpans, layer, numLayers, kvHeads,
                                                                     headDim, heads / kvHeads, theta,
                                                                     static_cast<float*>(workspace));
    if (auto e = launched("pagedDecodeAttention split"); !e.empty()) return e;
    DecodeAttentionCombineKernel<<<heads, headDim, 0, S(stream)>>>(static_cast<float*>(workspace), splits, headDim, out);
    return launched("pagedDecodeAttention combine");
}

// Block-wide argmax over one candidate per thread (ties go to the lower index); the winner ends
// up in bestV[0] / bestI[0]. blockDim.x must be a power of two up to 256.
__device__ void BlockArgmax(float v, int idx, float* bestV, int* bestI) {
    bestV[threadIdx.x] = v, bestI[threadIdx.x] = idx;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            const int o = threadIdx.x + stride;
            const bool take = bestI[o] >= 0 && (bestI[threadIdx.x] < 0 || bestV[o] > bestV[threadIdx.x] ||
                                                (bestV[o] == bestV[threadIdx.x] && bestI[o] < bestI[threadIdx.x]));
            if (take) bestV[threadIdx.x] = bestV[o], bestI[threadIdx.x] = bestI[o];
        }
        __syncthreads();
    }
}

// ---- Greedy argmax with a ban mask: one block, tree reduction ----
__global__ void ArgmaxUnbannedKernel(const float* logits, const uint8_t* banned, int vocab, int32_t* result) {
    __shared__ float bestV[256];
    __shared__ int bestI[256];
    float v = -FLT_MAX;
    int idx = -1;
    for (int i = threadIdx.x; i < vocab; i += blockDim.x)
        if (!banned[i] && (idx < 0 || logits[i] > v)) v = logits[i], idx = i;
    BlockArgmax(v, idx, bestV, bestI);
    if (threadIdx.x == 0) *result = bestI[0];
}

std::string argmaxUnbanned(const float* logits, const uint8_t* banned, int vocab, int32_t* result, void* stream) {
    ArgmaxUnbannedKernel<<<1, 256, 0, S(stream)>>>(logits, banned, vocab, result);
    return launched("argmaxUnbanned");
}

// ---- Quest block scores: one block per candidate block ----
__global__ void QuestScoresKernel(const float* q, const float* kMin, const float* kMax, int heads, int kvHeads,
                                  int headDim, float* scores) {
    const int b = blockIdx.x, group = heads / kvHeads;
    float s = 0.f;
    for (int idx = threadIdx.x; idx < heads * headDim; idx += blockDim.x) {
        const int h = idx / headDim, c = idx % headDim, g = h / group;
        const size_t o = (size_t(b) * kvHeads + g) * headDim + c;
        s += fmaxf(q[idx] * kMin[o], q[idx] * kMax[o]);
    }
    __shared__ float red[256];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) red[threadIdx.x] += red[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) scores[b] = red[0];
}

std::string questScores(const float* q, const float* kMin, const float* kMax, int numBlocks, int heads, int kvHeads,
                        int headDim, float* scores, void* stream) {
    if (numBlocks <= 0) return {};
    QuestScoresKernel<<<numBlocks, 256, 0, S(stream)>>>(q, kMin, kMax, heads, kvHeads, headDim, scores);
    return launched("questScores");
}

// ---- Top-k (k <= 64) by k rounds of a block-wide argmax over the not-yet-taken scores ----
__global__ void TopKKernel(const float* scores, int n, int k, int32_t* indices) {
    __shared__ float bestV[256];
    __shared__ int bestI[256];
    __shared__ int taken[64];
    for (int r = 0; r < k; ++r) {
        float v = -FLT_MAX;
        int idx = -1;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            bool used = false;
            for (int j = 0; j < r; ++j) used = used || taken[j] == i;
            if (!used && (idx < 0 || scores[i] > v)) v = scores[i], idx = i;
        }
        BlockArgmax(v, idx, bestV, bestI);
        if (threadIdx.x == 0) taken[r] = bestI[0], indices[r] = bestI[0];
        __syncthreads();
    }
}

std::string topK(const float* scores, int n, int k, int32_t* indices, void* stream) {
    if (k > 64 || k > n) return "topK: k must be at most 64 and at most n";
    TopKKernel<<<1, 256, 0, S(stream)>>>(scores, n, k, indices);
    return launched("topK");
}

// ---- GEMM through cuBLAS ----
__global__ void ToBf16Kernel(const float* in, __nv_bfloat16* out, size_t n) {
    const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16(in[i]);
}

std::string gemmRowMajor(const float* A, const float* B, float* C, int m, int n, int k, bool bf16, void* stream) {
    static std::mutex mutex;
    static cublasHandle_t handle = nullptr;
    std::lock_guard lock(mutex);
    if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return "cublasCreate failed";
    cublasSetStream(handle, S(stream));
    const float alpha = 1.f, beta = 0.f;
    // Row-major C[m,n] = A[m,k] B[n,k]^T is column-major C^T[n,m] = B[n,k]... i.e. op(B)=B^T stored as (k x n).
    cublasStatus_t st;
    if (!bf16) {
        st = cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, B, k, A, k, &beta, C, n);
    } else {
        DeviceBuffer a16(size_t(m) * k * 2), b16(size_t(n) * k * 2);
        if (!a16.ok() || !b16.ok()) return "gemm: out of device memory";
        ToBf16Kernel<<<int((size_t(m) * k + 255) / 256), 256, 0, S(stream)>>>(A, a16.as<__nv_bfloat16>(), size_t(m) * k);
        ToBf16Kernel<<<int((size_t(n) * k + 255) / 256), 256, 0, S(stream)>>>(B, b16.as<__nv_bfloat16>(), size_t(n) * k);
        st = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, b16.get(), CUDA_R_16BF, k, a16.get(),
                          CUDA_R_16BF, k, &beta, C, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        cudaStreamSynchronize(S(stream));  // the bf16 copies die with this scope
    }
    if (st != CUBLAS_STATUS_SUCCESS) return "cublas gemm failed (status " + std::to_string(int(st)) + ")";
    return launched("gemm");
}

}  // namespace quire::cuda
