// The front-end's (PP-OCR) operators on the GPU: convolutions (im2col + cuBLAS, depthwise),
// transposed convolutions, pools, fused elementwise chains, broadcasts, softmax, gathers.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <mutex>

#include "cuda_status.cuh"
#include "quire_cuda/nn_ops.h"

namespace quire::cuda::nn {
namespace {

using detail::check;
using detail::launched;
using detail::S;
unsigned blocksFor(size_t n, unsigned threads) { return unsigned((n + threads - 1) / threads); }

// One cuBLAS handle per thread (cuBLAS handles are not to be shared across host threads).
cublasHandle_t handle(std::string* error) {
    thread_local cublasHandle_t h = nullptr;
    if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        *error = "cublasCreate failed";
        h = nullptr;
    }
    return h;
}

// cols[c*kh*kw, oh*ow] from x[c, h, w]; one thread per column element.
__global__ void Im2colKernel(const float* x, float* cols, int c, int h, int w, int kh, int kw, int sh, int sw, int dh,
                             int dw, int pt, int pl, int oh, int ow) {
    const size_t total = size_t(c) * kh * kw * oh * ow;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        const int ox = int(i % ow);
        const int oy = int((i / ow) % oh);
        const size_t row = i / (size_t(ow) * oh);
        const int kx = int(row % kw), ky = int((row / kw) % kh), ch = int(row / (size_t(kw) * kh));
        const int iy = oy * sh - pt + ky * dh, ix = ox * sw - pl + kx * dw;
        cols[i] = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? x[(size_t(ch) * h + iy) * w + ix] : 0.f;
    }
}

// Depthwise: one thread per output element of y[n, c, oh, ow].
__global__ void DepthwiseKernel(const float* x, const float* wt, const float* bias, float* y, int n, int c, int h,
                                int w, int kh, int kw, int sh, int sw, int dh, int dw, int pt, int pl, int oh, int ow) {
    const size_t total = size_t(n) * c * oh * ow;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        const int ox = int(i % ow), oy = int((i / ow) % oh);
        const size_t nc = i / (size_t(ow) * oh);
        const int ch = int(nc % c);
        const float* plane = x + nc * h * w;
        const float* k = wt + size_t(ch) * kh * kw;
        float acc = bias ? bias[ch] : 0.f;
        for (int ky = 0; ky < kh; ++ky) {
            const int iy = oy * sh - pt + ky * dh;
            if (iy < 0 || iy >= h) continue;
            for (int kx = 0; kx < kw; ++kx) {
                const int ix = ox * sw - pl + kx * dw;
                if (ix >= 0 && ix < w) acc += k[ky * kw + kx] * plane[size_t(iy) * w + ix];
            }
        }
        y[i] = acc;
    }
}

__global__ void BiasKernel(float* y, const float* bias, int m, size_t plane, size_t total) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x)
        y[i] = bias[(i / plane) % m];
}

struct ChainProgram {
    ChainStep steps[kMaxChainSteps];
    int count;
};

__device__ float applyStep(const ChainStep& s, float v) {
    switch (s.kind) {
    case 0: return v * s.a;
    case 1: return v + s.a;
    case 2: return fminf(fmaxf(v, s.a), s.b);
    case 3: return v > 0.f ? v : 0.f;
    case 4: return 1.f / (1.f + __expf(-v));
    case 5: return fminf(fmaxf(s.a * v + s.b, 0.f), 1.f);
    case 6: return sqrtf(v);
    default: return v;
    }
}

__global__ void ChainKernel(float* x, size_t n, ChainProgram p) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        float v = x[i];
        for (int k = 0; k < p.count; ++k) {
            const ChainStep& s = p.steps[k];
            if (s.kind == 7) {
                float g = v;
                for (int j = 1; j <= s.gateSteps; ++j) g = applyStep(p.steps[k + j], g);
                v *= g;
                k += s.gateSteps;
            } else {
                v = applyStep(s, v);
            }
        }
        x[i] = v;
    }
}

