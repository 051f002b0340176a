// Page preprocessing: grayscale, skew estimate and correction, background flattening,
// binarisation, and a two-page spread split at its gutter.
#include "quire/preprocess/preprocess.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

#include "quire/preprocess/orientation.h"
#include "quire/source/page_image.h"

namespace quire {

std::string PreprocessParams::toJson() const {
    QJsonObject o;
    o["version"] = 1;
    o["deskew"] = deskew;
    o["maxSkewDegrees"] = maxSkewDegrees;
    o["normalizeBackground"] = normalizeBackground;
    if (unevenLight != kUnevenLight) o["unevenLight"] = unevenLight;  // stored only when not the default
    o["binarize"] = binarize;
    o["split"] = split == SplitMode::Auto ? "auto" : "none";
    o["orient"] = orient;
    o["invertNegative"] = invertNegative;
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

Result<PreprocessParams> PreprocessParams::fromJson(const std::string& json) {
    QJsonParseError err{};
    const auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(json), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return Status(ErrorCode::InvalidArgument, "preprocessing parameters are not valid JSON: " +
                                                      err.errorString().toStdString());
    const auto o = doc.object();
    PreprocessParams p;
    p.deskew = o.value("deskew").toBool(p.deskew);
    p.maxSkewDegrees = o.value("maxSkewDegrees").toDouble(p.maxSkewDegrees);
    p.normalizeBackground = o.value("normalizeBackground").toBool(p.normalizeBackground);
    p.unevenLight = o.value("unevenLight").toDouble(p.unevenLight);
    p.binarize = o.value("binarize").toBool(p.binarize);
    p.split = o.value("split").toString() == "auto" ? SplitMode::Auto : SplitMode::None;
    p.orient = o.value("orient").toBool(p.orient);
    p.invertNegative = o.value("invertNegative").toBool(p.invertNegative);
    return p;
}

cv::Mat toGray8(const cv::Mat& image) {
    cv::Mat gray;
    if (image.channels() == 3) cv::cvtColor(image, gray, cv::COLOR_BGR2GRAY);
    else if (image.channels() == 4) cv::cvtColor(image, gray, cv::COLOR_BGRA2GRAY);
    else gray = image;
    if (gray.depth() != CV_8U) gray.convertTo(gray, CV_8U, gray.depth() == CV_16U ? 1.0 / 257 : 1.0);
    return gray;
}

cv::Mat downscale(const cv::Mat& m, double scale) {
    const cv::Size size(std::max(1, int(std::lround(m.cols * scale))), std::max(1, int(std::lround(m.rows * scale))));
    if (size == m.size()) return m;
    cv::Mat out;
    cv::resize(m, out, size, 0, 0, cv::INTER_AREA);
    return out;
}

namespace {

// Ink mask (text = 255) of a page scaled so its long side is about `target` pixels.
cv::Mat inkMask(const cv::Mat& gray, int target, double* scaleOut) {
    const double scale = std::min(1.0, double(target) / std::max(gray.cols, gray.rows));
    cv::Mat small;
    small = scale < 1.0 ? downscale(gray, scale) : gray;
    cv::Mat mask;
    cv::threshold(small, mask, 0, 255, cv::THRESH_BINARY_INV | cv::THRESH_OTSU);
    if (scaleOut) *scaleOut = scale;
    return mask;
}

// Variance of the row profile of the ink points after rotating them by `deg` (the
// getRotationMatrix2D convention): sharp text-line peaks give a high variance.
double profileScore(const std::vector<cv::Point>& pts, int rows, int cols, double deg) {
    const double t = deg * CV_PI / 180.0, s = std::sin(t), c = std::cos(t);
    const int margin = int(cols * std::abs(s)) + 2;
    std::vector<int> hist(size_t(rows + 2 * margin + 2), 0);
    for (const auto& p : pts) {
        const int y = int(std::lround(-s * p.x + c * p.y)) + margin;
        if (y >= 0 && y < int(hist.size())) ++hist[size_t(y)];
    }
    double sum = 0, sq = 0;
    for (int v : hist) sum += v, sq += double(v) * v;
    const double n = double(hist.size());
    return sq / n - (sum / n) * (sum / n);
}

cv::Mat rotationMatrix(cv::Size size, double deg) {
    return cv::getRotationMatrix2D(cv::Point2f(size.width / 2.0f, size.height / 2.0f), deg, 1.0);
}

}  // namespace

namespace {
double skewOfFlatPage(const cv::Mat& flat, double maxDegrees);
}

double estimateSkewDegrees(const cv::Mat& gray, double maxDegrees) {
    // Flatten the lighting first: a shadowed gutter or a dark corner would otherwise enter the ink
    // mask as a solid band and outweigh a short page's few text lines.
    return skewOfFlatPage(normalizeBackground(gray), maxDegrees);
}

namespace {
double skewOfFlatPage(const cv::Mat& flat, double maxDegrees) {
    double scale = 1;
    const cv::Mat mask = inkMask(flat, 1600, &scale);
    std::vector<cv::Point> pts;
    cv::findNonZero(mask, pts);
    if (pts.size() < 200) return 0.0;  // blank page: nothing to measure
    if (pts.size() > 400'000) {  // subsample evenly; the profile keeps its shape
        std::vector<cv::Point> sub;
        const size_t step = pts.size() / 400'000 + 1;
        for (size_t i = 0; i < pts.size(); i += step) sub.push_back(pts[i]);
        pts.swap(sub);
    }
    auto best = [&](double from, double to, double step) {
        double bestDeg = 0, bestScore = -1;
        for (double d = from; d <= to + 1e-9; d += step) {
            const double sc = profileScore(pts, mask.rows, mask.cols, d);
            if (sc > bestScore) bestScore = sc, bestDeg = d;
        }
        return bestDeg;
    };
    const double coarse = best(-maxDegrees, maxDegrees, 0.25);
    const double fine = best(coarse - 0.25, coarse + 0.25, 0.02);
    // No clear peak (pictures, blank or ruled pages): leave the page as it is.
    const double level = profileScore(pts, mask.rows, mask.cols, 0.0);
    if (profileScore(pts, mask.rows, mask.cols, fine) < level * 1.05 && std::abs(fine) > 0.3) return 0.0;
    // `fine` is the rotation that levels the lines; the page's skew is its opposite.
    return -fine;
}
}  // namespace

cv::Mat normalizeBackground(const cv::Mat& gray) { return normalizeBackground(gray, nullptr); }

cv::Mat normalizeBackground(const cv::Mat& gray, double* unevenness) {
    // Paper colour estimated by a max filter on a reduced copy (text is dark and thin), then
    // divided out: uneven lighting and yellowed paper become flat white.
    const double scale = std::min(1.0, 600.0 / std::max(gray.cols, gray.rows));
    cv::Mat small = downscale(gray, scale), bg;
    const int k = std::max(3, int(std::lround(std::max(small.cols, small.rows) / 40.0)) | 1);
    cv::dilate(small, bg, cv::getStructuringElement(cv::MORPH_RECT, {k, k}));
    cv::blur(bg, bg, {k, k});
    if (unevenness) {  // spread of the paper's brightness: 5th to 95th percentile over the median
        std::vector<uchar> v(bg.begin<uchar>(), bg.end<uchar>());
        std::sort(v.begin(), v.end());
        const double med = std::max(1, int(v[v.size() / 2]));
        *unevenness = (v[v.size() * 95 / 100] - v[v.size() * 5 / 100]) / med;
    }
    cv::resize(bg, bg, gray.size(), 0, 0, cv::INTER_LINEAR);
    // The ratio page / paper * 255 is computed a row at a time (the same operations as on whole
    // float images, so the same values): a 200-megapixel page needs no 800 MB float copies.
    auto ratioRow = [&](int y, cv::Mat& ratio) {
        cv::Mat f, b;
        gray.row(y).convertTo(f, CV_32F);
        bg.row(y).convertTo(b, CV_32F);
        cv::max(b, 1.0, b);
        cv::divide(f, b, ratio, 255.0);
    };
    // Stretch so the darkest 0.5 % of pixels become black.
    long long hist[256] = {0};
    cv::Mat ratio, r8;
    for (int y = 0; y < gray.rows; ++y) {
        ratioRow(y, ratio);
        ratio.convertTo(r8, CV_8U);
        const uchar* p = r8.ptr(0);
        for (int x = 0; x < r8.cols; ++x) ++hist[p[x]];
    }
    const long long total = (long long)gray.rows * gray.cols, want = total / 200;
    long long acc = 0;
    int lo = 0;
    while (lo < 254 && (acc += hist[lo]) < want) ++lo;
    const double gain = 255.0 / std::max(1, 255 - lo);
    cv::Mat out(gray.size(), CV_8U);
    for (int y = 0; y < gray.rows; ++y) {
        ratioRow(y, ratio);
        cv::Mat dst = out.row(y);
        ratio.convertTo(dst, CV_8U, gain, -lo * gain);
    }
    return out;
}

cv::Mat binarizeAdaptive(const cv::Mat& gray) {
    // Sauvola: T = m * (1 + k (s / R - 1)), window about 1/40 of the page's long side.
    cv::Mat f, mean, sq, out(gray.size(), CV_8U);
    gray.convertTo(f, CV_32F);
    const int w = std::max(15, int(std::max(gray.cols, gray.rows) / 40) | 1);
    cv::boxFilter(f, mean, CV_32F, {w, w}, {-1, -1}, true, cv::BORDER_REPLICATE);
    cv::boxFilter(f.mul(f), sq, CV_32F, {w, w}, {-1, -1}, true, cv::BORDER_REPLICATE);
    const float k = 0.2f, R = 128.f;
    for (int y = 0; y < gray.rows; ++y) {
        const float* m = mean.ptr<float>(y);
        const float* s2 = sq.ptr<float>(y);
        const float* v = f.ptr<float>(y);
        uchar* o = out.ptr(y);
        for (int x = 0; x < gray.cols; ++x) {
            const float sd = std::sqrt(std::max(0.f, s2[x] - m[x] * m[x]));
            o[x] = v[x] > m[x] * (1 + k * (sd / R - 1)) ? 255 : 0;
        }
    }
    return out;
}

int findSpreadGutter(const cv::Mat& gray) {
    if (gray.cols < gray.rows * 1.15) return -1;  // portrait: a single page
    double scale = 1;
    const cv::Mat mask = inkMask(gray, 1200, &scale);
    cv::Mat cols;
    cv::reduce(mask, cols, 0, cv::REDUCE_SUM, CV_64F);
    const int n = cols.cols;
    const int from = int(n * 0.38), to = int(n * 0.62);
    // Smooth the profile so a single thin rule does not decide.
    cv::Mat smooth;
    cv::blur(cols, smooth, {std::max(3, n / 100), 1});
    double minVal = 1e300;
    int minX = -1;
    for (int x = from; x < to; ++x)
        if (smooth.at<double>(0, x) < minVal) minVal = smooth.at<double>(0, x), minX = x;
    double total = 0;
    for (int x = 0; x < n; ++x) total += cols.at<double>(0, x);
    const double meanCol = total / n;
    // The gutter is the middle of the widest near-blank run, not its first blank column.
    const double limit = minVal + 0.02 * meanCol;
    int bestLen = 0, runStart = -1;
    for (int x = from; x <= to; ++x) {
        const bool blank = x < to && smooth.at<double>(0, x) <= limit;
        if (blank && runStart < 0) runStart = x;
        if (!blank && runStart >= 0) {
            if (x - runStart > bestLen) bestLen = x - runStart, minX = (runStart + x) / 2;
            runStart = -1;
        }
    }
    double left = 0, right = 0;
    for (int x = 0; x < n; ++x) (x < minX ? left : right) += cols.at<double>(0, x);
    // Both halves carry text and the gutter is nearly blank.
    if (minX < 0 || left < 0.2 * (left + right) || right < 0.2 * (left + right) || minVal > 0.15 * meanCol)
        return -1;
    return int(std::lround(minX / scale));
}

Box PreparedRegion::toSource(const Box& b) const {
    if (b.empty()) return b;
    cv::Mat inv;
    cv::invertAffineTransform(rotationMatrix(image.size(), -skewDegrees), inv);
    const std::array<cv::Point2d, 4> corners{{{double(b.x), double(b.y)},
                                              {double(b.right()), double(b.y)},
                                              {double(b.x), double(b.bottom())},
                                              {double(b.right()), double(b.bottom())}}};
    double x0 = 1e9, y0 = 1e9, x1 = -1e9, y1 = -1e9;
    for (const auto& c : corners) {
        const double x = inv.at<double>(0, 0) * c.x + inv.at<double>(0, 1) * c.y + inv.at<double>(0, 2);
        const double y = inv.at<double>(1, 0) * c.x + inv.at<double>(1, 1) * c.y + inv.at<double>(1, 2);
        x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
    }
    const int l = std::clamp(int(std::lround(x0)), 0, image.cols);
    const int t = std::clamp(int(std::lround(y0)), 0, image.rows);
    const int r = std::clamp(int(std::lround(x1)), 0, image.cols);
    const int bt = std::clamp(int(std::lround(y1)), 0, image.rows);
    const Box turned{l + sourceRect.x, t + sourceRect.y, std::max(0, r - l), std::max(0, bt - t)};
    // Undo the page's clockwise quarter turns (source page w x h).
    const int w = pageSize.width, h = pageSize.height;
    switch (quarterTurns) {
        case 1: return {turned.y, h - turned.right(), turned.h, turned.w};
        case 2: return {w - turned.right(), h - turned.bottom(), turned.w, turned.h};
        case 3: return {w - turned.bottom(), turned.x, turned.h, turned.w};
        default: return turned;
    }
}

namespace {

// The page in 8-bit gray, a negative inverted and, where `orient`, turned as OSD finds
// (orientation.h); what was done and seen goes to `result`. Empty where `stopped` said stop.
template <class Stopped>
cv::Mat uprightGray(const cv::Mat& image, const PreprocessParams& params, bool orient, PreprocessResult& result,
                    const std::atomic<bool>* cancel, Stopped stopped) {
    cv::Mat gray = toGray8(image);
    if (params.invertNegative && looksNegative(gray)) {
        gray = 255 - gray;
        result.inverted = true;
    }
    if (stopped()) return {};
    if (!orient) return gray;
    result.orientationChecked = true;
    const OrientationGuess o = detectOrientation(gray, params.orientLanguages, cancel);
    if (stopped()) return {};
    result.quarterTurns = o.clockwiseQuarterTurns;
    result.uprightReading = o.uprightReading;
    result.turnedReading = o.turnedReading;
    result.orientationConfidence = o.confidence;
    result.script = o.script;
    result.scriptConfidence = o.scriptConfidence;
    return turnedClockwise(gray, o.clockwiseQuarterTurns * 90);
}

// The upright page's regions (split, flattened, deskewed, binarised as `params` say) into `result`;
// false where `stopped` said stop between two stages.
template <class Stopped>
bool prepareRegions(const cv::Mat& gray, cv::Size pageSize, const PreprocessParams& params, PreprocessResult& result,
                    Stopped stopped) {
    std::vector<cv::Rect> rects{{0, 0, gray.cols, gray.rows}};
    if (params.split == SplitMode::Auto) {
        const int gutter = findSpreadGutter(gray);
        if (gutter > 0) rects = {{0, 0, gutter, gray.rows}, {gutter, 0, gray.cols - gutter, gray.rows}};
    }
    for (const auto& rect : rects) {
        if (stopped()) return false;
        PreparedRegion region;
        region.sourceRect = rect;
        region.quarterTurns = result.quarterTurns;
        region.pageSize = pageSize;
        // Flatten once; the skew is measured on the flat page and the flat page is rotated.
        double uneven = 0;
        const cv::Mat flat = normalizeBackground(gray(rect), &uneven);
        if (stopped()) return false;
        if (params.deskew) region.skewDegrees = skewOfFlatPage(flat, params.maxSkewDegrees);
        // An evenly lit scan is given to the recognizer as it is (flattening it only stretched its
        // noise: -0.9 CER points on a Fraktur page); uneven light is flattened.
        region.backgroundUnevenness = uneven;
        const bool flatten = params.normalizeBackground && uneven > params.unevenLight;
        const cv::Mat g = flatten ? flat : gray(rect);
        if (std::abs(region.skewDegrees) >= 0.05) {
            // Bicubic: a linear rotation blurs small print (docs/ACCURACY.md, 2026-12-07 tenth session).
            cv::warpAffine(g, region.image, rotationMatrix(g.size(), -region.skewDegrees), g.size(),
                           cv::INTER_CUBIC, cv::BORDER_REPLICATE);
        } else {
            region.skewDegrees = 0;
            region.image = g.clone();
        }
        if (stopped()) return false;
        if (params.binarize) region.image = binarizeAdaptive(region.image);
        result.regions.push_back(std::move(region));
    }
    return true;
}

}  // namespace

PreprocessResult preprocessPage(const cv::Mat& image, const PreprocessParams& params, const std::atomic<bool>* cancel) {
    PreprocessResult result;
    auto stopped = [&] { return cancel && cancel->load(std::memory_order_relaxed) && (result.cancelled = true); };
    const cv::Mat gray = uprightGray(image, params, params.orient, result, cancel, stopped);
    if (!result.cancelled) prepareRegions(gray, image.size(), params, result, stopped);
    return result;
}

PreprocessResult orientPreparedPage(const cv::Mat& image, PreprocessResult first, const PreprocessParams& params,
                                    const std::atomic<bool>* cancel) {
    PreprocessResult result;
    auto stopped = [&] { return cancel && cancel->load(std::memory_order_relaxed) && (result.cancelled = true); };
    const cv::Mat gray = uprightGray(image, params, true, result, cancel, stopped);
    if (result.cancelled) return result;
    if (result.quarterTurns == 0)  // the page as it was prepared: its regions stand
        result.regions = std::move(first.regions);
    else
        prepareRegions(gray, image.size(), params, result, stopped);
    return result;
}

}  // namespace quire
