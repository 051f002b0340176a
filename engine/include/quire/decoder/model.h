// Decoder weights of the supported family: token embedding, a projector for visual tokens,
// RMSNorm, rotary positions, grouped-query attention, SwiGLU MLP, tied or separate LM head.
// On disk: config.json + model.safetensors in one folder (docs/MODEL_FORMAT.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "quire/decoder/config.h"
#include "quire/decoder/safetensors.h"

namespace quire::decoder {

struct LayerWeights {
    std::vector<float> attnNorm;  // [hidden]
    std::vector<float> wq;        // [heads*headDim, hidden] row-major
    std::vector<float> wk, wv;    // [kvHeads*headDim, hidden]
    std::vector<float> wo;        // [hidden, heads*headDim]
    std::vector<float> mlpNorm;   // [hidden]
    std::vector<float> wGate, wUp;  // [intermediate, hidden]
    std::vector<float> wDown;       // [hidden, intermediate]
};

struct ModelWeights {
    ModelConfig config;
    std::vector<float> embed;      // [vocab, hidden]
    std::vector<float> visualW;    // [hidden, visualDim]
    std::vector<float> visualB;    // [hidden]
    std::vector<float> evidenceGain;  // [visualEvidenceIds, hidden]: each evidence id's embedding scale
    std::vector<LayerWeights> layers;
    std::vector<float> finalNorm;  // [hidden]
    std::vector<float> lmHead;     // [vocab, hidden]; empty when tied to embed
    const float* head() const { return lmHead.empty() ? embed.data() : lmHead.data(); }
    size_t parameterCount() const;
};

// Loads and checks every tensor's name, shape and dtype against the config; fp32/bf16/fp16 on disk,
// fp32 in memory. NaN or infinite weights are refused with the tensor's name.
Result<std::shared_ptr<const ModelWeights>> loadModel(const std::filesystem::path& dir);
Status saveModel(const ModelWeights& model, const std::filesystem::path& dir, DType storeAs = DType::F32);
// Adds a visual token's id embeddings to its projection `x` [hidden]: the id after its features
// and each evidence id (visual_evidence_ids, -1: none) scaled by its gain. `token` is the token's
// row (visualStride() floats, ids checked by DecodeSession::addPage).
void addVisualTokenIds(const ModelWeights& m, const float* token, float* x);
// Weights drawn from a fixed seed (scaled so activations stay well-conditioned): tests and benches.
ModelWeights randomModel(const ModelConfig& config, uint64_t seed);

}  // namespace quire::decoder
