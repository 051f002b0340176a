// The PP-OCRv4 front-end and the ONNX runtime under it: kernels against naive references, the
// detector against OpenCV's DNN on a patched graph, refusal of damaged model files, and
// recognition of real text end to end. Reading order on given boxes: tst_page_layout; the reader
// over it: tst_reader.
#include <QTemporaryDir>
#include <QtTest>

#include <onnx/onnx_pb.h>
#include <opencv2/dnn.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "nn/cpu_ops.h"
#include "nn/graph.h"
#include "quire/nn/onnx_graph.h"
#include "quire/core/backend.h"
#include "quire/ppocr/ppocr.h"
#include "quire/reader/reader.h"
#include "quire/recognizers/recognizer.h"
#include "recognizers/engines.h"
#include "test_util.h"

using namespace quire;
using namespace quire::nn;
using namespace quire::test;
namespace fs = std::filesystem;

namespace {

// A model at opset 11 whose graph has one input, "x"; the tests add the nodes.
onnx::GraphProto* tinyGraph(onnx::ModelProto& m) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(11);
    auto* g = m.mutable_graph();
    g->add_input()->set_name("x");
    return g;
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const char* op, std::initializer_list<const char*> inputs,
                         const char* output) {
    auto* n = g->add_node();
    n->set_op_type(op);
    for (const char* in : inputs) n->add_input(in);
    n->add_output(output);
    return n;
}

// `page` read by an engine whose boolean `option` is `value`, the others their defaults.
Result<PpocrPage> readWith(const cv::Mat& page, bool PpocrOptions::*option, bool value) {
    PpocrOptions o;
    o.*option = value;
    auto engine = PpocrEngine::load(o);
    if (!engine) return engine.status();
    return (*engine)->read(page, false);
}

// The bounds of each row of ink (darker than 128) of a generated page, top to bottom.
std::vector<cv::Rect> inkRows(const cv::Mat& page) {
    std::vector<cv::Rect> rows;
    for (int y = 0, from = -1; y <= page.rows; ++y) {
        const bool ink = y < page.rows && cv::countNonZero(page.row(y) < 128) > 0;
        if (ink && from < 0) from = y;
        if (!ink && from >= 0) {
            const cv::Mat mask = page.rowRange(from, y) < 128;
            rows.push_back(cv::boundingRect(mask) + cv::Point(0, from));
            from = -1;
        }
    }
    return rows;
}

// A detected line's box and its quad (clockwise from the top left) for `r`, as the detector hands
// them to trimShowThrough.
void addBox(std::vector<Box>& boxes, std::vector<std::vector<cv::Point2f>>& quads, const cv::Rect& r) {
    boxes.push_back({r.x, r.y, r.width, r.height});
    quads.push_back({{float(r.x), float(r.y)}, {float(r.x + r.width), float(r.y)},
                     {float(r.x + r.width), float(r.y + r.height)}, {float(r.x), float(r.y + r.height)}});
}

std::string modelDir() {
    auto dir = findPpocrModels();
    return dir ? *dir : std::string();
}

// The detector graph with its 3-input Clip nodes rewritten to the attribute form (opset 9 style)
// that OpenCV 4.6's importer understands.
std::string patchedDetector(const std::string& path) {
    onnx::ModelProto m;
    std::ifstream f(path, std::ios::binary);
    if (!m.ParseFromIstream(&f)) return {};
    std::map<std::string, float> scalars;
    for (const auto& n : m.graph().node())
        if (n.op_type() == "Constant" && n.attribute(0).t().dims_size() == 0 && n.attribute(0).t().data_type() == 1) {
            const auto& t = n.attribute(0).t();
            float v = t.float_data_size() ? t.float_data(0) : 0.f;
            if (!t.raw_data().empty()) std::memcpy(&v, t.raw_data().data(), 4);
            scalars[n.output(0)] = v;
        }
    int patched = 0;
    for (auto& n : *m.mutable_graph()->mutable_node()) {
        if (n.op_type() != "Clip" || n.input_size() != 3) continue;
        const float lo = scalars.at(n.input(1)), hi = scalars.at(n.input(2));
        const std::string x = n.input(0);
        n.clear_input();
        n.add_input(x);
        auto* a = n.add_attribute();
        a->set_name("min");
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(lo);
        a = n.add_attribute();
        a->set_name("max");
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(hi);
        ++patched;
    }
    for (auto& o : *m.mutable_opset_import())
        if (o.domain().empty()) o.set_version(10);  // Clip with attributes; Resize(X, scales)
    // Opset 10's Resize takes (X, scales): drop the empty roi input.
    for (auto& n : *m.mutable_graph()->mutable_node()) {
        if (n.op_type() != "Resize" || n.input_size() < 3) continue;
        const std::string x = n.input(0), scales = n.input(2);
        n.clear_input();
        n.add_input(x);
        n.add_input(scales);
        for (int k = n.attribute_size() - 1; k >= 0; --k)
            if (n.attribute(k).name() != "mode") n.mutable_attribute()->DeleteSubrange(k, 1);
    }
    return patched ? m.SerializeAsString() : std::string();
}

}  // namespace

// A rendered English page and the Chinese fixture: the pages two readings of the front-end are
// compared on.
std::vector<cv::Mat> englishAndChinesePages() {
    return {textPage({"The parish register of a small", "town is seldom a handsome object,", "but it keeps 1,847 names."},
                     1700, 800, 1.4),
            cv::imread((sourceDir() + "/tests/fixtures/rare_characters_zh.png").toStdString(), cv::IMREAD_GRAYSCALE)};
}

