// The device path's reference: a StepBackend in plain loops over host memory. It holds its own
// copy of the pool (filled only through writeSlot/writeSlotLayer) and reads the weights as they
// are, so a session run through it computes each step from exactly what a GPU would be given.
// Slow on purpose (no packing, no threads). Built into the engine, chosen only by the tests and
// `bench decode --device mirror`: it checks the device path on a machine without a GPU.
#include <cmath>
#include <string>

#include "decoder/step_backend.h"
#include "quire/decoder/session.h"

namespace quire::decoder {
namespace {

class MirrorBackend final : public StepBackend {
public:
    MirrorBackend(std::shared_ptr<const ModelWeights> m, int64_t fault, size_t limit)
        : model(std::move(m)), c(model->config), faultAt(fault), memoryLimit(limit) {
        halfFloats = size_t(c.numLayers) * c.numKvHeads * kBlockTokens * c.headDim;
        blockFloats = 2 * halfFloats;
        for (int i = 0; i < c.headDim / 2; ++i) invFreq.push_back(std::pow(c.ropeTheta, -2.0 * i / c.headDim));
    }
    const char* name() const override { return "mirror"; }
    Status reserveSlots(int n) override {
        if (n <= numSlots) return Status::ok();
        const size_t bytes = weightBytes() + size_t(n) * blockFloats * sizeof(float);
        if (memoryLimit > 0 && bytes > memoryLimit)
            return Status(ErrorCode::OutOfMemory, "device mirror: out of memory for " + std::to_string(n) + " KV slots (" +
                                                      std::to_string(bytes >> 10) + " KiB of the " +
                                                      std::to_string(memoryLimit >> 10) + " KiB it has)");
        numSlots = n, pool.resize(size_t(n) * blockFloats, 0.f);
        return Status::ok();
    }
    Status reservePrefill(int) override { return Status::ok(); }  // it computes a page in host vectors
    int slots() const override { return numSlots; }
    Status writeSlot(int slot, const float* block) override {
        if (slot < 0 || slot >= numSlots) return bad("writeSlot", slot);
        std::copy_n(block, blockFloats, &pool[size_t(slot) * blockFloats]);
        return Status::ok();
    }
    Status writeSlotLayer(int slot, int layer, const float* block) override {
        if (slot < 0 || slot >= numSlots || layer < 0 || layer >= c.numLayers) return bad("writeSlotLayer", slot);
        const size_t per = size_t(c.numKvHeads) * kBlockTokens * c.headDim, at = size_t(layer) * per;
        float* dst = &pool[size_t(slot) * blockFloats];
        std::copy_n(block + at, per, dst + at);
        std::copy_n(block + halfFloats + at, per, dst + halfFloats + at);
        return Status::ok();
    }
    size_t deviceBytes() const override { return pool.size() * sizeof(float) + weightBytes(); }
    size_t weightBytes() const { return model->parameterCount() * sizeof(float); }

    Status step(const DeviceStepIO& io, const SpansFor& spansFor, bool perLayer) override {
        const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
        if (io.slot < 0 || io.slot >= numSlots || io.t < 0 || io.t >= kBlockTokens) return bad("step", io.slot);
        if (steps++ == faultAt) return Status(ErrorCode::OutOfMemory, "device mirror: out of memory (injected fault)");
        std::vector<std::vector<DeviceSpan>> spans(static_cast<size_t>(c.numLayers));
        if (!perLayer)
            for (int l = 0; l < c.numLayers; ++l)
                if (Status s = spansFor(l, nullptr, spans[size_t(l)]); !s) return s;
        if (io.trackTokens > 0) std::fill_n(io.attendedMass, io.trackTokens, 0.f);
        std::vector<float> x(model->embed.begin() + long(io.token) * H, model->embed.begin() + long(io.token + 1) * H);
        std::vector<float> q(static_cast<size_t>(Q)), k(static_cast<size_t>(KV)), v(static_cast<size_t>(KV)),
            att(static_cast<size_t>(Q)), h(static_cast<size_t>(H));
        for (int l = 0; l < c.numLayers; ++l) {
            const LayerWeights& L = model->layers[size_t(l)];
            project(L, x.data(), q.data(), k.data(), v.data());
            std::copy(q.begin(), q.end(), io.queries + size_t(l) * Q);
            store(io.slot, l, io.t, io.pos, k.data(), v.data());
            std::copy(k.begin(), k.end(), io.keys + size_t(l) * KV);  // rotated by store()
            std::copy(v.begin(), v.end(), io.values + size_t(l) * KV);
            if (perLayer)
                if (Status s = spansFor(l, q.data(), spans[size_t(l)]); !s) return s;
            if (Status s = attend(l, q.data(), spans[size_t(l)], att.data(), io.trackTokens, io.attendedMass); !s) return s;
            finishLayer(L, att.data(), x.data());
        }
        norm(x.data(), model->finalNorm.data(), h.data());
        matvec(model->head(), c.vocabSize, H, h.data(), io.logits);
        return Status::ok();
    }

