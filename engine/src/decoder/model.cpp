// A decoder model's weights from safetensors (and random ones for tests and benchmarks).
#include "quire/decoder/model.h"

#include <cmath>
#include <fstream>
#include <random>

namespace fs = std::filesystem;

namespace quire::decoder {

size_t ModelWeights::parameterCount() const {
    size_t n = embed.size() + visualW.size() + visualB.size() + evidenceGain.size() + finalNorm.size() + lmHead.size();
    for (const auto& l : layers)
        n += l.attnNorm.size() + l.wq.size() + l.wk.size() + l.wv.size() + l.wo.size() + l.mlpNorm.size() +
             l.wGate.size() + l.wUp.size() + l.wDown.size();
    return n;
}

namespace {

using Shape = std::vector<int64_t>;

struct Entry {
    std::string name;
    Shape shape;
    std::vector<float>* target;
};

std::vector<Entry> entries(ModelWeights& m) {
    const ModelConfig& c = m.config;
    const int64_t H = c.hiddenSize, Q = int64_t(c.numHeads) * c.headDim, KV = int64_t(c.numKvHeads) * c.headDim,
                  F = c.intermediateSize;
    std::vector<Entry> e = {{"embed_tokens.weight", {c.vocabSize, H}, &m.embed},
                            {"visual_proj.weight", {H, c.visualDim}, &m.visualW},
                            {"visual_proj.bias", {H}, &m.visualB},
                            {"norm.weight", {H}, &m.finalNorm}};
    m.layers.resize(size_t(c.numLayers));
    for (int i = 0; i < c.numLayers; ++i) {
        auto& L = m.layers[size_t(i)];
        const std::string p = "layers." + std::to_string(i) + ".";
        e.push_back({p + "attn_norm.weight", {H}, &L.attnNorm});
        e.push_back({p + "q_proj.weight", {Q, H}, &L.wq});
        e.push_back({p + "k_proj.weight", {KV, H}, &L.wk});
        e.push_back({p + "v_proj.weight", {KV, H}, &L.wv});
        e.push_back({p + "o_proj.weight", {H, Q}, &L.wo});
        e.push_back({p + "mlp_norm.weight", {H}, &L.mlpNorm});
        e.push_back({p + "gate_proj.weight", {F, H}, &L.wGate});
        e.push_back({p + "up_proj.weight", {F, H}, &L.wUp});
        e.push_back({p + "down_proj.weight", {H, F}, &L.wDown});
    }
    if (!c.tieWordEmbeddings) e.push_back({"lm_head.weight", {c.vocabSize, H}, &m.lmHead});
    if (c.visualEvidenceIds) e.push_back({"visual_evidence_gain", {c.visualEvidenceIds, H}, &m.evidenceGain});
    return e;
}

}  // namespace

Result<std::shared_ptr<const ModelWeights>> loadModel(const fs::path& dir) {
    auto config = ModelConfig::load(dir / "config.json");
    if (!config) return config.status();
    auto st = SafeTensors::open(dir / "model.safetensors");
    if (!st) return st.status();
    auto model = std::make_shared<ModelWeights>();
    model->config = *config;
    for (const Entry& e : entries(*model)) {
        auto t = (*st)->get(e.name, e.shape);
        if (!t) return t.status();
        *e.target = t->toFloat();
        for (float v : *e.target)
            if (!std::isfinite(v))
                return Status(ErrorCode::Corrupt, (dir / "model.safetensors").string() + ": tensor '" + e.name +
                                                      "' holds NaN or infinite values");
    }
    return std::shared_ptr<const ModelWeights>(std::move(model));
}

Status saveModel(const ModelWeights& model, const fs::path& dir, DType storeAs) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    {
        std::ofstream cfg(dir / "config.json");
        cfg << model.config.toJson();
        if (!cfg) return Status(ErrorCode::Io, (dir / "config.json").string() + ": cannot write");
    }
    ModelWeights copy = model;
    std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>> tensors;
    for (const Entry& e : entries(copy)) tensors.push_back({e.name, {e.shape, *e.target}});
    return writeSafeTensors(dir / "model.safetensors", tensors, storeAs);
}

void addVisualTokenIds(const ModelWeights& m, const float* token, float* x) {
    const ModelConfig& c = m.config;
    const size_t H = size_t(c.hiddenSize);
    const float* e = &m.embed[size_t(token[c.visualDim]) * H];
    for (size_t j = 0; j < H; ++j) x[j] += e[j];
    for (int k = 0; k < c.visualEvidenceIds; ++k) {
        const float id = token[c.visualDim + 1 + k];
        if (id < 0) continue;
        const float* g = &m.evidenceGain[size_t(k) * H];
        e = &m.embed[size_t(id) * H];
        for (size_t j = 0; j < H; ++j) x[j] += g[j] * e[j];
    }
}

ModelWeights randomModel(const ModelConfig& config, uint64_t seed) {
    ModelWeights m;
    m.config = config;
    std::mt19937_64 rng(seed);
    for (const Entry& e : entries(m)) {
        int64_t n = 1;
        for (auto d : e.shape) n *= d;
        e.target->resize(size_t(n));
        const bool norm = e.name.find("norm") != std::string::npos;
        const bool bias = e.name.find("bias") != std::string::npos;
        const double fanIn = e.shape.size() == 2 ? double(e.shape[1]) : 1.0;
        std::normal_distribution<float> dist(0.0f, norm ? 0.1f : bias ? 0.02f : float(1.0 / std::sqrt(fanIn)));
        for (auto& v : *e.target) v = (norm ? 1.0f : 0.0f) + dist(rng);
    }
    return m;
}

}  // namespace quire::decoder