class TestPpocr : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(!modelDir().empty(), findPpocrModels().status().message().c_str());
    }

    // The proof of the runtime: the detector's probability map equals OpenCV 4.6 DNN's on
    // the same graph, patched so that OpenCV can import it. This also checks batch-norm folding
    // and elementwise fusion, which OpenCV does not share.
    void detectorMatchesOpenCvDnn() {
        const std::string det = (fs::path(modelDir()) / "ch_PP-OCRv4_det_infer.onnx").string();
        const std::string patched = patchedDetector(det);
        QVERIFY(!patched.empty());
        cv::dnn::Net net = cv::dnn::readNetFromONNX(patched.data(), patched.size());
        QVERIFY(!net.empty());

        cv::Mat page = textPage({"Parity of the detector", "against OpenCV's DNN module,", "line by line."}, 1700, 1100, 1.4);
        cv::Mat bgr;
        cv::cvtColor(page, bgr, cv::COLOR_GRAY2BGR);
        cv::resize(bgr, bgr, cv::Size(640, 416), 0, 0, cv::INTER_AREA);
        // Pixel noise so that the map is not trivially flat away from the text.
        cv::Mat noise(bgr.size(), CV_8UC3);
        cv::randu(noise, 0, 24);
        bgr -= noise;

        cv::Mat blob = cv::dnn::blobFromImage(bgr, 1.0 / 255.0, {}, {}, false, false, CV_32F);
        // (x/255 − mean)/std per channel, as PpocrEngine::probabilityMap does.
        const float mean[3] = {0.485f, 0.456f, 0.406f}, stdv[3] = {0.229f, 0.224f, 0.225f};
        for (int c = 0; c < 3; ++c) {
            cv::Mat plane(bgr.rows, bgr.cols, CV_32F, blob.ptr<float>(0, c));
            plane = (plane - mean[c]) / stdv[c];
        }
        net.setInput(blob);
        cv::Mat ref = net.forward();
        QCOMPARE(ref.size[2], bgr.rows);
        cv::Mat refMap(bgr.rows, bgr.cols, CV_32F, ref.ptr<float>(0, 0));

        PpocrOptions o;
        auto engine = PpocrEngine::load(o);
        QVERIFY2(engine, engine.status().message().c_str());
        auto map = (*engine)->probabilityMap(bgr);
        QVERIFY2(map, map.status().message().c_str());
        QCOMPARE(map->rows, bgr.rows);
        double maxDiff = 0, sumDiff = 0;
        for (int y = 0; y < bgr.rows; ++y)
            for (int x = 0; x < bgr.cols; ++x) {
                const double d = std::abs(double(map->at<float>(y, x)) - refMap.at<float>(y, x));
                maxDiff = std::max(maxDiff, d);
                sumDiff += d;
            }
        qInfo("detector vs OpenCV DNN: max |Δp| = %.2e, mean |Δp| = %.2e", maxDiff, sumDiff / (bgr.rows * bgr.cols));
        QVERIFY2(maxDiff < 1e-3, "probability maps differ");
        double textMass = cv::sum(refMap > 0.5)[0] / 255.0;
        QVERIFY2(textMass > 1000, "the reference map found no text: the comparison would prove nothing");
    }

    void damagedModelsAreRefused() {
        QTemporaryDir tmp;
        const fs::path src = modelDir(), dst = tmp.path().toStdString();
        for (const char* f : {"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx", "ppocr_keys_v1.txt"})
            fs::copy_file(src / f, dst / f);
        // Truncated recognizer: the checksum names it; without the checksum, the parser does.
        const std::string rec = readFile(QString::fromStdString((dst / "ch_PP-OCRv4_rec_infer.onnx").string()));
        writeFile(QString::fromStdString((dst / "ch_PP-OCRv4_rec_infer.onnx").string()), rec.substr(0, rec.size() / 2));
        PpocrOptions o;
        o.modelDir = dst.string();
        o.detMaxSide = 961;  // a configuration not cached by other tests
        auto e = PpocrEngine::load(o);
        QVERIFY(!e);
        QVERIFY2(e.status().message().find("ch_PP-OCRv4_rec_infer.onnx") != std::string::npos, e.status().message().c_str());
        QVERIFY(e.status().message().find("damaged") != std::string::npos);
        o.verifyChecksums = false;
        e = PpocrEngine::load(o);
        QVERIFY(!e);
        QVERIFY2(e.status().message().find("ch_PP-OCRv4_rec_infer.onnx") != std::string::npos, e.status().message().c_str());

        // Altered weights that still parse: the checksum catches them.
        std::string altered = rec;
        altered[altered.size() / 2] ^= 0x40;
        writeFile(QString::fromStdString((dst / "ch_PP-OCRv4_rec_infer.onnx").string()), altered);
        o.verifyChecksums = true;
        e = PpocrEngine::load(o);
        QVERIFY(!e);
        QVERIFY(e.status().message().find("sha256") != std::string::npos);

        // A missing directory says how to install the models.
        o.modelDir = (dst / "nowhere").string();
        e = PpocrEngine::load(o);
        QVERIFY(!e);
        QVERIFY2(e.status().message().find("installer/fetch-models.sh") != std::string::npos, e.status().message().c_str());
    }

    void unsupportedOperatorIsNamed() {
        onnx::ModelProto m;
        auto* g = tinyGraph(m);
        addNode(g, "LSTM", {"x"}, "y")->set_name("the_lstm");
        g->add_output()->set_name("y");
        auto r = OnnxModel::fromBytes(m.SerializeAsString(), "tiny.onnx");
        QVERIFY(!r);
        QVERIFY2(r.status().message().find("the_lstm") != std::string::npos, r.status().message().c_str());
        QVERIFY(r.status().message().find("LSTM") != std::string::npos);
        QVERIFY(!OnnxModel::fromBytes("garbage, not protobuf \xff\xff\xff", "junk.onnx"));

        // fuzz_onnx's sixth finding: a ConvTranspose whose kernel_shape attribute was larger than
        // its weights made OpenBLAS read past them (a SEGV that ASan cannot see inside OpenBLAS).
        onnx::ModelProto ct;
        auto* cg = tinyGraph(ct);
        auto* wa = addNode(cg, "Constant", {}, "w")->add_attribute();
        wa->set_name("value");
        wa->set_type(onnx::AttributeProto::TENSOR);
        auto* wt = wa->mutable_t();
        wt->set_data_type(onnx::TensorProto::FLOAT);
        for (int d : {3, 2, 2, 2}) wt->add_dims(d);
        for (int k = 0; k < 24; ++k) wt->add_float_data(0.5f);
        auto* cn = addNode(cg, "ConvTranspose", {"x", "w"}, "y");
        cn->set_name("lying_kernel");
        auto* ks = cn->add_attribute();
        ks->set_name("kernel_shape");
        ks->set_type(onnx::AttributeProto::INTS);
        ks->add_ints(9);
        ks->add_ints(9);
        cg->add_output()->set_name("y");
        auto lyingKernel = OnnxModel::fromBytes(ct.SerializeAsString(), "ct.onnx");
        QVERIFY2(lyingKernel, lyingKernel.status().message().c_str());
        auto ran = lyingKernel->run({{"x", Tensor::floats({1, 3, 8, 8})}});
        QVERIFY(!ran);
        QVERIFY2(ran.status().message().find("kernel_shape disagrees") != std::string::npos, ran.status().message().c_str());
        // fuzz_onnx's first finding: a constant whose shape promised 233 GB of floats made the
        // loader allocate before comparing with the data. Now refused, naming the tensor.
        const std::string lying = readFile(QString(QUIRE_SOURCE_DIR) + "/fuzz/corpus/onnx/oom-lying-tensor-shape");
        QVERIFY(!lying.empty());
        auto bad = OnnxModel::fromBytes(lying, "lying.onnx");
        QVERIFY(!bad);
        QVERIFY2(bad.status().message().find("lying.onnx") != std::string::npos, bad.status().message().c_str());

        // fuzz_onnx's seventh finding (fuzz/corpus/onnx/conv-weight-input-left-empty): a Conv whose
        // weight input is left empty, before a BatchNormalization. Folding the batch norm read the
        // constant at index -1. Now the fold leaves such a pair alone; whatever the loader then
        // says, it reads nothing outside the graph (the sanitizer build fails the test if it does).
        onnx::ModelProto cb;
        auto* bg = tinyGraph(cb);
        addNode(bg, "Conv", {"x", ""}, "c");
        addNode(bg, "BatchNormalization", {"c", "s", "b", "m", "v"}, "y");
        for (const char* name : {"s", "b", "m", "v"}) {
            auto* init = bg->add_initializer();
            init->set_name(name);
            init->set_data_type(onnx::TensorProto::FLOAT);
            init->add_dims(1);
            init->add_float_data(1.f);
        }
        bg->add_output()->set_name("y");
        auto emptyWeight = OnnxModel::fromBytes(cb.SerializeAsString(), "bn.onnx");
        if (emptyWeight) QCOMPARE(emptyWeight->foldedBatchNorms(), 0);
        else QVERIFY2(emptyWeight.status().message().find("bn.onnx") != std::string::npos, emptyWeight.status().message().c_str());
        const std::string finding = readFile(QString(QUIRE_SOURCE_DIR) + "/fuzz/corpus/onnx/conv-weight-input-left-empty");
        QVERIFY(!finding.empty());
        (void)OnnxModel::fromBytes(finding, "finding.onnx");
    }

    // Small graphs that use every operator of the PP-OCR graphs (the fuzzer's seeds) load, fuse
    // and run with the shapes and value ranges their definitions give.
    void smallGraphsOfEveryOperatorRun() {
        QTemporaryDir tmp;
        auto gen = runProgram("/usr/bin/python3", {QString(QUIRE_SOURCE_DIR) + "/fuzz/make_onnx_seeds.py", tmp.path()});
        QVERIFY2(gen.exitCode == 0, qPrintable(gen.err));
        Tensor x = Tensor::floats({1, 3, 16, 16});
        for (size_t k = 0; k < x.f.size(); ++k) x.f[k] = float(k % 11) / 5.f - 1.f;
        auto det = OnnxModel::load(tmp.filePath("det_like.onnx").toStdString());
        QVERIFY2(det, det.status().message().c_str());
        QCOMPARE(det->foldedBatchNorms(), 1);
        QVERIFY(det->fusedNodes() >= 3);  // Add, Clip, Div of the hard-swish at least
        auto y = det->run({{"x", x}});
        QVERIFY2(y, y.status().message().c_str());
        const Tensor& d = y->begin()->second;
        QCOMPARE(d.shape, (Shape{1, 6, 16, 16}));
        for (float v : d.f) QVERIFY(std::isfinite(v) && v >= 0.f && v <= 1.f);
        auto rec = OnnxModel::load(tmp.filePath("rec_like.onnx").toStdString());
        QVERIFY2(rec, rec.status().message().c_str());
        y = rec->run({{"x", x}});
        QVERIFY2(y, y.status().message().c_str());
        const Tensor& r = y->begin()->second;
        QCOMPARE(r.shape, (Shape{1, 16, 16}));
        for (int row = 0; row < 16; ++row) {
            double sum = 0;
            for (int c = 0; c < 16; ++c) sum += r.f[size_t(row * 16 + c)];
            QVERIFY(std::abs(sum - 1.0) < 1e-5);
        }
    }

    void recognisesAPage() {
        auto engine = PpocrEngine::load(PpocrOptions{});
        QVERIFY(engine);
        const std::vector<std::string> text = {"The parish register of a small", "town is seldom a handsome object."};
        cv::Mat page = textPage(text, 1700, 600, 1.4);
        auto read = (*engine)->read(page, true);
        QVERIFY2(read, read.status().message().c_str());
        QCOMPARE(int(read->lines.size()), 2);
        for (size_t k = 0; k < 2; ++k) {
            const auto& l = read->lines[k];
            QCOMPARE(QString::fromStdString(l.text), QString::fromStdString(text[k]));
            QCOMPARE(int(l.features.size()), l.frames * 120);
            QCOMPARE(int(l.frameX.size()), l.frames);
            QVERIFY(std::is_sorted(l.frameX.begin(), l.frameX.end()));
        }
        const PageText pt = (*engine)->toPageText(*read, 300);
        QCOMPARE(pt.lines.size(), size_t(2));
        QCOMPARE(QString::fromStdString(pt.lines[1].text()), QString::fromStdString(text[1]));
        // Word boxes follow the words: "handsome" lies right of "seldom", inside its line.
        const auto& words = pt.lines[1].words;
        QCOMPARE(words.size(), size_t(6));
        for (size_t k = 1; k < words.size(); ++k) QVERIFY(words[k].box.x >= words[k - 1].box.x + words[k - 1].box.w / 2);
        for (const auto& w : words) {
            QVERIFY(w.confidence > 80.f);
            QVERIFY(w.box.x >= pt.lines[1].box.x && w.box.right() <= pt.lines[1].box.right());
        }
    }

    // The facing page's print showing through a thin leaf, mirrored and at a sixth of the
    // contrast, beside a short line's end and in the white under the last line: the detector boxes
    // it, and read as found it adds letters to the line and lines to the page. Trimmed, the page
    // reads as printed.
    void showThroughIsNotRead() {
        const std::vector<std::string> text = {"The parish register of a small", "town is seldom",
                                               "but it keeps 1,847 names."};
        cv::Mat page = textPage(text, 1700, 700, 1.4);
        cv::Mat back = textPage({"", "Quarterly accounts of the overseers", "", "", "of the poor of this parish"}, 1700, 700, 1.4);
        cv::flip(back, back, 1);
        cv::Mat faint = 255 - (255 - back) / 6;
        page = cv::min(page, faint);
        QStringList found[2], printed;
        for (const auto& t : text) printed << QString::fromStdString(t);
        for (bool trim : {true, false}) {
            auto read = readWith(page, &PpocrOptions::trimShowThrough, trim);
            QVERIFY2(read, read.status().message().c_str());
            for (const auto& l : read->lines) found[trim] << QString::fromStdString(l.text);
        }
        QCOMPARE(found[1], printed);
        QVERIFY2(found[0] != printed, "the detector found no show-through: the page proves nothing");
    }

    // The trim alone: a line's faint tail is cut a third of a line height past its last ink, a box
    // of faint ink only is taken out, lines of print and their quads are left as found.
    void showThroughTrimKeepsThePrint() {
        cv::Mat page = textPage({"The parish register of a small", "town is seldom", "but it keeps 1,847 names."}, 1700, 700, 1.4);
        cv::Mat back = textPage({"", "Quarterly accounts of the overseers", "", "", "of the poor of this parish"}, 1700, 700, 1.4);
        cv::flip(back, back, 1);
        page = cv::min(page, 255 - (255 - back) / 6);
        // Each row's ink from the page itself: the print's columns, the show-through's rows.
        const auto inkBounds = [&](const cv::Mat& img, int below) {
            cv::Mat mask = img < below;
            return cv::boundingRect(mask);
        };
        std::vector<Box> boxes;
        std::vector<std::vector<cv::Point2f>> quads;
        const auto add = [&](const cv::Rect& r) { addBox(boxes, quads, r); };
        // The rows of print, found from the page without the show-through; each box as wide as
        // the page's text or the row with its tail.
        const cv::Mat print = textPage({"The parish register of a small", "town is seldom", "but it keeps 1,847 names."}, 1700, 700, 1.4);
        const std::vector<cv::Rect> rows = inkRows(print);
        QCOMPARE(rows.size(), size_t(3));
        const int pad = 8;
        add({rows[0].x - pad, rows[0].y - pad, rows[0].width + 2 * pad, rows[0].height + 2 * pad});
        const cv::Rect tail = inkBounds(page.rowRange(rows[1].y, rows[1].y + rows[1].height), 250);
        add({rows[1].x - pad, rows[1].y - pad, tail.x + tail.width - rows[1].x + 2 * pad, rows[1].height + 2 * pad});
        add({rows[2].x - pad, rows[2].y - pad, rows[2].width + 2 * pad, rows[2].height + 2 * pad});
        const int under = rows[2].y + rows[2].height + 2 * pad;
        const cv::Rect lone = inkBounds(page.rowRange(under, page.rows), 250) + cv::Point(0, under);
        QVERIFY2(lone.width > 200, "no show-through under the last line");
        add({lone.x - pad, lone.y - pad, lone.width + 2 * pad, lone.height + 2 * pad});
        QVERIFY2(boxes[1].w > rows[1].width + 200, "no show-through beside the short line");

        const std::vector<Box> before = boxes;
        trimShowThrough(page, quads, boxes);
        QCOMPARE(boxes.size(), size_t(3));
        QCOMPARE(quads.size(), size_t(3));
        QVERIFY(sameBox(boxes[0], before[0]));
        QVERIFY(sameBox(boxes[2], before[2]));
        const int lineH = before[0].h;
        QCOMPARE(boxes[1].x, before[1].x);
        QVERIFY2(std::abs(boxes[1].right() - (rows[1].x + rows[1].width + lineH / 3)) <= 3,
                 qPrintable(QString("trimmed to %1, print ends at %2").arg(boxes[1].right()).arg(rows[1].x + rows[1].width)));
        QCOMPARE(quadBounds(quads[1], page.cols, page.rows).right(), boxes[1].right());
    }

    // A chapter's short last page: one line of print, and under it four lines of the facing
    // page showing through. The page's text contrast is the print's, not the median box's (here
    // the show-through's), so the four are taken out and the print is kept as found.
    void showThroughOutnumberingThePrintIsTakenOut() {
        const cv::Mat print = textPage({"The parish register of a small"}, 1700, 900, 1.4);
        cv::Mat back = textPage({"", "", "Quarterly accounts of the overseers", "of the poor of this parish",
                                 "and of the highways, as kept", "by the vestry clerk"}, 1700, 900, 1.4);
        cv::flip(back, back, 1);
        const cv::Mat page = cv::min(print, 255 - (255 - back) / 6);
        std::vector<Box> boxes;
        std::vector<std::vector<cv::Point2f>> quads;
        const int pad = 8;
        for (const cv::Mat& side : {print, back})
            for (const cv::Rect& r : inkRows(side))
                addBox(boxes, quads, {r.x - pad, r.y - pad, r.width + 2 * pad, r.height + 2 * pad});
        QCOMPARE(boxes.size(), size_t(5));
        const Box printed = boxes[0];
        trimShowThrough(page, quads, boxes);
        QCOMPARE(boxes.size(), size_t(1));
        QCOMPARE(quads.size(), size_t(1));
        QVERIFY(sameBox(boxes[0], printed));
    }

    // A line image's gray levels stretched: the ink's core to black, the paper to white, a colour
    // line's channels alike; a line with no print (gray levels within 16) is left as it is.
    void lineContrastIsStretchedToTheFullRange() {
        cv::Mat line(48, 400, CV_8UC1, cv::Scalar(190));
        cv::putText(line, "faint print", {10, 36}, cv::FONT_HERSHEY_DUPLEX, 1.0, cv::Scalar(120), 2, cv::LINE_AA);
        const auto before = grayPercentiles(line, {0.01, 0.5, 0.99});
        QCOMPARE(before, (std::vector<int>{120, 190, 190}));
        cv::Mat colour;
        cv::cvtColor(line, colour, cv::COLOR_GRAY2BGR);
        stretchLineContrast(line);
        QCOMPARE(grayPercentiles(line, {0.01, 0.5, 0.99}), (std::vector<int>{0, 255, 255}));
        stretchLineContrast(colour);
        std::vector<cv::Mat> channels;
        cv::split(colour, channels);
        for (const cv::Mat& c : channels) QCOMPARE(cv::countNonZero(c != line), 0);

        cv::Mat blank(48, 400, CV_8UC1, cv::Scalar(200));
        blank(cv::Rect(0, 0, 400, 24)) = 190;
        const cv::Mat kept = blank.clone();
        stretchLineContrast(blank);
        QCOMPARE(cv::countNonZero(blank != kept), 0);
    }

    // Pale print: the top of a generated 150 dpi page (gray ink on gray paper, noise, JPEG; the
    // rest of the page made blank). Read stretched, its six lines of text are read as printed
    // but for a few letters; the recognizer drops many more without ("genrations of he sons
    // ofoah, hm"; docs/ACCURACY.md, 2026-12-07 tenth session).
    void palePrintIsReadStretched() {
        const cv::Mat page = cv::imread((sourceDir() + "/tests/fixtures/pale_print_150dpi.jpg").toStdString(), cv::IMREAD_GRAYSCALE);
        QVERIFY(!page.empty());
        const QString truth = "Now these are the generations of the sons of Noah, Shem, Ham, and Japheth: and unto them were "
                              "sons born after the flood. The sons of Japheth; Gomer, and Magog, and Madai, and Javan, and Tubal, "
                              "and Meshech, and Tiras. And the sons of Gomer; Ashkenaz, and Riphath, and Togarmah. "
                              "And the sons of Javan; Elishah, and Tarshish, Kittim, and Dodanim. By these were the isles of the "
                              "Gentiles divided in their lands; every one after his tongue, after their families, in their nations. And the "
                              "sons of Ham; Cush, and Mizraim, and Phut, and Canaan.";
        int errors[2] = {0, 0};
        for (const bool stretch : {false, true}) {
            auto read = readWith(page, &PpocrOptions::stretchLineContrast, stretch);
            QVERIFY2(read, read.status().message().c_str());
            QString got;
            for (const auto& l : read->lines)  // the text's lines: not the head, the folio, the cut line under them
                if (l.box.y > 120 && l.box.bottom() < 300) got += (got.isEmpty() ? "" : " ") + QString::fromStdString(l.text);
            errors[stretch] = editDistance(got, truth);
        }
        QVERIFY2(errors[1] <= 6 && errors[1] * 3 <= errors[0],
                 qPrintable(QString("%1 errors stretched, %2 not").arg(errors[1]).arg(errors[0])));
    }

    // A cancel reaches inside the graphs: the detector (a second of a page's work on one core)
    // stops before its next node, so a run stops within a node's time, not a page's.
    void cancelStopsTheGraphsBetweenNodes() {
        auto engine = PpocrEngine::load(PpocrOptions{});
        QVERIFY(engine);
        const cv::Mat page = textPage({"The parish register of a small"}, 1700, 600, 1.4);
        std::atomic<bool> cancel{false};
        QVERIFY((*engine)->detect(page, &cancel));
        cancel = true;
        auto stopped = (*engine)->detect(page, &cancel);
        QVERIFY(!stopped);
        QCOMPARE(stopped.status().code(), ErrorCode::Cancelled);
        auto read = (*engine)->read(page, true, &cancel);
        QVERIFY(!read);
        QCOMPARE(read.status().code(), ErrorCode::Cancelled);
    }

    // Quire's CTC head (the classifier and softmax per frame, without the graph's [lines, frames,
    // classes] probability tensor) against the graph's own: the same characters at the same frames
    // and the same features, the probabilities equal up to float rounding (the head's products
    // are OpenBLAS's in other row blocks), on a synthetic page and a Chinese fixture.
    void ctcHeadMatchesTheGraphs() {
        PpocrOptions reference;
        reference.graphClassifier = true;
        auto head = PpocrEngine::load(PpocrOptions{});
        auto graph = PpocrEngine::load(reference);
        QVERIFY(head && graph);
        const std::vector<cv::Mat> pages = englishAndChinesePages();
        int characters = 0;
        for (const cv::Mat& page : pages) {
            QVERIFY(!page.empty());
            auto a = (*head)->read(page, true);
            auto b = (*graph)->read(page, true);
            QVERIFY(a && b);
            QCOMPARE(a->lines.size(), b->lines.size());
            for (size_t k = 0; k < a->lines.size(); ++k) {
                const auto &la = a->lines[k], &lb = b->lines[k];
                QCOMPARE(la.text, lb.text);
                QVERIFY(la.charIds == lb.charIds && la.charFrames == lb.charFrames && la.features == lb.features);
                QCOMPARE(la.charProbs.size(), lb.charProbs.size());
                for (size_t c = 0; c < la.charProbs.size(); ++c)
                    QVERIFY2(std::abs(la.charProbs[c] - lb.charProbs[c]) <= 1e-5f,
                             qPrintable(QString("line %1 char %2: %3 against %4").arg(k).arg(c).arg(la.charProbs[c]).arg(lb.charProbs[c])));
                characters += int(la.charIds.size());
            }
        }
        QVERIFY(characters > 60);
    }

    // The front-end with a device for its graphs' nodes (the mirror: the device path on the host
    // with the CPU's kernels, so the reading must be the CPU's bit for bit): convolutions and
    // transposed ones, chains, broadcasts, batch norms, pools, means, softmax, MatMul, Transpose,
    // Slice, Concat and reshapes on the device, the integer shape arithmetic on the CPU, and the
    // same lines, characters, frames, features and probabilities. A CUDA device asked for where there is none leaves a notice.
    void frontEndOnADeviceReadsWhatTheCpuReads() {
        PpocrOptions mirror;
        mirror.device = "mirror";
        auto cpu = PpocrEngine::load(PpocrOptions{});
        auto dev = PpocrEngine::load(mirror);
        QVERIFY2(cpu && dev, cpu ? dev.status().message().c_str() : cpu.status().message().c_str());
        const std::vector<cv::Mat> pages = englishAndChinesePages();
        int characters = 0;
        for (const cv::Mat& page : pages) {
            QVERIFY(!page.empty());
            auto a = (*cpu)->read(page, true);
            auto b = (*dev)->read(page, true);
            QVERIFY2(a && b, a ? b.status().message().c_str() : a.status().message().c_str());
            QCOMPARE(b->lines.size(), a->lines.size());
            for (size_t k = 0; k < a->lines.size(); ++k) {
                const auto &la = a->lines[k], &lb = b->lines[k];
                QCOMPARE(lb.text, la.text);
                QVERIFY(la.charIds == lb.charIds && la.charFrames == lb.charFrames && la.features == lb.features &&
                        la.charProbs == lb.charProbs);
                characters += int(la.charIds.size());
            }
        }
        QVERIFY(characters > 60);
        const auto [onDevice, onCpu] = (*dev)->deviceNodeCounts();
        // The CPU keeps the integer shape arithmetic (Cast, Slice and Concat of shapes; 108 of 1,196
        // nodes on these pages, one line a recognizer call, each call repeating its shape nodes):
        // a tenth of the nodes at most.
        QVERIFY2(onDevice > 9 * onCpu && onCpu > 0, qPrintable(QString("%1 nodes on the device, %2 on the CPU").arg(onDevice).arg(onCpu)));
        QVERIFY((*dev)->deviceNotice().empty());
        qInfo("%d characters; %lld nodes on the device, %lld on the CPU", characters, (long long)onDevice, (long long)onCpu);
        if (gpuDevices().empty()) {
            PpocrOptions cuda;
            cuda.device = "cuda";
            auto fallback = PpocrEngine::load(cuda);
            QVERIFY(fallback);
            QVERIFY2(QString::fromStdString((*fallback)->deviceNotice()).contains("CUDA"), (*fallback)->deviceNotice().c_str());
        }
    }

    // Pieces of a printed line the detector cut at a wide space are read as one line; text across
    // a gutter, in another block or on another row is not joined.
    void piecesOfAPrintedLineAreReadAsOne() {
        auto quad = [](const Box& b) {
            return std::vector<cv::Point2f>{{float(b.x), float(b.y)}, {float(b.right()), float(b.y)},
                                            {float(b.right()), float(b.bottom())}, {float(b.x), float(b.bottom())}};
        };
        // Rows of a page 58 px high: a line cut after a full stop (13 px of white), a line cut
        // around a speck, two columns 120 px apart, and a row whose right piece is in another block.
        const std::vector<Box> boxes = {{141, 1098, 460, 52}, {614, 1100, 918, 60},                    // row 1: cut
                                        {142, 521, 399, 42}, {528, 531, 46, 17}, {561, 513, 966, 59},  // row 0: speck
                                        {140, 1300, 600, 58}, {860, 1300, 600, 58},                    // columns
                                        {140, 1500, 600, 58}, {700, 1500, 600, 58}};                   // blocks
        std::vector<std::vector<cv::Point2f>> quads;
        for (const auto& b : boxes) quads.push_back(quad(b));
        const std::vector<int> order = {2, 3, 4, 0, 1, 5, 6, 7, 8};
        const std::vector<int> blockOf = {0, 0, 0, 0, 0, 1, 2, 3, 4};
        const auto lines = joinLinePieces(quads, boxes, order, blockOf, 1700, 2200);
        QCOMPARE(int(lines.size()), 6);
        QVERIFY(sameBox(lines[0].box, {142, 513, 1385, 59}));  // the speck's row, one line
        QVERIFY(sameBox(lines[1].box, {141, 1098, 1391, 62}));
        QCOMPARE(lines[1].block, 0);
        for (int k = 2; k < 6; ++k) QVERIFY(sameBox(lines[size_t(k)].box, boxes[size_t(k + 3)]));
        // The joined quad covers both pieces.
        const cv::Rect r = cv::boundingRect(lines[1].quad);
        QVERIFY(r.x <= 141 && r.x + r.width >= 1532 && r.y <= 1098 && r.y + r.height >= 1160);

        // Spaces: none at either end, none doubled; characters, probabilities and frames together.
        const int space = reader_vocab::kKeyCount + 1;
        PpocrLine line;
        line.text = " ab.  Cd ";
        line.charIds = {space, 10, 11, 12, space, space, 13, 14, space};
        line.charProbs = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f};
        line.charFrames = {0, 2, 4, 6, 8, 10, 12, 14, 16};
        tidySpaces(line, space);
        QCOMPARE(QString::fromStdString(line.text), QString("ab. Cd"));
        QCOMPARE(line.charIds, (std::vector<int>{10, 11, 12, space, 13, 14}));
        QCOMPARE(line.charProbs, (std::vector<float>{0.2f, 0.3f, 0.4f, 0.5f, 0.7f, 0.8f}));
        QCOMPARE(line.charFrames, (std::vector<int>{2, 4, 6, 8, 12, 14}));
    }

    // A detected region is scored inside its contour: a line with a drop capital reaching a line
    // below is text, though most of its bounding rectangle is white.
    void aLineWithADropCapitalIsText() {
        cv::Mat prob = cv::Mat::zeros(80, 500, CV_32F);
        prob(cv::Rect(60, 20, 400, 12)).setTo(0.9f);  // the line
        prob(cv::Rect(40, 20, 20, 40)).setTo(0.9f);   // its drop capital, down to the next line
        std::vector<std::vector<cv::Point>> contours;
        cv::findContours(cv::Mat(prob > 0.3f), contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);
        QCOMPARE(int(contours.size()), 1);
        const float rectangle = float(cv::mean(prob(cv::boundingRect(contours[0])))[0]);
        QVERIFY2(rectangle < PpocrOptions{}.detBoxThreshold, "the rectangle's score would drop the line");
        QVERIFY(regionScore(prob, contours[0]) > 0.85f);
        // A region of low probability stays below the threshold.
        cv::Mat faint = prob * 0.5f;
        QVERIFY(regionScore(faint, contours[0]) < PpocrOptions{}.detBoxThreshold);
    }

    // A full batch of long lines (the recognizer's attention is then batch × heads × T²): the
    // runtime's size limits must leave real pages alone.
    void recognisesABatchOfLongLines() {
        PpocrOptions o;
        o.detMaxSide = 2400;  // the page is 6,600 px wide: keep each line one detected box
        auto engine = PpocrEngine::load(o);
        QVERIFY(engine);
        std::vector<std::string> lines;
        for (int k = 0; k < 10; ++k)
            lines.push_back("Line " + std::to_string(k + 1) +
                            " of a long page, written out wide enough to fill a batch of the recognizer with long lines of text, as a Chinese book does");
        cv::Mat page = textPage(lines, 6600, 1500, 1.4);
        auto read = (*engine)->read(page, false);
        QVERIFY2(read, read.status().message().c_str());
        int longest = 0;
        for (const auto& l : read->lines) longest = std::max(longest, l.frames);
        qInfo("%zu lines, longest %d frames", read->lines.size(), longest);
        QCOMPARE(int(read->lines.size()), 10);
        QVERIFY2(read->lines[9].text.find("Line 10") != std::string::npos, read->lines[9].text.c_str());
    }

    // Pieces of one printed line: across, on one row, the next to the right (overlapping by at most
    // a line height); never the next row, a piece to the left, or columns of vertical text.
    void piecesOfARowContinueIt() {
        const Box is{100, 200, 60, 45}, licensed{230, 202, 220, 45}, below{100, 260, 800, 45};
        QVERIFY(continuesRow(is, licensed));
        QVERIFY(!continuesRow(licensed, is));
        QVERIFY(!continuesRow(is, below));
        QVERIFY(continuesRow(is, Box{130, 200, 100, 45}));  // boxes grown by unclip overlap a little
        // Two columns of vertical Chinese side by side, read right to left: not a row.
        const Box right{900, 100, 50, 1200}, left{830, 110, 50, 1180};
        QVERIFY(isVerticalLine(right) && !isVerticalLine(is));
        QVERIFY(!continuesRow(right, left));
        QVERIFY(!continuesRow(left, right));
    }

    // Wide white bands: over a line high and over the page's usual white by half a line; lines
    // side by side or going up (a column's top after the last) are never apart.
    void wideWhiteBandsFollowThePagesSpacing() {
        auto column = [](int headWhite, int pitch, int lines) {
            std::vector<Box> boxes{Box{100, 100, 400, 40}};
            int y = 100 + 40 + headWhite;
            for (int k = 0; k < lines; ++k, y += pitch) boxes.push_back(Box{100, y, 800, 40});
            return boxes;
        };
        // Single-spaced (10 px of white): a head 50 px above is apart, one 40 px above is not.
        auto bands = wideWhiteBands(column(50, 50, 6), 40);
        QCOMPARE(bands.size(), size_t(6));
        QVERIFY(bands[0]);
        for (size_t k = 1; k < bands.size(); ++k) QVERIFY(!bands[k]);
        QVERIFY(!wideWhiteBands(column(40, 50, 6), 40)[0]);
        // Double-spaced (50 px of white, more than a line): no line is apart from the next; a head
        // with 71 px of white (over 50 + 20) is, one with 70 is not.
        bands = wideWhiteBands(column(71, 90, 6), 40);
        QVERIFY(bands[0]);
        for (size_t k = 1; k < bands.size(); ++k) QVERIFY(!bands[k]);
        QVERIFY(!wideWhiteBands(column(70, 90, 6), 40)[0]);
        // The next column's top, and a box beside on the same row: not below, not apart.
        const std::vector<Box> twoColumns{Box{100, 900, 400, 40}, Box{600, 100, 400, 40}, Box{1050, 100, 300, 40}};
        QCOMPARE(wideWhiteBands(twoColumns, 40), (std::vector<bool>{false, false}));
        QVERIFY(wideWhiteBands({}, 40).empty());
        PpocrPage page;
        for (int h : {30, 50, 40, 41, 39}) page.lines.push_back(PpocrLine{Box{0, 0, 10, h}});
        QCOMPARE(page.medianLineHeight(), 40);
        QCOMPARE(PpocrPage{}.medianLineHeight(), 1);
    }

    // A paragraph ends where the next line is indented by over half a line height or this one
    // stops over four line heights short of its block's right edge; lines flush on both sides go on.
    void paragraphEndsAsTypeset() {
        const Box full{100, 100, 800, 40};  // right edge 900, the block's
        QVERIFY(!typesetParagraphEnd(full, Box{100, 150, 800, 40}, 900, 40));
        QVERIFY(typesetParagraphEnd(full, Box{121, 150, 779, 40}, 900, 40));   // a first-line indent
        QVERIFY(!typesetParagraphEnd(full, Box{120, 150, 780, 40}, 900, 40));  // half a line height: not yet
        QVERIFY(typesetParagraphEnd(Box{100, 100, 639, 40}, Box{100, 150, 800, 40}, 900, 40));  // short: 739 < 740
        QVERIFY(!typesetParagraphEnd(Box{100, 100, 640, 40}, Box{100, 150, 800, 40}, 900, 40));
        QVERIFY(!typesetParagraphEnd(full, Box{60, 150, 840, 40}, 900, 40));  // outdented (a hanging indent) goes on
    }

    // docs/ACCURACY.md: the reader for Chinese where a reader model is installed (PP-OCR where
    // none is), Tesseract otherwise; an engine named is kept.
    void autoChoosesByLanguage() {
        std::string why;
        const QString chinese = findReaderModel() ? "reader" : "ppocr";
        QCOMPARE(QString::fromStdString(chooseEngine("auto", "chi_sim", &why)), chinese);
        QVERIFY(why.rfind(chinese.toStdString() + " (", 0) == 0);
        QCOMPARE(QString::fromStdString(chooseEngine("auto", "eng+chi_sim")), chinese);
        // A reader model folder that is not there: the only place looked at, so no reader model.
        QCOMPARE(QString::fromStdString(chooseEngine("auto", "chi_sim", &why, "/nonexistent")), QString("ppocr"));
        QVERIFY2(why.find("no reader model") != std::string::npos, why.c_str());
        QCOMPARE(QString::fromStdString(chooseEngine("auto", "eng")), QString("tesseract"));
        QCOMPARE(QString::fromStdString(chooseEngine("ppocr", "eng")), QString("ppocr"));
    }

    // PP-OCR's characters (the reader's too) lack letters of German, French, ...: a run that asks
    // for such a language with either engine says which letters it cannot write; Tesseract's does not.
    void engineNamesTheLettersItCannotWrite() {
        const std::set<std::string> has = {"ä", "ü", "Ü", "é"};
        auto writes = [&](const std::string& c) { return has.count(c) > 0; };
        QCOMPARE(QString::fromStdString(lettersNotWritten("eng", writes)), QString());
        QCOMPARE(QString::fromStdString(lettersNotWritten("chi_sim", writes)), QString());
        QCOMPARE(QString::fromStdString(lettersNotWritten("deu", writes)), QString("ö, ß, Ä, Ö (deu)"));
        QCOMPARE(QString::fromStdString(lettersNotWritten("eng+deu+frk", writes)), QString("ö, ß, Ä, Ö, ſ (deu, frk)"));
        QCOMPARE(QString::fromStdString(lettersNotWritten("deu", [](const std::string&) { return true; })), QString());

        RecognizerOptions o;
        o.engine = "ppocr", o.languages = "eng";
        auto english = createRecognizer(o);
        QVERIFY2(english.isOk(), english.status().message().c_str());
        QCOMPARE(QString::fromStdString((*english)->charsetNotice()), QString());
        o.languages = "deu";
        auto german = createRecognizer(o);
        QVERIFY2(german.isOk(), german.status().message().c_str());
        const std::string notice = (*german)->charsetNotice();
        // PP-OCRv4's keys have ä and Ü but not ö, ß, Ä or Ö (checked against ppocr_keys_v1.txt).
        QVERIFY2(notice.rfind("ppocr cannot write ö, ß, Ä, Ö (deu)", 0) == 0, notice.c_str());
        QVERIFY2(notice.find("--engine tesseract") != std::string::npos, notice.c_str());
        o.engine = "tesseract";
        auto tesseract = createRecognizer(o);
        QVERIFY2(tesseract.isOk(), tesseract.status().message().c_str());
        QCOMPARE(QString::fromStdString((*tesseract)->charsetNotice()), QString());
    }

    void cliTranscribesTheSampleWithPpocr() {
        QTemporaryDir tmp;
        const QString project = tmp.filePath("s.quire");
        auto r = runCli({"transcribe", samplePdf(), "--project", project, "--engine", "ppocr", "--threads", "2",
                         "--export", "md", "--out", tmp.path()});
        QVERIFY2(r.exitCode == 0 || r.exitCode == 3, qPrintable(r.err));
        const std::string md = readFile(tmp.filePath("book.md"));
        QVERIFY2(md.find("Of Registers and Their Keepers") != std::string::npos, md.substr(0, 400).c_str());
        auto s = runCli({"status", "--project", project, "--json", "--pages"});
        QVERIFY2(s.out.contains("\"engine\":\"ppocr PP-OCRv4\""), qPrintable(s.out.left(400)));
    }
};

QTEST_GUILESS_MAIN(TestPpocr)
#include "tst_ppocr.moc"
