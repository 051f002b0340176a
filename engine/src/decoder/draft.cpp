// Draft verification: a run of proposed tokens computed in one pass with the attention each
// would have had as plain steps, and the window cache those passes share.
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
#include <map>
#include <mutex>
#include <numeric>

namespace quire::decoder {

void DecodeSession::Impl::startDraft(DraftPass& dp) {
    const int k = int(dp.posOf.size());
    const int KV = c.numKvHeads * c.headDim, L = c.numLayers;
    Draft& dr = dp.draft;
    dr.pos = dp.posOf;
    dr.own.resize(size_t(k));
    for (int i = 0; i < k; ++i) {
        Block& b = dr.own[size_t(i)];
        b.kind = BlockKind::Generated, b.page = currentPage, b.count = 1, b.pos0 = dp.posOf[size_t(i)];
        b.genIndex0 = generated + i;
        b.host.assign(blockFloats, 0.f);
    }
    dr.gateQueries.assign(size_t(k), std::vector<float>(size_t(L) * KV, 0.f));
    dr.positions.assign(size_t(k), std::vector<PositionRuns>(size_t(L)));
    dr.selections.assign(size_t(k), {});
    const auto tokensOfPage = pageTokens.find(currentPage);
    dp.tracking = p.trackAttention && tokensOfPage != pageTokens.end();
    if (dp.tracking) {
        dp.mass.assign(size_t(k), std::vector<float>(size_t(tokensOfPage->second), 0.f));
        trackedPagePos0 = pagePos0[currentPage];
    }
    dp.spans.assign(size_t(k), {});
    refreshWindowCache();
}

void DecodeSession::Impl::draftLayer(int l, DraftPass& dp, const float* Qm, const float* Km, const float* Vm, float* A) {
    const int k = int(dp.posOf.size());
    const int Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, D = c.headDim;
    Draft& dr = dp.draft;
    for (int i = 0; i < k; ++i) {
        addGateQuery(dr.gateQueries[size_t(i)], l, &Qm[size_t(i) * Q]);
        float* base = dr.own[size_t(i)].host.data();
        for (int g = 0; g < c.numKvHeads; ++g) {
            float* kk = base + kIndex(l, g, 0);
            std::copy_n(&Km[size_t(i) * KV + size_t(g) * D], D, kk);
            rotate(kk, dp.posOf[size_t(i)]);
            std::copy_n(&Vm[size_t(i) * KV + size_t(g) * D], D, base + halfFloats + kIndex(l, g, 0));
        }
    }
    Selection select = selection[size_t(l)];  // the session's, until a token of the draft refreshes it
    for (int i = 0; i < k; ++i) {
        auto& sp = dp.spans[size_t(i)];
        sp = generatedSet(l, generated + i + 1, &Qm[size_t(i) * Q], dp.posOf[size_t(i)], select, dp.refreshAt[size_t(i)]);
        if (dp.refreshAt[size_t(i)]) dr.selections[size_t(i)].push_back(select);
        for (int j = 0; j <= i; ++j) sp.push_back({&dr.own[size_t(j)], 0, 1, 0});
        frame(sp, dp.posOf[size_t(i)]);
        dr.positions[size_t(i)][size_t(l)] = positionRuns(sp);
    }
    attendDraft(l, dp.spans, dp.posOf, Qm, k, A, dp.tracking ? &dp.mass : nullptr);
}

void DecodeSession::Impl::computeDraftRows(Impl* const* s, int n) {
    Impl& first = *s[0];
    const ModelConfig& c = first.c;
    const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, F = c.intermediateSize;
    std::vector<int> row0(size_t(n) + 1, 0);  // each session's first row
    for (int j = 0; j < n; ++j) row0[size_t(j) + 1] = row0[size_t(j)] + int(s[j]->draftPass.posOf.size());
    const int R = row0[size_t(n)];
    std::vector<float> X(size_t(R) * H), Xn(X.size()), Qm(size_t(R) * Q), Km(size_t(R) * KV), Vm(Km.size()),
        A(Qm.size()), O(X.size()), Gm(size_t(R) * F), Um(Gm.size());
    for (int j = 0; j < n; ++j) {
        const auto& in = s[j]->draftPass.inputs;
        for (int i = 0; i < row0[size_t(j) + 1] - row0[size_t(j)]; ++i)
            std::copy_n(&first.model->embed[size_t(in[size_t(i)]) * H], H, &X[size_t(row0[size_t(j)] + i) * H]);
    }
    for (int l = 0; l < c.numLayers; ++l) {
        first.projectRows(l, R, X, Xn, Qm, Km, Vm);
        for (int j = 0; j < n; ++j) {
            const size_t r = size_t(row0[size_t(j)]);
            s[j]->draftLayer(l, s[j]->draftPass, &Qm[r * Q], &Km[r * KV], &Vm[r * KV], &A[r * Q]);
        }
        first.finishLayerRows(l, R, A, X, Xn, O, Gm, Um);
    }
    for (int r = 0; r < R; ++r) rmsnorm(&X[size_t(r) * H], first.model->finalNorm.data(), &Xn[size_t(r) * H], H, c.rmsNormEps);
    std::vector<float> all(size_t(R) * c.vocabSize);
    first.applySplit(first.packedHead, Xn.data(), R, all.data());
    for (int j = 0; j < n; ++j) {
        DraftPass& dp = s[j]->draftPass;
        const int k = int(dp.posOf.size());
        dp.draft.logits.resize(size_t(k));
        dp.draft.attended.assign(size_t(k), -1);
        for (int i = 0; i < k; ++i) {
            const auto at = all.begin() + long(row0[size_t(j)] + i) * c.vocabSize;
            dp.draft.logits[size_t(i)].assign(at, at + c.vocabSize);
            if (dp.tracking) dp.draft.attended[size_t(i)] = mostAttended(dp.mass[size_t(i)]);
        }
        dp.computed = true;
    }
}

std::pair<int, int> DecodeSession::Impl::groupsOf(int half) const {
    const int split = (c.numKvHeads + 1) / 2;
    return half == 0 ? std::pair{0, split} : std::pair{split, c.numKvHeads};
}

// Over 120 lines: one loop nest over the draft's tokens, KV groups and spans, sharing the window's tiles.
void DecodeSession::Impl::attendDraft(int layer, const std::vector<std::vector<Span>>& spans, const std::vector<int64_t>& pos, const float* Qm, int k, float* A, std::vector<std::vector<float>>* mass) {
    const int D = c.headDim, G = c.groupSize(), Q = c.numHeads * D;
    const float scale = float(1.0 / std::sqrt(double(D)));
    // Keys are laid out as [the window cache's tokens | the union of the other spans].
    const size_t Nc = windowCache.tokens;
    struct Range {
        const Block* block;
        int64_t delta;  // the keys rotated by -delta
        int first, last;
        size_t offset;
    };
    std::vector<Range> uni;
    std::map<std::pair<const Block*, int64_t>, size_t> where;
    std::vector<std::vector<std::pair<size_t, int>>> cachedHits(static_cast<size_t>(k));  // (row, count)
    for (int i = 0; i < k; ++i)
        for (const Span& s : spans[size_t(i)]) {
            const int64_t delta = s.queryPos - pos[size_t(i)];
            if (delta == 0 && Nc > 0 && s.first == 0 && s.last == s.block->count && s.block >= blocks.data() &&
                s.block < blocks.data() + blocks.size()) {
                const int64_t row = windowCache.rowOf(int(s.block - blocks.data()));
                if (row >= 0) {
                    cachedHits[size_t(i)].push_back({size_t(row), s.last});
                    continue;
                }
            }
            auto [it, fresh] = where.try_emplace({s.block, delta}, uni.size());
            if (fresh) {
                uni.push_back({s.block, delta, s.first, s.last, 0});
            } else {
                Range& u = uni[it->second];
                u.first = std::min(u.first, s.first), u.last = std::max(u.last, s.last);
            }
        }
    size_t N = Nc;
    for (auto& u : uni) u.offset = N, N += size_t(u.last - u.first);
    const size_t Nu = N - Nc;
    std::vector<uint8_t> allowed(size_t(k) * N, 0);
    for (int i = 0; i < k; ++i) {
        uint8_t* ok = &allowed[size_t(i) * N];
        for (const auto& [row, count] : cachedHits[size_t(i)]) std::fill_n(ok + row, count, uint8_t(1));
        for (const Span& s : spans[size_t(i)]) {
            auto u = where.find({s.block, s.queryPos - pos[size_t(i)]});
            if (u == where.end()) continue;  // in the cache
            const Range& r = uni[u->second];
            std::fill_n(ok + r.offset + size_t(s.first - r.first), s.last - s.first, uint8_t(1));
        }
    }
    // Each token's allowed keys as runs [first, last) of the score row: the softmax works
    // run by run (vectorised), leaving the rest of the row 0.
    std::vector<std::vector<std::pair<size_t, size_t>>> runs(static_cast<size_t>(k));
    for (int i = 0; i < k; ++i) {
        const uint8_t* ok = &allowed[size_t(i) * N];
        for (size_t n = 0; n < N;) {
            if (!ok[n]) {
                ++n;
                continue;
            }
            const size_t first = n;
            while (n < N && ok[n]) ++n;
            runs[size_t(i)].push_back({first, n});
        }
    }
    // The current page's blocks in the window cache (row, block), for the attention tracking.
    std::vector<std::pair<size_t, const Block*>> cachedCurrent;
    if (mass)
        for (int id : windowCache.ids)
            if (blocks[size_t(id)].page == currentPage) cachedCurrent.push_back({size_t(windowCache.rowOf(id)), &blocks[size_t(id)]});
    // The cos and sin that turn each framed range's keys by -delta, looked up once and copied
    // (a later trigAt() may take the slot).
    std::vector<float> turn(uni.size() * size_t(D));
    for (size_t u = 0; u < uni.size(); ++u)
        if (uni[u].delta != 0) std::copy_n(trigAt(-uni[u].delta), D, &turn[u * size_t(D)]);
    const int rows = k * G;
    // The queries rotated to their tokens' positions, per KV group (here: trigAt() may fill
    // the rotary table, which the two halves below must not do at once).
    std::vector<float> Qr(size_t(c.numKvHeads) * rows * D);
    for (int g = 0; g < c.numKvHeads; ++g)
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < G; ++j) {
                float* qr = &Qr[((size_t(g) * k + i) * G + j) * D];
                std::copy_n(&Qm[size_t(i) * Q + size_t(g * G + j) * D], D, qr);
                rotate(qr, pos[size_t(i)]);
            }
    // The KV groups in two halves (pairs.run: on two threads where the session has them). Each
    // writes its own heads of A; the attention mass of the second half goes to its own rows,
    // added after, so the sums are the same with one thread or two.
    std::vector<std::vector<float>> mass1;
    if (mass && !mass->empty()) mass1.assign(mass->size(), std::vector<float>((*mass)[0].size(), 0.f));
    pairs->run([&](int half) {
        std::vector<std::vector<float>>* into = half == 0 ? mass : (mass ? &mass1 : nullptr);
        std::vector<float> Ku(Nu * D), Vu(Nu * D), S(size_t(rows) * std::max<size_t>(N, 1)), O(size_t(rows) * D);
        const auto [g0, g1] = groupsOf(half);
        for (int g = g0; g < g1; ++g) {
            for (size_t ui = 0; ui < uni.size(); ++ui) {
                const Range& u = uni[ui];
                const float* base = data(*u.block);
                for (int t = u.first; t < u.last; ++t) {
                    const size_t n = u.offset - Nc + size_t(t - u.first);
                    std::copy_n(base + kIndex(layer, g, t), D, &Ku[n * D]);
                    if (u.delta != 0) rotateWith(&Ku[n * D], &turn[ui * size_t(D)]);
                    std::copy_n(base + halfFloats + kIndex(layer, g, t), D, &Vu[n * D]);
                }
            }
            const float* Qg = &Qr[size_t(g) * rows * D];
            const float* Kc = windowCache.keys(layer, g, c);
            const float* Vc = windowCache.values(layer, g, c);
            if (Nc > 0) kernels::gemmPacked(Kc, int(Nc), D, Qg, size_t(D), rows, S.data(), N, scale);
            if (Nu > 0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, int(Nu), D, scale, Qg, D, Ku.data(), D,
                            0.0f, S.data() + Nc, int(N));
            for (int i = 0; i < k; ++i)
                for (int j = 0; j < G; ++j) {
                    float* row = &S[(size_t(i) * G + j) * N];
                    const auto& rr = runs[size_t(i)];
                    float mx = -INFINITY;
                    for (const auto& [a, b] : rr) mx = std::max(mx, kernels::maxOf(row + a, b - a));
                    float sum = 0;
                    size_t done = 0;  // the row is 0 outside the runs
                    for (const auto& [a, b] : rr) {
                        std::fill(row + done, row + a, 0.f);
                        sum += kernels::expShifted(row + a, b - a, mx);
                        done = b;
                    }
                    std::fill(row + done, row + N, 0.f);
                    const float inv = 1.f / sum;
                    for (const auto& [a, b] : rr) kernels::scale(row + a, b - a, inv);
                    if (into) {
                        for (const auto& [r, b] : cachedCurrent)
                            addMassRun((*into)[size_t(i)], b->pos0, row + r, b->count);
                        for (const auto& u : uni)
                            if (u.block->kind == BlockKind::Visual && u.block->page == currentPage)
                                addMassRun((*into)[size_t(i)], u.block->pos0 + u.first, row + u.offset, u.last - u.first);
                    }
                }
            if (Nc > 0) kernels::gemmPacked(Vc, D, int(Nc), S.data(), N, rows, O.data(), size_t(D));
            if (Nu > 0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, int(Nu), 1.0f, S.data() + Nc, int(N), Vu.data(),
                            D, Nc > 0 ? 1.0f : 0.0f, O.data(), D);
            if (N == 0) std::fill(O.begin(), O.end(), 0.f);
            for (int i = 0; i < k; ++i)
                for (int j = 0; j < G; ++j) {
                    float* out = &A[size_t(i) * Q + size_t(g * G + j) * D];
                    std::copy_n(&O[(size_t(i) * G + j) * D], D, out);
                }
        }
    });
    if (mass)
        for (size_t i = 0; i < mass->size(); ++i) kernels::addTo((*mass)[i].data(), mass1[i].data(), mass1[i].size());
}

