// DecoderStep: a decoder's generated step, batch and prefill on the GPU (weights, slots, cuBLAS
// products, the kernels of kv_store.cuh, paged_attention.cuh and row_ops.cuh, CUDA graphs).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <map>
#include <tuple>

#include "cuda_status.cuh"
#include "kv_store.cuh"
#include "paged_attention.cuh"
#include "quire_cuda/decoder_step.h"
#include "row_ops.cuh"
#include "step_common.cuh"

namespace quire::cuda {

namespace {

using detail::check;
using detail::launched;

}  // namespace

// A weight matrix on the device, bf16 or fp32, [rows, cols] row-major.
struct DeviceMatrix {
    DeviceBuffer data;
    int rows = 0, cols = 0;
    bool bf16 = false;
};

struct DecoderStep::Impl {
    DecoderShape c;
    bool bf16 = true;
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;
    DeviceBuffer blasWorkspace;
    struct Layer {
        DeviceBuffer attnNorm, mlpNorm;
        DeviceMatrix wq, wk, wv, wo, wGate, wUp, wDown;
    };
    std::vector<Layer> layers;
    DeviceBuffer embed, finalNorm, invFreq;
    DeviceMatrix head;
    size_t halfFloats = 0, blockFloats = 0;
    int numSlots = 0, maxSpans = 0, splits = 1;
    DeviceBuffer pool, spans, counts, params;
    // Scratch: x, h, q, k, v, att, o, gate, up, logits; the bf16 copy of a product's input; the
    // attention workspace; the per-layer outputs.
    DeviceBuffer x, hbuf, q, k, v, att, o, gate, up, logits, act16, attWork, queriesOut, keysOut, valuesOut;
    // Pinned host buffers the copies go through.
    StepParams* hostParams = nullptr;
    AttentionSpan* hostSpans = nullptr;
    int* hostCounts = nullptr;
    float* hostOut = nullptr;  // logits | queries | keys | values
    size_t hostOutFloats = 0;
    cudaGraphExec_t graphs[2] = {nullptr, nullptr};  // without and with attention tracking
    std::map<int, cudaGraphExec_t> batchGraphs;       // stepBatch's, by 2 · batch size + tracking
    size_t bytes = 0;
    size_t memoryLimit = 0;  // 0: all the device has
    // Attention tracking: each head's softmax maximum and sum, and the mass per tracked token.
    DeviceBuffer headStats, mass;
    int massCap = 0;
    void dropGraphs() {
        for (auto& g : graphs)
            if (g) cudaGraphExecDestroy(g), g = nullptr;
        for (auto& [size, g] : batchGraphs)
            if (g) cudaGraphExecDestroy(g);
        batchGraphs.clear();
    }
    // The prefill's: the projector's weights, and scratch for up to prefillMax rows.
    DeviceMatrix visualW;
    DeviceBuffer visualB, evidenceGain;
    int prefillMax = 0;
    size_t prefillSpanCap = 0;
    DeviceBuffer pVisual, pX, pXn, pQ, pK, pV, pA, pO, pG, pU, pAct16, pWork, pSpans, pOffsets, pSlots;

    // A batched step's scratch (stepBatch), for up to batchMax sequences; the spans of its layers.
    int batchMax = 0, sms = 1;
    size_t batchSpanCap = 0;
    DeviceBuffer bX, bH, bQ, bK, bV, bA, bO, bG, bU, bLogits, bAct16, bWork, bQueries, bKeys, bValues, bParams, bTokens,
        bOffsets, bSpans;
    // A batch's attention tracking: each sequence's head statistics, where its mass starts in bMass
    // ([batch + 1]), and the mass of every tracked token of the batch (bMassCap floats).
    DeviceBuffer bHeadStats, bMassOffsets, bMass;
    int bMassCap = 0;
    static constexpr int kMaxSplits = 64;

    ~Impl() {
        dropGraphs();
        if (hostParams) cudaFreeHost(hostParams);
        if (hostSpans) cudaFreeHost(hostSpans);
        if (hostCounts) cudaFreeHost(hostCounts);
        if (hostOut) cudaFreeHost(hostOut);
        if (blas) cublasDestroy(blas);
        if (stream) cudaStreamDestroy(stream);
    }

    std::string alloc(DeviceBuffer& b, size_t n) {
        if (memoryLimit > 0 && bytes + n > memoryLimit)
            return "out of device memory (" + std::to_string(n >> 20) + " MiB more, over the " + std::to_string(memoryLimit >> 20) +
                   " MiB allowed)";
        b = DeviceBuffer(n);
        if (!b.ok()) return "out of device memory (" + std::to_string(n >> 20) + " MiB more)";
        bytes += n;
        return {};
    }
    std::string upload(DeviceBuffer& b, const float* src, size_t n) {
        if (auto e = alloc(b, n * sizeof(float)); !e.empty()) return e;
        return b.upload(src, n * sizeof(float));
    }
    std::string uploadMatrix(DeviceMatrix& m, const float* src, int rows, int cols) {
        m.rows = rows, m.cols = cols, m.bf16 = bf16;
        const size_t n = size_t(rows) * cols;
        if (!bf16) return upload(m.data, src, n);
        std::vector<__nv_bfloat16> h(n);
        for (size_t i = 0; i < n; ++i) h[i] = __float2bfloat16(src[i]);
        if (auto e = alloc(m.data, n * sizeof(__nv_bfloat16)); !e.empty()) return e;
        return m.data.upload(h.data(), n * sizeof(__nv_bfloat16));
    }

