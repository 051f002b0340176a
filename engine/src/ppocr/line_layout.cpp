// The front-end's lines on the page: which detected boxes share a row, the reading order by
// recursive XY-cut, the white bands that set a line apart from the next, paragraph ends as set.
#include "quire/ppocr/ppocr.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace quire {

bool sameRow(const Box& a, const Box& b) {
    return std::abs((a.y + a.h / 2) - (b.y + b.h / 2)) * 10 < std::min(a.h, b.h) * 3;
}

bool isVerticalLine(const Box& box) { return box.h * 2 >= box.w * 3; }

bool continuesRow(const Box& piece, const Box& next) {
    return !isVerticalLine(piece) && !isVerticalLine(next) && sameRow(piece, next) && next.x >= piece.right() - piece.h;
}

int medianBoxHeight(const std::vector<Box>& boxes) {
    if (boxes.empty()) return 1;
    std::vector<int> heights;
    for (const auto& b : boxes) heights.push_back(b.h);
    std::nth_element(heights.begin(), heights.begin() + long(heights.size() / 2), heights.end());
    return std::max(1, heights[heights.size() / 2]);
}

namespace {

// Recursive XY-cut (Nagy & Seth's split of a page at its white gaps, as PP-Structure and most
// layout tools order regions), on the detected line boxes:
//  1. a white band across the whole region at least a line high (medianH) splits it top to
//     bottom: sections, a title above the text, a paragraph gap, a table below;
//  2. else white columns down the whole region at least 0.8 of a line height wide split it left
//     to right: columns, a side bar beside the text. Cells whose rows line up across narrow
//     columns (at most 12 line heights wide) are a table and are read row by row instead;
//  3. else, where taking a heading's one or two rows off the top and a footer's row off the foot
//     leaves columns, those rows and the rest are cut apart (a heading, running head or footer
//     across the gutter, set closer to the columns than a line height);
//  4. else the region is one block: its lines, top to bottom at any white band, boxes on one
//     row left to right.
// Each region of step 4, each table and each lone row is a block; its lines form paragraphs
// downstream. The thresholds are typographic — line gaps inside a paragraph are less than a line
// high, gutters between text columns wider than most of one — so text columns are not cut into
// rows nor lines into columns; on ../shared/eval's pages the table rule gave the same order
// anywhere from 10 to 20 line heights (docs/ACCURACY.md).
class XyCut {
public:
    XyCut(const std::vector<Box>& boxes, int medianH, std::vector<int>& order, std::vector<int>* blockOf)
        : m_boxes(boxes), m_medianH(medianH), m_order(order), m_blockOf(blockOf) {}

    void cut(std::vector<int> ids, bool inBlock) {
        const std::vector<std::vector<int>> byRow = rows(ids);
        if (byRow.size() == 1) {
            std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return box(a).x < box(b).x; });
            place(ids, inBlock);
            return;
        }
        if (auto big = gaps(ids, false, m_medianH); !big.empty()) {
            for (auto& piece : split(ids, false, big)) cut(std::move(piece), inBlock);
            return;
        }
        if (auto gutters = gaps(ids, true, std::max(1, m_medianH * 4 / 5)); !gutters.empty()) {
            auto pieces = split(ids, true, gutters);
            if (isTable(ids.size(), byRow, pieces)) {
                place(flatten(byRow), inBlock);
                return;
            }
            for (auto& piece : pieces) cut(std::move(piece), inBlock);
            return;
        }
        // A heading or running head over the gutter, nearer the columns than a line height, hides
        // the gutter (as a footer across it does): up to two rows at the top and one at the foot
        // are taken off on their own when the rest then splits into columns of three lines or
        // more (not a form's short label and value columns).
        if (byRow.size() >= 4) {
            const int minGutter = std::max(1, m_medianH * 4 / 5);
            for (const auto& [top, foot] : {std::pair<long, long>{1, 0}, {0, 1}, {1, 1}, {2, 0}, {2, 1}}) {
                std::vector<int> rest = flatten({byRow.begin() + top, byRow.end() - foot});
                const auto gutters = gaps(rest, true, minGutter);
                if (gutters.empty()) continue;
                const auto columns = split(rest, true, gutters);
                if (std::any_of(columns.begin(), columns.end(), [](const auto& c) { return c.size() < 3; })) continue;
                if (top > 0) cut(flatten({byRow.begin(), byRow.begin() + top}), inBlock);
                cut(std::move(rest), inBlock);
                if (foot > 0) cut(byRow.back(), inBlock);
                return;
            }
        }
        if (!inBlock) ++m_block;
        if (auto lineGaps = gaps(ids, false, 1); !lineGaps.empty()) {
            for (auto& piece : split(ids, false, lineGaps)) cut(std::move(piece), true);
            return;
        }
        place(flatten(byRow), true);  // boxes overlapping from top to bottom: rows by their centres
    }