__device__ float binop(float a, float b, int op) {
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    default: return b == 2.f ? a * a : powf(a, b);
    }
}

__global__ void ChannelBinaryKernel(float* x, const float* c, size_t outer, size_t inner, int channels, int op) {
    const size_t total = outer * inner;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x)
        x[i] = binop(x[i], c[channels > 0 ? (i / inner) % size_t(channels) : i % inner], op);
}

// Each output pixel of a transposed convolution: the bias, plus every (m, ky, kx) column entry
// whose input pixel lands on it.
__global__ void Col2imGatherKernel(const float* cols, const float* bias, float* y, int m, int h, int w, int kh, int kw,
                                   int sh, int sw, int dh, int dw, int pt, int pl, int oh, int ow) {
    const size_t total = size_t(m) * oh * ow, hw = size_t(h) * w;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        const int ox = int(i % ow), oy = int((i / ow) % oh), ch = int(i / (size_t(ow) * oh));
        float acc = bias ? bias[ch] : 0.f;
        for (int ky = 0; ky < kh; ++ky) {
            const int ty = oy + pt - ky * dh;
            if (ty < 0 || ty % sh) continue;
            const int iy = ty / sh;
            if (iy >= h) continue;
            for (int kx = 0; kx < kw; ++kx) {
                const int tx = ox + pl - kx * dw;
                if (tx < 0 || tx % sw) continue;
                const int ix = tx / sw;
                if (ix >= w) continue;
                acc += cols[((size_t(ch) * kh + ky) * kw + kx) * hw + size_t(iy) * w + ix];
            }
        }
        y[i] = acc;
    }
}

__global__ void Pool2dKernel(const float* x, float* y, int nc, int h, int w, int kh, int kw, int sh, int sw, int pt, int pl,
                             int oh, int ow, bool isMax, bool countIncludePad) {
    const size_t total = size_t(nc) * oh * ow;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        const int ox = int(i % ow), oy = int((i / ow) % oh);
        const float* in = x + (i / (size_t(ow) * oh)) * size_t(h) * w;
        const int y0 = oy * sh - pt, x0 = ox * sw - pl;
        float acc = isMax ? -INFINITY : 0.f;
        int count = 0;
        for (int yy = max(y0, 0); yy < min(y0 + kh, h); ++yy)
            for (int xx = max(x0, 0); xx < min(x0 + kw, w); ++xx) {
                const float v = in[size_t(yy) * w + xx];
                acc = isMax ? fmaxf(acc, v) : acc + v;
                ++count;
            }
        if (!isMax) acc /= float(countIncludePad ? kh * kw : max(count, 1));
        y[i] = acc;
    }
}

struct GatherShape {
    int rank;
    long long shape[kMaxGatherRank], strides[kMaxGatherRank];
};

__global__ void GatherKernel(const float* x, float* y, GatherShape g, long long offset, size_t total) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        size_t rem = i;
        long long at = offset;
        for (int d = g.rank - 1; d >= 0; --d) {
            const long long idx = (long long)(rem % size_t(g.shape[d]));
            rem /= size_t(g.shape[d]);
            at += idx * g.strides[d];
        }
        y[i] = x[at];
    }
}

__global__ void ElementwiseKernel(const float* a, const float* b, float* y, size_t n, int op) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        y[i] = binop(a[i], b[i], op);
}