    // Y[T, W.rows] = X[T, W.cols] Wᵀ through cuBLAS, X's rows `ldx` floats apart: fp32 (a GEMV
    // for one row), or bf16 inputs (X converted into `act`) with fp32 accumulation and output.
    std::string gemmRows(const DeviceMatrix& W, const float* X, int ldx, int T, float* Y, DeviceBuffer& act) {
        const float alpha = 1.f, beta = 0.f;
        cublasStatus_t st;
        if (!W.bf16 && T == 1) {
            st = cublasSgemv(blas, CUBLAS_OP_T, W.cols, W.rows, &alpha, W.data.as<float>(), W.cols, X, 1, &beta, Y, 1);
        } else if (!W.bf16) {
            st = cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, W.rows, T, W.cols, &alpha, W.data.as<float>(), W.cols, X, ldx, &beta, Y,
                             W.rows);
        } else {
            ToBf16RowsKernel<<<blocksFor(long(T) * W.cols), 256, 0, stream>>>(X, ldx, W.cols, T, act.as<__nv_bfloat16>());
            if (auto e = launched("bf16 rows"); !e.empty()) return e;
            st = cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, W.rows, T, W.cols, &alpha, W.data.get(), CUDA_R_16BF, W.cols,
                              act.get(), CUDA_R_16BF, W.cols, &beta, Y, CUDA_R_32F, W.rows, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT);
        }
        if (st != CUBLAS_STATUS_SUCCESS) return "cuBLAS product failed (status " + std::to_string(int(st)) + ")";
        return {};
    }

    std::string reservePrefill(int maxTokens) {
        if (maxTokens <= prefillMax) return {};
        const size_t T = size_t(maxTokens), H = size_t(c.hidden), Q = size_t(c.heads) * c.headDim,
                     KV = size_t(c.kvHeads) * c.headDim, F = size_t(c.intermediate), f = sizeof(float);
        const size_t stride = size_t(c.visualStride());
        for (DeviceBuffer* b : {&pVisual, &pX, &pXn, &pQ, &pK, &pV, &pA, &pO, &pG, &pU, &pAct16, &pWork, &pOffsets, &pSlots})
            bytes -= b->bytes();
        for (auto [buf, n] : {std::pair{&pVisual, T * stride * f}, {&pX, T * H * f}, {&pXn, T * H * f}, {&pQ, T * Q * f},
                              {&pK, T * KV * f}, {&pV, T * KV * f}, {&pA, T * Q * f}, {&pO, T * H * f}, {&pG, T * F * f},
                              {&pU, T * F * f}, {&pAct16, T * std::max({H, Q, F, stride}) * sizeof(__nv_bfloat16)},
                              {&pWork, T * size_t(c.heads) * (size_t(c.headDim) + 2) * f}, {&pOffsets, (T + 1) * sizeof(int32_t)},
                              {&pSlots, (T / kBlockTokens + 1) * sizeof(int32_t)}})
            if (auto e = alloc(*buf, n); !e.empty()) return "prefill scratch: " + e;
        prefillMax = maxTokens;
        return {};
    }

    std::string reserveBatch(int n) {
        if (n <= batchMax) return {};
        if (auto e = check(cudaStreamSynchronize(stream), "batch scratch"); !e.empty()) return e;
        dropGraphs();  // the batch's hold the old buffers
        const size_t N = size_t(n), H = size_t(c.hidden), Q = size_t(c.heads) * c.headDim, KV = size_t(c.kvHeads) * c.headDim,
                     F = size_t(c.intermediate), L = size_t(c.layers), f = sizeof(float);
        for (DeviceBuffer* b : {&bX, &bH, &bQ, &bK, &bV, &bA, &bO, &bG, &bU, &bLogits, &bAct16, &bWork, &bQueries, &bKeys, &bValues,
                                &bParams, &bTokens, &bOffsets, &bHeadStats, &bMassOffsets})
            bytes -= b->bytes();
        for (auto [buf, count] :
             {std::pair{&bX, N * H * f}, {&bH, N * H * f}, {&bQ, N * Q * f}, {&bK, N * KV * f}, {&bV, N * KV * f},
              {&bA, N * Q * f}, {&bO, N * H * f}, {&bG, N * F * f}, {&bU, N * F * f}, {&bLogits, N * size_t(c.vocab) * f},
              {&bAct16, N * std::max({H, Q, F}) * sizeof(__nv_bfloat16)},
              {&bWork, N * size_t(c.heads) * kMaxSplits * (size_t(c.headDim) + 2) * f}, {&bQueries, L * N * Q * f},
              {&bKeys, L * N * KV * f}, {&bValues, L * N * KV * f}, {&bParams, N * sizeof(StepParams)},
              {&bTokens, N * sizeof(int32_t)}, {&bOffsets, L * (N + 1) * sizeof(int32_t)},
              {&bHeadStats, N * 2 * size_t(c.heads) * f}, {&bMassOffsets, (N + 1) * sizeof(int32_t)}})
            if (auto e = alloc(*buf, count); !e.empty()) return "batch scratch: " + e;
        batchMax = n;
        return {};
    }

    // T rows (a page's tokens, a batch's sequences) through layer l's products: the attention's
    // input (norm, then Q, K and V) ...
    std::string rowsQkv(int l, int T, const float* X, float* Xn, float* Qo, float* Ko, float* Vo, DeviceBuffer& act) {
        Layer& L = layers[size_t(l)];
        std::string e = rmsNorm(X, L.attnNorm.as<float>(), Xn, T, c.hidden, c.rmsEps, stream);
        if (e.empty()) e = gemmRows(L.wq, Xn, c.hidden, T, Qo, act);
        if (e.empty()) e = gemmRows(L.wk, Xn, c.hidden, T, Ko, act);
        if (e.empty()) e = gemmRows(L.wv, Xn, c.hidden, T, Vo, act);
        return e;
    }
    // ... and, given the attention's output A, the output projection and the SwiGLU MLP, each added
    // to the residual X.
    std::string rowsRest(int l, int T, const float* A, float* X, float* Xn, float* O, float* G, float* U, DeviceBuffer& act) {
        Layer& L = layers[size_t(l)];
        const int H = c.hidden, Q = c.heads * c.headDim, F = c.intermediate;
        std::string e = gemmRows(L.wo, A, Q, T, O, act);
        if (e.empty()) e = add(X, O, T * H);
        if (e.empty()) e = rmsNorm(X, L.mlpNorm.as<float>(), Xn, T, H, c.rmsEps, stream);
        if (e.empty()) e = gemmRows(L.wGate, Xn, H, T, G, act);
        if (e.empty()) e = gemmRows(L.wUp, Xn, H, T, U, act);
        if (e.empty()) e = swiglu(G, U, G, T * F, stream);
        if (e.empty()) e = gemmRows(L.wDown, G, F, T, O, act);
        if (e.empty()) e = add(X, O, T * H);
        return e;
    }

    std::string add(float* xio, const float* y, int n) {
        AddKernel<<<blocksFor(n), 256, 0, stream>>>(xio, y, n);
        return launched("residual");
    }

    // The step's kernels up to the layer's query, key and value (the key and value stored).
    std::string layerQkv(int l) {
        const int Q = c.heads * c.headDim, KV = c.kvHeads * c.headDim;
        std::string e;
        if (!(e = rowsQkv(l, 1, x.as<float>(), hbuf.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(), act16)).empty())
            return e;
        if (!(e = check(cudaMemcpyAsync(queriesOut.as<float>() + size_t(l) * Q, q.get(), size_t(Q) * sizeof(float),
                                         cudaMemcpyDeviceToDevice, stream), "query copy")).empty())
            return e;
        StoreKvKernel<<<blocksFor(KV), 256, 0, stream>>>(k.as<float>(), v.as<float>(), pool.as<float>(),
                                                          params.as<StepParams>(), l, c.layers, c.kvHeads, c.headDim,
                                                          invFreq.as<double>(), keysOut.as<float>(), valuesOut.as<float>());
        return launched("store key and value");
    }

    // ... and from the attention on: the output projection, the MLP, the residuals.
    std::string layerRest(int l, bool tracking) {
        const dim3 grid(c.heads, splits);
        AttentionSplitKernel<<<grid, kAttnThreads, 0, stream>>>(
            q.as<float>(), 0, pool.as<float>(), spans.as<AttentionSpan>() + size_t(l) * maxSpans, counts.as<int>() + l, nullptr,
            l, c.layers, c.kvHeads, c.headDim, c.heads / c.kvHeads, invFreq.as<double>(),
            float(1.0 / std::sqrt(double(c.headDim))), attWork.as<float>());
        std::string e;
        if (!(e = launched("attention")).empty()) return e;
        AttentionCombineKernel<<<c.heads, 128, 0, stream>>>(attWork.as<float>(), splits, c.headDim, att.as<float>(),
                                                             tracking ? headStats.as<float>() : nullptr);
        if (!(e = launched("attention combine")).empty()) return e;
        if (tracking) {
            TrackKernel<<<dim3(c.heads, 32), kAttnThreads, 0, stream>>>(
                q.as<float>(), 0, pool.as<float>(), spans.as<AttentionSpan>() + size_t(l) * maxSpans, counts.as<int>() + l, nullptr,
                l, c.layers, c.kvHeads, c.headDim, c.heads / c.kvHeads, invFreq.as<double>(),
                float(1.0 / std::sqrt(double(c.headDim))), headStats.as<float>(), mass.as<float>(), massCap, nullptr);
            if (!(e = launched("attention tracking")).empty()) return e;
        }
        return rowsRest(l, 1, att.as<float>(), x.as<float>(), hbuf.as<float>(), o.as<float>(), gate.as<float>(), up.as<float>(),
                        act16);
    }

    std::string embedToken() {
        static_assert(offsetof(StepParams, token) == 0, "the token leads StepParams");
        return embedding(params.as<int32_t>(), embed.as<float>(), x.as<float>(), 1, c.hidden, stream);
    }
    std::string finish() {
        std::string e = rmsNorm(x.as<float>(), finalNorm.as<float>(), hbuf.as<float>(), 1, c.hidden, c.rmsEps, stream);
        if (!e.empty()) return e;
        return gemmRows(head, hbuf.as<float>(), c.hidden, 1, logits.as<float>(), act16);
    }
    std::string clearMass() { return check(cudaMemsetAsync(mass.get(), 0, size_t(massCap) * sizeof(float), stream), "tracking"); }
    std::string wholeStep(bool tracking) {
        std::string e = tracking ? clearMass() : std::string();
        if (e.empty()) e = embedToken();
        for (int l = 0; l < c.layers && e.empty(); ++l) {
            e = layerQkv(l);
            if (e.empty()) e = layerRest(l, tracking);
        }
        return e.empty() ? finish() : e;
    }

    // A step's token, and the slot and place its key and value go to.
    bool validToken(int token, int slot, int t) const {
        return token >= 0 && token < c.vocab && slot >= 0 && slot < numSlots && t >= 0 && t < kBlockTokens;
    }
    // The kernels trust the spans: checked here, not read out of bounds there.
    std::string checkSpans(const AttentionSpan* spans, size_t n) const {
        for (size_t i = 0; i < n; ++i) {
            const AttentionSpan& sp = spans[i];
            if (sp.block < 0 || sp.block >= numSlots || sp.first < 0 || sp.count < 0 || sp.first + sp.count > kBlockTokens)
                return "a span outside the pool (slot " + std::to_string(sp.block) + ")";
        }
        return {};
    }

    std::string uploadSpans(int l, const std::vector<AttentionSpan>& s) {
        if (int(s.size()) > maxSpans) return "more spans than the device's slots";
        if (std::string e = checkSpans(s.data(), s.size()); !e.empty()) return e;
        std::copy(s.begin(), s.end(), hostSpans + size_t(l) * maxSpans);
        hostCounts[l] = int(s.size());
        std::string e;
        if (!s.empty())
            e = check(cudaMemcpyAsync(spans.as<AttentionSpan>() + size_t(l) * maxSpans, hostSpans + size_t(l) * maxSpans,
                                      s.size() * sizeof(AttentionSpan), cudaMemcpyHostToDevice, stream),
                      "spans");
        if (e.empty())
            e = check(cudaMemcpyAsync(counts.as<int>() + l, hostCounts + l, sizeof(int), cudaMemcpyHostToDevice, stream), "spans");
        return e;
    }
};