void DecodeSession::Impl::refreshWindowCache() {
    std::vector<int> ids;
    if (p.mode == AttentionMode::SrSwa)
        for (const auto& [page, pids] : pageBlocks)
            if (inWindow(page)) ids.insert(ids.end(), pids.begin(), pids.end());
    if (ids == windowCache.ids && pageLayout == windowCache.layout) return;
    WindowCache w;
    w.ids = ids;
    w.layout = pageLayout;
    w.rows.assign(blocks.size(), -1);
    for (int id : ids) w.rows[size_t(id)] = int64_t(w.tokens), w.tokens += size_t(blocks[size_t(id)].count);
    const int D = c.headDim, N = int(w.tokens);
    w.kStride = kernels::packedSize(N, D), w.vStride = kernels::packedSize(D, N);
    w.k.resize(size_t(c.numLayers) * c.numKvHeads * w.kStride);
    w.v.resize(size_t(c.numLayers) * c.numKvHeads * w.vStride);
    std::vector<float> K(w.tokens * D), V(w.tokens * D);
    for (int l = 0; l < c.numLayers; ++l)
        for (int g = 0; g < c.numKvHeads; ++g) {
            for (int id : ids) {
                const Block& b = blocks[size_t(id)];
                const float* src = data(b);
                for (int t = 0; t < b.count; ++t) {
                    std::copy_n(src + kIndex(l, g, t), D, &K[(size_t(w.rows[size_t(id)]) + size_t(t)) * D]);
                    std::copy_n(src + halfFloats + kIndex(l, g, t), D, &V[(size_t(w.rows[size_t(id)]) + size_t(t)) * D]);
                }
            }
            const size_t at = size_t(l) * c.numKvHeads + g;
            if (N > 0) {
                kernels::packRows(K.data(), N, D, size_t(D), &w.k[at * w.kStride]);
                kernels::packColumns(V.data(), D, N, size_t(D), &w.v[at * w.vStride]);
            }
        }
    windowCache = std::move(w);
}

