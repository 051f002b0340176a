// The engine's CUDA decode session on the GPU machine, which cannot build Quire (no Qt, OpenCV or
// OpenBLAS there): built here, carried with the shared libraries it needs by tools/gpu-carry.sh,
// run by tools/gpu-check.sh. Plain C++ over the engine's API (no Qt Test):
//   1. the CUDA session against the CPU session, step by step: SR-SWA and R-SWA, fp32 and bf16
//      weights, attention tracking, 2,000 steps on the tiny test model with framed positions, 300
//      on the shipped reader (resources/models/reader: run from the repository's root) with its
//      ids and line-aligned positions, and on it given two evidence ids a token; four sessions on
//      one shared device stepped together against four CPU sessions (with --no-bench, the ctest
//      `decoder_device_check`, label gpu, where Quire builds on a GPU machine);
//   2. `bench decode` on the GPU and on the CPU in the same run, per mode, as JSON lines: the shipped
//      reader fed generated pages in its layout, and the Unlimited-OCR shape.
// Prints PASS/FAIL lines and "N passed, M failed"; exits 0 with a note where no GPU is present.
//
//   decoder_device_check [--reader-pages N] [--unlimited-pages N] [--no-bench] [--device mirror]
// (pages of the SR-SWA runs, 1,000 and 300 by default; R-SWA and full go to 100 at most, batch 16
// (sessions sharing the device, stepped together) and the CPU's run to 20, so that the whole run
// fits the GPU machine's ten minutes. mirror: the session checks on the CUDA path's CPU mirror,
// this program's own check on a machine without a GPU, no bench.)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quire/core/backend.h"
#include "quire/decoder/bench.h"
#include "quire/decoder/session.h"
#include "check_report.h"

using namespace quire;
using namespace quire::decoder;

namespace {

using gpucheck::report;

StepDevice g_device = StepDevice::Cuda;  // Mirror: the CUDA path's CPU mirror (no GPU needed)

// A generated page of `count` visual tokens in the model's layout: normal features, then (for a
// model with visual token ids) a vocabulary id, a line end every 37 tokens and at the page's end,
// and its evidence ids (a third of them -1, none).
std::vector<float> pageFeatures(int page, int count, const ModelConfig& cfg) {
    std::mt19937 rng(uint32_t(1000 + page));
    std::normal_distribution<float> n(0.f, 1.f);
    std::uniform_int_distribution<int> id(7, cfg.vocabSize - 1);
    const int stride = cfg.visualStride();
    std::vector<float> v(size_t(count) * stride);
    for (int t = 0; t < count; ++t) {
        float* row = &v[size_t(t) * stride];
        for (int k = 0; k < cfg.visualDim; ++k) row[k] = n(rng);
        if (!cfg.visualTokenIds) continue;
        const bool lineEnd = cfg.visualLineEndTokenId >= 0 && (t % 37 == 36 || t == count - 1);
        row[cfg.visualDim] = float(lineEnd ? cfg.visualLineEndTokenId : id(rng));
        for (int k = 1; k <= cfg.visualEvidenceIds; ++k) row[cfg.visualDim + k] = (t + k) % 3 ? float(id(rng)) : -1.f;
    }
    return v;
}

// `model` given `evidenceIds` evidence ids a token with seeded gains (an evidence model's shape and
// arithmetic).
std::shared_ptr<const ModelWeights> withEvidenceIds(const ModelWeights& model, int evidenceIds) {
    ModelWeights m = model;
    m.config.visualEvidenceIds = evidenceIds;
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.f, 0.5f);
    m.evidenceGain.resize(size_t(evidenceIds) * m.config.hiddenSize);
    for (auto& g : m.evidenceGain) g = n(rng);
    return std::make_shared<const ModelWeights>(std::move(m));
}

double relDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        num = std::max(num, double(std::abs(a[i] - b[i]))), den = std::max(den, double(std::abs(b[i])));
    }
    return num / std::max(den, 1e-12);
}