DecoderStep::DecoderStep(std::unique_ptr<Impl> d) : d(std::move(d)) {}
DecoderStep::~DecoderStep() = default;

std::unique_ptr<DecoderStep> DecoderStep::create(const DecoderShape& shape, const DecoderHostWeights& w, bool bf16,
                                                 std::string* why, size_t memoryLimit) {
    auto fail = [&](const std::string& e) -> std::unique_ptr<DecoderStep> {
        if (why) *why = "CUDA decoder: " + e;
        return nullptr;
    };
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return fail("no CUDA device");
    if (shape.headDim > kMaxHeadDim || shape.headDim % 2 || int(w.layers.size()) != shape.layers)
        return fail("head size " + std::to_string(shape.headDim) + " (at most 256, even) or layer count does not fit");
    auto d = std::make_unique<Impl>();
    d->c = shape, d->bf16 = bf16, d->memoryLimit = memoryLimit;
    std::string e = check(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), "stream");
    if (!e.empty()) return fail(e);
    if (cublasCreate(&d->blas) != CUBLAS_STATUS_SUCCESS) return fail("cublasCreate failed");
    cublasSetStream(d->blas, d->stream);
    // A workspace of its own, so that cuBLAS allocates nothing while a step is captured or run.
    constexpr size_t kBlasWorkspace = size_t(32) << 20;
    if (!(e = d->alloc(d->blasWorkspace, kBlasWorkspace)).empty()) return fail(e);
    if (cublasSetWorkspace(d->blas, d->blasWorkspace.get(), kBlasWorkspace) != CUBLAS_STATUS_SUCCESS)
        return fail("cublasSetWorkspace failed");
    const int H = shape.hidden, Q = shape.heads * shape.headDim, KV = shape.kvHeads * shape.headDim, F = shape.intermediate;
    for (const DecoderHostLayer& hl : w.layers) {
        Impl::Layer L;
        if (!(e = d->upload(L.attnNorm, hl.attnNorm, size_t(H))).empty() || !(e = d->upload(L.mlpNorm, hl.mlpNorm, size_t(H))).empty() ||
            !(e = d->uploadMatrix(L.wq, hl.wq, Q, H)).empty() || !(e = d->uploadMatrix(L.wk, hl.wk, KV, H)).empty() ||
            !(e = d->uploadMatrix(L.wv, hl.wv, KV, H)).empty() || !(e = d->uploadMatrix(L.wo, hl.wo, H, Q)).empty() ||
            !(e = d->uploadMatrix(L.wGate, hl.wGate, F, H)).empty() || !(e = d->uploadMatrix(L.wUp, hl.wUp, F, H)).empty() ||
            !(e = d->uploadMatrix(L.wDown, hl.wDown, H, F)).empty())
            return fail(e);
        d->layers.push_back(std::move(L));
    }
    if (!(e = d->upload(d->embed, w.embed, size_t(shape.vocab) * H)).empty() ||
        !(e = d->upload(d->finalNorm, w.finalNorm, size_t(H))).empty() ||
        !(e = d->uploadMatrix(d->head, w.head, shape.vocab, H)).empty())
        return fail(e);
    if (shape.visualDim > 0 && w.visualW && w.visualB &&
        (!(e = d->uploadMatrix(d->visualW, w.visualW, H, shape.visualDim)).empty() ||
         !(e = d->upload(d->visualB, w.visualB, size_t(H))).empty()))
        return fail(e);
    if (shape.evidenceIds > 0 &&
        (!w.evidenceGain || !(e = d->upload(d->evidenceGain, w.evidenceGain, size_t(shape.evidenceIds) * H)).empty()))
        return fail(e.empty() ? "no evidence gains were given" : e);
    std::vector<double> inv(size_t(shape.headDim / 2));
    for (int i = 0; i < shape.headDim / 2; ++i) inv[size_t(i)] = std::pow(shape.ropeTheta, -2.0 * i / shape.headDim);
    if (!(e = d->alloc(d->invFreq, inv.size() * sizeof(double))).empty() ||
        !(e = d->invFreq.upload(inv.data(), inv.size() * sizeof(double))).empty())
        return fail(e);
    d->halfFloats = size_t(shape.layers) * shape.kvHeads * kBlockTokens * shape.headDim;
    d->blockFloats = 2 * d->halfFloats;
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    d->sms = std::max(1, prop.multiProcessorCount);
    d->splits = std::clamp((2 * d->sms + shape.heads - 1) / shape.heads, 1, Impl::kMaxSplits);
    const size_t f = sizeof(float);
    for (auto [buf, n] : {std::pair{&d->x, size_t(H)}, {&d->hbuf, size_t(H)}, {&d->q, size_t(Q)}, {&d->k, size_t(KV)},
                          {&d->v, size_t(KV)}, {&d->att, size_t(Q)}, {&d->o, size_t(H)}, {&d->gate, size_t(F)},
                          {&d->up, size_t(F)}, {&d->logits, size_t(shape.vocab)},
                          {&d->act16, size_t(std::max({H, Q, F}))},
                          {&d->attWork, size_t(shape.heads) * d->splits * (shape.headDim + 2)},
                          {&d->queriesOut, size_t(shape.layers) * Q}, {&d->keysOut, size_t(shape.layers) * KV},
                          {&d->valuesOut, size_t(shape.layers) * KV}, {&d->params, (sizeof(StepParams) + f - 1) / f},
                          {&d->counts, size_t(shape.layers)}})
        if (!(e = d->alloc(*buf, n * f)).empty()) return fail(e);
    d->hostOutFloats = size_t(shape.vocab) + size_t(shape.layers) * (Q + 2 * KV);
    if (cudaMallocHost(&d->hostParams, sizeof(StepParams)) != cudaSuccess ||
        cudaMallocHost(&d->hostCounts, sizeof(int) * shape.layers) != cudaSuccess ||
        cudaMallocHost(&d->hostOut, d->hostOutFloats * f) != cudaSuccess)
        return fail("pinned host memory");
    return std::unique_ptr<DecoderStep>(new DecoderStep(std::move(d)));
}

