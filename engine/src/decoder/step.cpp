// A generated step: its three parts (begin, per-layer attention, end), a batch of sessions' steps
// together, and the step's bookkeeping (page turns, line ends, generated blocks, logits).
#include "decoder/session_impl.h"

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

Status DecodeSession::Impl::checkStep(int inputToken) const {
    if (sinkBlocks.empty()) return Status(ErrorCode::InvalidArgument, "step: begin() first");
    if (inputToken < 0 || inputToken >= c.vocabSize) return Status(ErrorCode::InvalidArgument, "step: token out of range");
    return Status::ok();
}

auto DecodeSession::Impl::beginStep(int inputToken) -> Result<PendingStep> {
    if (Status s = checkStep(inputToken); !s) return s;
    const bool pageBreak = inputToken == c.pageBreakTokenId && generated > 0;
    if (pageBreak) enterNextPage();
    placeLineEnd(inputToken);
    offloadLeftPages();
    auto id = generatedBlock();
    if (!id) return id.status();
    PendingStep ps;
    ps.blockId = *id, ps.t = blocks[size_t(*id)].count, ps.input = inputToken;
    ++generated;
    ps.refresh = p.mode == AttentionMode::SrSwa && (pageBreak || stepsSinceGate >= p.gateRefreshSteps || generated == 1);
    if (ps.refresh) {
        if (Status s = refreshGate(); !s) return s;
        stepsSinceGate = 0;
    }
    ++stepsSinceGate;
    embed(inputToken);
    ps.gq.assign(size_t(c.numLayers) * c.numKvHeads * c.headDim, 0.f);
    const auto tokensOfPage = pageTokens.find(currentPage);
    trackingStep = p.trackAttention && tokensOfPage != pageTokens.end();
    if (trackingStep) {
        attendedMass.assign(size_t(tokensOfPage->second), 0.f);
        trackedPagePos0 = pagePos0[currentPage];
    }
    return ps;
}

void DecodeSession::Impl::stepAttention(int l, PendingStep& ps) {
    addGateQuery(ps.gq, l, q.data());
    attendLayer(l, ps.blockId, ps.t, [&](int layer) {
        return generatedSet(layer, generated, q.data(), position, selection[size_t(layer)], ps.refresh);
    });
}

StepResult DecodeSession::Impl::endStep(PendingStep& ps, bool logitsDone) {
    pushRecentQuery(std::move(ps.gq));
    ++position;
    frontier = std::max(frontier, position);
    evictOldGenerated();
    if (!logitsDone) computeLogits();
    StepResult result{&logits, currentPage, -1};
    if (trackingStep) {
        trackingStep = false;
        result.attendedVisual = mostAttended(attendedMass);
    }
    return result;
}

void DecodeSession::Impl::forwardBatch(Impl* const* s, PendingStep* ps, int n) {
    Impl& first = *s[0];
    const ModelConfig& c = first.c;
    const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim,
              F = c.intermediateSize;
    std::vector<float> X(size_t(n) * H), Xn(X.size()), Qm(size_t(n) * Q), Km(size_t(n) * KV), Vm(Km.size()),
        A(Qm.size()), O(X.size()), Gm(size_t(n) * F), Um(Gm.size());
    for (int i = 0; i < n; ++i) std::copy_n(s[size_t(i)]->x.data(), H, &X[size_t(i) * H]);
    for (int l = 0; l < c.numLayers; ++l) {
        first.projectRows(l, n, X, Xn, Qm, Km, Vm);
        first.pairs->run([&](int half) {
            for (int i = half; i < n; i += 2) {
                Impl& si = *s[size_t(i)];
                std::copy_n(&Qm[size_t(i) * Q], Q, si.q.data());
                std::copy_n(&Km[size_t(i) * KV], KV, si.k.data());
                std::copy_n(&Vm[size_t(i) * KV], KV, si.v.data());
                si.stepAttention(l, ps[i]);
                std::copy_n(si.att.data(), Q, &A[size_t(i) * Q]);
            }
        });
        first.finishLayerRows(l, n, A, X, Xn, O, Gm, Um);
    }
    for (int i = 0; i < n; ++i) rmsnorm(&X[size_t(i) * H], first.model->finalNorm.data(), &Xn[size_t(i) * H], H, c.rmsNormEps);
    std::vector<float> all(size_t(n) * c.vocabSize);
    first.applySplit(first.packedHead, Xn.data(), n, all.data());
    for (int i = 0; i < n; ++i)
        std::copy_n(&all[size_t(i) * c.vocabSize], c.vocabSize, s[size_t(i)]->logits.data());
}

