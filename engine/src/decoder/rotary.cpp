// Rotary positions: the cos/sin table of each position used, rotation, and the position frame
// that places far blocks for a step (runs of positions a token attended to).
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

int DecodeSession::Impl::runsTotal(const PositionRuns& runs) {
    int n = 0;
    for (const auto& r : runs) n += r.second;
    return n;
}

const float* DecodeSession::Impl::trigAt(int64_t pos) const {
    const int D = c.headDim, half = D / 2;
    const size_t slot = size_t(pos < 0 ? -pos : pos) % trigTags.size();
    float* t = &trigTable[slot * size_t(D)];
    if (trigTags[slot] != pos) {
        for (int i = 0; i < half; ++i) {
            const double a = double(pos) * invFreq[size_t(i)];
            t[i] = float(std::cos(a));
            t[half + i] = float(std::sin(a));
        }
        trigTags[slot] = pos;
    }
    return t;
}

void DecodeSession::Impl::setTrigEntries(size_t entries) {
    trigTags.assign(std::max<size_t>(1, entries), std::numeric_limits<int64_t>::min());
    trigTable.assign(trigTags.size() * size_t(c.headDim), 0.f);
}

void DecodeSession::Impl::rotateWith(float* vec, const float* t) const {
    const int half = c.headDim / 2;
    for (int i = 0; i < half; ++i) {
        const float cs = t[i], sn = t[half + i];
        const float x0 = vec[i], x1 = vec[i + half];
        vec[i] = x0 * cs - x1 * sn;
        vec[i + half] = x0 * sn + x1 * cs;
    }
}

auto DecodeSession::Impl::positionRuns(const std::vector<Span>& spans) -> PositionRuns {
    PositionRuns runs;
    runs.reserve(spans.size());
    for (const auto& s : spans) runs.push_back({s.block->pos0 + s.first, s.last - s.first});
    return runs;
}

void DecodeSession::Impl::frame(std::vector<Span>& spans, int64_t queryPos) const {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
        return a.block->pos0 + a.first < b.block->pos0 + b.first;
    });
    if (spans.empty()) return;
    const int64_t lo = std::min(queryPos, spans.front().block->pos0 + spans.front().first);
    int64_t hi = queryPos + 1;
    for (const auto& s : spans) hi = std::max(hi, s.block->pos0 + s.last);
    if (hi - 1 - lo < c.maxPositions) {
        for (auto& s : spans) s.queryPos = queryPos;
        return;
    }
    // Disjoint intervals of attended positions (the query's own included), laid end to end.
    struct Interval {
        int64_t begin, end, virt;
    };
    std::vector<Interval> iv;
    auto add = [&](int64_t a, int64_t b) {
        if (!iv.empty() && a <= iv.back().end) iv.back().end = std::max(iv.back().end, b);
        else iv.push_back({a, b, 0});
    };
    bool queryAdded = false;
    for (const auto& s : spans) {
        const int64_t a = s.block->pos0 + s.first;
        if (!queryAdded && queryPos < a) add(queryPos, queryPos + 1), queryAdded = true;
        add(a, s.block->pos0 + s.last);
    }
    if (!queryAdded) add(queryPos, queryPos + 1);
    int64_t virt = 0;
    for (auto& i : iv) i.virt = virt, virt += i.end - i.begin;
    auto virtualOf = [&](int64_t pos) {
        auto it = std::upper_bound(iv.begin(), iv.end(), pos, [](int64_t p, const Interval& i) { return p < i.begin; });
        --it;  // the interval holding pos
        return it->virt + (pos - it->begin);
    };
    const int64_t queryVirt = virtualOf(queryPos);
    for (auto& s : spans) {
        const int64_t abs = s.block->pos0 + s.first;
        s.queryPos = abs + (queryVirt - virtualOf(abs));
    }
}

}  // namespace quire::decoder