std::string DecoderStep::reserveSlots(int slots) {
    if (slots <= d->numSlots) return {};
    // Grows by half again, so a pool that grows with the volume (full attention, R-SWA) is copied
    // now and then rather than at every page.
    int n = std::max(slots, d->numSlots + d->numSlots / 2);
    DeviceBuffer pool;
    std::string grown = d->alloc(pool, size_t(n) * d->blockFloats * sizeof(float));
    if (!grown.empty() && n > slots) n = slots, grown = d->alloc(pool, size_t(n) * d->blockFloats * sizeof(float));  // no headroom
    if (!grown.empty()) return "KV pool: " + grown;
    std::string e = check(cudaStreamSynchronize(d->stream), "KV pool");
    if (e.empty() && d->numSlots > 0)
        e = check(cudaMemcpy(pool.get(), d->pool.get(), size_t(d->numSlots) * d->blockFloats * sizeof(float),
                             cudaMemcpyDeviceToDevice),
                  "KV pool");
    if (!e.empty()) return e;
    d->bytes -= d->pool.bytes();
    d->pool = std::move(pool);
    // At most one span per slot and layer.
    DeviceBuffer spans;
    if (auto e2 = d->alloc(spans, size_t(n) * d->c.layers * sizeof(AttentionSpan)); !e2.empty()) return "spans: " + e2;
    d->bytes -= d->spans.bytes();
    d->spans = std::move(spans);
    if (d->hostSpans) cudaFreeHost(d->hostSpans);
    d->hostSpans = nullptr;
    if (cudaMallocHost(&d->hostSpans, size_t(n) * d->c.layers * sizeof(AttentionSpan)) != cudaSuccess) return "pinned host memory";
    d->numSlots = n, d->maxSpans = n;
    d->dropGraphs();  // they hold the old pointers
    return {};
}

