// Show-through of the facing page, trimmed from the detected lines. On thin paper the facing
// page's print shows mirrored and faint; the detector boxes it beside a short line's end (or as a
// line of its own) and the recognizer reads it as letters. Its ink is a fraction of the print's
// contrast, so a box's paper and the page's text contrast tell it apart.
#include "quire/ppocr/ppocr.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>

namespace quire {

void trimShowThrough(const cv::Mat& gray, std::vector<std::vector<cv::Point2f>>& quads, std::vector<Box>& boxes) {
    if (boxes.size() < 3 || gray.empty()) return;
    const int lineH = medianBoxHeight(boxes);
    // A 3×3 mean: the scan's noise is not taken for ink.
    cv::Mat smooth;
    cv::blur(gray, smooth, cv::Size(3, 3));
    const cv::Rect page(0, 0, gray.cols, gray.rows);

    // Each box's paper (the level 80 % of its pixels are darker than: a line is mostly paper) and
    // the page's text contrast: the median of its line-high boxes' paper less their ink (2 %),
    // over the boxes of at least half the strongest one's — on a short page (a chapter's last) the
    // facing page's lines can outnumber the print, and their median would be the show-through's.
    std::vector<int> paper(boxes.size(), 0), contrasts;
    for (size_t i = 0; i < boxes.size(); ++i) {
        const cv::Rect r = cv::Rect(boxes[i].x, boxes[i].y, boxes[i].w, boxes[i].h) & page;
        if (r.empty()) continue;
        const auto levels = grayPercentiles(smooth(r), {0.02, 0.8});
        const int ink = levels[0], light = levels[1];
        paper[i] = light;
        if (boxes[i].h * 2 >= lineH && boxes[i].h <= 2 * lineH) contrasts.push_back(light - ink);
    }
    if (contrasts.size() < 3) return;
    const int strongest = *std::max_element(contrasts.begin(), contrasts.end());
    std::erase_if(contrasts, [&](int c) { return 2 * c < strongest; });
    std::nth_element(contrasts.begin(), contrasts.begin() + long(contrasts.size() / 2), contrasts.end());
    const int contrast = contrasts[contrasts.size() / 2];
    if (contrast < 40) return;  // a page of faint print throughout: nothing stands apart

    std::vector<bool> keep(boxes.size(), true);
    for (size_t i = 0; i < boxes.size(); ++i) {
        const Box& b = boxes[i];
        const cv::Rect r = cv::Rect(b.x, b.y, b.w, b.h) & page;
        if (r.empty() || b.h * 3 >= b.w * 2) continue;  // vertical text, a picture: left as found
        // A column holds ink where two of its pixels are darker than the box's paper by 0.4 of
        // the page's contrast (the facing page's print shows through at a fifth of it or less).
        const int inkBelow = paper[i] - contrast * 2 / 5;
        int first = -1, last = -1;
        for (int x = 0; x < r.width; ++x) {
            int dark = 0;
            for (int y = 0; y < r.height && dark < 2; ++y) dark += smooth.at<uint8_t>(r.y + y, r.x + x) < inkBelow;
            if (dark < 2) continue;
            if (first < 0) first = x;
            last = x;
        }
        if (first < 0) {
            keep[i] = false;
            continue;
        }
        // Ends without ink for a line height or more are cut, a third of a line height kept.
        const int margin = lineH / 3;
        const int left = r.x + first - margin, right = r.x + last + 1 + margin;
        const bool cutLeft = left - r.x >= lineH, cutRight = r.x + r.width - right >= lineH;
        if (!cutLeft && !cutRight) continue;
        const auto& q = quads[i];
        const float qLeft = std::min(q[0].x, q[3].x), qRight = std::max(q[1].x, q[2].x);
        quads[i] = quadPart(q, cutLeft ? float(left) : qLeft, cutRight ? float(right) : qRight);
        boxes[i] = quadBounds(quads[i], gray.cols, gray.rows);
    }
    size_t out = 0;
    for (size_t i = 0; i < boxes.size(); ++i) {
        if (!keep[i]) continue;
        if (out != i) {  // (a vector moved onto itself is left empty)
            quads[out] = std::move(quads[i]);
            boxes[out] = boxes[i];
        }
        ++out;
    }
    quads.resize(out);
    boxes.resize(out);
}

}  // namespace quire
