// PageImage: one decoded page, 8-bit gray or BGR, at a known resolution.
#pragma once

#include <opencv2/core.hpp>
#include <string>

#include "quire/core/geometry.h"

namespace quire {

// One decoded page, 8-bit gray or BGR, at a known resolution.
struct PageImage {
    cv::Mat image;
    int dpi = 300;
    std::string note;   // e.g. "rendered at 150 dpi instead of 300: page box too large"
    std::string doubt;  // why the pixels may be wrong (a damaged file, a blank rendering): the page is flagged
};

// An image with an alpha channel (BGRA, or gray + alpha) composited on white paper: BGR, or gray;
// one without alpha is returned as it is.
cv::Mat compositeOnWhite(const cv::Mat& image);

// The part of a decoded source page that `region` covers. `region` is in pixels of the page as it
// was recognised at `regionDpi`; the page given was decoded at `decodedDpi`. An empty region
// returns the page as it is.
cv::Mat cropToRegion(const cv::Mat& page, const Box& region, int regionDpi, int decodedDpi);

// The page turned clockwise by 0, 90, 180 or 270 degrees (a turn the user gave it); other values
// leave it as it is.
cv::Mat turnedClockwise(const cv::Mat& page, int degrees);

}  // namespace quire