    // Each item's step in turn: the mirror checks what the sessions hand a shared device (their
    // slot ranges, spans and outputs); the CUDA batch's rows are checked against its single steps
    // by cuda/tests/decoder_step_check.
    Status stepBatch(const std::vector<DeviceStepIO>& ios, const BatchSpansFor& spansFor, bool perLayer) override {
        for (size_t i = 0; i < ios.size(); ++i) {
            auto one = [&](int layer, const float* query, std::vector<DeviceSpan>& spans) {
                return spansFor(int(i), layer, query, spans);
            };
            if (Status s = step(ios[i], one, perLayer); !s) return s;
        }
        return Status::ok();
    }

    Status prefill(const DevicePrefillIO& io, int maxTokens) override {
        const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
        const int T = io.tokens, stride = c.visualStride();
        if (T < 1 || T > maxTokens) return Status(ErrorCode::Internal, "device mirror: prefill of " + std::to_string(T) + " tokens");
        for (int b = 0; b < (T + kBlockTokens - 1) / kBlockTokens; ++b)
            if (io.blockSlots[b] < 0 || io.blockSlots[b] >= numSlots) return bad("prefill", io.blockSlots[b]);
        std::vector<float> X(size_t(T) * H), q(size_t(T) * Q), k(static_cast<size_t>(KV)), v(static_cast<size_t>(KV)),
            att(static_cast<size_t>(Q));
        for (int t = 0; t < T; ++t) {
            const float* in = io.visual + size_t(t) * stride;
            float* x = &X[size_t(t) * H];
            matvec(model->visualW.data(), H, c.visualDim, in, x);
            for (int i = 0; i < H; ++i) x[i] += model->visualB[size_t(i)];
            if (c.visualTokenIds) addVisualTokenIds(*model, in, x);
        }
        for (int l = 0; l < c.numLayers; ++l) {
            const LayerWeights& L = model->layers[size_t(l)];
            for (int t = 0; t < T; ++t) {  // every token's key and value first: a token attends to those before it
                project(L, &X[size_t(t) * H], &q[size_t(t) * Q], k.data(), v.data());
                std::copy(k.begin(), k.end(), io.keys + (size_t(l) * T + t) * KV);  // pre-rotary
                std::copy(v.begin(), v.end(), io.values + (size_t(l) * T + t) * KV);
                store(io.blockSlots[t / kBlockTokens], l, t % kBlockTokens, io.pos0 + t, k.data(), v.data());
            }
            for (int t = 0; t < T; ++t) {
                const std::vector<DeviceSpan> spans(io.spans + io.offsets[t], io.spans + io.offsets[t + 1]);
                if (Status s = attend(l, &q[size_t(t) * Q], spans, att.data()); !s) return s;  // (no tracking in a prefill)
                finishLayer(L, att.data(), &X[size_t(t) * H]);
            }
        }
        return Status::ok();
    }

private:
    std::shared_ptr<const ModelWeights> model;
    const ModelConfig& c;
    size_t halfFloats = 0, blockFloats = 0;
    int numSlots = 0;
    int64_t faultAt = -1, steps = 0;
    size_t memoryLimit = 0;  // bytes; 0: no limit
    std::vector<float> pool;
    std::vector<double> invFreq;

    static Status bad(const char* what, int slot) {
        return Status(ErrorCode::Internal, std::string("device mirror: ") + what + ": slot " + std::to_string(slot) + " out of range");
    }
    size_t kIndex(int layer, int g, int t) const { return ((size_t(layer) * c.numKvHeads + g) * kBlockTokens + t) * c.headDim; }