private:
    using Gap = std::pair<int, int>;  // [from, to) of white along one axis

    const Box& box(int i) const { return m_boxes[size_t(i)]; }

    void place(const std::vector<int>& ids, bool inBlock) {
        if (!inBlock) ++m_block;
        for (int i : ids) {
            m_order.push_back(i);
            if (m_blockOf) (*m_blockOf)[size_t(i)] = m_block;
        }
    }

    // Rows of boxes, top to bottom, each left to right.
    std::vector<std::vector<int>> rows(std::vector<int> ids) const {
        std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return box(a).y + box(a).h / 2 < box(b).y + box(b).h / 2; });
        std::vector<std::vector<int>> out;
        for (int i : ids) {
            if (!out.empty() && sameRow(box(out.back().front()), box(i))) out.back().push_back(i);
            else out.push_back({i});
        }
        for (auto& r : out) std::stable_sort(r.begin(), r.end(), [&](int a, int b) { return box(a).x < box(b).x; });
        return out;
    }

    static std::vector<int> flatten(const std::vector<std::vector<int>>& byRow) {
        std::vector<int> out;
        for (const auto& r : byRow) out.insert(out.end(), r.begin(), r.end());
        return out;
    }

    // White gaps at least `minGap` wide that cross the whole region, along x (columns) or y.
    std::vector<Gap> gaps(const std::vector<int>& ids, bool alongX, int minGap) const {
        std::vector<Gap> spans;
        for (int i : ids) spans.push_back(alongX ? Gap{box(i).x, box(i).right()} : Gap{box(i).y, box(i).bottom()});
        std::sort(spans.begin(), spans.end());
        std::vector<Gap> out;
        int reach = spans.front().second;
        for (const auto& [from, to] : spans) {
            if (from - reach >= minGap) out.push_back({reach, from});
            reach = std::max(reach, to);
        }
        return out;
    }

    std::vector<std::vector<int>> split(const std::vector<int>& ids, bool alongX, const std::vector<Gap>& cuts) const {
        std::vector<std::vector<int>> pieces(cuts.size() + 1);
        for (int i : ids) {
            const Box& b = box(i);
            const int start = alongX ? b.x : b.y;  // every box lies wholly between two gaps
            const auto k = std::upper_bound(cuts.begin(), cuts.end(), start, [](int v, const Gap& g) { return v < g.second; }) - cuts.begin();
            pieces[size_t(k)].push_back(i);
        }
        std::erase_if(pieces, [](const auto& p) { return p.empty(); });
        return pieces;
    }

    // Narrow columns whose boxes mostly share rows with boxes of another column: a table. Columns
    // of running text are none: one wider than 12 line heights, or all at least 5 wide with lines
    // that mostly fill them or run to their right edge from an indent (a magazine's or newspaper's
    // narrow columns, their lines on the same rows; a table has narrow columns, or cells that vary
    // in width).
    // `byRow`: the region's rows (rows()), `count` boxes in all.
    bool isTable(size_t count, const std::vector<std::vector<int>>& byRow, const std::vector<std::vector<int>>& pieces) const {
        std::map<int, size_t> pieceOf;
        size_t textColumns = 0;
        for (size_t k = 0; k < pieces.size(); ++k) {
            int left = box(pieces[k].front()).x, right = box(pieces[k].front()).right();
            for (int i : pieces[k]) {
                pieceOf[i] = k;
                left = std::min(left, box(i).x);
                right = std::max(right, box(i).right());
            }
            const int width = right - left;
            if (width > 12 * m_medianH) return false;
            // A line of running text fills its column, or (a paragraph's first line, indented)
            // runs at least half across it to its right edge.
            const auto full = std::count_if(pieces[k].begin(), pieces[k].end(), [&](int i) {
                const Box& b = box(i);
                return b.w * 5 >= width * 4 || (b.w * 2 >= width && right - b.right() <= m_medianH);
            });
            if (width >= 5 * m_medianH && pieces[k].size() >= 3 && size_t(full) * 5 >= pieces[k].size() * 3) ++textColumns;
        }
        if (textColumns == pieces.size()) return false;
        size_t shared = 0;
        for (const auto& r : byRow) {
            const bool across = std::any_of(r.begin(), r.end(), [&](int i) { return pieceOf[i] != pieceOf[r.front()]; });
            if (across) shared += r.size();
        }
        return shared * 10 >= count * 6;
    }

    const std::vector<Box>& m_boxes;
    const int m_medianH;
    std::vector<int>& m_order;
    std::vector<int>* m_blockOf;
    int m_block = -1;
};

}  // namespace

std::vector<int> readingOrder(const std::vector<Box>& boxes, std::vector<int>* blockOfLine) {
    std::vector<int> order;
    if (blockOfLine) blockOfLine->assign(boxes.size(), 0);
    if (boxes.empty()) return order;
    const int medianH = medianBoxHeight(boxes);
    std::vector<int> all(boxes.size());
    std::iota(all.begin(), all.end(), 0);
    XyCut(boxes, medianH, order, blockOfLine).cut(std::move(all), false);
    return order;
}


std::vector<bool> wideWhiteBands(const std::vector<Box>& lines, int lineHeight) {
    // The white between each line and the next one down (a line beside or above: none).
    std::vector<int> white(lines.size(), std::numeric_limits<int>::min()), usual;
    for (size_t k = 0; k + 1 < lines.size(); ++k)
        if (lines[k + 1].y >= lines[k].y + lines[k].h / 2) usual.push_back(white[k] = lines[k + 1].y - lines[k].bottom());
    int threshold = lineHeight;
    if (!usual.empty()) {
        const size_t mid = (usual.size() - 1) / 2;  // the lower median: a head's band is not the usual
        std::nth_element(usual.begin(), usual.begin() + long(mid), usual.end());
        threshold = std::max(threshold, usual[mid] + lineHeight / 2);
    }
    std::vector<bool> wide;
    for (size_t k = 0; k + 1 < lines.size(); ++k) wide.push_back(white[k] > threshold);
    return wide;
}

bool typesetParagraphEnd(const Box& line, const Box& next, int blockRight, int lineHeight) {
    return 2 * (next.x - line.x) > lineHeight || line.right() < blockRight - 4 * lineHeight;
}

}  // namespace quire
