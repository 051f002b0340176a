// `quire-cli bench decode`: a decoder (generated weights of a shape, or a trained model) fed
// generated pages or real ones, its per-token time, KV memory and step checksum at checkpoints,
// per attention mode and batch size.
#include "quire/decoder/bench.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

namespace quire::decoder {

Result<ModelConfig> benchShape(const std::string& name) {
    ModelConfig c;
    if (name == "reader") {
        // Quire's reader: the PP-OCRv4 character set plus specials, 120-wide visual features.
        c.vocabSize = 6627, c.hiddenSize = 384, c.numLayers = 4, c.numHeads = 6, c.numKvHeads = 2, c.headDim = 64;
        c.intermediateSize = 1024, c.visualDim = 120, c.maxPositions = 8192;
    } else if (name == "unlimited-ocr") {
        // Unlimited-OCR's decoder: 12 layers, hidden 1280, 10 heads x 128 (plain multi-head), vocabulary
        // 129,280, trained to 32,768 positions; a dense MLP stands in for its mixture of experts.
        c.vocabSize = 129280, c.hiddenSize = 1280, c.numLayers = 12, c.numHeads = 10, c.numKvHeads = 10, c.headDim = 128;
        c.intermediateSize = 3584, c.visualDim = 1280, c.maxPositions = 32768;
    } else {
        return Status(ErrorCode::InvalidArgument, "unknown shape '" + name + "' (reader, unlimited-ocr)");
    }
    return c;
}

std::string DecodeBenchResult::toJson() const {
    QJsonArray cps;
    for (const auto& c : checkpoints) {
        QJsonObject o{{"page", c.page}, {"msPerToken", c.msPerToken}, {"kvBytes", qint64(c.kvBytes)},
                      {"kvCapacityBytes", qint64(c.kvCapacityBytes)}, {"hostBytes", qint64(c.hostBytes)},
                      {"attendedTokens", c.attendedTokens}, {"bytesPerStep", qint64(c.bytesPerStep)}};
        // The H200's memory bandwidth (4.8 TB/s) over the bytes a step of the batch reads, shared
        // by its tokens: the fastest a token could be there, and this run's share of it.
        if (device == "cuda" && c.bytesPerStep > 0 && c.msPerToken > 0) {
            const double floorMs = double(c.bytesPerStep) / 4.8e12 * 1e3 / std::max(1, batch);
            o["h200FloorMsPerToken"] = floorMs;
            o["fractionOfFloor"] = floorMs / c.msPerToken;
            o["deviceBytes"] = qint64(c.deviceBytes);
        }
        if (c.recallMean >= 0) o["recallMean"] = c.recallMean, o["recallP1"] = c.recallP1;
        cps.append(o);
    }
    QJsonObject o{{"mode", QString::fromStdString(mode)}, {"device", QString::fromStdString(device)},
                  {"shape", QString::fromStdString(shape)}, {"parameters", qint64(parameters)},
                  {"pagesDone", pagesDone}, {"batch", batch}, {"tokensPerSecond", tokensPerSecond},
                  {"peakKvBytes", qint64(peakKvBytes)}, {"checkpoints", cps},
                  {"checksum", QString::number(qulonglong(checksum), 16)}};
    if (!note.empty()) o["note"] = QString::fromStdString(note);
    QJsonArray budgetArray;
    for (const Budget& b : budgets)
        budgetArray.append(QJsonObject{{"gatedPages", b.gatedPages}, {"blocksPerGatedPage", b.blocksPerGatedPage}, {"cuts", b.cuts}});
    o["budgets"] = budgetArray;
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

// About 120 lines: the benchmark's loop and its checkpoints share the timing and checksum state.
Result<DecodeBenchResult> runDecodeBench(const DecodeBenchParams& p) {
    auto device = parseStepDevice(p.device);
    if (!device) return device.status();
    if (Status s = p.config.validate("bench config"); !s) return s;
    auto model = p.model ? p.model : std::make_shared<const ModelWeights>(randomModel(p.config, p.seed));
    AttentionParams ap = p.attention;
    const int stride = p.config.visualStride();
    int largestPage = p.pageTokens;
    if (!p.pageInputs.empty()) {
        largestPage = 0;
        for (const auto& in : p.pageInputs) {
            if (in.empty() || in.size() % size_t(stride) != 0)
                return Status(ErrorCode::InvalidArgument, "bench: a page's visual tokens are not rows of " + std::to_string(stride));
            largestPage = std::max(largestPage, int(in.size() / size_t(stride)));
        }
    }
    ap.maxPageTokens = largestPage;  // the fixed pool is sized for the pages this run feeds
    ap.device = *device;
    ap.deviceFallback = false;  // a benchmark of the device measures the device or fails
    // The recall probe needs every key on the host: measured with the CPU's steps only.
    ap.measureRecall = p.recall && ap.mode == AttentionMode::SrSwa && *device == StepDevice::Cpu;
    // The batch: sessions on one model stepped together (DecodeSession::stepBatch); on a device,
    // SR-SWA sessions share one (the weights once, each session's blocks in its own slots).
    const bool shared = *device != StepDevice::Cpu && p.batch > 1 && ap.mode == AttentionMode::SrSwa;
    if (shared) {
        auto dev = SharedDevice::open(model, *device, ap.deviceBf16, -1, ap.deviceMemoryLimit);
        if (!dev) return dev.status();
        ap.sharedDevice = *dev;
    }
    std::vector<std::unique_ptr<DecodeSession>> sessions;
    std::vector<DecodeSession*> batch;
    for (int b = 0; b < std::max(1, p.batch); ++b) {
        sessions.push_back(std::make_unique<DecodeSession>(model, ap));
        batch.push_back(sessions.back().get());
        if (Status s = sessions.back()->begin({p.config.bosTokenId, 5, 6, 7}); !s) return s;
    }
    DecodeBenchResult r;
    for (const auto& s : sessions) {
        const SessionStats st = s->stats();
        r.budgets.push_back({st.gatedPages, st.blocksPerGatedPage, st.deviceBudgetCuts});
    }
    r.mode = attentionModeName(ap.mode);
    r.device = p.device;
    r.parameters = model->parameterCount();
    r.batch = int(sessions.size());
    if (p.recall && !ap.measureRecall) r.note = "attention-mass recall is measured with --device cpu only";
    if (r.batch > 1 && *device != StepDevice::Cpu && !shared)
        r.note += std::string(r.note.empty() ? "" : "; ") +
                  "on a device only SR-SWA sessions share one: these took their steps one after another";
    // Bytes a generated step of the batch must read at least: every weight matrix once (bf16 on
    // a GPU unless the run keeps fp32) and the keys and values each session attends (fp32), at
    // the checkpoints.
    const ModelConfig& mc = p.config;
    const size_t matrixParams = size_t(mc.numLayers) * (size_t(mc.hiddenSize) * (mc.numHeads + 2 * mc.numKvHeads) * mc.headDim +
                                                        size_t(mc.numHeads) * mc.headDim * mc.hiddenSize +
                                                        3 * size_t(mc.hiddenSize) * mc.intermediateSize) +
                                size_t(mc.vocabSize) * mc.hiddenSize;
    const size_t weightBytes = matrixParams * (*device == StepDevice::Cuda && ap.deviceBf16 ? 2 : 4);
    std::mt19937 rng(uint32_t(p.seed));
    std::normal_distribution<float> normal(0.f, 1.f);
    // A model whose visual tokens carry a vocabulary id (the reader's) gets ids too: characters,
    // with a visual line end closing every kLineTokens tokens and the page, as a page of print.
    constexpr int kLineTokens = 48;
    const int firstCharacter = 1 + std::max({mc.bosTokenId, mc.eosTokenId, mc.pageBreakTokenId, mc.visualLineEndTokenId});
    std::uniform_int_distribution<int> character(std::min(firstCharacter, mc.vocabSize - 1), mc.vocabSize - 1);
    std::vector<float> visual(size_t(p.pageTokens) * stride);
    int fed = -1;
    double decodeSeconds = 0;
    long decodeTokens = 0;
    std::vector<int> tokens(sessions.size(), p.config.bosTokenId);
    uint64_t checksum = 0xcbf29ce484222325ull;
    auto mix = [&](uint32_t v) {
        for (int i = 0; i < 4; ++i) checksum = (checksum ^ ((v >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    };
    for (int page = 0; page < p.pages; ++page) {
        while (fed < page + ap.windowAfter) {
            ++fed;
            if (!p.pageInputs.empty()) {
                const auto& in = p.pageInputs[size_t(fed) % p.pageInputs.size()];
                for (auto& s : sessions)
                    if (Status st = s->addPage(fed, in.data(), int(in.size() / size_t(stride))); !st) return st;
                continue;
            }
            for (int t = 0; t < p.pageTokens; ++t) {
                for (int i = 0; i < mc.visualDim; ++i) visual[size_t(t) * stride + i] = normal(rng);
                if (!mc.visualTokenIds) continue;
                const bool lineEnd = mc.visualLineEndTokenId >= 0 && ((t + 1) % kLineTokens == 0 || t + 1 == p.pageTokens);
                int id = lineEnd ? mc.visualLineEndTokenId : character(rng);
                while (!lineEnd && mc.isLineEnd(id)) id = character(rng);
                visual[size_t(t) * stride + mc.visualDim] = float(id);
                for (int k = 1; k <= mc.visualEvidenceIds; ++k) visual[size_t(t) * stride + mc.visualDim + k] = -1.f;  // none
            }
            for (auto& s : sessions)
                if (Status st = s->addPage(fed, visual.data(), p.pageTokens); !st) return st;
        }
        const bool checkpoint = std::find(p.checkpoints.begin(), p.checkpoints.end(), page + 1) != p.checkpoints.end();
        std::vector<double> ms;
        for (int k = 0; k < p.tokensPerPage; ++k) {
            // The recall probe (full attention beside the real one) runs on the second half of a
            // checkpoint page's steps; latency is taken from the steps without it.
            const bool probe = checkpoint && ap.measureRecall && k >= p.tokensPerPage / 2;
            if (probe && k == p.tokensPerPage / 2) {
                sessions[0]->clearRecall();
                sessions[0]->setRecallProbe(true);
            }
            const auto t0 = std::chrono::steady_clock::now();
            auto res = DecodeSession::stepBatch(batch, tokens);  // (one session: its plain step)
            if (!res) return res.status();
            for (size_t b = 0; b < sessions.size(); ++b) {
                const auto& logits = *(*res)[b].logits;
                tokens[b] = int(std::max_element(logits.begin() + 4, logits.end()) - logits.begin());
                uint32_t bits = 0;
                std::memcpy(&bits, &logits[size_t(tokens[b])], sizeof bits);
                mix(uint32_t(tokens[b]));
                mix(bits);
                if (k == p.tokensPerPage - 2) tokens[b] = p.config.pageBreakTokenId;  // next input turns the page
            }
            const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (probe) continue;
            decodeSeconds += secs;
            decodeTokens += long(sessions.size());
            ms.push_back(secs * 1000.0 / double(sessions.size()));
        }
        const SessionStats st = sessions[0]->stats();
        r.peakKvBytes = std::max(r.peakKvBytes, st.poolUsedBytes * sessions.size());
        r.pagesDone = page + 1;
        if (checkpoint) {
            DecodeCheckpoint c;
            c.page = page + 1;
            std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
            c.msPerToken = ms[ms.size() / 2];
            c.kvBytes = st.poolUsedBytes;
            c.kvCapacityBytes = st.poolCapacityBytes;
            c.hostBytes = st.hostBytes;
            c.attendedTokens = st.attendedTokens;
            c.bytesPerStep = weightBytes + sessions.size() * size_t(st.attendedTokens) * mc.kvBytesPerToken();
            c.deviceBytes = st.deviceBytes;
            if (ap.measureRecall) {
                c.recallMean = sessions[0]->recall().mean();
                c.recallP1 = sessions[0]->recall().percentile(1);
                sessions[0]->setRecallProbe(false);
            }
            r.checkpoints.push_back(c);
        }
        if (double(st.poolUsedBytes * sessions.size()) > p.maxKvBytes) {
            r.note = "stopped at page " + std::to_string(page + 1) + ": the KV cache outgrew " +
                     std::to_string(int64_t(p.maxKvBytes / 1e6)) + " MB";
            break;
        }
    }
    r.tokensPerSecond = decodeSeconds > 0 ? double(decodeTokens) / decodeSeconds : 0;
    r.checksum = checksum;
    return r;
}

}  // namespace quire::decoder
