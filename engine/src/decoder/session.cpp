// DecodeSession: the public API over the session's parts (decoder/session_impl.h says which file
// holds which), attention modes and devices by name, and the session's statistics.
#include "decoder/session_impl.h"
#include "decoder/shared_device.h"

#include <cblas.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

namespace quire::decoder {

const char* attentionModeName(AttentionMode m) {
    switch (m) {
        case AttentionMode::Full: return "full";
        case AttentionMode::RSwa: return "rswa";
        case AttentionMode::SrSwa: return "srswa";
    }
    return "?";
}

Result<AttentionMode> parseAttentionMode(const std::string& s) {
    if (s == "full") return AttentionMode::Full;
    if (s == "rswa") return AttentionMode::RSwa;
    if (s == "srswa") return AttentionMode::SrSwa;
    return Status(ErrorCode::InvalidArgument, "unknown attention mode '" + s + "' (full, rswa, srswa)");
}

const char* stepDeviceName(StepDevice d) {
    switch (d) {
        case StepDevice::Cpu: return "cpu";
        case StepDevice::Cuda: return "cuda";
        case StepDevice::Mirror: return "mirror";
    }
    return "?";
}

Result<StepDevice> parseStepDevice(const std::string& s) {
    if (s == "cpu") return StepDevice::Cpu;
    if (s == "cuda") return StepDevice::Cuda;
    if (s == "mirror") return StepDevice::Mirror;
    return Status(ErrorCode::InvalidArgument, "unknown device '" + s + "' (cpu, cuda)");
}

DecodeSession::Impl::Impl(std::shared_ptr<const ModelWeights> m, AttentionParams params)
    : model(std::move(m)), c(model->config), p(params), packedWeights(packedWeightsOf(model)),
      packed(packedWeights->layers), packedHead(packedWeights->head), pairs(std::make_unique<PairRunner>(params.threads)) {
    halfFloats = size_t(c.numLayers) * c.numKvHeads * kBlockTokens * c.headDim;
    blockFloats = 2 * halfFloats;
    invFreq.resize(size_t(c.headDim / 2));
    for (int i = 0; i < c.headDim / 2; ++i) invFreq[size_t(i)] = std::pow(c.ropeTheta, -2.0 * i / c.headDim);
    fixedPool = p.mode == AttentionMode::SrSwa;
    spilling = fixedPool && !p.measureRecall;
    sizePool();
    const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
    x.resize(size_t(H)), h.resize(size_t(H)), q.resize(size_t(Q)), k.resize(size_t(KV)), v.resize(size_t(KV));
    att.resize(size_t(Q)), tmp.resize(size_t(std::max(H, Q))), gateBuf.resize(size_t(c.intermediateSize));
    upBuf.resize(size_t(c.intermediateSize)), logits.resize(size_t(c.vocabSize));
    recentQueries.assign(size_t(std::max(1, p.gateQueryTokens)), {});
    selection.resize(size_t(c.numLayers));
    setTrigEntries(size_t(1) << 14);
    lastPositions.resize(size_t(c.numLayers));
    if (p.device != StepDevice::Cpu) openDevice();
}

void DecodeSession::Impl::sizePool() {
    if (!fixedPool) return;
    const int perPage = (p.maxPageTokens + kBlockTokens - 1) / kBlockTokens;
    const int window = 1 + p.windowBefore + p.windowAfter;
    // Sinks, the window's pages plus one being fed, the ring (+2 partially filled), and the
    // gated blocks the selector picks.
    // Line-aligned positions start a generated block at each line: up to one more
    // (partly filled) block per recent token, still a bound fixed at the start.
    capacitySlots = (p.maxSinkTokens + kBlockTokens - 1) / kBlockTokens + (window + 1) * perPage +
                    (p.recentTokens + kBlockTokens - 1) / kBlockTokens + 2 +
                    std::max(0, p.gatedPages) * std::max(0, p.blocksPerGatedPage) + (c.lineAlignedPositions() ? p.recentTokens : 0);
    pool.assign(size_t(capacitySlots) * blockFloats, 0.f);
    freeSlots.clear();
    for (int s = capacitySlots - 1; s >= 0; --s) freeSlots.push_back(s);
}

DecodeSession::Impl::~Impl() {
    if (p.sharedDevice && deviceRange > 0) p.sharedDevice->impl().give(deviceBase, deviceRange);
}

DecodeSession::DecodeSession(std::shared_ptr<const ModelWeights> model, AttentionParams params)
    : d(std::make_unique<Impl>(std::move(model), params)), m_params(params) {}

DecodeSession::~DecodeSession() = default;

std::vector<int> DecodeSession::gatedPages() const { return d->gated; }

const std::string& DecodeSession::deviceNotice() const { return d->deviceNotice; }

int DecodeSession::pagesAdded() const { return int(d->pagePos0.size()); }

std::vector<float> DecodeSession::pageSummary(int page) const {
    const int r = page - d->gateFirstPage;
    if (r < 0 || r >= d->gatePages) return {};
    const size_t n = size_t(d->c.numLayers) * d->c.numKvHeads * d->c.headDim;
    return std::vector<float>(d->gateMeans.begin() + long(r * n), d->gateMeans.begin() + long((r + 1) * n));
}

int DecodeSession::lineEndsLeft() const {
    auto it = d->pageLineEnds.find(d->currentPage);
    return it == d->pageLineEnds.end() ? 0 : std::max(0, int(it->second.size()) - d->writtenLineEnds);
}

Status DecodeSession::begin(const std::vector<int>& sinkTokens) {
    if (!d->blocks.empty()) return Status(ErrorCode::InvalidArgument, "begin: the session has already started");
    if (!d->deviceStatus) return d->deviceStatus;
    if (sinkTokens.empty() || int(sinkTokens.size()) > m_params.maxSinkTokens)
        return Status(ErrorCode::InvalidArgument, "begin: between 1 and " + std::to_string(m_params.maxSinkTokens) + " sink tokens");
    d->sinkTokens = sinkTokens;
    for (size_t i = 0; i < sinkTokens.size(); ++i) {
        const int tok = sinkTokens[i];
        if (tok < 0 || tok >= d->c.vocabSize) return Status(ErrorCode::InvalidArgument, "begin: token out of range");
        if (d->sinkBlocks.empty() || d->blocks[size_t(d->sinkBlocks.back())].count == kBlockTokens) {
            auto id = d->newBlock(BlockKind::Sink, -1);
            if (!id) return id.status();
            d->sinkBlocks.push_back(*id);
        }
        const int id = d->sinkBlocks.back();
        const int t = d->blocks[size_t(id)].count;
        d->embed(tok);
        d->forward([&](int l) { d->attendLayer(l, id, t, [&](int) { return d->wholeBlocks(d->sinkBlocks); }); });
        ++d->position;
        d->frontier = std::max(d->frontier, d->position);
    }
    return Status::ok();
}

Status DecodeSession::addPage(int page, const float* visual, int count) {
    auto& c = d->c;
    if (d->sinkBlocks.empty()) return Status(ErrorCode::InvalidArgument, "addPage: begin() first");
    if (count <= 0 || count > m_params.maxPageTokens)
        return Status(ErrorCode::InvalidArgument, "addPage: a page brings 1 to " + std::to_string(m_params.maxPageTokens) + " visual tokens");
    if (!d->isNextPage(page))
        return Status(ErrorCode::InvalidArgument, "addPage: pages are fed once each, in order");
    if (c.visualTokenIds)
        for (int t = 0; t < count; ++t)
            for (int k = 0; k <= c.visualEvidenceIds; ++k) {  // its own id, then its evidence ids (-1: none)
                const float id = visual[size_t(t) * c.visualStride() + c.visualDim + k];
                if (!(id >= (k ? -1 : 0) && id < float(c.vocabSize)) || id != std::floor(id))
                    return Status(ErrorCode::InvalidArgument, "addPage: visual token " + std::to_string(t) + " carries no valid " +
                                                                  (k ? "evidence id" : "vocabulary id"));
            }
    // SR-SWA: the page's inputs go to the spill file first (what the page is computed again from
    // once it is behind the window); if that fails, the session is left as it was.
    if (d->spilling)
        if (Status s = d->spillInputs(page, visual, count); !s) return s;
    // Generated tokens after this page start a new block (positions inside a block stay consecutive).
    if (!d->genBlocks.empty()) d->blocks[size_t(d->genBlocks.back())].sealed = true;
    std::vector<float> summary(size_t(c.numLayers) * c.numKvHeads * c.headDim, 0.f);
    // A page fed ahead of the current one (the window's look-ahead) leaves the current page's text
    // where it stands; its own text starts at its first position when the page break reaches it.
    const int64_t textPosition = d->position;
    const bool ahead = c.pageAlignedPositions && d->pagePos0.count(d->currentPage) && page > d->currentPage;
    if (c.pageAlignedPositions) d->position = std::max(d->position, d->frontier);
    d->pagePos0[page] = d->position;
    if (c.lineAlignedPositions()) {
        std::vector<int64_t>& ends = d->pageLineEnds[page];
        ends.clear();
        for (int t = 0; t < count; ++t)
            if (int(visual[size_t(t) * c.visualStride() + c.visualDim]) == c.visualLineEndTokenId)
                ends.push_back(d->position + t);
    }
    if (Status s = d->prefillPage(page, visual, count, summary); !s) return s;
    if (ahead) d->position = textPosition;
    d->addGateSummary(page, summary);
    d->pageTokens[page] = count;
    d->pageFedSinceLastGen = true;
    return Status::ok();
}

void DecodeSession::setRotaryCacheLimit(size_t positions) {
    d->setTrigEntries(positions);
}

SessionStats DecodeSession::stats() const {
    SessionStats s;
    const size_t blockBytes = d->blockFloats * sizeof(float);
    s.poolCapacityBytes = size_t(d->capacitySlots) * blockBytes;
    int used = 0;
    size_t host = 0;
    for (const auto& b : d->blocks) {
        used += b.slot >= 0;
        host += b.host.size() * sizeof(float);
    }
    for (const auto& [page, gp] : d->gatedCache)
        for (const auto& b : gp.blocks) host += b.host.size() * sizeof(float);
    s.poolUsedBytes = size_t(used) * blockBytes;
    s.hostBytes = host;
    s.spillBytes = size_t(d->spill.size());
    s.recomputedPages = d->recomputedPages;
    s.computedPages = d->computedPages;
    s.attendedTokens = d->lastPositions.empty() ? 0 : d->runsTotal(d->lastPositions[0]);
    s.position = d->position;
    s.currentPage = d->currentPage;
    s.deviceBytes = d->device ? d->device->deviceBytes() : 0;
    s.deviceUploadBlocks = d->deviceUploads;
    s.deviceBatchedSteps = d->batchedDeviceSteps;
    s.onDevice = d->device != nullptr;
    s.gatedPages = d->p.gatedPages;
    s.blocksPerGatedPage = d->p.blocksPerGatedPage;
    s.deviceBudgetCuts = d->deviceBudgetCuts;
    return s;
}

std::vector<std::vector<int64_t>> DecodeSession::lastAttendedPositions() const {
    std::vector<std::vector<int64_t>> out;
    for (const auto& runs : d->lastPositions) {
        auto& layer = out.emplace_back();
        for (const auto& [first, count] : runs)
            for (int t = 0; t < count; ++t) layer.push_back(first + t);
    }
    return out;
}

const RecallStats& DecodeSession::recall() const { return d->recall; }
void DecodeSession::clearRecall() { d->recall.samples.clear(); }
void DecodeSession::setRecallProbe(bool on) { d->recallProbe = on; }

double RecallStats::mean() const {
    if (samples.empty()) return 0;
    return std::accumulate(samples.begin(), samples.end(), 0.0) / double(samples.size());
}

double RecallStats::percentile(double pct) const {
    if (samples.empty()) return 0;
    std::vector<double> v = samples;
    const size_t k = std::min(v.size() - 1, size_t(pct / 100.0 * double(v.size())));
    std::nth_element(v.begin(), v.begin() + long(k), v.end());
    return v[k];
}

}  // namespace quire::decoder
