// libFuzzer target: a decoder's saved state (what a project's decoder_state row holds and a
// resumed reader run restores) on arbitrary bytes. It must refuse or restore, never crash; a
// restored session must take a further step. With QUIRE_FUZZ_SEED_DIR set, writes a real state
// (SR-SWA, line-aligned positions, mid-volume) there first as a seed. Every other page comes back
// with a gate summary, as the reader keeps them, so both ways of restoring a page are explored.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "quire/decoder/session.h"

using namespace quire;
using namespace quire::decoder;

namespace {

constexpr int kPageTokens = 24;

ModelConfig config() {
    ModelConfig c;
    c.vocabSize = 48, c.hiddenSize = 32, c.numLayers = 2, c.numHeads = 4, c.numKvHeads = 2, c.headDim = 8;
    c.intermediateSize = 48, c.visualDim = 12;
    c.visualTokenIds = c.pageAlignedPositions = true;
    c.lineEndTokenIds = {4, 6};
    c.visualLineEndTokenId = 5;
    return c;
}

AttentionParams params() {
    AttentionParams p;
    p.recentTokens = 16;
    p.gatedPages = 1;
    p.blocksPerGatedPage = 1;
    p.maxPageTokens = kPageTokens;
    p.trackAttention = true;
    return p;
}

std::vector<float> page(int n) {
    std::vector<float> v;
    for (int t = 0; t < kPageTokens; ++t) {
        for (int i = 0; i < 12; ++i) v.push_back(float(((n * 31 + t * 7 + i * 3) % 17) - 8) / 8.f);
        v.push_back(float(t % 6 == 5 ? 5 : 10 + (t + n) % 7));
    }
    return v;
}

const std::shared_ptr<const ModelWeights>& model() {
    static const auto m = std::make_shared<const ModelWeights>(randomModel(config(), 3));
    return m;
}

void writeSeed(const std::string& dir) {
    DecodeSession s(model(), params());
    if (!s.begin({1, 9})) return;
    int token = 1;
    for (int n = 0; n < 5; ++n) {
        const auto f = page(n);
        if (!s.addPage(n, f.data(), kPageTokens)) return;
        for (int k = 0; k < 20; ++k) {
            auto r = s.step(n > 0 && k == 0 ? 3 : token);
            if (!r) return;
            token = k % 5 == 4 ? 4 : 10 + k % 9;
        }
    }
    std::ofstream(dir + "/seed-state", std::ios::binary) << s.saveState();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("QUIRE_FUZZ_SEED_DIR")) writeSeed(dir);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string state(reinterpret_cast<const char*>(data), size);
    auto restored = DecodeSession::restore(model(), params(), state, [](int n) -> Result<std::vector<float>> {
        if (n < 0 || n > 64) return Status(ErrorCode::NotFound, "no such page");
        std::vector<float> row = page(n);
        if (n % 2 == 0)  // every other page also brings a gate summary (restore then skips computing it)
            for (int i = 0; i < 2 * 2 * 8; ++i) row.push_back(float((n * 13 + i * 5) % 11 - 5) / 4.f);
        return row;
    });
    if (restored) {
        auto r = (*restored)->step(10);
        if (r) {
            volatile float sink = 0;
            for (float v : *r->logits) sink = sink + v;
        }
    }
    return 0;
}
