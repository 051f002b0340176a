// Orientation by Tesseract's OSD on a reduced page (one API per thread, loaded once), and the
// negative test on a reduced page's dark share.
#include "quire/preprocess/orientation.h"

#include <tesseract/baseapi.h>
#include <tesseract/osdetect.h>

#include <opencv2/imgproc.hpp>

#include <memory>

#include "quire/preprocess/preprocess.h"

namespace quire {

namespace {

struct OsdApi {
    std::unique_ptr<tesseract::TessBaseAPI> api;
    bool ready = false;
    OsdApi() : api(new tesseract::TessBaseAPI()) {
        ready = api->Init(nullptr, "osd", tesseract::OEM_TESSERACT_ONLY) == 0;
        if (ready) {
            api->SetPageSegMode(tesseract::PSM_OSD_ONLY);
            api->SetVariable("debug_file", "/dev/null");
        }
    }
    ~OsdApi() { api->End(); }
};

}  // namespace

OrientationGuess detectOrientation(const cv::Mat& gray) {
    thread_local OsdApi osd;
    OrientationGuess g;
    if (!osd.ready) {
        g.available = false;
        return g;
    }
    if (gray.empty() || std::min(gray.cols, gray.rows) < 32) return g;
    const cv::Mat small = downscale(gray, std::min(1.0, 1800.0 / std::max(gray.cols, gray.rows)));
    const cv::Mat page = small.isContinuous() ? small : small.clone();
    osd.api->SetImage(page.data, page.cols, page.rows, 1, int(page.step));
    osd.api->SetSourceResolution(150);
    int degrees = 0;
    float conf = 0, scriptConf = 0;
    const char* script = nullptr;
    if (osd.api->DetectOrientationScript(&degrees, &conf, &script, &scriptConf)) {
        // Tesseract gives the text's orientation counter-clockwise (270 for a page turned a
        // quarter to the left); making it upright takes the rest of the circle clockwise.
        g.clockwiseQuarterTurns = ((360 - degrees) % 360 + 45) / 90 % 4;
        g.confidence = conf;
        if (script) g.script = script;
        g.scriptConfidence = scriptConf;
    }
    osd.api->Clear();
    return g;
}

bool looksNegative(const cv::Mat& gray) {
    if (gray.empty()) return false;
    const cv::Mat small = downscale(gray, std::min(1.0, 600.0 / std::max(gray.cols, gray.rows)));
    return cv::countNonZero(small < 96) > 0.7 * double(small.total());
}

}  // namespace quire
