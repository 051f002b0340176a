#pragma once

#include <opencv2/core.hpp>
#include <string>

namespace quire {

// One decoded page, 8-bit gray or BGR, at a known resolution.
struct PageImage {
    cv::Mat image;
    int dpi = 300;
    std::string note;  // e.g. "rendered at 150 dpi instead of 300: page box too large"
};

}  // namespace quire
