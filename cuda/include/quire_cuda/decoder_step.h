// A decoder's generated step on the GPU: weights resident (bf16 or fp32, products accumulated in
// fp32 by cuBLAS), a pool of KV blocks in the session's layout ([K|V][layer][kvHead][16][headDim]),
// and the step's kernels: embedding, RMSNorm, the Q/K/V, output, gate/up/down and LM-head
// products, rotary, the key and value written into the pool, paged attention over the spans
// (split over the KV, online softmax) and SwiGLU. A step whose spans are known before it starts
// is one CUDA graph launch (captured on the first such step, captured again when the pool grows);
// nothing is allocated inside a step. No CUDA types here: the engine includes it as plain C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "quire_cuda/ops.h"

namespace quire::cuda {

struct DecoderShape {
    int vocab = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0, intermediate = 0;
    int visualDim = 0;            // features of a visual token (the projector's input)
    bool visualTokenIds = false;  // each visual token also carries a vocabulary id after its features
    int evidenceIds = 0;          // and these evidence ids after it (-1: none), scaled embeddings added
    float rmsEps = 1e-5f;
    double ropeTheta = 10000.0;
    int visualStride() const { return visualDim + (visualTokenIds ? 1 + evidenceIds : 0); }
};

// Host pointers to fp32 weights, row-major [out, in] like the engine's.
struct DecoderHostLayer {
    const float *attnNorm, *wq, *wk, *wv, *wo, *mlpNorm, *wGate, *wUp, *wDown;
};
struct DecoderHostWeights {
    const float* embed;  // [vocab, hidden]
    std::vector<DecoderHostLayer> layers;
    const float* finalNorm;
    const float* head;   // [vocab, hidden]
    const float* visualW = nullptr;  // [hidden, visualDim]
    const float* visualB = nullptr;  // [hidden]
    const float* evidenceGain = nullptr;  // [evidenceIds, hidden]
};

// A page's prefill (see DecoderStep::prefill).
struct PrefillSpec {
    int tokens = 0;
    int64_t pos0 = 0;
    const float* visual = nullptr;        // host [tokens, DecoderShape::visualStride()]
    const int32_t* blockSlots = nullptr;  // host [ceil(tokens / 16)]
    const AttentionSpan* spans = nullptr; // host, token t's at [offsets[t], offsets[t + 1])
    const int32_t* offsets = nullptr;     // host [tokens + 1]
    float* keys = nullptr;                // host [layers][tokens][kvHeads · headDim], pre-rotary
    float* values = nullptr;              // host [layers][tokens][kvHeads · headDim]
};

// One sequence's part of a batched step (DecoderStep::stepBatch): its token, the slot and place
// of its key and value, its position, and where its outputs go (host arrays as step()'s).
struct BatchItem {
    int token = 0, slot = 0, t = 0;
    int64_t pos = 0;
    float *logits = nullptr, *queries = nullptr, *keys = nullptr, *values = nullptr;
    // Attention tracking as step()'s: trackTokens > 0 fills attendedMass[trackTokens].
    int trackTokens = 0;
    float* attendedMass = nullptr;
};

class DecoderStep {
public:
    // Uploads the weights; fails (null, with `why`) without a device or the memory for them.
    // memoryLimit > 0: the most device memory it allocates in all (weights, pool, scratch); an
    // allocation beyond it fails as the device's own would ("out of device memory").
    static std::unique_ptr<DecoderStep> create(const DecoderShape& shape, const DecoderHostWeights& weights, bool bf16,
                                               std::string* why, size_t memoryLimit = 0);
    ~DecoderStep();
    DecoderStep(const DecoderStep&) = delete;
    DecoderStep& operator=(const DecoderStep&) = delete;

    std::string reserveSlots(int slots);
    // The prefill's scratch for pages of up to maxTokens tokens (prefill() makes it when first needed).
    std::string reservePrefill(int maxTokens);
    int slots() const;
    std::string writeSlot(int slot, const float* block);
    std::string writeSlotLayer(int slot, int layer, const float* block);

    // spansFor(layer, preRotaryQuery or null, spans) fills the layer's spans; `perLayer` as in the
    // engine's StepBackend. Outputs are host arrays: logits [vocab], queries [layers][heads·D],
    // keys (rotated) and values [layers][kvHeads·D]. With trackTokens > 0, attendedMass[trackTokens]
    // receives the softmax weight of each tracked token (AttentionSpan::track), summed over heads
    // and layers.
    using SpansFor = std::function<std::string(int layer, const float* query, std::vector<AttentionSpan>& spans)>;
    std::string step(int token, int slot, int t, int64_t pos, const SpansFor& spansFor, bool perLayer, float* logits,
                     float* queries, float* keys, float* values, int trackTokens = 0, float* attendedMass = nullptr);
    // The steps of several sequences whose blocks lie in this pool (each its own slots), together:
    // each weight matrix applied to all their rows in one product (read once for the batch), the
    // attention one launch over every sequence's spans (grid z: the sequence). spansFor(item,
    // layer, query or null, spans) gives item's spans; `perLayer` as step()'s. Items with
    // trackTokens > 0 get their attention mass as step() gives it (one more launch a layer for
    // the batch). With the spans up front, one CUDA graph launch (captured once per batch size and tracking, the
    // tokens, slots, positions and spans read from device memory); layer by layer otherwise. Its
    // scratch grows to the largest batch seen (the graphs captured again then).
    using BatchSpansFor =
        std::function<std::string(int item, int layer, const float* query, std::vector<AttentionSpan>& spans)>;
    std::string stepBatch(const std::vector<BatchItem>& items, const BatchSpansFor& spansFor, bool perLayer);
    // A page's visual tokens through every layer in matrix products (rows = tokens): the
    // projector, then per layer the keys and values written into the page's slots and every
    // token's causal attention over its spans in one launch. `maxTokens` sizes the scratch, kept
    // from the first call.
    std::string prefill(const PrefillSpec& spec, int maxTokens);
    size_t deviceBytes() const;

    struct Impl;

private:
    explicit DecoderStep(std::unique_ptr<Impl> d);
    std::unique_ptr<Impl> d;
};

}  // namespace quire::cuda