int DecoderStep::slots() const { return d->numSlots; }

std::string DecoderStep::reservePrefill(int maxTokens) {
    if (auto e = check(cudaStreamSynchronize(d->stream), "prefill scratch"); !e.empty()) return e;
    return d->reservePrefill(maxTokens);
}

std::string DecoderStep::writeSlot(int slot, const float* block) {
    if (slot < 0 || slot >= d->numSlots) return "writeSlot: slot out of range";
    return check(cudaMemcpyAsync(d->pool.as<float>() + size_t(slot) * d->blockFloats, block, d->blockFloats * sizeof(float),
                                 cudaMemcpyHostToDevice, d->stream),
                 "writeSlot");
}

std::string DecoderStep::writeSlotLayer(int slot, int layer, const float* block) {
    if (slot < 0 || slot >= d->numSlots || layer < 0 || layer >= d->c.layers) return "writeSlotLayer: out of range";
    const size_t per = size_t(d->c.kvHeads) * kBlockTokens * d->c.headDim, at = size_t(layer) * per;
    float* dst = d->pool.as<float>() + size_t(slot) * d->blockFloats;
    std::string e = check(cudaMemcpyAsync(dst + at, block + at, per * sizeof(float), cudaMemcpyHostToDevice, d->stream), "writeSlotLayer");
    if (e.empty())
        e = check(cudaMemcpyAsync(dst + d->halfFloats + at, block + d->halfFloats + at, per * sizeof(float),
                                  cudaMemcpyHostToDevice, d->stream),
                  "writeSlotLayer");
    return e;
}

std::string DecoderStep::step(int token, int slot, int t, int64_t pos, const SpansFor& spansFor, bool perLayer, float* logits,
                              float* queries, float* keys, float* values, int trackTokens, float* attendedMass) {
    Impl& m = *d;
    const DecoderShape& c = m.c;
    if (!m.validToken(token, slot, t)) return "step: token or slot out of range";
    const bool tracking = trackTokens > 0 && attendedMass;
    if (tracking && trackTokens > m.massCap) {  // once per longer page, outside the captured step
        const int cap = std::max(trackTokens, m.massCap + m.massCap / 2);
        m.bytes -= m.mass.bytes() + m.headStats.bytes();
        if (auto e = m.alloc(m.mass, size_t(cap) * sizeof(float)); !e.empty()) return "tracking: " + e;
        if (auto e = m.alloc(m.headStats, size_t(2) * c.heads * sizeof(float)); !e.empty()) return "tracking: " + e;
        m.massCap = cap;
        m.dropGraphs();
    }
    const int Q = c.heads * c.headDim, KV = c.kvHeads * c.headDim;
    *m.hostParams = StepParams{token, slot, t, 0, pos};
    std::string e = check(cudaMemcpyAsync(m.params.get(), m.hostParams, sizeof(StepParams), cudaMemcpyHostToDevice, m.stream), "step");
    std::vector<AttentionSpan> spans;
    if (!perLayer) {
        for (int l = 0; l < c.layers && e.empty(); ++l) {
            e = spansFor(l, nullptr, spans);
            if (e.empty()) e = m.uploadSpans(l, spans);
        }
        cudaGraphExec_t& graph = m.graphs[tracking ? 1 : 0];
        if (e.empty() && !graph) {  // captured once; replayed by every step whose spans are known up front
            cudaGraph_t g = nullptr;
            e = check(cudaStreamBeginCapture(m.stream, cudaStreamCaptureModeThreadLocal), "graph capture");
            if (e.empty()) {
                const std::string inside = m.wholeStep(tracking);
                e = check(cudaStreamEndCapture(m.stream, &g), "graph capture");
                if (!inside.empty()) e = inside;
            }
            if (e.empty()) e = check(cudaGraphInstantiate(&graph, g, 0), "graph instantiate");
            if (g) cudaGraphDestroy(g);
        }
        if (e.empty()) e = check(cudaGraphLaunch(graph, m.stream), "graph launch");
    } else {
        e = tracking ? m.clearMass() : std::string();
        if (e.empty()) e = m.embedToken();
        for (int l = 0; l < c.layers && e.empty(); ++l) {
            e = m.layerQkv(l);
            float* hq = m.hostOut + c.vocab + size_t(l) * Q;
            if (e.empty())
                e = check(cudaMemcpyAsync(hq, m.queriesOut.as<float>() + size_t(l) * Q, size_t(Q) * sizeof(float),
                                          cudaMemcpyDeviceToHost, m.stream),
                          "query");
            if (e.empty()) e = check(cudaStreamSynchronize(m.stream), "query");
            if (e.empty()) e = spansFor(l, hq, spans);
            if (e.empty()) e = m.uploadSpans(l, spans);
            if (e.empty()) e = m.layerRest(l, tracking);
        }
        if (e.empty()) e = m.finish();
    }
    if (!e.empty()) {
        cudaStreamSynchronize(m.stream);
        return e;
    }
    // logits | queries | keys | values, in one pinned buffer.
    float* out = m.hostOut;
    const std::pair<const DeviceBuffer*, size_t> parts[] = {{&m.logits, size_t(c.vocab)},
                                                            {&m.queriesOut, size_t(c.layers) * Q},
                                                            {&m.keysOut, size_t(c.layers) * KV},
                                                            {&m.valuesOut, size_t(c.layers) * KV}};
    for (const auto& [buf, n] : parts) {
        if (e.empty())
            e = check(cudaMemcpyAsync(out, buf->get(), n * sizeof(float), cudaMemcpyDeviceToHost, m.stream), "results");
        out += n;
    }
    if (e.empty() && tracking)
        e = check(cudaMemcpyAsync(attendedMass, m.mass.get(), size_t(trackTokens) * sizeof(float), cudaMemcpyDeviceToHost, m.stream),
                  "tracking");
    if (const std::string s = check(cudaStreamSynchronize(m.stream), "step"); e.empty()) e = s;
    if (!e.empty()) return e;
    out = m.hostOut;
    for (auto [dst, n] : {std::pair{logits, size_t(c.vocab)}, {queries, size_t(c.layers) * Q}, {keys, size_t(c.layers) * KV},
                          {values, size_t(c.layers) * KV}}) {
        std::memcpy(dst, out, n * sizeof(float));
        out += n;
    }
    return {};
}

