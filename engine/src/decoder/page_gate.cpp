// The page gate and the token selector: per-page key summaries, the pages the recent queries
// pick, and inside each the Quest blocks a layer attends.
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

auto DecodeSession::Impl::selectGatedBlocks(int layer, const float* query, int64_t pos) const -> Selection {
    Selection out;
    const int D = c.headDim;
    // The query rotated to the step's own position, once per head: every block within half the
    // trained range is scored in that frame; a block further back in its own (kernels::questBound
    // rotates the query as it scores, with the frame's cos and sin looked up once per block).
    std::vector<float> atPos(query, query + size_t(c.numHeads) * D);
    for (int hh = 0; hh < c.numHeads; ++hh) rotate(atPos.data() + size_t(hh) * D, pos);
    const size_t o = size_t(layer) * c.numKvHeads * D;
    for (int page : gated) {
        const std::vector<const Block*> pageSet = gatedPageBlocks(page);
        std::vector<std::pair<float, int>> scored;
        scored.reserve(pageSet.size());
        for (int id = 0; id < int(pageSet.size()); ++id) {
            const Block& b = *pageSet[size_t(id)];
            // Nominal frame: the block as if it stood right before the window.
            const int64_t rel = std::min<int64_t>(pos - b.pos0, c.maxPositions / 2);
            const int64_t qpos = b.pos0 + rel;
            const float score = qpos == pos ? kernels::questBound(atPos.data(), nullptr, &b.kMin[o], &b.kMax[o], c.numHeads,
                                                                  c.groupSize(), D)
                                            : kernels::questBound(query, trigAt(qpos), &b.kMin[o], &b.kMax[o], c.numHeads,
                                                                  c.groupSize(), D);
            scored.push_back({score, id});
        }
        const size_t keep = std::min(scored.size(), size_t(p.blocksPerGatedPage));
        std::partial_sort(scored.begin(), scored.begin() + long(keep), scored.end(),
                          [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
        std::vector<int> ids;
        for (size_t i = 0; i < keep; ++i) ids.push_back(scored[i].second);
        out.push_back({page, std::move(ids)});
    }
    return out;
}

std::vector<float> DecodeSession::Impl::layerInvNorms(const std::vector<float>& v) const {
    const size_t per = size_t(c.numKvHeads) * c.headDim;
    std::vector<float> out(size_t(c.numLayers), 0.f);
    for (int l = 0; l < c.numLayers; ++l) {
        double ss = 0;
        for (size_t i = l * per; i < (l + 1) * per; ++i) ss += double(v[i]) * v[i];
        out[size_t(l)] = ss > 0 ? float(1.0 / std::sqrt(ss)) : 0.f;
    }
    return out;
}

void DecodeSession::Impl::addGateSummary(int page, const std::vector<float>& summary) {
    if (gatePages == 0) gateFirstPage = page;
    gateMeans.insert(gateMeans.end(), summary.begin(), summary.end());
    const std::vector<float> inv = layerInvNorms(summary);
    gateInvNorms.insert(gateInvNorms.end(), inv.begin(), inv.end());
    ++gatePages;
}

Status DecodeSession::Impl::refreshGate() {
    const std::vector<int> held = std::move(gated);  // sorted
    gated.clear();
    if (p.mode != AttentionMode::SrSwa || p.gatedPages <= 0) return Status::ok();
    const size_t n = size_t(c.numLayers) * c.numKvHeads * c.headDim;
    std::vector<float> gq(n, 0.f);
    int have = 0;
    for (const auto& r : recentQueries)
        if (!r.empty()) {
            for (size_t i = 0; i < n; ++i) gq[i] += r[i];
            ++have;
        }
    // Score of a page: Σ over layers of the cosine between the query's and the page's slices.
    const int rows = std::clamp(currentPage - p.windowBefore - gateFirstPage, 0, gatePages);  // earlier pages only
    const int per = c.numKvHeads * c.headDim, L = c.numLayers;
    const std::vector<float> qInv = layerInvNorms(gq);
    std::vector<float> dots(size_t(rows) * L, 0.f);
    if (rows > 0 && have)
        for (int l = 0; l < L; ++l)  // dots[page][l] = page's layer-l slice · query's, strided over the rows
            cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, per, qInv[size_t(l)], gateMeans.data() + size_t(l) * per, int(n),
                        gq.data() + size_t(l) * per, 1, 0.0f, dots.data() + l, L);
    std::vector<std::pair<float, int>> scored;
    for (int r = 0; r < rows; ++r) {
        float score = 0;
        for (int l = 0; l < L; ++l) score += dots[size_t(r) * L + l] * gateInvNorms[size_t(r) * L + l];
        const int page = gateFirstPage + r;
        if (have && std::binary_search(held.begin(), held.end(), page)) score += p.gateHold;
        scored.push_back({have ? score : 0.f, page});
    }
    // The best k_p, ties to the earlier page.
    const size_t keep = std::min(scored.size(), size_t(p.gatedPages));
    std::partial_sort(scored.begin(), scored.begin() + long(keep), scored.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    for (size_t i = 0; i < keep; ++i) gated.push_back(scored[i].second);
    std::sort(gated.begin(), gated.end());
    return materializeGated();
}

void DecodeSession::Impl::addGateQuery(std::vector<float>& gq, int layer, const float* query) const {
    const int G = c.groupSize();
    for (int hh = 0; hh < c.numHeads; ++hh)
        for (int i = 0; i < c.headDim; ++i)
            gq[(size_t(layer) * c.numKvHeads + hh / G) * c.headDim + i] += query[size_t(hh) * c.headDim + i] / float(G);
}

void DecodeSession::Impl::pushRecentQuery(std::vector<float> gq) {
    if (recentQueries.empty()) return;
    recentQueries[size_t(recentQueryNext)] = std::move(gq);
    recentQueryNext = (recentQueryNext + 1) % int(recentQueries.size());
}

}  // namespace quire::decoder
