// A session's saved state: everything a restored session needs to compute the same next steps
// as the one saved (sinks, pages and their positions, the gate's and selector's choices, the
// generated blocks), in the engine's one binary format (core/byte_stream.h).
#include "decoder/session_impl.h"

#include "core/byte_stream.h"

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

namespace {

// "QDS3"; QDS2 lacked the token selector's choice (restored without it, the selector chooses at the
// next step; the reader saves at page ends, where the next step chooses anyway); QDS1 lacked the
// line-end count.
constexpr uint32_t kStateMagic = 0x51445333, kStateMagic2 = 0x51445332;

}  // namespace

std::string DecodeSession::saveState() const {
    const auto& c = d->c;
    ByteWriter w;
    w.put(kStateMagic);
    for (int v : {c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, int(m_params.mode),
                  m_params.recentTokens, m_params.windowBefore, m_params.windowAfter})
        w.put(int32_t(v));
    w.put(int64_t(d->position));
    w.put(int64_t(d->generated));
    w.put(int32_t(d->currentPage));
    w.put(int32_t(d->stepsSinceGate));
    w.put(int32_t(d->recentQueryNext));
    w.put(uint32_t(d->sinkTokens.size()));
    for (int t : d->sinkTokens) w.put(int32_t(t));
    w.put(uint32_t(d->pagePos0.size()));
    for (const auto& [page, pos0] : d->pagePos0) {
        w.put(int32_t(page));
        w.put(int64_t(pos0));
        w.put(int32_t(d->pageTokens.at(page)));
    }
    w.put(uint32_t(d->gated.size()));
    for (int g : d->gated) w.put(int32_t(g));
    w.put(uint32_t(d->recentQueries.size()));
    for (const auto& r : d->recentQueries) w.putFloats(r);
    w.put(uint32_t(d->genBlocks.size()));
    for (int id : d->genBlocks) {
        const Block& b = d->blocks[size_t(id)];
        w.put(int64_t(b.pos0));
        w.put(int64_t(b.genIndex0));
        w.put(int32_t(b.count));
        w.put(int32_t(b.page));
        w.put(uint8_t(b.sealed));
        const float* data = d->data(b);
        w.putFloats(std::vector<float>(data, data + d->blockFloats));
        w.putFloats(b.kMin);
        w.putFloats(b.kMax);
    }
    w.put(int32_t(d->writtenLineEnds));
    w.put(uint32_t(d->selection.size()));
    for (const auto& layer : d->selection) {
        w.put(uint32_t(layer.size()));
        for (const auto& [page, ids] : layer) {
            w.put(int32_t(page));
            w.put(uint32_t(ids.size()));
            for (int id : ids) w.put(int32_t(id));
        }
    }
    return w.take();
}

