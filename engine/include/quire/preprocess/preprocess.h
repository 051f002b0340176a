// Page preprocessing with OpenCV: grayscale, deskew, background/contrast normalisation, optional
// binarisation and spread splitting. Parameters are stored per page so a re-run is reproducible.
#pragma once

#include <atomic>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "quire/core/geometry.h"
#include "quire/core/status.h"

namespace quire {

enum class SplitMode { None, Auto };

// Pages whose paper brightness varies more than this are flattened before recognition.
constexpr double kUnevenLight = 0.12;

struct PreprocessParams {
    bool deskew = true;
    double maxSkewDegrees = 5.0;  // search range of the skew estimate
    bool normalizeBackground = true;  // flatten uneven lighting, stretch contrast
    // ... on pages whose paper brightness varies more than this (kUnevenLight; 0: every page).
    double unevenLight = kUnevenLight;
    bool binarize = false;  // adaptive (Sauvola-like) binarisation before recognition
    SplitMode split = SplitMode::None;
    bool orient = true;          // turn pages scanned sideways or upside down (orientation.h)
    bool invertNegative = true;  // invert white-on-black pages
    // Tesseract languages that confirm a proposed turn by reading (the run's; not stored: a setting
    // of the run, not of the page). Empty: OSD's confidence alone decides.
    std::string orientLanguages;

    std::string toJson() const;
    static Result<PreprocessParams> fromJson(const std::string& json);
};

// A region of the source page (the whole page, or one half of a spread) prepared for recognition.
struct PreparedRegion {
    cv::Mat image;       // 8-bit gray, deskewed
    cv::Rect sourceRect; // where the region lies in the source page
    double skewDegrees = 0;  // measured skew; the image was rotated by -skew
    double backgroundUnevenness = 0;  // see kUnevenLight
    int quarterTurns = 0;   // clockwise quarter turns the source page was given before splitting
    cv::Size pageSize;      // the source page's size (before those turns)
    // Maps a box in `image` coordinates back to source page coordinates.
    Box toSource(const Box& b) const;
};

struct PreprocessResult {
    std::vector<PreparedRegion> regions;  // one, or two for a split spread (left, right)
    int quarterTurns = 0;  // clockwise quarter turns that made the page upright
    double orientationConfidence = 0;
    bool orientationChecked = false;  // orientation detection (OSD) looked at the page
    std::string script;  // the script orientation detection saw (empty when it did not run)
    double scriptConfidence = 0;
    // Where OSD proposed a turn and reading checked it: mean word confidence as it is and turned
    // (-1: not checked).
    double uprightReading = -1, turnedReading = -1;
    // OSD proposed a turn that reading the page did not confirm.
    bool turnDeclined() const { return uprightReading >= 0 && quarterTurns == 0; }
    bool inverted = false;  // the page was a negative and was inverted
    bool cancelled = false;  // stopped by the cancel flag between two stages: regions are incomplete
};

cv::Mat toGray8(const cv::Mat& image);
// `m` scaled by `scale` (area interpolation), never below one pixel a side: a page of extreme
// aspect ratio (5000 x 1) must not become an empty image.
cv::Mat downscale(const cv::Mat& m, double scale);
double estimateSkewDegrees(const cv::Mat& gray, double maxDegrees);
cv::Mat normalizeBackground(const cv::Mat& gray);
// Also reports the paper's brightness spread (5th-95th percentile over the median).
cv::Mat normalizeBackground(const cv::Mat& gray, double* unevenness);
cv::Mat binarizeAdaptive(const cv::Mat& gray);
// x of the gutter of a two-page spread, or -1 when the image is not a spread.
int findSpreadGutter(const cv::Mat& gray);

// `cancel`: a set flag stops it between two stages (a stage is a fraction of a second on a page;
// the whole, with orientation detection, about a second under load) with `cancelled` set.
PreprocessResult preprocessPage(const cv::Mat& image, const PreprocessParams& params,
                                const std::atomic<bool>* cancel = nullptr);
// The orientation check of a page prepared without it (`first`: preprocessPage with `orient`
// false): where OSD leaves the page as it is, `first`'s regions stand, with what the check saw;
// where it turns the page, the page is prepared again turned. Either way the same as
// preprocessPage(image, params), without flattening and deskewing an upright page twice.
PreprocessResult orientPreparedPage(const cv::Mat& image, PreprocessResult first, const PreprocessParams& params,
                                    const std::atomic<bool>* cancel = nullptr);

}  // namespace quire