void DecodeSession::Impl::forwardBatches(const std::vector<Impl*>& s, std::vector<PendingStep>& ps) {
    for (size_t from = 0; from < s.size(); from += size_t(kPackedRows)) {
        const size_t to = std::min(s.size(), from + size_t(kPackedRows));
        forwardBatch(s.data() + from, ps.data() + from, int(to - from));
    }
}

void DecodeSession::Impl::enterNextPage() {
    ++currentPage;
    writtenLineEnds = 0;
    // Page-aligned: the page's text starts where the page does (fed before, or ahead of, the break).
    if (c.pageAlignedPositions)
        if (const auto it = pagePos0.find(currentPage); it != pagePos0.end()) position = it->second;
    pageLineEnds.erase(pageLineEnds.begin(), pageLineEnds.lower_bound(currentPage));
}

int64_t DecodeSession::Impl::lineEndPosition(int page, int written) const {
    auto it = pageLineEnds.find(page);
    return it != pageLineEnds.end() && written < int(it->second.size()) ? it->second[size_t(written)] + 1 : -1;
}

void DecodeSession::Impl::placeLineEnd(int token) {
    if (!c.lineAlignedPositions() || !c.isLineEnd(token)) return;
    if (const int64_t at = lineEndPosition(currentPage, writtenLineEnds); at >= 0) position = at;
    ++writtenLineEnds;
}

Result<int> DecodeSession::Impl::generatedBlock() {
    if (genBlocks.empty() || blocks[size_t(genBlocks.back())].count == kBlockTokens ||
        blocks[size_t(genBlocks.back())].sealed ||
        blocks[size_t(genBlocks.back())].pos0 + blocks[size_t(genBlocks.back())].count != position) {
        auto id = newBlock(BlockKind::Generated, currentPage);
        if (!id) return id.status();
        blocks[size_t(*id)].genIndex0 = generated;
        genBlocks.push_back(*id);
    }
    return genBlocks.back();
}

void DecodeSession::Impl::evictOldGenerated() {
    if (p.mode == AttentionMode::Full) return;
    while (genBlocks.size() > 1) {
        Block& b = blocks[size_t(genBlocks.front())];
        if (b.genIndex0 + b.count > generated - p.recentTokens) break;
        if (p.measureRecall) {
            offload(b);
            retiredGenBlocks.push_back(genBlocks.front());
        } else {
            freeBlock(genBlocks.front());
        }
        genBlocks.erase(genBlocks.begin());
    }
}

int DecodeSession::Impl::mostAttended(const std::vector<float>& mass) {
    const float best = kernels::maxOf(mass.data(), mass.size());
    return best > 0 ? int(std::find(mass.begin(), mass.end(), best) - mass.begin()) : -1;
}

void DecodeSession::Impl::computeLogits() {
    rmsnorm(x.data(), model->finalNorm.data(), h.data(), c.hiddenSize, c.rmsNormEps);
    applySplit(packedHead, h.data(), 1, logits.data());
}

void DecodeSession::Impl::applySplit(const PackedMatrix& w, const float* X, int T, float* Y) const {
    const int panels = (w.rows + kernels::kPanel - 1) / kernels::kPanel;
    const int mid = std::min(w.rows, (panels + 1) / 2 * kernels::kPanel);
    pairs->run([&](int half) {
        const int r0 = half == 0 ? 0 : mid, r1 = half == 0 ? mid : w.rows;
        if (r0 < r1)
            kernels::gemmPacked(w.data.data() + size_t(r0) * w.cols, r1 - r0, w.cols, X, size_t(w.cols), T, Y + r0,
                                size_t(w.rows));
    });
}

void DecodeSession::Impl::embed(int token) {
    const float* e = &model->embed[size_t(token) * c.hiddenSize];
    std::copy(e, e + c.hiddenSize, x.begin());
}

Result<bool> DecodeSession::Impl::forwardStep(PendingStep& ps) {
    if (device) {
        Status s = deviceForward(ps);
        if (s) return true;
        if (!p.deviceFallback) return s;
        dropDevice("generated step " + std::to_string(generated - 1) + " (counted from 0)", s);
    }
    forward([&](int l) { stepAttention(l, ps); });
    return false;
}

Result<StepResult> DecodeSession::step(int inputToken) {
    auto ps = d->beginStep(inputToken);
    if (!ps) return ps.status();
    auto onDevice = d->forwardStep(*ps);
    if (!onDevice) return onDevice.status();
    return d->endStep(*ps, *onDevice);
}