// Over 120 lines: the state read field by field, each count checked before anything is allocated.
Result<std::unique_ptr<DecodeSession>> DecodeSession::restore(std::shared_ptr<const ModelWeights> model,
                                                               AttentionParams params, const std::string& state,
                                                               const PageProvider& pages) {
    const ModelConfig c = model->config;
    auto bad = [](const std::string& why) { return Status(ErrorCode::Corrupt, "decoder state: " + why); };
    ByteReader r(state);
    uint32_t magic = 0;
    if (!r.get(magic) || (magic != kStateMagic && magic != kStateMagic2)) return bad("not a saved decoder state");
    for (int want : {c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, int(params.mode),
                     params.recentTokens, params.windowBefore, params.windowAfter}) {
        int32_t v = 0;
        if (!r.get(v) || v != want) return bad("saved with another model or attention settings");
    }
    int64_t position = 0, generated = 0;
    int32_t currentPage = 0, stepsSinceGate = 0, recentNext = 0;
    uint32_t nSinks = 0;
    if (!r.get(position) || !r.get(generated) || !r.get(currentPage) || !r.get(stepsSinceGate) || !r.get(recentNext) ||
        !r.get(nSinks) || nSinks > uint32_t(params.maxSinkTokens))
        return bad("truncated");
    // Positions and counters far beyond any volume (2^40 tokens) are damage: refused before any
    // arithmetic on them can overflow.
    constexpr int64_t kMaxPosition = int64_t(1) << 40;
    auto inRange = [&](int64_t v) { return v >= 0 && v < kMaxPosition; };
    if (currentPage < 0 || !inRange(generated) || !inRange(position)) return bad("page pointer out of range");  // before pages are placed by it
    std::vector<int> sinks(nSinks);
    for (auto& t : sinks) {
        int32_t v;
        if (!r.get(v)) return bad("truncated");
        t = v;
    }
    auto session = std::make_unique<DecodeSession>(model, params);
    if (Status s = session->begin(sinks); !s) return s;
    Impl& d = *session->d;
    const uint64_t qFloats = uint64_t(c.numLayers) * c.numKvHeads * c.headDim;  // a gate query or summary
    uint32_t nPages = 0;
    if (!r.get(nPages)) return bad("truncated");
    for (uint32_t i = 0; i < nPages; ++i) {
        int32_t page, count;
        int64_t pos0;
        if (!r.get(page) || !r.get(pos0) || !r.get(count)) return bad("truncated");
        if (page < 0 || count < 1 || count > params.maxPageTokens || !inRange(pos0)) return bad("a page is out of range");
        auto visual = pages(page);
        if (!visual) return visual.status();
        const size_t inputs = size_t(count) * c.visualStride(), summary = size_t(qFloats);
        if (visual->size() != inputs && visual->size() != inputs + summary)
            return bad("page " + std::to_string(page) + " now has a different number of visual tokens");
        if (!d.isNextPage(page)) return bad("pages out of order");
        d.position = pos0;
        d.currentPage = currentPage;
        if (d.spilling && page < currentPage - params.windowBefore && visual->size() == inputs + summary) {
            // Behind the window with its summary: nothing to compute until the gate picks it.
            const float* s = visual->data() + inputs;
            if (!std::all_of(s, s + summary, [](float v) { return std::isfinite(v); }))
                return bad("page " + std::to_string(page) + " has a damaged summary");
            if (Status st = d.addSpilledPage(page, visual->data(), count, pos0, std::vector<float>(s, s + summary)); !st)
                return st;
            continue;
        }
        if (Status s = session->addPage(page, visual->data(), count); !s) return s;
        // Pages behind the window leave the pool at once, as they had when the state was saved.
        d.offloadLeftPages();
    }
    // Every count and index is checked against what the session holds: a damaged project must give
    // a refusal, never a huge allocation or an index out of range later.
    const int lastPage = d.pagePos0.empty() ? 0 : d.pagePos0.rbegin()->first;
    if (currentPage > lastPage + 1) return bad("page pointer out of range");
    uint32_t nGated = 0;
    if (!r.get(nGated) || nGated > uint32_t(std::max(0, params.gatedPages))) return bad("gate state does not match");
    d.gated.resize(nGated);
    for (auto& g : d.gated) {
        int32_t v;
        if (!r.get(v)) return bad("truncated");
        if (!d.pagePos0.count(v)) return bad("the gate holds a page the state does not have");
        g = v;
    }
    // A session whose device had not the memory for the budgets asked runs with smaller ones
    // (stats()): it keeps the gate's first picks and refreshes the gate at its next step.
    const bool cutBudgets = d.p.gatedPages < params.gatedPages || d.p.blocksPerGatedPage < params.blocksPerGatedPage;
    const size_t savedGated = d.gated.size();
    d.gated.resize(std::min(d.gated.size(), size_t(std::max(0, d.p.gatedPages))));
    uint32_t nQueries = 0;
    if (!r.get(nQueries) || nQueries != d.recentQueries.size()) return bad("gate state does not match");
    for (auto& q : d.recentQueries)
        if (!r.getFloats(q, qFloats)) return bad("truncated");
        else if (!q.empty() && q.size() != qFloats) return bad("gate state does not match");
    if (recentNext < 0 || recentNext >= int(d.recentQueries.size())) return bad("gate state does not match");
    d.currentPage = currentPage;
    d.offloadLeftPages();
    if (Status s = d.materializeGated(); !s) return s;
    uint32_t nGen = 0;
    if (!r.get(nGen)) return bad("truncated");
    for (uint32_t i = 0; i < nGen; ++i) {
        int64_t pos0, genIndex0;
        int32_t count, page;
        uint8_t sealed;
        if (!r.get(pos0) || !r.get(genIndex0) || !r.get(count) || !r.get(page) || !r.get(sealed)) return bad("truncated");
        if (count < 1 || count > kBlockTokens || page < 0 || !inRange(genIndex0) || !inRange(pos0))
            return bad("a generated block is out of range");
        auto id = d.newBlock(BlockKind::Generated, page);
        if (!id) return id.status();
        Block& b = d.blocks[size_t(*id)];
        b.pos0 = pos0, b.genIndex0 = genIndex0, b.count = count, b.sealed = sealed != 0;
        std::vector<float> data;
        if (!r.getFloats(data, d.blockFloats) || data.size() != d.blockFloats || !r.getFloats(b.kMin, qFloats) ||
            !r.getFloats(b.kMax, qFloats) || b.kMin.size() != qFloats || b.kMax.size() != qFloats)
            return bad("truncated");
        std::copy(data.begin(), data.end(), d.data(b));
        d.markDirty(b);
        d.genBlocks.push_back(*id);
    }
    d.position = position;
    d.frontier = position;
    for (const Block& b : d.blocks)
        if (b.count > 0) d.frontier = std::max(d.frontier, b.pos0 + b.count);
    d.generated = generated;
    d.stepsSinceGate = cutBudgets ? std::max(stepsSinceGate, params.gateRefreshSteps) : stepsSinceGate;
    d.recentQueryNext = recentNext;
    int32_t writtenLineEnds = 0;
    if (!r.get(writtenLineEnds) || writtenLineEnds < 0) return bad("truncated");
    d.writtenLineEnds = writtenLineEnds;
    if (magic == kStateMagic) {
        uint32_t nLayers = 0;
        if (!r.get(nLayers) || nLayers != d.selection.size()) return bad("selector state does not match");
        for (auto& layer : d.selection) {
            uint32_t nPages = 0;
            if (!r.get(nPages) || nPages > savedGated) return bad("selector state does not match");
            for (uint32_t i = 0; i < nPages; ++i) {
                int32_t page = 0;
                uint32_t nIds = 0;
                if (!r.get(page) || !r.get(nIds)) return bad("truncated");
                const bool kept = std::find(d.gated.begin(), d.gated.end(), page) != d.gated.end();
                if (!kept && !cutBudgets) return bad("the token selector holds a page the gate does not");
                if (!kept && nIds > uint32_t(std::max(0, params.blocksPerGatedPage))) return bad("selector state does not match");
                const size_t blocksOfPage = kept ? d.gatedPageBlocks(page).size() : size_t(nIds);
                if (nIds > blocksOfPage) return bad("selector state does not match");
                std::vector<int> ids(nIds);
                for (int& id : ids) {
                    int32_t v = 0;
                    if (!r.get(v)) return bad("truncated");
                    if (v < 0 || size_t(v) >= blocksOfPage) return bad("the token selector holds a block out of range");
                    id = v;
                }
                if (!kept) continue;
                if (ids.size() > size_t(std::max(0, d.p.blocksPerGatedPage))) ids.resize(size_t(std::max(0, d.p.blocksPerGatedPage)));
                layer.push_back({page, std::move(ids)});
            }
        }
    }
    return session;
}

}  // namespace quire::decoder
