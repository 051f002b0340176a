// Masking a page to its hand-drawn regions and sorting the engine's words into them.
#include "quire/pipeline/region_layout.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>

namespace quire {

cv::Mat maskOutsideRegions(const cv::Mat& page, const std::vector<PageRegion>& regions) {
    if (page.empty()) return page;
    // The paper's tone per channel: the median, from every 7th pixel (text covers far less than half).
    std::vector<cv::Mat> channels;
    cv::split(page, channels);
    cv::Scalar paper;
    for (size_t c = 0; c < channels.size() && c < 4; ++c) {
        std::vector<uchar> v;
        const cv::Mat ch = channels[c].isContinuous() ? channels[c] : channels[c].clone();
        for (size_t i = 0; i < ch.total(); i += 7) v.push_back(ch.data[i]);
        std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
        paper[int(c)] = v.empty() ? 255 : v[v.size() / 2];
    }
    cv::Mat out(page.size(), page.type(), paper);
    const cv::Rect whole(0, 0, page.cols, page.rows);
    for (const auto& r : regions) {
        if (!regionIsRead(r.kind)) continue;
        const cv::Rect rect = cv::Rect(r.box.x, r.box.y, r.box.w, r.box.h) & whole;
        if (rect.area() > 0) page(rect).copyTo(out(rect));
    }
    // An image or ignore region drawn inside a text region is painted over too.
    for (const auto& r : regions) {
        if (regionIsRead(r.kind)) continue;
        const cv::Rect rect = cv::Rect(r.box.x, r.box.y, r.box.w, r.box.h) & whole;
        if (rect.area() > 0) out(rect).setTo(paper);
    }
    return out;
}

void arrangeByRegions(PageText& text, const std::vector<PageRegion>& regions) {
    if (regions.empty()) return;
    // Pieces of lines, each in one region, in the engine's order.
    struct Piece {
        int region, paragraph;
        Line line;
    };
    std::vector<Piece> pieces;
    for (const auto& line : text.lines) {
        int current = -2;
        for (const auto& w : line.words) {
            const int r = readRegionAt(w.box.empty() ? line.box : w.box, regions);
            if (r < 0) {
                current = -2;
                continue;
            }
            if (r != current) {
                pieces.push_back({r, line.paragraph, Line{}});
                current = r;
            }
            Line& l = pieces.back().line;
            l.box = l.box.united(w.box.empty() ? line.box : w.box);
            l.words.push_back(w);
        }
    }
    std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.region < b.region; });
    std::vector<Line> lines;
    int paragraph = -1, lastRegion = -1, lastParagraph = 0;
    for (auto& p : pieces) {
        if (p.region != lastRegion || p.paragraph != lastParagraph) ++paragraph;
        lastRegion = p.region, lastParagraph = p.paragraph;
        p.line.block = p.region;
        p.line.paragraph = paragraph;
        lines.push_back(std::move(p.line));
    }
    text.lines = std::move(lines);
}

namespace {
// Appends the lines of `from`, each with only its words whose place is in region `region` (or,
// with `inside` false, is not), and none left empty.
void appendWordsIn(std::vector<Line>& out, const PageText& from, const std::vector<PageRegion>& regions, int region,
                   bool inside) {
    for (const auto& line : from.lines) {
        Line kept = line;
        kept.words.clear();
        for (const auto& w : line.words)
            if ((readRegionAt(w.box.empty() ? line.box : w.box, regions) == region) == inside) kept.words.push_back(w);
        if (!kept.words.empty()) out.push_back(std::move(kept));
    }
}
}  // namespace

PageText replaceRegionText(const PageText& before, const PageText& reread, const std::vector<PageRegion>& regions,
                           int region) {
    PageText out = reread;
    out.lines.clear();
    appendWordsIn(out.lines, before, regions, region, false);
    appendWordsIn(out.lines, reread, regions, region, true);
    arrangeByRegions(out, regions);
    return out;
}

}  // namespace quire
