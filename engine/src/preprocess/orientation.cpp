// Orientation by Tesseract's OSD on a reduced page (one API per thread, loaded once), a proposed
// turn confirmed by reading a band of the page both ways, and the negative test on a dark share.
#include "quire/preprocess/orientation.h"

#include <tesseract/baseapi.h>
#include <tesseract/osdetect.h>

#include <opencv2/imgproc.hpp>

#include <atomic>
#include <map>
#include <memory>

#include "core/tesseract_cancel.h"
#include "quire/preprocess/preprocess.h"
#include "quire/source/page_image.h"

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

// One recognizer per thread and language set, loaded on the first proposed turn.
tesseract::TessBaseAPI* readerFor(const std::string& languages) {
    struct Apis {
        std::map<std::string, std::unique_ptr<tesseract::TessBaseAPI>> byLanguages;
        ~Apis() {
            for (auto& [_, api] : byLanguages)
                if (api) api->End();
        }
    };
    thread_local Apis apis;
    auto& api = apis.byLanguages[languages];
    if (!api) {
        auto fresh = std::make_unique<tesseract::TessBaseAPI>();
        if (fresh->Init(nullptr, languages.c_str(), tesseract::OEM_LSTM_ONLY) != 0) return nullptr;
        fresh->SetPageSegMode(tesseract::PSM_SINGLE_BLOCK);  // PSM_AUTO would itself turn vertical lines
        fresh->SetVariable("debug_file", "/dev/null");
        api = std::move(fresh);
    }
    return api.get();
}

// Mean word confidence reading the quarter of the page's height that holds the most ink; -1 where
// `cancel` stopped the reading (a band takes seconds, far more under the sanitizers).
double bandReading(const cv::Mat& gray, tesseract::TessBaseAPI& api, const std::atomic<bool>* cancel) {
    cv::Mat ink, rows;
    cv::threshold(gray, ink, 0, 1, cv::THRESH_BINARY_INV | cv::THRESH_OTSU);
    cv::reduce(ink, rows, 1, cv::REDUCE_SUM, CV_64F);
    const int h = std::max(1, gray.rows / 4);
    double sum = 0, best = -1;
    int top = 0;
    for (int y = 0; y < gray.rows; ++y) {
        sum += rows.at<double>(y, 0) - (y >= h ? rows.at<double>(y - h, 0) : 0);
        if (y >= h - 1 && sum > best) best = sum, top = y - h + 1;
    }
    const cv::Mat band = gray(cv::Rect(0, top, gray.cols, std::min(h, gray.rows - top))).clone();
    api.SetImage(band.data, band.cols, band.rows, 1, int(band.step));
    api.SetSourceResolution(300);
    tesseract::ETEXT_DESC monitor;
    watchCancel(monitor, cancel);
    const bool read = api.Recognize(&monitor) == 0 && !(cancel && cancel->load());
    const double conf = read ? api.MeanTextConf() : -1;
    api.Clear();
    return conf;
}

}  // namespace

OrientationGuess detectOrientation(const cv::Mat& gray, const std::string& languages, const std::atomic<bool>* cancel) {
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
        g.proposedQuarterTurns = ((360 - degrees) % 360 + 45) / 90 % 4;
        g.confidence = conf;
        if (script) g.script = script;
        g.scriptConfidence = scriptConf;
    }
    osd.api->Clear();
    // With a reading check OSD's weaker proposals are tried too: the check keeps wrong ones out.
    if (g.proposedQuarterTurns == 0 || g.confidence < kCheckedProposalConfidence) return g;
    tesseract::TessBaseAPI* api = languages.empty() ? nullptr : readerFor(languages);
    if (!api) {  // OSD alone
        if (g.confidence >= kOrientationConfidence) g.clockwiseQuarterTurns = g.proposedQuarterTurns;
        return g;
    }
    // The proposal and its opposite (OSD confuses the two sides) against the page as it is.
    const int proposed = g.proposedQuarterTurns;
    // At most 3,500 px a side (a 200-megapixel scan must not be copied whole three times).
    const cv::Mat read = downscale(gray, std::min(1.0, 3500.0 / std::max(gray.cols, gray.rows)));
    const auto stopped = [cancel] { return cancel && cancel->load(); };
    g.uprightReading = bandReading(read, *api, cancel);
    int best = 0;  // the turn that reads best, and its reading
    for (int turns : {proposed, (proposed + 2) % 4}) {
        if (turns == 0 || stopped()) continue;
        const double r = bandReading(turnedClockwise(read, turns * 90), *api, cancel);
        if (r > g.turnedReading) best = turns, g.turnedReading = r;
    }
    if (stopped()) return g;  // no turn (the caller sees the flag)
    if (best != 0 && g.turnedReading >= g.uprightReading + kTurnReadingMargin) g.clockwiseQuarterTurns = best;
    return g;
}

bool looksNegative(const cv::Mat& gray) {
    if (gray.empty()) return false;
    const cv::Mat small = downscale(gray, std::min(1.0, 600.0 / std::max(gray.cols, gray.rows)));
    return cv::countNonZero(small < 96) > 0.7 * double(small.total());
}

}  // namespace quire
