// The packed copy of a model's weights, made once and shared by the sessions on the model.
#include "decoder/packed_weights.h"

#include <map>
#include <mutex>

namespace quire::decoder {

std::shared_ptr<const PackedWeights> packedWeightsOf(const std::shared_ptr<const ModelWeights>& model) {
    static std::mutex mutex;
    static std::map<const ModelWeights*, std::weak_ptr<const PackedWeights>> cache;
    std::lock_guard lock(mutex);
    std::erase_if(cache, [](const auto& e) { return e.second.expired(); });
    if (auto it = cache.find(model.get()); it != cache.end())
        if (auto packed = it->second.lock()) return packed;
    const ModelConfig& c = model->config;
    const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, F = c.intermediateSize;
    auto packed = std::make_shared<PackedWeights>();
    packed->model = model;
    for (const LayerWeights& L : model->layers)
        packed->layers.push_back(
            {{L.wq, Q, H}, {L.wk, KV, H}, {L.wv, KV, H}, {L.wo, H, Q}, {L.wGate, F, H}, {L.wUp, F, H}, {L.wDown, H, F}});
    packed->head = PackedMatrix(model->head(), c.vocabSize, H);
    cache[model.get()] = packed;
    return packed;
}

}  // namespace quire::decoder