void DecodeSession::Impl::addMassRun(std::vector<float>& mass, int64_t position, const float* w, int count) const {
    const int64_t v0 = position - trackedPagePos0;
    const int64_t from = std::max<int64_t>(0, -v0), to = std::min<int64_t>(count, int64_t(mass.size()) - v0);
    if (from < to) kernels::addTo(mass.data() + (v0 + from), w + from, size_t(to - from));
}

Status DecodeSession::Impl::commitDraftToken(const Draft& dr, int i, int token, bool gateRefreshed) {
    placeLineEnd(token);
    if (position != dr.pos[size_t(i)]) return Status(ErrorCode::Internal, "draft: a token's position changed");
    auto id = generatedBlock();
    if (!id) return id.status();
    Block& b = blocks[size_t(*id)];
    const int t = b.count;
    ++generated;
    if (gateRefreshed) stepsSinceGate = 0;
    ++stepsSinceGate;
    if (gateRefreshed && dr.selections[size_t(i)].size() == selection.size()) selection = dr.selections[size_t(i)];
    const float* src = dr.own[size_t(i)].host.data();  // keys already rotated at the token's position
    for (int l = 0; l < c.numLayers; ++l)
        for (int g = 0; g < c.numKvHeads; ++g)
            storeKv(b, l, g, t, src + kIndex(l, g, 0), src + halfFloats + kIndex(l, g, 0), true);
    b.count = std::max(b.count, t + 1);
    pushRecentQuery(dr.gateQueries[size_t(i)]);
    ++position;
    frontier = std::max(frontier, position);
    evictOldGenerated();
    lastPositions = dr.positions[size_t(i)];
    return Status::ok();
}

