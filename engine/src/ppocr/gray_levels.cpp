// Gray levels of page regions and line images: percentiles (the show-through trim's paper and
// ink) and the contrast stretch of a line image before it is read.
#include "quire/ppocr/ppocr.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <array>

namespace quire {

std::vector<int> grayPercentiles(const cv::Mat& region, std::initializer_list<double> fractions) {
    std::array<int, 256> hist{};
    for (int y = 0; y < region.rows; ++y) {
        const uint8_t* row = region.ptr<uint8_t>(y);
        for (int x = 0; x < region.cols; ++x) ++hist[row[x]];
    }
    const double total = double(region.total());
    std::vector<int> out;
    double seen = 0;
    auto f = fractions.begin();
    for (int v = 0; v < 256 && f != fractions.end(); ++v) {
        seen += hist[size_t(v)];
        for (; f != fractions.end() && seen >= *f * total; ++f) out.push_back(v);
    }
    out.resize(fractions.size(), 255);
    return out;
}

void stretchLineContrast(cv::Mat& line) {
    if (line.empty() || line.depth() != CV_8U) return;
    cv::Mat gray = line;
    if (line.channels() == 3) cv::cvtColor(line, gray, cv::COLOR_BGR2GRAY);
    else if (line.channels() != 1) return;
    const auto levels = grayPercentiles(gray, {0.01, 0.99});
    const int ink = levels[0], paper = levels[1];
    if (paper - ink < 16) return;  // no print to speak of: noise is not made into letters
    cv::Mat lut(1, 256, CV_8U);
    for (int v = 0; v < 256; ++v) lut.at<uint8_t>(v) = cv::saturate_cast<uint8_t>((v - ink) * 255.0 / (paper - ink));
    cv::LUT(line, lut, line);
}

}  // namespace quire
