// Reading order of the front-end's lines from Tesseract's page layout analysis: Tesseract finds
// the page's blocks (columns, headings, captions) and their order without recognising a word,
// and the detector's lines are read block by block.
#include <tesseract/baseapi.h>
#include <tesseract/pageiterator.h>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <map>
#include <memory>

#include "quire/ppocr/ppocr.h"

namespace quire {

namespace {

struct LayoutLine {
    Box box;
    int block = 0;
};

// Tesseract's text lines with the index of their block, in Tesseract's reading order; `blocks`
// gets each text block's bounds.
std::vector<LayoutLine> tesseractLines(const cv::Mat& gray, std::map<int, Box>& blocks) {
    std::vector<LayoutLine> lines;
    tesseract::TessBaseAPI api;
    api.InitForAnalysePage();
    api.SetVariable("debug_file", "/dev/null");  // "Estimating resolution as ..." stays off the user's terminal
    api.SetPageSegMode(tesseract::PSM_AUTO);
    api.SetImage(gray.data, gray.cols, gray.rows, 1, int(gray.step));
    std::unique_ptr<tesseract::PageIterator> it(api.AnalyseLayout());
    if (!it) return lines;
    int block = -1;
    do {
        if (it->IsAtBeginningOf(tesseract::RIL_BLOCK)) ++block;
        if (!PTIsTextType(it->BlockType())) continue;
        int l, t, r, b;
        if (!it->BoundingBox(tesseract::RIL_TEXTLINE, &l, &t, &r, &b)) continue;
        const Box box{l, t, r - l, b - t};
        lines.push_back({box, block});
        auto [pos, added] = blocks.emplace(block, box);
        if (!added) pos->second = pos->second.united(box);
    } while (it->Next(tesseract::RIL_TEXTLINE));
    return lines;
}

// The width two boxes' x ranges share (negative: the gap between them).
int sharedWidth(const Box& a, const Box& b) { return std::min(a.right(), b.right()) - std::max(a.x, b.x); }

int overlap(const Box& a, const Box& b) {
    const int w = sharedWidth(a, b);
    const int h = std::min(a.bottom(), b.bottom()) - std::max(a.y, b.y);
    return w > 0 && h > 0 ? w * h : 0;
}

// Two boxes share a column: their x ranges overlap.
bool sharesColumn(const Box& a, const Box& b) { return sharedWidth(a, b) > 0; }

}  // namespace

std::vector<int> blocksTopDown(const std::vector<Box>& blocks) {
    // `a` lies above `b` in its column: wholly above it, sharing half the narrower one's width.
    const auto above = [](const Box& a, const Box& b) {
        return a.bottom() <= b.y + std::min(a.h, b.h) / 2 && sharedWidth(a, b) * 2 >= std::min(a.w, b.w);
    };
    std::vector<int> order;
    std::vector<bool> done(blocks.size(), false);
    while (order.size() < blocks.size()) {
        for (size_t k = 0; k < blocks.size(); ++k) {
            if (done[k]) continue;
            bool free = true;
            for (size_t j = 0; j < blocks.size() && free; ++j) free = done[j] || j == k || !above(blocks[j], blocks[k]);
            if (!free) continue;
            done[k] = true;
            order.push_back(int(k));
            break;
        }
    }
    return order;
}

std::vector<std::vector<int>> cutInterleavedBlocks(const std::vector<std::vector<int>>& blocks,
                                                   const std::vector<Box>& boxes, std::vector<int>* pieceBlock) {
    std::vector<int> blockOf(boxes.size(), -1);
    for (size_t g = 0; g < blocks.size(); ++g)
        for (int i : blocks[g]) blockOf[size_t(i)] = int(g);
    std::vector<std::vector<int>> pieces;
    if (pieceBlock) pieceBlock->clear();
    for (size_t g = 0; g < blocks.size(); ++g) {
        std::vector<int> ids = blocks[g];
        std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return boxes[size_t(a)].y < boxes[size_t(b)].y; });
        for (size_t k = 0; k < ids.size(); ++k) {
            bool cut = k == 0;
            if (k > 0) {
                const Box& a = boxes[size_t(ids[k - 1])];
                const Box& b = boxes[size_t(ids[k])];
                for (size_t i = 0; i < boxes.size() && !cut; ++i) {
                    const Box& x = boxes[i];
                    const int cy = x.y + x.h / 2;
                    cut = blockOf[i] >= 0 && blockOf[i] != int(g) && cy > a.y + a.h / 2 && cy < b.y + b.h / 2 &&
                          (sharesColumn(x, a) || sharesColumn(x, b));
                }
            }
            if (cut) {
                pieces.push_back({});
                if (pieceBlock) pieceBlock->push_back(int(g));
            }
            pieces.back().push_back(ids[k]);
        }
    }
    return pieces;
}