    // A layer's query, key and value (pre-rotary) of a token whose residual stream is x.
    void project(const LayerWeights& L, const float* x, float* q, float* k, float* v) const {
        const int H = c.hiddenSize, KV = c.numKvHeads * c.headDim;
        std::vector<float> h(static_cast<size_t>(H));
        norm(x, L.attnNorm.data(), h.data());
        matvec(L.wq.data(), c.numHeads * c.headDim, H, h.data(), q);
        matvec(L.wk.data(), KV, H, h.data(), k);
        matvec(L.wv.data(), KV, H, h.data(), v);
    }
    // The key (rotated in place at `pos`) and value of every KV head into slot `slot`, token t.
    void store(int slot, int layer, int t, int64_t pos, float* k, const float* v) {
        const int D = c.headDim;
        float* block = &pool[size_t(slot) * blockFloats];
        for (int g = 0; g < c.numKvHeads; ++g) {
            rotate(k + size_t(g) * D, pos);
            std::copy_n(k + size_t(g) * D, D, block + kIndex(layer, g, t));
            std::copy_n(v + size_t(g) * D, D, block + halfFloats + kIndex(layer, g, t));
        }
    }
    // The rest of a layer after its attention `att`: the output projection and the SwiGLU MLP,
    // each added to x.
    void finishLayer(const LayerWeights& L, const float* att, float* x) const {
        const int H = c.hiddenSize, F = c.intermediateSize;
        std::vector<float> h(static_cast<size_t>(H)), o(static_cast<size_t>(H)), g(static_cast<size_t>(F)), u(static_cast<size_t>(F));
        matvec(L.wo.data(), H, c.numHeads * c.headDim, att, o.data());
        for (int i = 0; i < H; ++i) x[i] += o[size_t(i)];
        norm(x, L.mlpNorm.data(), h.data());
        matvec(L.wGate.data(), F, H, h.data(), g.data());
        matvec(L.wUp.data(), F, H, h.data(), u.data());
        for (int i = 0; i < F; ++i) g[size_t(i)] = g[size_t(i)] / (1.f + std::exp(-g[size_t(i)])) * u[size_t(i)];
        matvec(L.wDown.data(), H, F, g.data(), o.data());
        for (int i = 0; i < H; ++i) x[i] += o[size_t(i)];
    }
    void norm(const float* x, const float* w, float* out) const {
        double ss = 0;
        for (int i = 0; i < c.hiddenSize; ++i) ss += double(x[i]) * x[i];
        const float r = float(1.0 / std::sqrt(ss / c.hiddenSize + c.rmsNormEps));
        for (int i = 0; i < c.hiddenSize; ++i) out[i] = x[i] * r * w[i];
    }
    static void matvec(const float* W, int rows, int cols, const float* x, float* y) {
        for (int r = 0; r < rows; ++r) {
            double s = 0;
            for (int i = 0; i < cols; ++i) s += double(W[size_t(r) * cols + i]) * x[i];
            y[r] = float(s);
        }
    }
    void rotate(float* vec, int64_t pos) const {
        const int half = c.headDim / 2;
        for (int i = 0; i < half; ++i) {
            const double a = double(pos) * invFreq[size_t(i)];
            const float cs = float(std::cos(a)), sn = float(std::sin(a));
            const float x0 = vec[i], x1 = vec[i + half];
            vec[i] = x0 * cs - x1 * sn;
            vec[i + half] = x0 * sn + x1 * cs;
        }
    }
    // `mass`: with trackTokens > 0, each tracked token's softmax weight is added (every head).
    Status attend(int layer, const float* q, const std::vector<DeviceSpan>& spans, float* out, int trackTokens = 0,
                  float* mass = nullptr) const {
        const int D = c.headDim, G = c.groupSize();
        const double scale = 1.0 / std::sqrt(double(D));
        for (const DeviceSpan& s : spans)
            if (s.slot < 0 || s.slot >= numSlots || s.first < 0 || s.count < 0 || s.first + s.count > kBlockTokens)
                return Status(ErrorCode::Internal, "device mirror: a span outside the pool (slot " + std::to_string(s.slot) + ")");
        std::vector<float> qr(static_cast<size_t>(D));
        std::vector<double> w;
        for (int hh = 0; hh < c.numHeads; ++hh) {
            const int g = hh / G;
            w.clear();
            for (const DeviceSpan& s : spans) {
                std::copy_n(q + size_t(hh) * D, D, qr.begin());
                rotate(qr.data(), s.queryPos);
                const float* base = &pool[size_t(s.slot) * blockFloats];
                for (int t = s.first; t < s.first + s.count; ++t) {
                    const float* kk = base + kIndex(layer, g, t);
                    double dot = 0;
                    for (int i = 0; i < D; ++i) dot += double(qr[size_t(i)]) * kk[i];
                    w.push_back(dot * scale);
                }
            }
            double mx = -INFINITY, sum = 0;
            for (double x : w) mx = std::max(mx, x);
            for (double& x : w) sum += (x = std::exp(x - mx));
            std::vector<double> acc(static_cast<size_t>(D), 0.0);
            size_t n = 0;
            for (const DeviceSpan& s : spans) {
                const float* base = &pool[size_t(s.slot) * blockFloats] + halfFloats;
                for (int t = s.first; t < s.first + s.count; ++t, ++n)
                    for (int i = 0; i < D; ++i) acc[size_t(i)] += w[n] / sum * base[kIndex(layer, g, t) + i];
            }
            for (int i = 0; i < D; ++i) out[size_t(hh) * D + i] = w.empty() ? 0.f : float(acc[size_t(i)]);
            if (trackTokens > 0) {
                size_t k = 0;
                for (const DeviceSpan& s : spans) {
                    for (int t = 0; t < s.count; ++t, ++k)
                        if (s.track >= 0 && s.track + t < trackTokens) mass[s.track + t] += float(w[k] / sum);
                }
            }
        }
        return Status::ok();
    }
};

}  // namespace

std::unique_ptr<StepBackend> makeMirrorBackend(std::shared_ptr<const ModelWeights> model, int64_t faultAtStep, size_t memoryLimit) {
    return std::make_unique<MirrorBackend>(std::move(model), faultAtStep, memoryLimit);
}

}  // namespace quire::decoder
