// A generated token's attention: the spans each mode lets it see (sinks, window, gated blocks,
// recent tokens) and the attention over them; the recall probe against full attention.
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

void DecodeSession::Impl::attend(int layer, const std::vector<Span>& spans) {
    const int D = c.headDim, G = c.groupSize();
    const float scale = float(1.0 / std::sqrt(double(D)));
    int total = 0;
    for (const auto& s : spans) total += s.last - s.first;
    scores.resize(size_t(total) * G);
    qrot.resize(size_t(G) * D);
    for (int g = 0; g < c.numKvHeads; ++g) {
        int idx = 0;
        int64_t rotatedFor = INT64_MIN;
        for (const auto& s : spans) {
            if (s.queryPos != rotatedFor) {
                for (int j = 0; j < G; ++j) {
                    const float* qh = &q[size_t(g * G + j) * D];
                    std::copy(qh, qh + D, &qrot[size_t(j) * D]);
                    rotate(&qrot[size_t(j) * D], s.queryPos);
                }
                rotatedFor = s.queryPos;
            }
            const float* base = data(*s.block);
            for (int t = s.first; t < s.last; ++t, ++idx) {
                const float* kk = base + kIndex(layer, g, t);
                for (int j = 0; j < G; ++j)
                    scores[size_t(j) * total + idx] = kernels::dot(&qrot[size_t(j) * D], kk, D) * scale;
            }
        }
        for (int j = 0; j < G; ++j) {
            float* sc = &scores[size_t(j) * total];
            const float mx = kernels::maxOf(sc, size_t(total));
            kernels::scale(sc, size_t(total), 1.f / kernels::expShifted(sc, size_t(total), mx));
            std::fill(&att[size_t(g * G + j) * D], &att[size_t(g * G + j) * D] + D, 0.f);
        }
        if (trackingStep) {
            int at = 0;
            for (const auto& s : spans) {
                const Block& b = *s.block;
                if (b.kind == BlockKind::Visual && b.page == currentPage) {
                    const int64_t first = b.pos0 - trackedPagePos0;
                    for (int t = s.first; t < s.last; ++t) {
                        const size_t v = size_t(first + t);
                        if (v >= attendedMass.size()) continue;
                        for (int j = 0; j < G; ++j) attendedMass[v] += scores[size_t(j) * total + at + (t - s.first)];
                    }
                }
                at += s.last - s.first;
            }
        }
        idx = 0;
        for (const auto& s : spans) {
            const float* base = data(*s.block) + halfFloats;
            for (int t = s.first; t < s.last; ++t, ++idx) {
                const float* vv = base + kIndex(layer, g, t);
                for (int j = 0; j < G; ++j) {
                    const float w = scores[size_t(j) * total + idx];
                    float* out = &att[size_t(g * G + j) * D];
                    for (int i = 0; i < D; ++i) out[i] += w * vv[i];
                }
            }
        }
    }
}

auto DecodeSession::Impl::causalPageSpans(const std::vector<Block*>& page, int t) const -> std::vector<Span> {
    std::vector<Span> spans = wholeBlocks(sinkBlocks);
    for (int bi = 0; bi <= t / kBlockTokens; ++bi)
        spans.push_back({page[size_t(bi)], 0, bi == t / kBlockTokens ? t % kBlockTokens + 1 : kBlockTokens, 0});
    return spans;
}

auto DecodeSession::Impl::wholeBlocks(const std::vector<int>& ids) const -> std::vector<Span> {
    std::vector<Span> out;
    append(out, ids);
    return out;
}

auto DecodeSession::Impl::generatedSet(int layer, int64_t generatedCount, const float* query, int64_t pos, Selection& select, bool refresh) -> std::vector<Span> {
    std::vector<Span> spans = wholeBlocks(sinkBlocks);
    const int64_t oldestRecent = generatedCount - p.recentTokens;  // index of the first token kept (self is generatedCount-1)
    for (int id : genBlocks) {
        const Block& b = blocks[size_t(id)];
        int first = 0;
        if (p.mode != AttentionMode::Full) first = int(std::clamp<int64_t>(oldestRecent - b.genIndex0, 0, b.count));
        if (first < b.count) spans.push_back({&b, first, b.count, 0});
    }
    if (p.mode != AttentionMode::SrSwa) {
        // Full and R-SWA see every page (and Full every generated block: genBlocks holds them all).
        for (const auto& [page, ids] : pageBlocks) append(spans, ids);
    } else {
        for (const auto& [page, ids] : pageBlocks)
            if (inWindow(page)) append(spans, ids);
        if (refresh || select.size() != gated.size()) select = selectGatedBlocks(layer, query, pos);
        for (const auto& [page, ids] : select) {
            const std::vector<const Block*> pageSet = gatedPageBlocks(page);
            for (int id : ids) spans.push_back({pageSet[size_t(id)], 0, pageSet[size_t(id)]->count, 0});
        }
    }
    return spans;
}

void DecodeSession::Impl::append(std::vector<Span>& spans, const std::vector<int>& ids) const {
    for (int id : ids) spans.push_back({&blocks[size_t(id)], 0, blocks[size_t(id)].count, 0});
}

void DecodeSession::Impl::measureRecall(int layer, const std::vector<Span>& spans, int64_t queryPos) {
    std::vector<Span> all = wholeBlocks(sinkBlocks);
    for (const auto& [page, ids] : pageBlocks) append(all, ids);
    append(all, retiredGenBlocks);
    append(all, genBlocks);
    frame(all, queryPos);
    // The attended tokens, by block and index: with page-aligned positions a generated token
    // shares its position with a visual token of its page, so positions alone do not tell them apart.
    std::vector<std::pair<const Block*, int>> picked;
    for (const auto& s : spans)
        for (int t = s.first; t < s.last; ++t) picked.push_back({s.block, t});
    std::sort(picked.begin(), picked.end());
    const int D = c.headDim, G = c.groupSize();
    const float scale = float(1.0 / std::sqrt(double(D)));
    std::vector<float> qr(static_cast<size_t>(D));
    for (int hh = 0; hh < c.numHeads; ++hh) {
        const int g = hh / G;
        std::vector<double> sc;
        std::vector<char> in;
        for (const auto& s : all) {
            std::copy(&q[size_t(hh) * D], &q[size_t(hh) * D] + D, qr.begin());
            rotate(qr.data(), s.queryPos);
            const float* base = data(*s.block);
            for (int t = s.first; t < s.last; ++t) {
                const float* kk = base + kIndex(layer, g, t);
                double dot = 0;
                for (int i = 0; i < D; ++i) dot += double(qr[size_t(i)]) * kk[i];
                sc.push_back(dot * scale);
                in.push_back(std::binary_search(picked.begin(), picked.end(), std::pair<const Block*, int>{s.block, t}));
            }
        }
        const double mx = *std::max_element(sc.begin(), sc.end());
        double sum = 0, hit = 0;
        for (size_t i = 0; i < sc.size(); ++i) {
            const double e = std::exp(sc[i] - mx);
            sum += e;
            if (in[i]) hit += e;
        }
        recall.samples.push_back(hit / sum);
    }
}

}  // namespace quire::decoder