Status DecodeSession::beginDraft(const std::vector<int>& inputs) {
    auto& c = d->c;
    if (d->draftPass.kind != Impl::DraftPass::Kind::None)
        return Status(ErrorCode::InvalidArgument, "beginDraft: the draft begun before is not ended");
    if (inputs.empty()) return Status(ErrorCode::InvalidArgument, "stepDraft: no input");
    if (d->sinkBlocks.empty()) return Status(ErrorCode::InvalidArgument, "step: begin() first");
    for (int tok : inputs)
        if (tok < 0 || tok >= c.vocabSize) return Status(ErrorCode::InvalidArgument, "step: token out of range");
    // Where step() would place each input, and how many one pass may take: none after the first
    // may turn the page. The page gate falls due every gateRefreshSteps tokens; the pass assumes
    // it chooses the same pages again there, and checks that when it gets there (endDraft).
    const bool srswa = m_params.mode == AttentionMode::SrSwa;
    const bool pageBreak0 = inputs[0] == c.pageBreakTokenId && d->generated > 0;
    const int page = d->currentPage + (pageBreak0 ? 1 : 0);
    int written = pageBreak0 ? 0 : d->writtenLineEnds;
    int64_t pos = d->position;
    if (pageBreak0 && c.pageAlignedPositions)  // as enterNextPage() places it
        if (const auto it = d->pagePos0.find(page); it != d->pagePos0.end()) pos = it->second;
    int since = d->stepsSinceGate;
    const bool refresh0 = srswa && (pageBreak0 || since >= m_params.gateRefreshSteps || d->generated == 0);
    Impl::DraftPass dp;
    const int limit = std::min({int(inputs.size()), kMaxDraftTokens, std::max(1, m_params.recentTokens)});
    for (int i = 0; i < limit; ++i) {
        const int tok = inputs[size_t(i)];
        if (i > 0 && tok == c.pageBreakTokenId) break;
        if (c.lineAlignedPositions() && c.isLineEnd(tok)) {
            if (const int64_t at = d->lineEndPosition(page, written); at >= 0) pos = at;
            ++written;
        }
        dp.posOf.push_back(pos++);
        const bool refresh = i == 0 ? refresh0 : srswa && since >= m_params.gateRefreshSteps;
        dp.refreshAt.push_back(refresh);
        since = (refresh ? 0 : since) + 1;
    }
    const int k = int(dp.posOf.size());
    dp.inputs.assign(inputs.begin(), inputs.end());
    if (d->device && m_params.sharedDevice && !m_params.measureRecall && !m_params.referencePrefill) {
        // On a shared device a draft's tokens are plain steps, each as dear as the batch's: one
        // token a draft, begun here so that computeDrafts() steps the device's sessions together.
        auto ps = d->beginStep(inputs[0]);
        if (!ps) return ps.status();
        dp.kind = Impl::DraftPass::Kind::Shared;
        dp.inputs.resize(1);
        dp.pending = std::move(*ps);
    } else if (m_params.measureRecall || m_params.referencePrefill || d->device) {
        // A benchmark's probe or a device's steps: the plain steps, in endDraft.
        dp.kind = Impl::DraftPass::Kind::Plain;
        if (k == 1) dp.inputs.resize(1);
        dp.computed = true;
    } else if (k == 1) {
        auto ps = d->beginStep(inputs[0]);
        if (!ps) return ps.status();
        dp.kind = Impl::DraftPass::Kind::Single;
        dp.pending = std::move(*ps);
    } else {
        // The first input is fed whatever the draft holds: its page turn and gate refresh happen now.
        if (pageBreak0) d->enterNextPage();
        d->offloadLeftPages();
        if (refresh0)
            if (Status s = d->refreshGate(); !s) return s;
        dp.kind = Impl::DraftPass::Kind::Tokens;
        dp.inputs.resize(size_t(k));
        d->startDraft(dp);
    }
    d->draftPass = std::move(dp);
    return Status::ok();
}

