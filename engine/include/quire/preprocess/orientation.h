// Page orientation: a page scanned on its side or upside down is turned upright before it is read,
// and a negative (white text on black) is inverted. Tesseract's orientation and script detection
// (osd.traineddata) decides the quarter turns.
#pragma once

#include <opencv2/core.hpp>

#include <string>

namespace quire {

struct OrientationGuess {
    int clockwiseQuarterTurns = 0;  // turns that make the page upright (0-3)
    double confidence = 0;          // Tesseract's orientation confidence
    bool available = true;          // false: osd.traineddata is not installed
    std::string script;             // the script Tesseract's OSD sees: "Latin", "Fraktur", "Han", ...
    double scriptConfidence = 0;
};

// A script is believed at or above this confidence: on 34 generated Latin pages (every font of
// this machine) OSD's wrong-script guesses reached 1.5 (docs/ACCURACY.md, 2026-12-02).
constexpr double kScriptConfidence = 2.0;

// A turn is made only at or above this confidence: upright generated book pages scored 0° (conf
// 2-23); the same pages turned 90/180/270° were found at 17-22, a four-line page at 9.
constexpr double kOrientationConfidence = 5.0;

// The orientation of a gray page (downscaled inside to about 1,800 px a side).
OrientationGuess detectOrientation(const cv::Mat& gray);

// True for a negative page: most of it dark, as white-on-black microfilm prints are.
bool looksNegative(const cv::Mat& gray);

}  // namespace quire
