// A page's prefill: its visual tokens through every layer in matrix products (or token by token,
// the reference), their keys and values stored in the page's blocks.
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

void DecodeSession::Impl::gemm(const std::vector<float>& w, int rows, int cols, const float* X, int T, float* Y) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, rows, cols, 1.0f, X, cols, w.data(), cols, 0.0f, Y,
                rows);
}

void DecodeSession::Impl::gemmRows(const std::vector<float>& w, int rows, int cols, const float* X, int T, float* Y) const {
    const int mid = T / 2;
    pairs->run([&](int half) {
        const int t0 = half == 0 ? 0 : mid, t1 = half == 0 ? mid : T;
        if (t0 < t1) gemm(w, rows, cols, X + size_t(t0) * cols, t1 - t0, Y + size_t(t0) * rows);
    });
}

void DecodeSession::Impl::product(const std::vector<float>& w, const PackedMatrix& pw, const float* X, int T, float* Y) const {
    if (T <= kPackedRows) applySplit(pw, X, T, Y);
    else gemmRows(w, pw.rows, pw.cols, X, T, Y);
}

void DecodeSession::Impl::projectRows(int layer, int T, const std::vector<float>& X, std::vector<float>& Xn, std::vector<float>& Qm, std::vector<float>& Km, std::vector<float>& Vm) const {
    const LayerWeights& L = model->layers[size_t(layer)];
    const PackedLayer& P = packed[size_t(layer)];
    const int H = c.hiddenSize;
    for (int t = 0; t < T; ++t) rmsnorm(&X[size_t(t) * H], L.attnNorm.data(), &Xn[size_t(t) * H], H, c.rmsNormEps);
    if (T > kPackedRows) {
        product(L.wq, P.wq, Xn.data(), T, Qm.data());
        product(L.wk, P.wk, Xn.data(), T, Km.data());
        product(L.wv, P.wv, Xn.data(), T, Vm.data());
        return;
    }
    pairs->run([&](int half) {  // Q on one thread, K and V (as many rows between them) on the other
        if (half == 0) {
            P.wq.apply(Xn.data(), T, Qm.data());
        } else {
            P.wk.apply(Xn.data(), T, Km.data());
            P.wv.apply(Xn.data(), T, Vm.data());
        }
    });
}

void DecodeSession::Impl::finishLayerRows(int layer, int T, const std::vector<float>& A, std::vector<float>& X, std::vector<float>& Xn, std::vector<float>& O, std::vector<float>& Gm, std::vector<float>& Um) const {
    const LayerWeights& L = model->layers[size_t(layer)];
    const PackedLayer& P = packed[size_t(layer)];
    const int H = c.hiddenSize, F = c.intermediateSize;
    product(L.wo, P.wo, A.data(), T, O.data());
    for (size_t i = 0; i < size_t(T) * H; ++i) X[i] += O[i];
    for (int t = 0; t < T; ++t) rmsnorm(&X[size_t(t) * H], L.mlpNorm.data(), &Xn[size_t(t) * H], H, c.rmsNormEps);
    if (T <= kPackedRows) {
        pairs->run([&](int half) {  // the gate on one thread, the up projection on the other
            if (half == 0) P.wGate.apply(Xn.data(), T, Gm.data());
            else P.wUp.apply(Xn.data(), T, Um.data());
        });
    } else {
        product(L.wGate, P.wGate, Xn.data(), T, Gm.data());
        product(L.wUp, P.wUp, Xn.data(), T, Um.data());
    }
    kernels::swiglu(Gm.data(), Um.data(), size_t(T) * F);
    product(L.wDown, P.wDown, Gm.data(), T, O.data());
    for (size_t i = 0; i < size_t(T) * H; ++i) X[i] += O[i];
}