// Block-wide reduction over one row (blockDim.x = 256): warp shuffles, then one warp over the
// warps' partial results; every thread gets the result.
struct SumOp {
    static constexpr float identity = 0.f;
    __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
    static constexpr float identity = -FLT_MAX;
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
template <typename Op>
__device__ float blockReduce(float v, float* shared) {
    const Op op;
    for (int off = 16; off > 0; off >>= 1) v = op(v, __shfl_down_sync(0xffffffff, v, off));
    if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : Op::identity;
    if (threadIdx.x < 32)
        for (int off = 16; off > 0; off >>= 1) v = op(v, __shfl_down_sync(0xffffffff, v, off));
    __syncthreads();
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    const float r = shared[0];
    __syncthreads();
    return r;
}

__global__ void RowMeanKernel(const float* x, float* y, int n) {
    __shared__ float shared[32];
    const float* row = x + size_t(blockIdx.x) * n;
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += row[i];
    s = blockReduce<SumOp>(s, shared);
    if (threadIdx.x == 0) y[blockIdx.x] = n ? s / float(n) : 0.f;
}

__global__ void SoftmaxKernel(float* x, int n) {
    __shared__ float shared[32];
    float* row = x + size_t(blockIdx.x) * n;
    float mx = -FLT_MAX;
    for (int i = threadIdx.x; i < n; i += blockDim.x) mx = fmaxf(mx, row[i]);
    mx = blockReduce<MaxOp>(mx, shared);
    float s = 0.f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float e = __expf(row[i] - mx);
        row[i] = e;
        s += e;
    }
    s = blockReduce<SumOp>(s, shared);
    const float inv = 1.f / s;
    for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] *= inv;
}

__global__ void ArgmaxKernel(const float* p, int n, int* best, float* prob) {
    __shared__ float sv[256];
    __shared__ int si[256];
    const float* row = p + size_t(blockIdx.x) * n;
    float v = -FLT_MAX;
    int idx = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (row[i] > v) v = row[i], idx = i;
    sv[threadIdx.x] = v;
    si[threadIdx.x] = idx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            const float o = sv[threadIdx.x + s];
            const int oi = si[threadIdx.x + s];
            if (o > sv[threadIdx.x] || (o == sv[threadIdx.x] && oi < si[threadIdx.x])) sv[threadIdx.x] = o, si[threadIdx.x] = oi;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) best[blockIdx.x] = si[0], prob[blockIdx.x] = sv[0];
}

__global__ void ResizeNearestKernel(const float* x, float* y, int nc, int h, int w, int oh, int ow) {
    const size_t total = size_t(nc) * oh * ow;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total; i += size_t(gridDim.x) * blockDim.x) {
        const int ox = int(i % ow), oy = int((i / ow) % oh);
        const size_t plane = i / (size_t(ow) * oh);
        const int iy = min(h - 1, int(floorf(float(oy) * h / oh))), ix = min(w - 1, int(floorf(float(ox) * w / ow)));
        y[i] = x[(plane * h + iy) * w + ix];
    }
}

constexpr unsigned kThreads = 256;
unsigned grid(size_t n) { return std::min<unsigned>(65535u * 8u, blocksFor(n, kThreads)); }

}  // namespace

size_t conv2dWorkspaceBytes(const ConvShape& s) {
    const bool pointwise = s.kh == 1 && s.kw == 1 && s.strideH == 1 && s.strideW == 1 && !s.padT && !s.padL &&
                           !s.padB && !s.padR;
    if (s.group != 1 || pointwise) return 0;
    return size_t(s.c) * s.kh * s.kw * s.outH() * s.outW() * sizeof(float);
}