Status DecodeSession::Impl::forwardOnShared(StepBackend& backend, const std::vector<Impl*>& impls,
                                            std::vector<PendingStep>& pending) {
    std::vector<DeviceStepIO> ios(impls.size());
    bool perLayer = false;
    Status s;
    for (size_t j = 0; j < impls.size() && s; ++j) {
        bool mine = false;
        s = impls[j]->deviceBegin(pending[j], ios[j], mine);
        perLayer = perLayer || mine;
    }
    if (s)
        s = backend.stepBatch(ios, [&](int item, int l, const float* query, std::vector<DeviceSpan>& out) {
            return impls[size_t(item)]->deviceSpans(pending[size_t(item)], l, query, out);
        }, perLayer);
    if (s) {
        for (size_t j = 0; j < impls.size(); ++j) impls[j]->deviceEnd(pending[j]), ++impls[j]->batchedDeviceSteps;
        return Status::ok();
    }
    for (Impl* si : impls) {  // each session goes on with the CPU (the host holds every key and value)
        if (!si->p.deviceFallback) return s;
        si->dropDevice("generated step " + std::to_string(si->generated - 1) + " (counted from 0), in a batch", s);
    }
    forwardBatches(impls, pending);
    return Status::ok();
}

Result<std::vector<StepResult>> DecodeSession::stepBatch(const std::vector<DecodeSession*>& sessions,
                                                         const std::vector<int>& inputs) {
    if (sessions.empty() || sessions.size() != inputs.size())
        return Status(ErrorCode::InvalidArgument, "stepBatch: one input for each of one or more sessions");
    for (size_t i = 0; i < sessions.size(); ++i) {
        if (!sessions[i]) return Status(ErrorCode::InvalidArgument, "stepBatch: no session");
        if (sessions[i]->d->model != sessions[0]->d->model)
            return Status(ErrorCode::InvalidArgument, "stepBatch: the sessions run different models");
        if (std::find(sessions.begin(), sessions.begin() + long(i), sessions[i]) != sessions.begin() + long(i))
            return Status(ErrorCode::InvalidArgument, "stepBatch: a session appears twice");
        if (Status s = sessions[i]->d->checkStep(inputs[i]); !s) return s;
    }
    if (sessions.size() == 1) {
        auto r = sessions[0]->step(inputs[0]);
        if (!r) return r.status();
        return std::vector<StepResult>{*r};
    }
    std::vector<StepResult> results(sessions.size());
    // On the CPU: together. On a shared device: together there, those on one device (attention
    // tracked or not). Otherwise (a device of its own, alone on its shared device): each its own step().
    std::vector<size_t> onCpu, alone;
    std::map<StepBackend*, std::vector<size_t>> onShared;
    for (size_t i = 0; i < sessions.size(); ++i) {
        const Impl& si = *sessions[i]->d;
        if (!si.device) onCpu.push_back(i);
        else if (si.p.sharedDevice) onShared[si.device.get()].push_back(i);
        else alone.push_back(i);
    }
    std::erase_if(onShared, [&](const auto& group) {
        if (group.second.size() > 1) return false;
        alone.push_back(group.second.front());
        return true;
    });
    for (size_t i : alone) {
        auto r = sessions[i]->step(inputs[i]);
        if (!r) return r.status();
        results[i] = *r;
    }
    // Begins the steps of sessions `which`.
    auto begin = [&](const std::vector<size_t>& which, std::vector<Impl*>& impls,
                     std::vector<Impl::PendingStep>& pending) -> Status {
        for (size_t i : which) {
            Impl& si = *sessions[i]->d;
            auto ps = si.beginStep(inputs[i]);
            if (!ps) return ps.status();
            impls.push_back(&si);
            pending.push_back(std::move(*ps));
        }
        return Status::ok();
    };
    for (const auto& [backend, members] : onShared) {
        std::vector<Impl*> impls;
        std::vector<Impl::PendingStep> pending;
        if (Status s = begin(members, impls, pending); !s) return s;
        if (Status s = Impl::forwardOnShared(*backend, impls, pending); !s) return s;
        for (size_t j = 0; j < impls.size(); ++j) results[members[j]] = impls[j]->endStep(pending[j], true);
    }
    std::vector<Impl*> impls;
    std::vector<Impl::PendingStep> pending;
    if (Status s = begin(onCpu, impls, pending); !s) return s;
    Impl::forwardBatches(impls, pending);
    for (size_t j = 0; j < impls.size(); ++j) results[onCpu[j]] = impls[j]->endStep(pending[j], true);
    return results;
}

}  // namespace quire::decoder
