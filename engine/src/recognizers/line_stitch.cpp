// Joining the pieces of a text line that Tesseract's layout analysis read as separate lines.
#include "quire/recognizers/line_stitch.h"

#include <algorithm>
#include <map>

namespace quire {

namespace {

Box unite(const Box& a, const Box& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    const int l = std::min(a.x, b.x), t = std::min(a.y, b.y);
    return {l, t, std::max(a.right(), b.right()) - l, std::max(a.bottom(), b.bottom()) - t};
}

// Two pieces of one text line: side by side on the same line, of the same height, close, and
// together no wider than the column.
bool piecesOfOneLine(const Box& a, const Box& b, int column) {
    if (a.empty() || b.empty()) return false;
    const int overlap = std::min(a.bottom(), b.bottom()) - std::max(a.y, b.y);
    if (overlap < std::min(a.h, b.h) * 6 / 10) return false;
    if (a.h > 1.6 * b.h || b.h > 1.6 * a.h) return false;  // a piece as tall as two lines is not one
    const int h = std::max(a.h, b.h);
    const int gap = b.x >= a.right() ? b.x - a.right() : a.x >= b.right() ? a.x - b.right() : -1;
    if (gap < 0 || gap > kStitchGapLines * h) return false;
    return unite(a, b).w <= column + h / 2;
}

}  // namespace

int stitchSplitLines(PageText& page) {
    std::map<int, int> linesInBlock;
    for (const auto& l : page.lines) ++linesInBlock[l.block];
    // The column's width: the widest line of a block of several lines (of any block if none has).
    int column = 0, anyLine = 0;
    for (const auto& l : page.lines) {
        anyLine = std::max(anyLine, l.box.w);
        if (linesInBlock[l.block] > 1) column = std::max(column, l.box.w);
    }
    if (column == 0) column = anyLine;
    int joined = 0;
    std::vector<bool> gone(page.lines.size(), false);
    for (size_t i = 0; i < page.lines.size(); ++i) {
        if (gone[i]) continue;
        Line& line = page.lines[i];
        // Later pieces join the first in reading order, which keeps its place.
        for (bool grew = true; grew;) {
            grew = false;
            for (size_t j = i + 1; j < page.lines.size(); ++j) {
                Line& piece = page.lines[j];
                if (gone[j] || piece.words.empty() || !piecesOfOneLine(line.box, piece.box, column)) continue;
                const bool after = piece.box.x >= line.box.right();
                line.words.insert(after ? line.words.end() : line.words.begin(), piece.words.begin(), piece.words.end());
                line.box = unite(line.box, piece.box);
                gone[j] = true;
                grew = true;
                ++joined;
            }
        }
    }
    if (joined) {
        std::vector<Line> kept;
        kept.reserve(page.lines.size() - size_t(joined));
        for (size_t i = 0; i < page.lines.size(); ++i)
            if (!gone[i]) kept.push_back(std::move(page.lines[i]));
        page.lines = std::move(kept);
    }
    return joined;
}

}  // namespace quire