// The CUDA session and the CPU session fed the same tokens (the CPU's greedy choices, a page break
// every 30): worst relative logits difference, and the share of steps whose best token agrees.
void compare(const std::string& name, std::shared_ptr<const ModelWeights> model, AttentionMode mode, bool bf16, int steps,
             int pageTokens, bool track = false) {
    const ModelConfig& cfg = model->config;
    AttentionParams cpu;
    cpu.mode = mode, cpu.recentTokens = 24, cpu.maxPageTokens = pageTokens + 16, cpu.gatedPages = 2, cpu.blocksPerGatedPage = 2;
    cpu.gatedCachePages = 1;
    cpu.trackAttention = track;
    AttentionParams dev = cpu;
    dev.device = g_device, dev.deviceBf16 = bf16, dev.deviceFallback = false;
    DecodeSession a(model, cpu), b(model, dev);
    if (Status s = a.begin({1, 5}); !s) return report(name, false, s.message());
    if (Status s = b.begin({1, 5}); !s) return report(name, false, s.message());
    int fed = -1, token = cfg.bosTokenId, same = 0, worstStep = 0, tracked = 0, sameAttended = 0;
    double worst = 0, deviceMs = 0, cpuMs = 0;
    for (int step = 0; step < steps; ++step) {
        while (fed < a.stats().currentPage + cpu.windowAfter) {
            ++fed;
            const int n = pageTokens - 8 + fed % 3 * 8;
            const auto f = pageFeatures(fed, n, cfg);
            if (Status s = a.addPage(fed, f.data(), n); !s) return report(name, false, s.message());
            if (Status s = b.addPage(fed, f.data(), n); !s) return report(name, false, s.message());
        }
        const auto t0 = std::chrono::steady_clock::now();
        auto ra = a.step(token);
        const auto t1 = std::chrono::steady_clock::now();
        auto rb = b.step(token);
        const auto t2 = std::chrono::steady_clock::now();
        cpuMs += std::chrono::duration<double, std::milli>(t1 - t0).count();
        deviceMs += std::chrono::duration<double, std::milli>(t2 - t1).count();
        if (!ra) return report(name, false, "CPU step " + std::to_string(step) + ": " + ra.status().message());
        if (!rb) return report(name, false, "CUDA step " + std::to_string(step) + ": " + rb.status().message());
        const double d = relDiff(*rb->logits, *ra->logits);
        if (d > worst) worst = d, worstStep = step;
        auto best = [](const std::vector<float>& l) { return int(std::max_element(l.begin() + 7, l.end()) - l.begin()); };
        const int next = best(*ra->logits);
        same += next == best(*rb->logits);
        if (ra->attendedVisual >= 0) ++tracked, sameAttended += ra->attendedVisual == rb->attendedVisual;
        if (a.lastAttendedPositions() != b.lastAttendedPositions())
            return report(name, false, "attended positions differ at step " + std::to_string(step));
        token = step % 30 == 29 ? cfg.pageBreakTokenId : next;
    }
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%d steps, %d pages: worst relative logits difference %.2e (step %d), same token %d/%d, most attended "
                  "visual token the same %d/%d, %.3f ms/step on the %s (with the session's bookkeeping) vs %.3f on the CPU, "
                  "%zu device bytes",
                  steps, a.stats().currentPage, worst, worstStep, same, steps, sameAttended, tracked, deviceMs / steps,
                  stepDeviceName(g_device), cpuMs / steps, b.stats().deviceBytes);
    bool ok = bf16 ? worst <= 5e-2 : worst <= 1e-3 && same == steps;
    if (track) ok = ok && tracked > steps * 9 / 10 && sameAttended >= tracked * 99 / 100;
    report(name, ok && b.deviceNotice().empty(), buf);
}

