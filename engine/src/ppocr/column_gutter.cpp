// Column gutters that a few detected boxes bridge, and those boxes cut at them. Where the gutter
// between text columns is about a character wide (Chinese books and newspapers set so), the
// detector, which sees the page at a third of its size, joins a row's two pieces into one box on
// some rows; one such box hides the gutter from the XY-cut, and the page is read row by row across
// both columns.
#include "quire/ppocr/ppocr.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <numeric>

namespace quire {

namespace {

struct Gutter {
    int from = 0, to = 0;  // [from, to) along x
    int middle() const { return (from + to) / 2; }
    // A line of the left column beside it: ending at most `reach` right of its left edge and no
    // more than three line heights short of it (a column's lines end near their gutter).
    bool endsBeside(const Box& b, int lineH, int reach = 0) const {
        return b.right() <= from + reach && b.right() >= from - 3 * lineH;
    }
    // A line of the right column beside it: starting at most `reach` left of its right edge and no
    // more than three line heights past it.
    bool startsBeside(const Box& b, int lineH, int reach = 0) const {
        return b.x >= to - reach && b.x <= to + 3 * lineH;
    }
};

// The gutters among the text lines (`text`, indices into `boxes`) of a page `width` wide.
std::vector<Gutter> findGutters(const std::vector<Box>& boxes, const std::vector<size_t>& text, int lineH, int minWidth,
                                int width) {
    // How many text lines cover each x; a gutter is a run at least 0.8 of a line high wide (the
    // XY-cut's column gap) that few of them cover, with at least four lines ending just left of it
    // and four starting just right of it, and bridged at most by a third as many lines as that.
    std::vector<int> cover(size_t(width) + 1, 0);
    for (size_t i : text) {
        cover[size_t(std::clamp(boxes[i].x, 0, width))] += 1;
        cover[size_t(std::clamp(boxes[i].right(), 0, width))] -= 1;
    }
    std::partial_sum(cover.begin(), cover.end(), cover.begin());
    const int few = std::max(3, int(text.size()) / 8);
    std::vector<Gutter> gutters;
    for (int x = 0; x < width;) {
        if (cover[size_t(x)] > few) {
            ++x;
            continue;
        }
        Gutter g{x, x};
        while (g.to < width && cover[size_t(g.to)] <= few) ++g.to;
        x = g.to;
        if (g.to - g.from < minWidth) continue;
        int leftEnds = 0, rightStarts = 0, bridges = 0;
        for (size_t i : text) {
            const Box& b = boxes[i];
            if (b.right() <= g.from) leftEnds += g.endsBeside(b, lineH);
            else if (b.x >= g.to) rightStarts += g.startsBeside(b, lineH);
            else bridges += b.x < g.middle() && b.right() > g.middle();
        }
        if (leftEnds >= 4 && rightStarts >= 4 && bridges > 0 && bridges * 3 <= std::min(leftEnds, rightStarts))
            gutters.push_back(g);
    }
    return gutters;
}

}  // namespace

void cutAtColumnGutters(std::vector<std::vector<cv::Point2f>>& quads, std::vector<Box>& boxes, int width, int height) {
    if (boxes.size() < 8 || width <= 0) return;
    const int lineH = medianBoxHeight(boxes);
    // Text lines: about a line high, read across (a vertical line or a picture takes no part).
    std::vector<size_t> text;
    for (size_t i = 0; i < boxes.size(); ++i) {
        const Box& b = boxes[i];
        if (b.h * 2 >= lineH && b.h <= 2 * lineH && b.h * 3 < b.w * 2) text.push_back(i);
    }
    if (text.size() < 8) return;

    const int minWidth = std::max(1, lineH * 4 / 5);
    const std::vector<Gutter> gutters = findGutters(boxes, text, lineH, minWidth, width);
    if (gutters.empty()) return;

    // Each gutter is made white for the XY-cut, 0.8 of a line high about its middle: a box that
    // bridges it as part of a row of both columns is cut in two there; a heading over the columns,
    // a footer under them (the XY-cut takes such rows apart) or a speck stays whole; a column's
    // line reaching into it (the unclip's margin) is trimmed to its own side.
    for (const auto& g : gutters) {
        // A few pixels more than the XY-cut asks: the pieces' bounds are rounded outwards.
        const int lo = g.middle() - minWidth / 2 - 3, hi = g.middle() + minWidth / 2 + 3;
        std::vector<int> starts, ends;  // the left column's line starts, the right column's line ends
        for (size_t i : text) {
            const Box& b = boxes[i];
            if (g.endsBeside(b, lineH)) starts.push_back(b.x);
            if (g.startsBeside(b, lineH)) ends.push_back(b.right());
        }
        if (starts.empty() || ends.empty()) continue;
        std::nth_element(starts.begin(), starts.begin() + long(starts.size() / 2), starts.end());
        std::nth_element(ends.begin(), ends.begin() + long(ends.size() / 2), ends.end());
        const int leftStart = starts[starts.size() / 2], rightEnd = ends[ends.size() / 2];
        // A line of the left (right) column beside the gutter whose top lies from `up` to `down`
        // pixels below c's (negative: above).
        const auto columnLine = [&](const Box& c, bool leftSide, int up, int down) {
            return std::any_of(text.begin(), text.end(), [&](size_t i) {
                const Box& b = boxes[i];
                // (reaching into the gutter as far as the cut: the unclip's margin)
                const bool side = leftSide ? g.endsBeside(b, lineH, hi - g.from) : g.startsBeside(b, lineH, g.to - lo);
                return side && b.y - c.y >= up && b.y - c.y <= down;
            });
        };
        // Lines of both columns on its own row; or above and below it.
        const auto onRowOfBoth = [&](const Box& c) {
            return columnLine(c, true, -lineH / 3, lineH / 3) && columnLine(c, false, -lineH / 3, lineH / 3);
        };
        const auto betweenRows = [&](const Box& c) {
            const int near = lineH / 2 + 1, far = 3 * lineH;
            return columnLine(c, true, -far, -near) && columnLine(c, true, near, far) && columnLine(c, false, -far, -near) &&
                   columnLine(c, false, near, far);
        };
        const size_t before = text.size();
        for (size_t k = 0; k < before; ++k) {
            const size_t i = text[k];
            const Box c = boxes[i];
            if (c.right() <= lo || c.x >= hi) continue;
            const std::vector<cv::Point2f> q = quads[i];
            const float qLeft = std::min(q[0].x, q[3].x), qRight = std::max(q[1].x, q[2].x);
            // A line (three line heights or longer) bridges as a row when it runs from the left
            // column's start to the right column's end or lies among both columns' lines; a
            // shorter box (a piece across the gutter beside a row's two lines) when it is at least
            // 0.6 of a line high and its row has lines of both columns. Anything else across it
            // (a heading, a speck of the facing page showing through) stays whole.
            const bool longLine = c.w >= 3 * lineH;
            if (c.x < lo && c.right() > hi) {
                const bool row = longLine ? ((c.x <= leftStart + lineH && c.right() >= rightEnd - lineH) ||
                                             onRowOfBoth(c) || betweenRows(c))
                                          : c.h * 5 >= lineH * 3 && onRowOfBoth(c);
                if (!row) continue;
                // A sliver (under a quarter of a line high wide beside a long line: the unclip's
                // margin; under half a line high beside a short box: less than a character) is
                // left out; a short box of two slivers stays whole.
                const float least = float(longLine ? lineH / 4 : lineH / 2);
                const bool left = lo - qLeft >= least, right = qRight - hi >= least;
                if (!left && !right) continue;
                quads[i] = left ? quadPart(q, qLeft, float(lo)) : quadPart(q, float(hi), qRight);
                boxes[i] = quadBounds(quads[i], width, height);
                if (left && right) {
                    quads.push_back(quadPart(q, float(hi), qRight));
                    boxes.push_back(quadBounds(quads.back(), width, height));
                    text.push_back(boxes.size() - 1);
                }
            } else if (longLine && c.x < lo - lineH) {  // a left column's line reaching into it
                quads[i] = quadPart(q, qLeft, float(lo));
                boxes[i] = quadBounds(quads[i], width, height);
            } else if (longLine && c.right() > hi + lineH) {  // a right column's line reaching into it
                quads[i] = quadPart(q, float(hi), qRight);
                boxes[i] = quadBounds(quads[i], width, height);
            }
        }
    }
}

}  // namespace quire