Status DecodeSession::computeDrafts(const std::vector<DecodeSession*>& sessions) {
    using Kind = Impl::DraftPass::Kind;
    for (size_t i = 0; i < sessions.size(); ++i) {
        if (!sessions[i]) return Status(ErrorCode::InvalidArgument, "computeDrafts: no session");
        if (std::find(sessions.begin(), sessions.begin() + long(i), sessions[i]) != sessions.begin() + long(i))
            return Status(ErrorCode::InvalidArgument, "computeDrafts: a session appears twice");
        if (sessions[i]->d->draftPass.kind == Kind::None)
            return Status(ErrorCode::InvalidArgument, "computeDrafts: a session has no draft begun");
    }
    // By model: single steps together as stepBatch computes them, drafts together up to
    // kPackedRows rows a pass (more would leave the packed products, and their results would
    // depend on the rows beside them).
    std::map<const ModelWeights*, std::pair<std::vector<Impl*>, std::vector<Impl*>>> byModel;
    std::map<StepBackend*, std::vector<Impl*>> onShared;  // Shared: by device
    for (DecodeSession* s : sessions) {
        Impl& si = *s->d;
        if (si.draftPass.computed) continue;
        if (si.draftPass.kind == Kind::Shared) {
            onShared[si.device.get()].push_back(&si);
            continue;
        }
        auto& [singles, drafts] = byModel[si.model.get()];
        (si.draftPass.kind == Kind::Single ? singles : drafts).push_back(&si);
    }
    for (auto& [model, group] : byModel) {
        auto& [singles, drafts] = group;
        if (singles.size() == 1) {  // alone: step()'s own forward pass
            Impl& si = *singles[0];
            si.forward([&](int l) { si.stepAttention(l, si.draftPass.pending); });
            si.computeLogits();
            si.draftPass.computed = true;
        }
        if (singles.size() > 1) {
            std::vector<Impl::PendingStep> pending;
            for (Impl* si : singles) pending.push_back(std::move(si->draftPass.pending));
            Impl::forwardBatches(singles, pending);
            for (size_t j = 0; j < singles.size(); ++j) {
                singles[j]->draftPass.pending = std::move(pending[j]);
                singles[j]->draftPass.computed = true;
            }
        }
        for (size_t from = 0; from < drafts.size();) {
            size_t to = from;
            for (int rows = 0; to < drafts.size() && rows + int(drafts[to]->draftPass.posOf.size()) <= Impl::kPackedRows; ++to)
                rows += int(drafts[to]->draftPass.posOf.size());
            Impl::computeDraftRows(drafts.data() + from, int(to - from));
            from = to;
        }
    }
    for (auto& [backend, group] : onShared) {
        if (group.size() == 1) {  // alone: step()'s own pass on the device, or the CPU's where it fails
            Impl& si = *group[0];
            auto onDevice = si.forwardStep(si.draftPass.pending);
            if (!onDevice) return onDevice.status();
            if (!*onDevice) si.computeLogits();
        } else {
            std::vector<Impl::PendingStep> pending;
            for (Impl* si : group) pending.push_back(std::move(si->draftPass.pending));
            const Status s = Impl::forwardOnShared(*backend, group, pending);
            for (size_t j = 0; j < group.size(); ++j) group[j]->draftPass.pending = std::move(pending[j]);
            if (!s) return s;
        }
        for (Impl* si : group) si->draftPass.computed = true;
    }
    return Status::ok();
}

