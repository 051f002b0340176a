// GPU decode-step benchmark for tools/gpu-check.sh: quire::cuda::DecoderStep on generated weights,
// with the attended set each attention mode has at pages 10, 100 and 1,000 of a volume (273 visual
// tokens and 24 generated tokens a page, 4 sinks, a ring of 128, SR-SWA's window of 4 pages plus
// 4 gated pages × 8 blocks). Prints one JSON line per (shape, mode, page): the median ms of a step
// run as one graph launch and of a step run layer by layer (SR-SWA's gate refreshes, one step in
// 8), the bytes the step must read (bf16 weights + fp32 keys and values attended) and the H200's
// floor for them (÷ 4.8 TB/s). It reads values it never checks: decoder_step_check does that.
// Plain C++ (no Qt), so it builds on the GPU machine. Skips without a GPU.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "check_util.h"
#include "quire_cuda/decoder_step.h"
#include "quire_cuda/device.h"

using namespace quire::cuda;
using namespace quire::cuda::check;

namespace {

constexpr int kBlockTokens = 16;

struct Weights {
    std::vector<std::vector<float>> keep;
    DecoderHostWeights host;
};

// Every matrix of a layer shares one random buffer (timing does not depend on the values).
Weights makeWeights(const DecoderShape& c) {
    Weights w;
    const size_t H = size_t(c.hidden), big = std::max({size_t(c.vocab) * H, size_t(c.intermediate) * H,
                                                       size_t(c.heads) * c.headDim * H});
    w.keep.push_back(randomVec(big, 1));
    for (auto& x : w.keep[0]) x *= 0.02f;
    w.keep.push_back(std::vector<float>(H, 1.f));
    const float* m = w.keep[0].data();
    const float* n = w.keep[1].data();
    w.host.embed = m, w.host.finalNorm = n, w.host.head = m;
    for (int l = 0; l < c.layers; ++l) w.host.layers.push_back({n, m, m, m, m, n, m, m, m});
    return w;
}

double median(std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

void bench(const std::string& name, const DecoderShape& c) {
    const Weights w = makeWeights(c);
    std::string why;
    auto dev = DecoderStep::create(c, w.host, true, &why);
    if (!dev) {
        std::printf("{\"shape\":\"%s\",\"error\":\"%s\"}\n", name.c_str(), why.c_str());
        return;
    }
    const size_t kvPerToken = size_t(2) * c.layers * c.kvHeads * c.headDim * sizeof(float);
    const size_t matrices = size_t(c.layers) * (size_t(c.hidden) * (c.heads + 2 * c.kvHeads) * c.headDim +
                                                size_t(c.heads) * c.headDim * c.hidden + 3 * size_t(c.hidden) * c.intermediate) +
                            size_t(c.vocab) * c.hidden;
    const size_t blockFloats = size_t(2) * c.layers * c.kvHeads * kBlockTokens * c.headDim;
    const std::vector<float> block = randomVec(blockFloats, 3);
    int written = 0;
    for (const char* mode : {"srswa", "rswa", "full"})
        for (int pages : {10, 100, 1000}) {
            const std::string m = mode;
            const long attended = m == "srswa" ? 4 + 4 * 273 + 4 * 8 * 16 + 128
                                  : m == "rswa" ? 4 + long(pages) * 273 + 128
                                                : 4 + long(pages) * (273 + 24);
            const int spanCount = int((attended + kBlockTokens - 1) / kBlockTokens);
            const int slots = spanCount + 1;
            std::string e = dev->reserveSlots(slots);
            for (; e.empty() && written < dev->slots(); ++written) e = dev->writeSlot(written, block.data());
            if (!e.empty()) {
                std::printf("{\"shape\":\"%s\",\"mode\":\"%s\",\"page\":%d,\"error\":\"%s\"}\n", name.c_str(), mode, pages, e.c_str());
                continue;
            }
            std::vector<AttentionSpan> spans;
            long left = attended;
            for (int s = 0; s < spanCount; ++s, left -= kBlockTokens) spans.push_back({s + 1, 0, int(std::min<long>(left, kBlockTokens)), 100000});
            std::vector<float> logits(size_t(c.vocab)), q(size_t(c.layers) * c.heads * c.headDim),
                k(size_t(c.layers) * c.kvHeads * c.headDim), v(k.size());
            auto spansFor = [&](int, const float*, std::vector<AttentionSpan>& out) {
                out = spans;
                return std::string();
            };
            std::vector<double> graphMs, layerMs;
            for (int i = 0; i < 40 && e.empty(); ++i) {
                const bool perLayer = i % 4 == 3;
                const auto t0 = std::chrono::steady_clock::now();
                e = dev->step(5 + i, 0, i % kBlockTokens, 100000 + i, spansFor, perLayer, logits.data(), q.data(), k.data(), v.data());
                const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                if (i >= 4) (perLayer ? layerMs : graphMs).push_back(ms);
            }
            if (!e.empty()) {
                std::printf("{\"shape\":\"%s\",\"mode\":\"%s\",\"page\":%d,\"error\":\"%s\"}\n", name.c_str(), mode, pages, e.c_str());
                continue;
            }
            const size_t bytes = matrices * 2 + size_t(attended) * kvPerToken;
            const double floorMs = double(bytes) / 4.8e12 * 1e3, g = median(graphMs), lb = median(layerMs);
            std::printf("{\"shape\":\"%s\",\"mode\":\"%s\",\"page\":%d,\"attendedTokens\":%ld,\"graphMsPerStep\":%.4f,"
                        "\"layerByLayerMsPerStep\":%.4f,\"bytesPerStep\":%zu,\"h200FloorMs\":%.4f,\"fractionOfFloor\":%.3f,"
                        "\"deviceBytes\":%zu}\n",
                        name.c_str(), mode, pages, attended, g, lb, bytes, floorMs, floorMs / g, dev->deviceBytes());
            std::fflush(stdout);
        }
}

}  // namespace

int main() {
    std::string why;
    if (listDevices(&why).empty()) {
        std::printf("no GPU (%s): decoder step benchmark skipped\n", why.c_str());
        return 0;
    }
    DecoderShape reader;
    reader.vocab = 6627, reader.hidden = 384, reader.layers = 4, reader.heads = 6, reader.kvHeads = 2, reader.headDim = 64,
    reader.intermediate = 1024;
    DecoderShape unlimited;  // Unlimited-OCR's decoder with a dense MLP
    unlimited.vocab = 129280, unlimited.hidden = 1280, unlimited.layers = 12, unlimited.heads = 10, unlimited.kvHeads = 10,
    unlimited.headDim = 128, unlimited.intermediate = 3584;
    bench("reader", reader);
    bench("unlimited-ocr", unlimited);
    return 0;
}