void DecodeSession::Impl::pageAttention(int layer, const std::vector<Block*>& page, int64_t pos0, const std::vector<float>& Qm, const std::vector<std::vector<Span>>& sinkSpans, int T, std::vector<float>& A) {
    const int D = c.headDim, G = c.groupSize(), Q = c.numHeads * D;
    const float scale = float(1.0 / std::sqrt(double(D)));
    constexpr int kChunk = 256;
    std::vector<float> pageTrig(size_t(T) * D);
    for (int t = 0; t < T; ++t) std::copy_n(trigAt(pos0 + t), D, &pageTrig[size_t(t) * D]);
    std::vector<std::vector<size_t>> sinkTrigAt(static_cast<size_t>(T));  // per sink span: its trig in sinkTrig
    std::vector<float> sinkTrig;
    std::map<int64_t, size_t> sinkTrigOf;
    for (int t = 0; t < T; ++t)
        for (const Span& sp : sinkSpans[size_t(t)]) {
            auto [it, fresh] = sinkTrigOf.try_emplace(sp.queryPos, sinkTrig.size());
            if (fresh) {
                const float* trig = trigAt(sp.queryPos);
                sinkTrig.insert(sinkTrig.end(), trig, trig + D);
            }
            sinkTrigAt[size_t(t)].push_back(it->second);
        }
    pairs->run([&](int half) {
        std::vector<float> K(size_t(T) * D), V(size_t(T) * D), Qr(size_t(kChunk) * D), S(size_t(kChunk) * T),
            O(size_t(kChunk) * D);
        std::vector<float> qs(static_cast<size_t>(D)), sinkScores;
        const auto [g0, g1] = groupsOf(half);
        for (int g = g0; g < g1; ++g) {
            for (int t = 0; t < T; ++t) {  // the page's keys (rotated) and values, contiguous
                const float* base = data(*page[size_t(t / kBlockTokens)]);
                const size_t at = kIndex(layer, g, t % kBlockTokens);
                std::copy_n(base + at, D, &K[size_t(t) * D]);
                std::copy_n(base + halfFloats + at, D, &V[size_t(t) * D]);
            }
            for (int j = 0; j < G; ++j) {
                const int hh = g * G + j;
                for (int r0 = 0; r0 < T; r0 += kChunk) {
                    const int rows = std::min(kChunk, T - r0), cols = r0 + rows;
                    for (int r = 0; r < rows; ++r) {
                        float* qr = &Qr[size_t(r) * D];
                        std::copy_n(&Qm[size_t(r0 + r) * Q + size_t(hh) * D], D, qr);
                        rotateWith(qr, &pageTrig[size_t(r0 + r) * D]);
                    }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, D, scale, Qr.data(), D, K.data(),
                                D, 0.0f, S.data(), cols);
                    for (int r = 0; r < rows; ++r) {
                        const int t = r0 + r;
                        float* row = &S[size_t(r) * cols];
                        // The sinks, each span with the query rotated where the frame puts it.
                        sinkScores.clear();
                        const auto& spans = sinkSpans[size_t(t)];
                        for (size_t si = 0; si < spans.size(); ++si) {
                            const Span& sp = spans[si];
                            std::copy_n(&Qm[size_t(t) * Q + size_t(hh) * D], D, qs.begin());
                            rotateWith(qs.data(), &sinkTrig[sinkTrigAt[size_t(t)][si]]);
                            for (int u = sp.first; u < sp.last; ++u)
                                sinkScores.push_back(kernels::dot(qs.data(), data(*sp.block) + kIndex(layer, g, u), D) *
                                                     scale);
                        }
                        const float mx = std::max(kernels::maxOf(sinkScores.data(), sinkScores.size()),
                                                  kernels::maxOf(row, size_t(t) + 1));
                        const float sum = kernels::expShifted(sinkScores.data(), sinkScores.size(), mx) +
                                          kernels::expShifted(row, size_t(t) + 1, mx);
                        const float inv = 1.f / sum;
                        kernels::scale(row, size_t(t) + 1, inv);
                        std::fill(row + t + 1, row + cols, 0.f);  // causal
                        float* out = &A[size_t(t) * Q + size_t(hh) * D];
                        std::fill(out, out + D, 0.f);
                        size_t k = 0;
                        for (const Span& sp : spans)
                            for (int u = sp.first; u < sp.last; ++u, ++k) {
                                const float w = sinkScores[k] * inv;
                                const float* vv = data(*sp.block) + halfFloats + kIndex(layer, g, u);
                                for (int i = 0; i < D; ++i) out[i] += w * vv[i];
                            }
                    }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, cols, 1.0f, S.data(), cols,
                                V.data(), D, 0.0f, O.data(), D);
                    for (int r = 0; r < rows; ++r) {
                        float* out = &A[size_t(r0 + r) * Q + size_t(hh) * D];
                        for (int i = 0; i < D; ++i) out[i] += O[size_t(r) * D + i];
                    }
                }
            }
        }
    });
}