// Over 120 lines: the batch's launches in the order one CUDA graph records them (capture and replay).
std::string DecoderStep::stepBatch(const std::vector<BatchItem>& items, const BatchSpansFor& spansFor, bool perLayer) {
    Impl& m = *d;
    const DecoderShape& c = m.c;
    const int B = int(items.size());
    if (B < 1 || B > 65535) return "stepBatch: " + std::to_string(B) + " sequences";
    std::vector<StepParams> params(static_cast<size_t>(B));
    std::vector<int32_t> tokens(static_cast<size_t>(B)), massOffsets(size_t(B) + 1, 0);
    for (int i = 0; i < B; ++i) {
        const BatchItem& it = items[size_t(i)];
        if (!m.validToken(it.token, it.slot, it.t)) return "stepBatch: token or slot out of range";
        if (it.trackTokens < 0 || (it.trackTokens > 0 && !it.attendedMass)) return "stepBatch: tracking without a mass array";
        params[size_t(i)] = StepParams{it.token, it.slot, it.t, 0, it.pos};
        tokens[size_t(i)] = it.token;
        massOffsets[size_t(i) + 1] = massOffsets[size_t(i)] + it.trackTokens;
    }
    const bool tracking = massOffsets[size_t(B)] > 0;
    std::string e = m.reserveBatch(B);
    if (!e.empty()) return e;
    if (massOffsets[size_t(B)] > m.bMassCap) {  // grows with the pages' length, outside the captured step
        if (!(e = check(cudaStreamSynchronize(m.stream), "batch tracking")).empty()) return e;
        m.dropGraphs();  // the batch's hold the old pointer
        m.bytes -= m.bMass.bytes();
        const int cap = std::max(massOffsets[size_t(B)], m.bMassCap + m.bMassCap / 2);
        if (!(e = m.alloc(m.bMass, size_t(cap) * sizeof(float))).empty()) return "batch tracking: " + e;
        m.bMassCap = cap;
    }
    const int H = c.hidden, Q = c.heads * c.headDim, KV = c.kvHeads * c.headDim;
    // Enough (head, split) blocks for every multiprocessor twice over, the sequences counted.
    const int splits = std::clamp((2 * m.sms + c.heads * B - 1) / (c.heads * B), 1, Impl::kMaxSplits);
    cudaStream_t st = m.stream;
    // The spans: every layer's before the step (perLayer off), else each layer's when its queries
    // are back, then at the start of bSpans (stream order: the layer before has read its own by then).
    // offsets[l][i] is where item i's spans of layer l start in bSpans; offsets[l][B] their end.
    std::vector<AttentionSpan> hostSpans, sp;
    std::vector<int32_t> offsets(size_t(c.layers) * (B + 1));
    auto collect = [&](int l, const float* queries) -> std::string {
        int32_t* off = &offsets[size_t(l) * (B + 1)];
        for (int i = 0; i < B; ++i) {
            off[i] = int32_t(hostSpans.size());
            sp.clear();
            if (std::string err = spansFor(i, l, queries ? queries + size_t(i) * Q : nullptr, sp); !err.empty()) return err;
            if (std::string err = m.checkSpans(sp.data(), sp.size()); !err.empty()) return err;
            hostSpans.insert(hostSpans.end(), sp.begin(), sp.end());
        }
        off[B] = int32_t(hostSpans.size());
        return {};
    };
    auto upload = [&](int l0, int n) -> std::string {
        if (hostSpans.size() > m.batchSpanCap) {
            std::string err = check(cudaStreamSynchronize(st), "batch spans");
            if (!err.empty()) return err;
            m.bytes -= m.bSpans.bytes();
            m.dropGraphs();  // the batch's hold the old pointer
            const size_t cap = std::max(hostSpans.size(), m.batchSpanCap * 3 / 2);
            if (!(err = m.alloc(m.bSpans, cap * sizeof(AttentionSpan))).empty()) return "batch spans: " + err;
            m.batchSpanCap = cap;
        }
        std::string err;
        if (!hostSpans.empty())
            err = check(cudaMemcpyAsync(m.bSpans.get(), hostSpans.data(), hostSpans.size() * sizeof(AttentionSpan),
                                        cudaMemcpyHostToDevice, st),
                        "batch spans");
        if (err.empty())
            err = check(cudaMemcpyAsync(m.bOffsets.as<int32_t>() + size_t(l0) * (B + 1), &offsets[size_t(l0) * (B + 1)],
                                        size_t(n) * (B + 1) * sizeof(int32_t), cudaMemcpyHostToDevice, st),
                        "batch spans");
        return err;
    };
    e = check(cudaMemcpyAsync(m.bParams.get(), params.data(), params.size() * sizeof(StepParams), cudaMemcpyHostToDevice, st),
              "batch");
    if (e.empty())
        e = check(cudaMemcpyAsync(m.bTokens.get(), tokens.data(), tokens.size() * sizeof(int32_t), cudaMemcpyHostToDevice, st),
                  "batch");
    if (e.empty() && tracking)
        e = check(cudaMemcpyAsync(m.bMassOffsets.get(), massOffsets.data(), massOffsets.size() * sizeof(int32_t),
                                  cudaMemcpyHostToDevice, st),
                  "batch tracking");
    if (!perLayer) {
        for (int l = 0; l < c.layers && e.empty(); ++l) e = collect(l, nullptr);
        if (e.empty()) e = upload(0, c.layers);
    }
    float *X = m.bX.as<float>(), *Xn = m.bH.as<float>(), *O = m.bO.as<float>();
    const float scale = float(1.0 / std::sqrt(double(c.headDim)));
    std::vector<float> layerQueries;
    // Embedding, the layers and the LM head, reading the tokens, slots, positions and spans from
    // device memory: with the spans known up front, captured once per batch size and replayed.
    auto forward = [&]() -> std::string {
        std::string e = tracking ? check(cudaMemsetAsync(m.bMass.get(), 0, size_t(m.bMassCap) * sizeof(float), st), "batch tracking")
                                 : std::string();
        if (e.empty()) e = embedding(m.bTokens.as<int32_t>(), m.embed.as<float>(), X, B, H, st);
        for (int l = 0; l < c.layers && e.empty(); ++l) {
            e = m.rowsQkv(l, B, X, Xn, m.bQ.as<float>(), m.bK.as<float>(), m.bV.as<float>(), m.bAct16);
            if (e.empty())
                e = check(cudaMemcpyAsync(m.bQueries.as<float>() + size_t(l) * B * Q, m.bQ.get(), size_t(B) * Q * sizeof(float),
                                          cudaMemcpyDeviceToDevice, st),
                          "batch queries");
            if (e.empty()) {
                StoreKvKernel<<<dim3(blocksFor(KV), B), 256, 0, st>>>(m.bK.as<float>(), m.bV.as<float>(), m.pool.as<float>(),
                                                                       m.bParams.as<StepParams>(), l, c.layers, c.kvHeads, c.headDim,
                                                                       m.invFreq.as<double>(), m.bKeys.as<float>(),
                                                                       m.bValues.as<float>());
                e = launched("store the batch's keys and values");
            }
            if (e.empty() && perLayer) {
                layerQueries.resize(size_t(B) * Q);
                hostSpans.clear();
                e = check(cudaMemcpyAsync(layerQueries.data(), m.bQ.get(), layerQueries.size() * sizeof(float), cudaMemcpyDeviceToHost, st),
                          "batch queries");
                if (e.empty()) e = check(cudaStreamSynchronize(st), "batch queries");
                if (e.empty()) e = collect(l, layerQueries.data());
                if (e.empty()) e = upload(l, 1);
            }
            if (e.empty()) {
                AttentionSplitKernel<<<dim3(c.heads, splits, B), kAttnThreads, 0, st>>>(
                    m.bQ.as<float>(), size_t(Q), m.pool.as<float>(), m.bSpans.as<AttentionSpan>(), nullptr,
                    m.bOffsets.as<int32_t>() + size_t(l) * (B + 1), l, c.layers, c.kvHeads, c.headDim, c.heads / c.kvHeads,
                    m.invFreq.as<double>(), scale, m.bWork.as<float>());
                e = launched("batch attention");
            }
            if (e.empty()) {
                AttentionCombineKernel<<<dim3(c.heads, B), 128, 0, st>>>(m.bWork.as<float>(), splits, c.headDim, m.bA.as<float>(),
                                                                         tracking ? m.bHeadStats.as<float>() : nullptr);
                e = launched("batch attention combine");
            }
            if (e.empty() && tracking) {
                TrackKernel<<<dim3(c.heads, 32, B), kAttnThreads, 0, st>>>(
                    m.bQ.as<float>(), size_t(Q), m.pool.as<float>(), m.bSpans.as<AttentionSpan>(), nullptr,
                    m.bOffsets.as<int32_t>() + size_t(l) * (B + 1), l, c.layers, c.kvHeads, c.headDim, c.heads / c.kvHeads,
                    m.invFreq.as<double>(), scale, m.bHeadStats.as<float>(), m.bMass.as<float>(), 0, m.bMassOffsets.as<int32_t>());
                e = launched("batch attention tracking");
            }
            if (e.empty()) e = m.rowsRest(l, B, m.bA.as<float>(), X, Xn, O, m.bG.as<float>(), m.bU.as<float>(), m.bAct16);
        }
        if (e.empty()) e = rmsNorm(X, m.finalNorm.as<float>(), Xn, B, H, c.rmsEps, st);
        if (e.empty()) e = m.gemmRows(m.head, Xn, H, B, m.bLogits.as<float>(), m.bAct16);
        return e;
    };
    if (e.empty() && !perLayer) {
        cudaGraphExec_t& graph = m.batchGraphs[2 * B + (tracking ? 1 : 0)];
        if (!graph) {
            cudaGraph_t g = nullptr;
            e = check(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), "batch graph capture");
            if (e.empty()) {
                const std::string inside = forward();
                e = check(cudaStreamEndCapture(st, &g), "batch graph capture");
                if (!inside.empty()) e = inside;
            }
            if (e.empty()) e = check(cudaGraphInstantiate(&graph, g, 0), "batch graph instantiate");
            if (g) cudaGraphDestroy(g);
        }
        if (e.empty()) e = check(cudaGraphLaunch(graph, st), "batch graph launch");
    } else if (e.empty()) {
        e = forward();
    }
    // Each sequence's outputs straight into its arrays: its logits row, and its rows of the
    // queries, keys and values ([layer][sequence][...] on the device) as 2-D copies.
    for (int i = 0; i < B && e.empty(); ++i) {
        const BatchItem& it = items[size_t(i)];
        e = check(cudaMemcpyAsync(it.logits, m.bLogits.as<float>() + size_t(i) * c.vocab, size_t(c.vocab) * sizeof(float),
                                  cudaMemcpyDeviceToHost, st),
                  "batch results");
        for (auto [dst, src, w] : {std::tuple{it.queries, &m.bQueries, size_t(Q)}, {it.keys, &m.bKeys, size_t(KV)},
                                   {it.values, &m.bValues, size_t(KV)}})
            if (e.empty())
                e = check(cudaMemcpy2DAsync(dst, w * sizeof(float), src->as<float>() + size_t(i) * w, size_t(B) * w * sizeof(float),
                                            w * sizeof(float), size_t(c.layers), cudaMemcpyDeviceToHost, st),
                          "batch results");
        if (e.empty() && it.trackTokens > 0)
            e = check(cudaMemcpyAsync(it.attendedMass, m.bMass.as<float>() + massOffsets[size_t(i)],
                                      size_t(it.trackTokens) * sizeof(float), cudaMemcpyDeviceToHost, st),
                      "batch tracking");
    }
    if (const std::string synced = check(cudaStreamSynchronize(st), "batch"); e.empty()) e = synced;
    return e;
}

