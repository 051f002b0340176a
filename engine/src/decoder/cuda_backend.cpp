// The CUDA StepBackend: the engine's side of quire::cuda::DecoderStep (cuda/), which takes plain
// pointers and returns errors as strings.
#include "decoder/step_backend.h"

#include <cstddef>

#ifdef QUIRE_HAVE_CUDA
#include "quire_cuda/decoder_step.h"
#endif

namespace quire::decoder {

#ifdef QUIRE_HAVE_CUDA
namespace {

static_assert(sizeof(DeviceSpan) == sizeof(cuda::AttentionSpan) && offsetof(DeviceSpan, first) == offsetof(cuda::AttentionSpan, first) &&
                  offsetof(DeviceSpan, count) == offsetof(cuda::AttentionSpan, count) &&
                  offsetof(DeviceSpan, queryPos) == offsetof(cuda::AttentionSpan, queryPos) &&
                  offsetof(DeviceSpan, track) == offsetof(cuda::AttentionSpan, track),
              "DeviceSpan and cuda::AttentionSpan must share a layout");

void toCuda(const std::vector<DeviceSpan>& spans, std::vector<cuda::AttentionSpan>& out) {
    out.resize(spans.size());
    for (size_t i = 0; i < spans.size(); ++i)
        out[i] = {spans[i].slot, spans[i].first, spans[i].count, spans[i].queryPos, spans[i].track};
}

// cudaErrorMemoryAllocation reads "out of memory"; DecoderStep's own refusals "out of device memory".
Status fromCuda(const std::string& e) {
    if (e.empty()) return Status::ok();
    const bool memory = e.find("out of memory") != std::string::npos || e.find("out of device memory") != std::string::npos;
    return Status(memory ? ErrorCode::OutOfMemory : ErrorCode::Engine, "CUDA decoder: " + e);
}

class CudaBackend final : public StepBackend {
public:
    explicit CudaBackend(std::unique_ptr<cuda::DecoderStep> s) : dev(std::move(s)) {}
    const char* name() const override { return "cuda"; }
    Status reserveSlots(int n) override { return fromCuda(dev->reserveSlots(n)); }
    int slots() const override { return dev->slots(); }
    Status writeSlot(int slot, const float* block) override { return fromCuda(dev->writeSlot(slot, block)); }
    Status writeSlotLayer(int slot, int layer, const float* block) override {
        return fromCuda(dev->writeSlotLayer(slot, layer, block));
    }
    size_t deviceBytes() const override { return dev->deviceBytes(); }
    Status prefill(const DevicePrefillIO& io, int maxTokens) override {
        cuda::PrefillSpec spec;
        spec.tokens = io.tokens, spec.pos0 = io.pos0, spec.visual = io.visual, spec.blockSlots = io.blockSlots;
        spec.spans = reinterpret_cast<const cuda::AttentionSpan*>(io.spans);  // same layout (static_assert above)
        spec.offsets = io.offsets, spec.keys = io.keys, spec.values = io.values;
        return fromCuda(dev->prefill(spec, maxTokens));
    }
    Status reservePrefill(int maxTokens) override { return fromCuda(dev->reservePrefill(maxTokens)); }
    Status step(const DeviceStepIO& io, const SpansFor& spansFor, bool perLayer) override {
        std::vector<DeviceSpan> spans;
        Status inner;  // the session's own error, passed through as it is
        auto adapt = [&](int layer, const float* query, std::vector<cuda::AttentionSpan>& out) -> std::string {
            inner = spansFor(layer, query, spans);
            if (!inner) return inner.message();
            toCuda(spans, out);
            return {};
        };
        const std::string e = dev->step(io.token, io.slot, io.t, io.pos, adapt, perLayer, io.logits, io.queries, io.keys, io.values,
                                        io.trackTokens, io.attendedMass);
        if (!inner) return inner;
        return fromCuda(e);
    }

    Status stepBatch(const std::vector<DeviceStepIO>& ios, const BatchSpansFor& spansFor, bool perLayer) override {
        std::vector<cuda::BatchItem> items;
        for (const DeviceStepIO& io : ios)
            items.push_back({io.token, io.slot, io.t, io.pos, io.logits, io.queries, io.keys, io.values, io.trackTokens,
                             io.attendedMass});
        std::vector<DeviceSpan> spans;
        Status inner;
        auto adapt = [&](int item, int layer, const float* query, std::vector<cuda::AttentionSpan>& out) -> std::string {
            inner = spansFor(item, layer, query, spans);
            if (!inner) return inner.message();
            toCuda(spans, out);
            return {};
        };
        const std::string e = dev->stepBatch(items, adapt, perLayer);
        if (!inner) return inner;
        return fromCuda(e);
    }

private:
    std::unique_ptr<cuda::DecoderStep> dev;
};

}  // namespace

Result<std::unique_ptr<StepBackend>> makeCudaBackend(std::shared_ptr<const ModelWeights> model, bool bf16Weights,
                                                     size_t memoryLimit) {
    const ModelConfig& c = model->config;
    cuda::DecoderShape shape;
    shape.vocab = c.vocabSize, shape.hidden = c.hiddenSize, shape.layers = c.numLayers, shape.heads = c.numHeads;
    shape.kvHeads = c.numKvHeads, shape.headDim = c.headDim, shape.intermediate = c.intermediateSize;
    shape.rmsEps = c.rmsNormEps, shape.ropeTheta = c.ropeTheta;
    shape.visualDim = c.visualDim, shape.visualTokenIds = c.visualTokenIds, shape.evidenceIds = c.visualEvidenceIds;
    cuda::DecoderHostWeights w;
    w.embed = model->embed.data(), w.finalNorm = model->finalNorm.data(), w.head = model->head();
    w.visualW = model->visualW.data(), w.visualB = model->visualB.data();
    w.evidenceGain = model->evidenceGain.empty() ? nullptr : model->evidenceGain.data();
    for (const LayerWeights& L : model->layers)
        w.layers.push_back({L.attnNorm.data(), L.wq.data(), L.wk.data(), L.wv.data(), L.wo.data(), L.mlpNorm.data(),
                            L.wGate.data(), L.wUp.data(), L.wDown.data()});
    std::string why;
    auto step = cuda::DecoderStep::create(shape, w, bf16Weights, &why, memoryLimit);
    if (!step) {
        const Status s = fromCuda(why.empty() ? "no device" : why);
        return Status(s.code(), why);
    }
    return std::unique_ptr<StepBackend>(std::make_unique<CudaBackend>(std::move(step)));
}
#else
Result<std::unique_ptr<StepBackend>> makeCudaBackend(std::shared_ptr<const ModelWeights>, bool, size_t) {
    return Status(ErrorCode::InvalidArgument, "this build has no CUDA backend (configure with -DQUIRE_CUDA=ON where nvcc exists)");
}
#endif

}  // namespace quire::decoder