void DecodeSession::Impl::storePageToken(const std::vector<Block*>& into, int layer, int t, int T, const float* keys, const float* values, std::vector<float>* summary, bool deviceHasIt) {
    const int D = c.headDim;
    Block& b = *into[size_t(t / kBlockTokens)];
    const int bt = t % kBlockTokens;
    for (int g = 0; g < c.numKvHeads; ++g) {
        const float* kin = keys + size_t(g) * D;
        if (summary) {
            const size_t so = (size_t(layer) * c.numKvHeads + g) * D;
            for (int i = 0; i < D; ++i) (*summary)[so + i] += kin[i] / float(T);
        }
        storeKv(b, layer, g, bt, kin, values + size_t(g) * D, false, deviceHasIt);
    }
    b.count = std::max(b.count, bt + 1);
}

Status DecodeSession::Impl::prefillPage(int page, const float* visual, int T, std::vector<float>& summary) {
    std::vector<int>& ids = pageBlocks[page];
    for (int i = 0; i < T; i += kBlockTokens) {
        auto id = newBlock(BlockKind::Visual, page);
        if (!id) return id.status();
        blocks[size_t(*id)].pos0 = position + i;
        ids.push_back(*id);
    }
    ++pageLayout;
    std::vector<Block*> into;
    for (int id : ids) into.push_back(&blocks[size_t(id)]);
    if (Status s = computePage(into, visual, T, position, &summary); !s) return s;
    position += T;
    frontier = std::max(frontier, position);
    if (c.pageAlignedPositions) position = pagePos0[page];  // the page's text starts where the page does
    return Status::ok();
}

Status DecodeSession::Impl::computePage(const std::vector<Block*>& into, const float* visual, int T, int64_t pos0, std::vector<float>* summary) {
    const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, F = c.intermediateSize;
    ++computedPages;
    if (device) {
        const Status s = devicePrefill(into, visual, T, pos0, summary);
        if (s) return s;
        if (!p.deviceFallback) return s;
        dropDevice("the prefill of a page at position " + std::to_string(pos0), s);
    }
    std::vector<float> X(size_t(T) * H), Xn(size_t(T) * H), Qm(size_t(T) * Q), Km(size_t(T) * KV), Vm(size_t(T) * KV),
        A(size_t(T) * Q), O(size_t(T) * H), Gm(size_t(T) * F), Um(size_t(T) * F);
    if (!c.visualTokenIds) {
        gemmRows(model->visualW, H, c.visualDim, visual, T, X.data());
    } else {
        // Features and ids are interleaved per token: pack the features for one product, then add
        // each token's embedding.
        const int stride = c.visualStride();
        std::vector<float> packed(size_t(T) * c.visualDim);
        for (int t = 0; t < T; ++t)
            std::copy_n(visual + size_t(t) * stride, c.visualDim, &packed[size_t(t) * c.visualDim]);
        gemmRows(model->visualW, H, c.visualDim, packed.data(), T, X.data());
        for (int t = 0; t < T; ++t) addVisualTokenIds(*model, visual + size_t(t) * stride, &X[size_t(t) * H]);
    }
    for (int t = 0; t < T; ++t)
        for (int j = 0; j < H; ++j) X[size_t(t) * H + j] += model->visualB[size_t(j)];
    // Where each token's query is rotated for each sink span (the position frame; the page's
    // own keys are in the query's interval, so they see its absolute position).
    std::vector<std::vector<Span>> sinkQueryPos(static_cast<size_t>(T));
    for (int t = 0; t < T; ++t) {
        std::vector<Span> spans = causalPageSpans(into, t);
        frame(spans, pos0 + t);
        for (const Span& sp : spans) {
            if (sp.block->kind == BlockKind::Sink) sinkQueryPos[size_t(t)].push_back(sp);
            else if (sp.queryPos != pos0 + t) return Status(ErrorCode::Internal, "prefill: page keys outside the query's frame");
        }
    }
    for (int l = 0; l < c.numLayers; ++l) {
        projectRows(l, T, X, Xn, Qm, Km, Vm);
        for (int t = 0; t < T; ++t) storePageToken(into, l, t, T, &Km[size_t(t) * KV], &Vm[size_t(t) * KV], summary, false);
        if (!p.referencePrefill) {
            pageAttention(l, into, pos0, Qm, sinkQueryPos, T, A);
        } else {
            for (int t = 0; t < T; ++t) {
                std::copy(&Qm[size_t(t) * Q], &Qm[size_t(t) * Q] + Q, q.begin());
                std::vector<Span> spans = causalPageSpans(into, t);
                frame(spans, pos0 + t);
                attend(l, spans);
                std::copy(att.begin(), att.begin() + Q, &A[size_t(t) * Q]);
            }
        }
        finishLayerRows(l, T, A, X, Xn, O, Gm, Um);
    }
    return Status::ok();
}

}  // namespace quire::decoder