std::string conv2d(const float* x, const float* w, const float* bias, const ConvShape& s, void* workspace, float* y,
                   void* stream) {
    const int oh = s.outH(), ow = s.outW();
    if (oh <= 0 || ow <= 0) return "conv2d: empty output";
    if (s.group != 1) {
        if (s.group != s.c || s.m != s.c) return "conv2d: only group 1 or depthwise";
        const size_t total = size_t(s.n) * s.c * oh * ow;
        DepthwiseKernel<<<grid(total), kThreads, 0, S(stream)>>>(x, w, bias, y, s.n, s.c, s.h, s.w, s.kh, s.kw, s.strideH,
                                                                  s.strideW, s.dilH, s.dilW, s.padT, s.padL, oh, ow);
        return launched("depthwise conv");
    }
    std::string error;
    cublasHandle_t h = handle(&error);
    if (!h) return error;
    cublasSetStream(h, S(stream));
    const size_t plane = size_t(oh) * ow;
    const int K = s.c * s.kh * s.kw;
    const bool pointwise = conv2dWorkspaceBytes(s) == 0;
    for (int img = 0; img < s.n; ++img) {
        const float* xi = x + size_t(img) * s.c * s.h * s.w;
        float* yi = y + size_t(img) * s.m * plane;
        const float* B = xi;
        if (!pointwise) {
            const size_t total = size_t(K) * plane;
            Im2colKernel<<<grid(total), kThreads, 0, S(stream)>>>(xi, static_cast<float*>(workspace), s.c, s.h, s.w, s.kh,
                                                                   s.kw, s.strideH, s.strideW, s.dilH, s.dilW, s.padT,
                                                                   s.padL, oh, ow);
            if (auto e = launched("im2col"); !e.empty()) return e;
            B = static_cast<const float*>(workspace);
        }
        float beta = 0.f;
        if (bias) {
            BiasKernel<<<grid(size_t(s.m) * plane), kThreads, 0, S(stream)>>>(yi, bias, s.m, plane, size_t(s.m) * plane);
            beta = 1.f;
        }
        // Row-major Y[m, plane] = W[m, K] · B[K, plane]  ⇔  column-major Yᵀ = Bᵀ · Wᵀ.
        const float alpha = 1.f;
        if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(plane), s.m, K, &alpha, B, int(plane), w, K, &beta, yi,
                        int(plane)) != CUBLAS_STATUS_SUCCESS)
            return "conv2d: cublasSgemm failed";
    }
    return launched("conv2d");
}

std::string chain(float* x, size_t n, const ChainStep* steps, int count, void* stream) {
    if (count > kMaxChainSteps) return "chain: too many steps";
    ChainProgram p{};
    for (int k = 0; k < count; ++k) p.steps[k] = steps[k];
    p.count = count;
    ChainKernel<<<grid(n), kThreads, 0, S(stream)>>>(x, n, p);
    return launched("chain");
}

std::string channelBinary(float* x, const float* c, size_t outer, size_t inner, int channels, int op, void* stream) {
    ChannelBinaryKernel<<<grid(outer * inner), kThreads, 0, S(stream)>>>(x, c, outer, inner, channels, op);
    return launched("channelBinary");
}

std::string elementwise(const float* a, const float* b, float* y, size_t n, int op, void* stream) {
    ElementwiseKernel<<<grid(n), kThreads, 0, S(stream)>>>(a, b, y, n, op);
    return launched("elementwise");
}

std::string rowMean(const float* x, float* y, int rows, int n, void* stream) {
    if (rows <= 0) return {};
    RowMeanKernel<<<rows, kThreads, 0, S(stream)>>>(x, y, n);
    return launched("rowMean");
}

std::string softmaxRows(float* x, int rows, int n, void* stream) {
    if (rows <= 0) return {};
    SoftmaxKernel<<<rows, kThreads, 0, S(stream)>>>(x, n);
    return launched("softmaxRows");
}

std::string argmaxRows(const float* p, int rows, int n, int* best, float* prob, void* stream) {
    if (rows <= 0) return {};
    ArgmaxKernel<<<rows, kThreads, 0, S(stream)>>>(p, n, best, prob);
    return launched("argmaxRows");
}

size_t convTranspose2dWorkspaceBytes(const ConvShape& s) { return size_t(s.m) * s.kh * s.kw * s.h * s.w * sizeof(float); }

