// `quire-cli bench decode`: KV memory, per-token latency along the volume, throughput and, for
// SR-SWA, attention-mass recall against full attention, on a model with generated weights or a
// trained one (the shipped reader) fed the visual tokens of real pages.
#pragma once

#include <string>
#include <vector>

#include "quire/decoder/session.h"

namespace quire::decoder {

struct DecodeBenchParams {
    ModelConfig config;
    AttentionParams attention;
    int pages = 100;
    int pageTokens = 273;       // visual tokens per page
    int tokensPerPage = 24;     // generated tokens per page (the last one is a page break)
    std::vector<int> checkpoints = {10, 100, 1000};
    std::string device = "cpu";
    int batch = 1;              // volumes stepped together (DecodeSession::stepBatch)
    uint64_t seed = 1;
    double maxKvBytes = 8e9;    // stop (full attention) before the KV cache outgrows this
    bool recall = false;        // SR-SWA: attention-mass recall at the checkpoints
    // A trained model (its config is `config`); null: generated weights of `config`'s shape.
    std::shared_ptr<const ModelWeights> model;
    // The visual tokens (with ids where the model takes them) of real pages, fed in turn and over
    // again to make a volume of `pages`; empty: generated pages of `pageTokens` tokens.
    std::vector<std::vector<float>> pageInputs;
};

struct DecodeCheckpoint {
    int page = 0;
    double msPerToken = 0;      // median over the page's generated tokens (a batch's step over its size)
    size_t kvBytes = 0;         // KV memory in use ("device" pool), one session's
    size_t kvCapacityBytes = 0; // reserved
    size_t hostBytes = 0;       // offloaded pages
    int attendedTokens = 0;
    size_t bytesPerStep = 0;    // weights (as stored on the device) + the keys and values the batch's sessions attend
    size_t deviceBytes = 0;     // GPU memory the session holds (cuda; with a batch, the shared device's)
    double recallMean = -1, recallP1 = -1;
};

struct DecodeBenchResult {
    std::string mode, device, shape;
    size_t parameters = 0;
    int pagesDone = 0, batch = 1;
    double tokensPerSecond = 0;
    size_t peakKvBytes = 0;
    std::vector<DecodeCheckpoint> checkpoints;
    // FNV-1a over every step's chosen token and the bits of its logit, session by session: two
    // builds that compute the same steps print the same checksum (a check for refactors).
    uint64_t checksum = 0;
    std::string note;  // why it stopped early, if it did
    // Per session, the SR-SWA budgets it ran with and how many times they were halved because the
    // device had not the memory for those asked (AttentionParams::deviceMemoryLimit, a full GPU).
    struct Budget {
        int gatedPages = 0, blocksPerGatedPage = 0, cuts = 0;
    };
    std::vector<Budget> budgets;
    std::string toJson() const;
};

Result<DecodeBenchResult> runDecodeBench(const DecodeBenchParams& params);

// Named shapes: "reader" (Quire's reader) and "unlimited-ocr" (the anchor's decoder, dense MLP).
Result<ModelConfig> benchShape(const std::string& name);

}  // namespace quire::decoder
