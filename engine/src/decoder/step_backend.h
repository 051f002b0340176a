// A device that runs a session's generated steps: the weights and a mirror of the KV pool live on
// it, and the session (engine/src/decoder/session.cpp) keeps every decision on the host — which
// pages are in the window, what the page gate and the token selector pick, where the position
// frame puts each span — and hands the device, per layer, the spans to attend as (slot, first,
// count, query position). The device computes the token: embedding, every layer (its key and
// value written into the mirror at (slot, t)), the logits; and gives back what the host's
// bookkeeping needs (the pre-rotary queries for the gate, the token's rotated keys and values).
//
// Two implementations: CUDA (cuda/, through quire::cuda::DecoderStep) and the mirror, plain loops
// over host memory that reads nothing but what the session uploaded — so tests on a machine
// without a GPU check the session's side of the device path (uploads, staging, spans) against
// the CPU session; cuda/tests check each kernel against the same plain loops.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "quire/decoder/model.h"

namespace quire::decoder {

// Layout-compatible with quire::cuda::AttentionSpan.
struct DeviceSpan {
    int32_t slot, first, count;
    int64_t queryPos;
    // Attention tracking: the index of the span's first token among the current page's visual
    // tokens, whose attention weights (summed over heads and layers) the step returns; -1: not tracked.
    int32_t track = -1;
};

struct DeviceStepIO {
    int token = 0;    // the input token
    int slot = 0;     // device slot and place of the token's key and value
    int t = 0;
    int64_t pos = 0;  // its position (keys are rotated at it)
    float* logits = nullptr;   // [vocab]
    float* queries = nullptr;  // [layers][heads · headDim], pre-rotary
    float* keys = nullptr;     // [layers][kvHeads · headDim], rotated at pos
    float* values = nullptr;   // [layers][kvHeads · headDim]
    // Attention tracking: trackTokens > 0 asks for the attention mass on each of the current
    // page's visual tokens, summed over layers and heads, into attendedMass[trackTokens].
    int trackTokens = 0;
    float* attendedMass = nullptr;
};

// A page's prefill: its visual tokens through every layer at positions pos0, pos0 + 1, ...; each
// token attends to spans[offsets[t] .. offsets[t + 1]) (the sinks, framed, and its page causally),
// its key and value written into the device's slot blockSlots[t / 16] at t % 16.
struct DevicePrefillIO {
    int tokens = 0;
    int64_t pos0 = 0;
    const float* visual = nullptr;          // [tokens, visualStride]
    const int32_t* blockSlots = nullptr;    // [ceil(tokens / 16)]
    const DeviceSpan* spans = nullptr;
    const int32_t* offsets = nullptr;       // [tokens + 1]
    float* keys = nullptr;    // [layers][tokens][kvHeads · headDim], pre-rotary
    float* values = nullptr;  // [layers][tokens][kvHeads · headDim]
};

class StepBackend {
public:
    virtual ~StepBackend() = default;
    virtual const char* name() const = 0;
    // At least `slots` blocks of the pool's layout ([K|V][layer][kvHead][16][headDim]); growing
    // keeps what the slots hold.
    virtual Status reserveSlots(int slots) = 0;
    virtual int slots() const = 0;
    // A whole block into `slot`, or only layer `layer`'s keys and values of `block` (same layout).
    virtual Status writeSlot(int slot, const float* block) = 0;
    virtual Status writeSlotLayer(int slot, int layer, const float* block) = 0;
    // The spans layer `layer` attends (the token itself included, its key already written). With
    // `perLayer` the device asks layer by layer, giving the layer's pre-rotary query (the token
    // selector needs it); without, it asks for every layer before it starts (query null) and may
    // run the step as one captured graph.
    using SpansFor = std::function<Status(int layer, const float* query, std::vector<DeviceSpan>& spans)>;
    virtual Status step(const DeviceStepIO& io, const SpansFor& spansFor, bool perLayer) = 0;
    // The steps of several sessions whose slots lie in this device (a SharedDevice's), together:
    // each weight read once for all of them. spansFor(item, layer, query, spans) is item's
    // spansFor; `perLayer` as step()'s, for them all; each io's attention tracking as step()'s.
    using BatchSpansFor = std::function<Status(int item, int layer, const float* query, std::vector<DeviceSpan>& spans)>;
    virtual Status stepBatch(const std::vector<DeviceStepIO>& ios, const BatchSpansFor& spansFor, bool perLayer) = 0;
    // At most `maxTokens` tokens a page (sizes the prefill's scratch, once).
    virtual Status prefill(const DevicePrefillIO& io, int maxTokens) = 0;
    // The prefill's scratch for pages of up to maxTokens tokens, now rather than at the first page.
    virtual Status reservePrefill(int maxTokens) = 0;
    // Device memory held: weights, pool, scratch.
    virtual size_t deviceBytes() const = 0;
};

// faultAtStep >= 0: its step() of that number (0 = the first) fails as an out-of-memory GPU would.
// memoryLimit > 0: the bytes it may hold (the weights as fp32 and the pool), like a small GPU:
// beyond it a reservation fails with ErrorCode::OutOfMemory.
std::unique_ptr<StepBackend> makeMirrorBackend(std::shared_ptr<const ModelWeights> model, int64_t faultAtStep = -1,
                                               size_t memoryLimit = 0);
// Fails with the reason where the build has no CUDA backend or no device can take the weights
// (ErrorCode::OutOfMemory where the memory is short); memoryLimit > 0 caps the bytes it allocates.
Result<std::unique_ptr<StepBackend>> makeCudaBackend(std::shared_ptr<const ModelWeights> model, bool bf16Weights,
                                                     size_t memoryLimit = 0);

}  // namespace quire::decoder
