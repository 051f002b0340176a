// Parts of a detected line's quad along x, and a quad's bounds on the page: the front-end's
// box edits (a gutter's cut, a faint tail's trim) keep the quad and its bounds together.
#include "quire/ppocr/ppocr.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>

namespace quire {

std::vector<cv::Point2f> quadPart(const std::vector<cv::Point2f>& q, float from, float to) {
    const auto at = [](cv::Point2f a, cv::Point2f b, float x) {
        const float dx = b.x - a.x;
        const float t = dx == 0 ? 0.f : std::clamp((x - a.x) / dx, 0.f, 1.f);
        return a + (b - a) * t;
    };
    return {at(q[0], q[1], from), at(q[0], q[1], to), at(q[3], q[2], to), at(q[3], q[2], from)};
}

Box quadBounds(const std::vector<cv::Point2f>& quad, int width, int height) {
    const cv::Rect r = cv::boundingRect(quad) & cv::Rect(0, 0, width, height);
    return {r.x, r.y, r.width, r.height};
}

}  // namespace quire
