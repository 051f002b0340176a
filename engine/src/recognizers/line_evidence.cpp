// Tesseract's glyphs laid on the front-end's characters of a line, by an alignment of text and position.
#include "quire/recognizers/line_evidence.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace quire {

namespace {

struct Found {
    const Glyph* glyph;
    bool wordStart;
    float x;    // the glyph's centre
    int wordX;  // its word's left edge: words keep their order, glyphs theirs within the word
};

constexpr float kGap = 1.f;          // a character or a glyph left unpaired
constexpr float kPerPitch = 0.5f;    // a pair's cost per character width between the two
constexpr float kFarthestPitches = 3.f;

}  // namespace

LineEvidence alignLineEvidence(const std::vector<std::string>& chars, const std::vector<float>& xs, const Box& line,
                               const PageText& other) {
    LineEvidence ev;
    ev.chars.resize(chars.size());
    if (line.empty() || xs.size() != chars.size()) return ev;
    const int h = line.h;
    std::vector<Found> found;
    for (const auto& l : other.lines)
        for (const auto& w : l.words) {
            // The word's box decides the line (the LSTM's glyph boxes are rough vertically).
            const float cy = w.box.y + w.box.h * 0.5f;
            if (cy < line.y || cy > line.bottom()) continue;
            for (size_t k = 0; k < w.glyphs.size(); ++k) {
                const Glyph& g = w.glyphs[k];
                const float cx = g.box.x + g.box.w * 0.5f;
                if (cx < line.x - h || cx > line.right() + h) continue;
                found.push_back({&g, k == 0, cx, w.box.x});
            }
        }
    if (found.empty()) return ev;
    std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.wordX < b.wordX; });
    std::vector<int> widths;
    for (const auto& f : found) {
        ev.glyphs.push_back(*f.glyph);
        ev.wordStarts.push_back(f.wordStart);
        widths.push_back(f.glyph->box.w);
    }
    std::nth_element(widths.begin(), widths.begin() + long(widths.size() / 2), widths.end());
    const float pitch = std::clamp(float(widths[widths.size() / 2]), 0.2f * h, 1.5f * h);

    // Needleman-Wunsch over the line's non-space characters and its glyphs.
    std::vector<size_t> ci;
    for (size_t i = 0; i < chars.size(); ++i)
        if (chars[i] != " ") ci.push_back(i);
    const size_t n = ci.size(), m = found.size();
    constexpr float kFar = std::numeric_limits<float>::infinity();
    std::vector<float> cost((n + 1) * (m + 1));
    auto at = [&](size_t i, size_t j) -> float& { return cost[i * (m + 1) + j]; };
    auto pairCost = [&](size_t i, size_t j) {
        const float d = std::abs(xs[ci[i]] - found[j].x) / pitch;
        if (d > kFarthestPitches) return kFar;
        return (chars[ci[i]] == found[j].glyph->text ? 0.f : 1.f) + kPerPitch * d;
    };
    for (size_t i = 0; i <= n; ++i)
        for (size_t j = 0; j <= m; ++j) {
            if (i == 0 || j == 0) {
                at(i, j) = kGap * float(i + j);
                continue;
            }
            at(i, j) = std::min({at(i - 1, j - 1) + pairCost(i - 1, j - 1), at(i - 1, j) + kGap, at(i, j - 1) + kGap});
        }
    // Back from the end: each step a pair, a character alone or a glyph alone.
    struct Step { int i, j; };  // -1: none
    std::vector<Step> path;
    for (size_t i = n, j = m; i > 0 || j > 0;) {
        if (i > 0 && j > 0 && at(i, j) == at(i - 1, j - 1) + pairCost(i - 1, j - 1)) {
            path.push_back({int(--i), int(--j)});
        } else if (i > 0 && at(i, j) == at(i - 1, j) + kGap) {
            path.push_back({int(--i), -1});
        } else {
            path.push_back({-1, int(--j)});
        }
    }
    std::reverse(path.begin(), path.end());
    std::string pending;
    for (const Step& s : path) {
        if (s.i < 0) {
            pending += found[size_t(s.j)].glyph->text;
            continue;
        }
        CharEvidence& c = ev.chars[ci[size_t(s.i)]];
        c.glyph = s.j;
        c.before = std::move(pending);
        pending.clear();
    }
    ev.trailing = std::move(pending);

    // Word breaks: midway between a word's first glyph and the glyph before it, given to the first
    // character at or past that place.
    std::vector<float> breaks;
    for (size_t j = 1; j < m; ++j)
        if (found[j].wordStart) breaks.push_back(0.5f * (found[j - 1].x + found[j].x));
    size_t b = 0;
    for (size_t i = 0; i < chars.size(); ++i) {
        bool any = false;
        while (b < breaks.size() && breaks[b] <= xs[i]) {
            any = true;
            ++b;
        }
        ev.chars[i].breakBefore = any && i > 0;
    }
    return ev;
}

LineEvidence alignLineEvidence(const PpocrLine& line, const PpocrEngine& front, const PageText& other) {
    std::vector<std::string> chars;
    std::vector<float> xs;
    for (size_t c = 0; c < line.charIds.size(); ++c) {
        chars.push_back(front.charOf(line.charIds[c]));
        xs.push_back(line.xOfFrame(line.charFrames[c]));
    }
    return alignLineEvidence(chars, xs, line.box, other);
}

}  // namespace quire