// Four SR-SWA sessions on one shared CUDA device stepped together (DecodeSession::stepBatch: one
// product per weight for the four) against four CPU sessions alone, each volume turning its pages
// at its own pace, fed the CPU's greedy choices: worst relative logits difference, same tokens.
void compareBatch(const std::string& name, const ModelConfig& cfg, bool bf16, int steps, int pageTokens) {
    constexpr int kSessions = 4;
    auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 43));
    AttentionParams cpu;
    cpu.mode = AttentionMode::SrSwa, cpu.recentTokens = 24, cpu.maxPageTokens = pageTokens + 16, cpu.gatedPages = 2;
    cpu.blocksPerGatedPage = 2, cpu.gatedCachePages = 1;
    auto shared = SharedDevice::open(model, g_device, bf16);
    if (!shared) return report(name, false, shared.status().message());
    AttentionParams dev = cpu;
    dev.device = g_device, dev.deviceBf16 = bf16, dev.deviceFallback = false, dev.sharedDevice = *shared;
    std::vector<std::unique_ptr<DecodeSession>> alone, batch;
    std::vector<DecodeSession*> together;
    std::vector<int> fed(kSessions, -1), tokens(kSessions, cfg.bosTokenId);
    for (int i = 0; i < kSessions; ++i) {
        alone.push_back(std::make_unique<DecodeSession>(model, cpu));
        batch.push_back(std::make_unique<DecodeSession>(model, dev));
        together.push_back(batch.back().get());
        if (Status s = alone.back()->begin({1, 5, 6 + i}); !s) return report(name, false, s.message());
        if (Status s = batch.back()->begin({1, 5, 6 + i}); !s) return report(name, false, s.message());
    }
    double worst = 0, cpuMs = 0, batchMs = 0;
    int same = 0;
    for (int step = 0; step < steps; ++step) {
        for (int i = 0; i < kSessions; ++i)
            while (fed[size_t(i)] < alone[size_t(i)]->stats().currentPage + cpu.windowAfter) {
                const int page = ++fed[size_t(i)];
                const int n = pageTokens - 8 + (page + i) % 3 * 8;
                const auto f = pageFeatures(page + 100 * i, n, cfg);
                if (Status s = alone[size_t(i)]->addPage(page, f.data(), n); !s) return report(name, false, s.message());
                if (Status s = batch[size_t(i)]->addPage(page, f.data(), n); !s) return report(name, false, s.message());
            }
        const auto t0 = std::chrono::steady_clock::now();
        auto rb = DecodeSession::stepBatch(together, tokens);
        const auto t1 = std::chrono::steady_clock::now();
        batchMs += std::chrono::duration<double, std::milli>(t1 - t0).count();
        if (!rb) return report(name, false, "batched step " + std::to_string(step) + ": " + rb.status().message());
        for (int i = 0; i < kSessions; ++i) {
            const auto t2 = std::chrono::steady_clock::now();
            auto ra = alone[size_t(i)]->step(tokens[size_t(i)]);
            cpuMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t2).count();
            if (!ra) return report(name, false, "CPU step " + std::to_string(step) + ": " + ra.status().message());
            const std::vector<float>& lb = *(*rb)[size_t(i)].logits;
            worst = std::max(worst, relDiff(lb, *ra->logits));
            auto best = [](const std::vector<float>& l) { return int(std::max_element(l.begin() + 7, l.end()) - l.begin()); };
            const int next = best(*ra->logits);
            same += next == best(lb);
            tokens[size_t(i)] = step % (25 + 4 * i) == 24 + 4 * i ? cfg.pageBreakTokenId : next;
        }
    }
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "%d sessions x %d steps: worst relative logits difference %.2e, same token %d/%d, %.3f ms per batched step "
                  "vs %.3f ms for the CPU's four steps",
                  kSessions, steps, worst, same, kSessions * steps, batchMs / steps, cpuMs / steps);
    bool notices = true;
    for (const auto& b : batch) notices = notices && b->deviceNotice().empty();
    report(name, notices && (bf16 ? worst <= 5e-2 : worst <= 1e-3 && same == kSessions * steps), buf);
}