std::vector<int> layoutReadingOrder(const cv::Mat& image, const std::vector<Box>& boxes, std::vector<int>* blockOfLine) {
    cv::Mat gray;
    if (image.channels() == 1) gray = image;
    else cv::cvtColor(image, gray, image.channels() == 4 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGR2GRAY);
    if (gray.depth() != CV_8U || boxes.empty()) return readingOrder(boxes, blockOfLine);
    std::map<int, Box> blocks;
    const std::vector<LayoutLine> lines = tesseractLines(gray, blocks);
    if (lines.empty()) return readingOrder(boxes, blockOfLine);

    // Each detected line joins the Tesseract block where it starts: that of the leftmost Tesseract
    // text line lying mostly inside it (Tesseract may split a line at a dash and give its right
    // part a block of its own, read later); failing that, the block whose lines cover most of it
    // (at least a third); else the text block holding its centre; the rest stay unplaced.
    std::map<int, std::vector<int>> members;  // Tesseract block -> detected lines
    std::vector<int> unplaced;
    for (size_t i = 0; i < boxes.size(); ++i) {
        const Box& b = boxes[i];
        const int area = std::max(1, b.w * b.h);
        std::map<int, int> covered;  // block -> area of b its lines cover
        int best = -1, startX = 0;
        for (const auto& l : lines) {
            const int a = overlap(b, l.box);
            if (a <= 0) continue;
            covered[l.block] += a;
            if (a * 2 >= std::max(1, l.box.w * l.box.h) && (best < 0 || l.box.x < startX)) best = l.block, startX = l.box.x;
        }
        if (best < 0) {
            int most = 0;
            for (const auto& [id, a] : covered)
                if (a > most) most = a, best = id;
            if (most * 3 < area) best = -1;
        }
        if (best < 0) {
            const int cx = b.x + b.w / 2, cy = b.y + b.h / 2;
            for (const auto& [id, bb] : blocks)
                if (cx >= bb.x && cx < bb.right() && cy >= bb.y && cy < bb.bottom()) {
                    best = id;
                    break;
                }
        }
        if (best >= 0) members[best].push_back(int(i));
        else unplaced.push_back(int(i));
    }
    // A line outside every text block (a heading or caption Tesseract took for something else)
    // goes where the page puts it: into the group of the nearest line below it in its column
    // when that group also has a line above it there, else just before that group (or last).
    std::vector<std::vector<int>> groups;
    for (auto& [id, ids] : members) groups.push_back(std::move(ids));
    std::map<size_t, std::vector<int>> before;  // group -> unplaced lines read just before it
    std::vector<int> last;
    std::vector<int> groupOf(boxes.size(), -1);
    for (size_t g = 0; g < groups.size(); ++g)
        for (int i : groups[g]) groupOf[size_t(i)] = int(g);
    for (int u : unplaced) {
        const Box& ub = boxes[size_t(u)];
        int below = -1;
        for (size_t i = 0; i < boxes.size(); ++i) {
            const Box& b = boxes[i];
            if (groupOf[i] < 0 || b.y < ub.y + ub.h / 2 || !sharesColumn(ub, b)) continue;
            if (below < 0 || b.y < boxes[size_t(below)].y) below = int(i);
        }
        if (below < 0) {
            last.push_back(u);
            continue;
        }
        const size_t g = size_t(groupOf[size_t(below)]);
        const bool above = std::any_of(groups[g].begin(), groups[g].end(), [&](int i) {
            return boxes[size_t(i)].bottom() <= ub.y + ub.h / 2 && sharesColumn(ub, boxes[size_t(i)]);
        });
        (above ? groups[g] : before[g]).push_back(u);
    }
    std::vector<int> order;
    if (blockOfLine) blockOfLine->assign(boxes.size(), 0);
    int block = 0;
    auto emit = [&](const std::vector<int>& ids) {  // a group, in readingOrder()'s order
        std::vector<Box> sub;
        for (int i : ids) sub.push_back(boxes[size_t(i)]);
        std::vector<int> subBlocks;
        const std::vector<int> subOrder = readingOrder(sub, &subBlocks);
        int maxSub = 0;
        for (int k : subOrder) {
            order.push_back(ids[size_t(k)]);
            if (blockOfLine) (*blockOfLine)[size_t(ids[size_t(k)])] = block + subBlocks[size_t(k)];
            maxSub = std::max(maxSub, subBlocks[size_t(k)]);
        }
        block += maxSub + 1;
    };
    // A block is cut where a line of another block lies between two of its lines in their column,
    // and the pieces are read top-down within a column (blocksTopDown).
    std::vector<int> pieceGroup;
    const std::vector<std::vector<int>> pieces = cutInterleavedBlocks(groups, boxes, &pieceGroup);
    std::vector<std::vector<int>> piecePre(pieces.size());
    for (size_t p = 0; p < pieces.size(); ++p) {
        const bool top = p == 0 || pieceGroup[p - 1] != pieceGroup[p];  // its block's first piece
        if (auto pre = before.find(size_t(pieceGroup[p])); top && pre != before.end()) piecePre[p] = pre->second;
    }
    std::vector<Box> bounds;
    for (const auto& ids : pieces) {
        Box b = boxes[size_t(ids.front())];
        for (int i : ids) b = b.united(boxes[size_t(i)]);
        bounds.push_back(b);
    }
    for (const int p : blocksTopDown(bounds)) {
        if (!piecePre[size_t(p)].empty()) emit(piecePre[size_t(p)]);
        emit(pieces[size_t(p)]);
    }
    if (!last.empty()) emit(last);
    return order;
}

}  // namespace quire