std::string convTranspose2d(const float* x, const float* w, const float* bias, const ConvShape& s, int oh, int ow,
                            void* workspace, float* y, void* stream) {
    if (s.group != 1) return "convTranspose2d: only group 1";
    if (oh <= 0 || ow <= 0) return {};
    std::string error;
    cublasHandle_t h = handle(&error);
    if (!h) return error;
    cublasSetStream(h, S(stream));
    const int HW = s.h * s.w, K = s.m * s.kh * s.kw;
    float* cols = static_cast<float*>(workspace);
    for (int img = 0; img < s.n; ++img) {
        // Row-major cols[K, HW] = w[C, K]ᵀ · x[C, HW]  ⇔  column-major colsᵀ = xᵀ · w.
        const float alpha = 1.f, beta = 0.f;
        if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, HW, K, s.c, &alpha, x + size_t(img) * s.c * HW, HW, w, K, &beta, cols, HW) !=
            CUBLAS_STATUS_SUCCESS)
            return "convTranspose2d: cublasSgemm failed";
        Col2imGatherKernel<<<grid(size_t(s.m) * oh * ow), kThreads, 0, S(stream)>>>(
            cols, bias, y + size_t(img) * s.m * oh * ow, s.m, s.h, s.w, s.kh, s.kw, s.strideH, s.strideW, s.dilH, s.dilW, s.padT,
            s.padL, oh, ow);
        if (auto e = launched("convTranspose2d"); !e.empty()) return e;
    }
    return {};
}

std::string pool2d(const float* x, float* y, int nc, int h, int w, int kh, int kw, int sh, int sw, int padT, int padL, int oh,
                   int ow, bool max, bool countIncludePad, void* stream) {
    if (nc <= 0 || oh <= 0 || ow <= 0) return {};
    Pool2dKernel<<<grid(size_t(nc) * oh * ow), kThreads, 0, S(stream)>>>(x, y, nc, h, w, kh, kw, sh, sw, padT, padL, oh, ow, max,
                                                                         countIncludePad);
    return launched("pool2d");
}

std::string gather(const float* x, float* y, int rank, const long long* shape, const long long* strides, long long offset,
                   void* stream) {
    if (rank < 1 || rank > kMaxGatherRank) return "gather: rank " + std::to_string(rank);
    GatherShape g{};
    g.rank = rank;
    size_t total = 1;
    for (int d = 0; d < rank; ++d) g.shape[d] = shape[d], g.strides[d] = strides[d], total *= size_t(shape[d]);
    if (total == 0) return {};
    GatherKernel<<<grid(total), kThreads, 0, S(stream)>>>(x, y, g, offset, total);
    return launched("gather");
}

std::string copyRows(const float* from, float* to, size_t rows, size_t width, size_t srcPitch, size_t dstPitch,
                     size_t dstOffset, void* stream) {
    if (rows == 0 || width == 0) return {};
    return check(cudaMemcpy2DAsync(to + dstOffset, dstPitch * sizeof(float), from, srcPitch * sizeof(float),
                                   width * sizeof(float), rows, cudaMemcpyDeviceToDevice, S(stream)),
                 "copyRows");
}

std::string matmulBatched(const float* a, const float* bm, float* y, int batch, int m, int n, int k, long long strideA,
                          long long strideB, void* stream) {
    if (batch <= 0 || m <= 0 || n <= 0) return {};
    std::string error;
    cublasHandle_t h = handle(&error);
    if (!h) return error;
    cublasSetStream(h, S(stream));
    // Row-major Y[m, n] = A[m, k] · B[k, n]  ⇔  column-major Yᵀ = Bᵀ · Aᵀ, per batch.
    const float alpha = 1.f, beta = 0.f;
    if (cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, bm, n, strideB, a, k, strideA, &beta, y, n,
                                  (long long)m * n, batch) != CUBLAS_STATUS_SUCCESS)
        return "matmul: cublasSgemmStridedBatched failed";
    return launched("matmul");
}

std::string resizeNearest(const float* x, float* y, int nc, int h, int w, int oh, int ow, void* stream) {
    ResizeNearestKernel<<<grid(size_t(nc) * oh * ow), kThreads, 0, S(stream)>>>(x, y, nc, h, w, oh, ow);
    return launched("resizeNearest");
}

}  // namespace quire::cuda::nn