// `bench decode` of a named shape with generated weights, or (shape "shipped-reader") of `shipped`,
// the shipped reader, fed the bench's generated pages in its layout (ids included).
void bench(const std::string& shape, const char* mode, const char* device, int pages, int batch,
           const std::shared_ptr<const ModelWeights>& shipped) {
    DecodeBenchParams p;
    if (shape == "shipped-reader") {
        if (!shipped) return report("bench " + shape, false, "resources/models/reader does not load");
        p.model = shipped;
        p.config = shipped->config;
    } else {
        auto cfg = benchShape(shape);
        if (!cfg) return report("bench " + shape, false, cfg.status().message());
        p.config = *cfg;
    }
    p.attention.mode = *parseAttentionMode(mode);
    p.pages = pages, p.device = device, p.batch = batch;
    p.checkpoints = {10, 100, 1000};
    p.maxKvBytes = 60e9;
    const auto t0 = std::chrono::steady_clock::now();
    auto r = runDecodeBench(p);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r) return report(std::string("bench ") + shape + " " + mode + " " + device, false, r.status().message());
    r->shape = shape;
    std::printf("BENCH %s\n", r->toJson().c_str());
    std::printf("  (%.1f s wall)\n", secs);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    int readerPages = 1000, unlimitedPages = 300;
    bool runBench = true;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--reader-pages") && i + 1 < argc) readerPages = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--unlimited-pages") && i + 1 < argc) unlimitedPages = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--no-bench")) runBench = false;
        else if (!std::strcmp(argv[i], "--device") && i + 1 < argc && !std::strcmp(argv[i + 1], "mirror"))
            g_device = StepDevice::Mirror, runBench = false, ++i;
    }
    std::string why;
    const auto devices = gpuDevices(&why);
    if (g_device == StepDevice::Mirror) {
        std::printf("device: the CUDA path's CPU mirror\n");
    } else if (devices.empty()) {
        std::printf("no GPU (%s): the CUDA session checks are skipped\n0 passed, 0 failed\n", why.c_str());
        return 0;
    }
    if (!devices.empty()) std::printf("GPU: %s, %.1f GiB\n", devices[0].name.c_str(), double(devices[0].totalBytes) / (1 << 30));
    ModelConfig tiny;
    tiny.vocabSize = 48, tiny.hiddenSize = 32, tiny.numLayers = 2, tiny.numHeads = 4, tiny.numKvHeads = 2, tiny.headDim = 8;
    tiny.intermediateSize = 48, tiny.visualDim = 12, tiny.maxPositions = 256;  // framed positions too
    const auto tinyModel = std::make_shared<const ModelWeights>(randomModel(tiny, 41));
    compare("tiny srswa fp32", tinyModel, AttentionMode::SrSwa, false, 2000, 28);
    compare("tiny rswa fp32", tinyModel, AttentionMode::RSwa, false, 2000, 28);
    compare("tiny srswa bf16", tinyModel, AttentionMode::SrSwa, true, 2000, 28);
    compare("tiny srswa fp32, tracking attention", tinyModel, AttentionMode::SrSwa, false, 2000, 28, true);
    compareBatch("tiny srswa fp32, 4 sessions on a shared device", tiny, false, 600, 28);
    compareBatch("tiny srswa bf16, 4 sessions on a shared device", tiny, true, 600, 28);
    // The shipped reader (its ids and line-aligned positions), and with two evidence ids a token.
    auto loaded = loadModel("resources/models/reader");
    const std::shared_ptr<const ModelWeights> shipped = loaded ? *loaded : nullptr;
    if (shipped) {
        compare("shipped reader srswa fp32", shipped, AttentionMode::SrSwa, false, 300, 273);
        compare("shipped reader srswa bf16", shipped, AttentionMode::SrSwa, true, 300, 273);
        compare("shipped reader srswa fp32, two evidence ids", withEvidenceIds(*shipped, 2), AttentionMode::SrSwa, false, 300,
                273);
    } else {
        report("shipped reader", false, "resources/models/reader does not load (run from the repository's root)");
    }
    if (runBench) {
        // Side by side in one run: the GPU's modes, then the CPU's SR-SWA for the ratio.
        for (const char* shape : {"shipped-reader", "unlimited-ocr"}) {
            const int pages = std::string(shape) == "shipped-reader" ? readerPages : unlimitedPages;
            bench(shape, "srswa", "cuda", pages, 1, shipped);
            bench(shape, "rswa", "cuda", std::min(pages, 100), 1, shipped);
            bench(shape, "full", "cuda", std::min(pages, 100), 1, shipped);
            bench(shape, "srswa", "cuda", std::min(pages, 20), 16, shipped);
            bench(shape, "srswa", "cpu", std::min(pages, 20), 1, shipped);
        }
    }
    return gpucheck::summary();
}