std::string DecoderStep::prefill(const PrefillSpec& spec, int maxTokens) {
    Impl& m = *d;
    const DecoderShape& c = m.c;
    const int T = spec.tokens;
    if (!m.visualW.rows) return "prefill: no projector weights were given";
    if (T < 1 || T > maxTokens || T > 65535) return "prefill: " + std::to_string(T) + " tokens";
    std::string e = m.reservePrefill(maxTokens);
    if (!e.empty()) return e;
    const int blocks = (T + kBlockTokens - 1) / kBlockTokens;
    for (int b = 0; b < blocks; ++b)
        if (spec.blockSlots[b] < 0 || spec.blockSlots[b] >= m.numSlots) return "prefill: a block slot outside the pool";
    const int numSpans = spec.offsets[T];
    for (int t = 0; t < T; ++t)
        if (spec.offsets[t] < 0 || spec.offsets[t] > spec.offsets[t + 1]) return "prefill: span offsets out of order";
    if (std::string err = m.checkSpans(spec.spans, size_t(numSpans)); !err.empty()) return "prefill: " + err;
    if (size_t(numSpans) > m.prefillSpanCap) {  // grows with the page's length (about T² / 32 spans)
        m.bytes -= m.pSpans.bytes();
        const size_t cap = std::max(size_t(numSpans), m.prefillSpanCap * 3 / 2);
        if (!(e = m.alloc(m.pSpans, cap * sizeof(AttentionSpan))).empty()) return "prefill spans: " + e;
        m.prefillSpanCap = cap;
    }
    const int stride = c.visualStride();
    const int H = c.hidden, Q = c.heads * c.headDim, KV = c.kvHeads * c.headDim;
    cudaStream_t st = m.stream;
    auto copyIn = [&](DeviceBuffer& dst, const void* src, size_t n) {
        return check(cudaMemcpyAsync(dst.get(), src, n, cudaMemcpyHostToDevice, st), "prefill inputs");
    };
    if ((e = copyIn(m.pVisual, spec.visual, size_t(T) * stride * sizeof(float))).empty() &&
        (e = copyIn(m.pSlots, spec.blockSlots, size_t(blocks) * sizeof(int32_t))).empty() &&
        (e = copyIn(m.pOffsets, spec.offsets, size_t(T + 1) * sizeof(int32_t))).empty())
        e = copyIn(m.pSpans, spec.spans, size_t(numSpans) * sizeof(AttentionSpan));
    float *X = m.pX.as<float>(), *Xn = m.pXn.as<float>(), *O = m.pO.as<float>();
    if (e.empty()) e = m.gemmRows(m.visualW, m.pVisual.as<float>(), stride, T, X, m.pAct16);
    if (e.empty()) {
        AddRowsKernel<<<blocksFor(long(T) * H), 256, 0, st>>>(X, m.visualB.as<float>(), T, H);
        e = launched("projector bias");
    }
    if (e.empty() && c.visualTokenIds) {
        AddVisualIdsKernel<<<T, 128, 0, st>>>(X, m.pVisual.as<float>(), stride, c.visualDim, m.embed.as<float>(), H,
                                              m.evidenceGain.as<float>(), c.evidenceIds);
        e = launched("visual token ids");
    }
    const float scale = float(1.0 / std::sqrt(double(c.headDim)));
    for (int l = 0; l < c.layers && e.empty(); ++l) {
        e = m.rowsQkv(l, T, X, Xn, m.pQ.as<float>(), m.pK.as<float>(), m.pV.as<float>(), m.pAct16);
        if (e.empty()) {
            StoreKvRowsKernel<<<blocksFor(long(T) * KV), 256, 0, st>>>(m.pK.as<float>(), m.pV.as<float>(), m.pool.as<float>(),
                                                                       m.pSlots.as<int32_t>(), spec.pos0, T, l, c.layers,
                                                                       c.kvHeads, c.headDim, m.invFreq.as<double>());
            e = launched("store the page's keys and values");
        }
        if (e.empty())
            e = check(cudaMemcpyAsync(spec.keys + size_t(l) * T * KV, m.pK.get(), size_t(T) * KV * sizeof(float),
                                      cudaMemcpyDeviceToHost, st),
                      "prefill keys");
        if (e.empty())
            e = check(cudaMemcpyAsync(spec.values + size_t(l) * T * KV, m.pV.get(), size_t(T) * KV * sizeof(float),
                                      cudaMemcpyDeviceToHost, st),
                      "prefill values");
        if (e.empty()) {
            AttentionSplitKernel<<<dim3(c.heads, 1, T), kAttnThreads, 0, st>>>(
                m.pQ.as<float>(), size_t(Q), m.pool.as<float>(), m.pSpans.as<AttentionSpan>(), nullptr, m.pOffsets.as<int32_t>(), l,
                c.layers, c.kvHeads, c.headDim, c.heads / c.kvHeads, m.invFreq.as<double>(), scale, m.pWork.as<float>());
            e = launched("page attention");
        }
        if (e.empty()) {
            AttentionCombineKernel<<<dim3(c.heads, T), 128, 0, st>>>(m.pWork.as<float>(), 1, c.headDim, m.pA.as<float>(), nullptr);
            e = launched("page attention combine");
        }
        if (e.empty()) e = m.rowsRest(l, T, m.pA.as<float>(), X, Xn, O, m.pG.as<float>(), m.pU.as<float>(), m.pAct16);
    }
    const std::string synced = check(cudaStreamSynchronize(st), "prefill");
    return e.empty() ? synced : e;
}

size_t DecoderStep::deviceBytes() const { return d->bytes; }

}  // namespace quire::cuda