Result<int> DecodeSession::endDraft(const std::function<bool(int, const StepResult&)>& onStep) {
    using Kind = Impl::DraftPass::Kind;
    Impl::DraftPass dp = std::move(d->draftPass);
    d->draftPass = Impl::DraftPass{};
    if (dp.kind == Kind::None) return Status(ErrorCode::InvalidArgument, "endDraft: no draft begun");
    if (!dp.computed) return Status(ErrorCode::InvalidArgument, "endDraft: the draft was not computed");
    if (dp.kind == Kind::Plain) {
        for (size_t i = 0; i < dp.inputs.size(); ++i) {
            auto r = step(dp.inputs[i]);
            if (!r) return r.status();
            if (!onStep(int(i), *r)) return int(i) + 1;
        }
        return int(dp.inputs.size());
    }
    if (dp.kind == Kind::Single || dp.kind == Kind::Shared) {
        onStep(0, d->endStep(dp.pending, true));
        return 1;
    }
    const int k = int(dp.posOf.size());
    const Impl::Draft& draft = dp.draft;
    for (int i = 0; i < k; ++i) {
        if (i > 0 && dp.refreshAt[size_t(i)]) {
            // The gate falls due here, with the queries of the tokens fed so far: if it picks other
            // pages, this token and the rest were computed with the wrong ones and are not fed.
            const std::vector<int> assumed = d->gated;
            if (Status s = d->refreshGate(); !s) return s;
            if (d->gated != assumed) return i;
        }
        if (Status s = d->commitDraftToken(draft, i, dp.inputs[size_t(i)], dp.refreshAt[size_t(i)]); !s) return s;
        const StepResult r{&draft.logits[size_t(i)], d->currentPage, draft.attended[size_t(i)]};
        if (!onStep(i, r)) return i + 1;
    }
    return k;
}

Result<int> DecodeSession::stepDraft(const std::vector<int>& inputs,
                                     const std::function<bool(int, const StepResult&)>& onStep) {
    if (Status s = beginDraft(inputs); !s) return s;
    if (Status s = computeDrafts({this}); !s) return s;
    return endDraft(onStep);
}

}  // namespace quire::decoder
