// Over 900 lines: one test program for the front-end, its ONNX runtime and the reader, sharing the loaded models.
// The PP-OCRv4 front-end and the ONNX runtime under it: kernels against naive references, the
// detector against OpenCV's DNN on a patched graph, refusal of damaged model files, reading
// order, and recognition of real text end to end.
#include <QTemporaryDir>
#include <QtTest>

#include <onnx/onnx_pb.h>
#include <opencv2/dnn.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>

#include "nn/cpu_ops.h"
#include "quire/nn/onnx_graph.h"
#include "quire/core/backend.h"
#include "quire/decoder/model.h"
#include "quire/ppocr/ppocr.h"
#include "quire/store/project_store.h"
#include "quire/reader/reader.h"
#include "quire/pipeline/transcriber.h"
#include "quire/recognizers/recognizer.h"
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

Tensor randomTensor(Shape s, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    Tensor t = Tensor::floats(std::move(s));
    for (float& v : t.f) v = u(rng);
    return t;
}

// Direct definition of a 2-D convolution (groups, stride, padding, dilation).
Tensor naiveConv(const Tensor& x, const Tensor& w, const Tensor& b, const ConvShape& p) {
    const int N = int(x.shape[0]), C = int(x.shape[1]), H = int(x.shape[2]), W = int(x.shape[3]);
    const int M = int(w.shape[0]), Cg = int(w.shape[1]);
    const int Ho = (H + p.padT + p.padB - p.dilH * (p.kh - 1) - 1) / p.strideH + 1;
    const int Wo = (W + p.padL + p.padR - p.dilW * (p.kw - 1) - 1) / p.strideW + 1;
    Tensor y = Tensor::floats({N, M, Ho, Wo});
    const int perGroup = M / p.group;
    for (int n = 0; n < N; ++n)
        for (int m = 0; m < M; ++m)
            for (int oy = 0; oy < Ho; ++oy)
                for (int ox = 0; ox < Wo; ++ox) {
                    double acc = b.f[size_t(m)];
                    const int g = m / perGroup;
                    for (int c = 0; c < Cg; ++c)
                        for (int ky = 0; ky < p.kh; ++ky)
                            for (int kx = 0; kx < p.kw; ++kx) {
                                const int iy = oy * p.strideH - p.padT + ky * p.dilH;
                                const int ix = ox * p.strideW - p.padL + kx * p.dilW;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                acc += double(x.f[size_t(((n * C + g * Cg + c) * H + iy) * W + ix)]) *
                                       w.f[size_t(((m * Cg + c) * p.kh + ky) * p.kw + kx)];
                            }
                    y.f[size_t(((n * M + m) * Ho + oy) * Wo + ox)] = float(acc);
                }
    return y;
}

double maxAbsDiff(const float* a, const float* b, size_t n) {
    double m = 0;
    for (size_t k = 0; k < n; ++k) m = std::max(m, double(std::abs(a[k] - b[k])));
    return m;
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

// A reader-shaped model small enough to generate in a test (random weights).
static decoder::ModelConfig tinyReaderConfig() {
    return tinyDecoderConfig(reader_vocab::kVocabSize, reader_vocab::kVisualDim, 1 << 16);
}

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

    void convolutionMatchesDefinition_data() {
        QTest::addColumn<int>("C");
        QTest::addColumn<int>("M");
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("stride");
        QTest::addColumn<int>("pad");
        QTest::addColumn<int>("dil");
        QTest::addColumn<int>("group");
        QTest::addColumn<int>("H");
        QTest::addColumn<int>("W");
        QTest::newRow("1x1") << 5 << 7 << 1 << 1 << 0 << 1 << 1 << 13 << 17;
        QTest::newRow("3x3 pad") << 3 << 4 << 3 << 1 << 1 << 1 << 1 << 13 << 17;
        QTest::newRow("3x3 stride 2") << 4 << 6 << 3 << 2 << 1 << 1 << 1 << 13 << 17;
        QTest::newRow("5x5 dilated") << 2 << 3 << 5 << 1 << 4 << 2 << 1 << 13 << 17;
        QTest::newRow("depthwise 3x3") << 6 << 6 << 3 << 1 << 1 << 1 << 6 << 13 << 17;
        QTest::newRow("depthwise 5x5 stride 2") << 8 << 8 << 5 << 2 << 2 << 1 << 8 << 13 << 17;
        // Unfolded a band of output rows at a time (16 MB of floats): 576 × 300 floats a row, so
        // 24 rows a band and the last of three bands short.
        QTest::newRow("3x3 in bands") << 64 << 5 << 3 << 1 << 1 << 1 << 1 << 61 << 300;
        QTest::newRow("3x3 stride 2 in bands") << 64 << 5 << 3 << 2 << 1 << 1 << 1 << 121 << 600;
    }
    void convolutionMatchesDefinition() {
        QFETCH(int, C);
        QFETCH(int, M);
        QFETCH(int, k);
        QFETCH(int, stride);
        QFETCH(int, pad);
        QFETCH(int, dil);
        QFETCH(int, group);
        QFETCH(int, H);
        QFETCH(int, W);
        std::mt19937 rng(7);
        const Tensor x = randomTensor({2, C, H, W}, rng);
        const Tensor w = randomTensor({M, C / group, k, k}, rng);
        const Tensor b = randomTensor({M}, rng);
        ConvShape p;
        p.kh = p.kw = k;
        p.strideH = p.strideW = stride;
        p.padT = p.padL = p.padB = p.padR = pad;
        p.dilH = p.dilW = dil;
        p.group = group;
        const Tensor got = cpu::conv2d(x, w, b.data(), p);
        const Tensor want = naiveConv(x, w, b, p);
        QCOMPARE(got.shape, want.shape);
        QVERIFY2(maxAbsDiff(got.data(), want.data(), want.f.size()) < 1e-4, "convolution differs from its definition");
    }

    void transposedConvolutionInvertsShape() {
        // ConvTranspose with kernel = stride 2 (the detector's upsampling): each input pixel
        // writes one 2×2 patch, y[m, 2i+dy, 2j+dx] = Σc x[c,i,j]·w[c,m,dy,dx] + b[m].
        std::mt19937 rng(3);
        const Tensor x = randomTensor({1, 3, 4, 5}, rng), w = randomTensor({3, 2, 2, 2}, rng), b = randomTensor({2}, rng);
        ConvShape p;
        p.kh = p.kw = 2;
        p.strideH = p.strideW = 2;
        const Tensor y = cpu::convTranspose2d(x, w, b.data(), p);
        QCOMPARE(y.shape, (Shape{1, 2, 8, 10}));
        for (int m = 0; m < 2; ++m)
            for (int oy = 0; oy < 8; ++oy)
                for (int ox = 0; ox < 10; ++ox) {
                    double acc = b.f[size_t(m)];
                    for (int c = 0; c < 3; ++c)
                        acc += x.f[size_t((c * 4 + oy / 2) * 5 + ox / 2)] * w.f[size_t(((c * 2 + m) * 2 + oy % 2) * 2 + ox % 2)];
                    QVERIFY(std::abs(y.f[size_t((m * 8 + oy) * 10 + ox)] - acc) < 1e-5);
                }
    }

    void broadcastingAndMatmul() {
        std::string err;
        std::mt19937 rng(5);
        const Tensor a = randomTensor({2, 3, 4, 5}, rng), c = randomTensor({1, 3, 1, 1}, rng);
        const Tensor y = cpu::binary(a, c, cpu::BinaryOp::Mul, &err);
        QVERIFY(err.empty());
        for (int i = 0; i < 2; ++i)
            for (int ch = 0; ch < 3; ++ch)
                for (int k = 0; k < 20; ++k) {
                    const size_t idx = size_t((i * 3 + ch) * 20 + k);
                    QCOMPARE(y.f[idx], a.f[idx] * c.f[size_t(ch)]);
                }
        (void)cpu::binary(a, randomTensor({4, 4}, rng), cpu::BinaryOp::Add, &err);
        QVERIFY(err.find("do not broadcast") != std::string::npos);

        const Tensor q = randomTensor({2, 3, 4, 6}, rng), kt = randomTensor({2, 3, 6, 5}, rng);
        err.clear();
        const Tensor s = cpu::matmul(q, kt, &err);
        QVERIFY(err.empty());
        QCOMPARE(s.shape, (Shape{2, 3, 4, 5}));
        for (int bt = 0; bt < 6; ++bt)
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 5; ++j) {
                    double acc = 0;
                    for (int k = 0; k < 6; ++k) acc += q.f[size_t((bt * 4 + i) * 6 + k)] * kt.f[size_t((bt * 6 + k) * 5 + j)];
                    QVERIFY(std::abs(s.f[size_t((bt * 4 + i) * 5 + j)] - acc) < 1e-5);
                }
        const Tensor t = cpu::transpose(q, {2, 0, 3, 1});
        QCOMPARE(t.shape, (Shape{4, 2, 6, 3}));
        QCOMPARE(t.f[size_t(((1 * 2 + 1) * 6 + 5) * 3 + 2)], q.f[size_t(((1 * 3 + 2) * 4 + 1) * 6 + 5)]);
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

    void readingOrderColumnsThenRows() {
        // A title across the page, two columns of three lines, a footer across the page.
        std::vector<Box> boxes = {
            {100, 50, 800, 40},                                            // 0 title
            {520, 120, 380, 30}, {520, 160, 380, 30}, {520, 200, 380, 30},  // 1-3 right column
            {100, 120, 380, 30}, {100, 160, 380, 30}, {100, 200, 380, 30},  // 4-6 left column
            {100, 300, 800, 30},                                           // 7 footer
        };
        std::vector<int> block;
        const auto order = readingOrder(boxes, &block);
        QCOMPARE(order, (std::vector<int>{0, 4, 5, 6, 1, 2, 3, 7}));
        QVERIFY(block[4] == block[6] && block[1] == block[3] && block[4] != block[1]);
    }

    // A report's front page: a title, then a side bar of short lines beside a text column wider
    // than 60 % of the page, their rows not lined up; a table of figures under the text column
    // while the side bar goes on. Bands of rows read these interleaved (side bar, text, side
    // bar...); the XY-cut reads the side bar, then the text, then the table row by row.
    void readingOrderSideBarTextAndTable() {
        std::vector<Box> boxes;
        std::vector<int> expect;
        boxes.push_back({100, 40, 900, 40});  // title
        std::vector<int> side, text, table;
        for (int r = 0; r < 24; ++r) side.push_back(int(boxes.size())), boxes.push_back({100, 140 + r * 40, 250 + (r % 3) * 20, 30});
        for (int r = 0; r < 14; ++r) text.push_back(int(boxes.size())), boxes.push_back({440, 150 + r * 40, 620, 30});
        for (int r = 0; r < 4; ++r)  // header row and three rows of figures, four narrow cells each
            for (int c = 0; c < 4; ++c) table.push_back(int(boxes.size())), boxes.push_back({440 + c * 160, 760 + r * 40, c == 0 ? 120 : 80, 30});
        std::vector<int> block;
        const auto order = readingOrder(boxes, &block);
        expect.push_back(0);
        for (const auto* part : {&side, &text, &table}) expect.insert(expect.end(), part->begin(), part->end());
        QCOMPARE(order, expect);
        QVERIFY(block[size_t(side.front())] != block[size_t(text.front())]);
        QVERIFY(block[size_t(text.back())] != block[size_t(table.front())]);
        QCOMPARE(block[size_t(table.front())], block[size_t(table.back())]);  // one table, one block
    }

    // Whatever the boxes (overlapping, empty, one on another, a single one), every line comes out
    // once and blocks are numbered in reading order, each block's lines together: the exporters
    // and the paragraph grouping rely on both.
    void readingOrderIsAPermutationWithContiguousBlocks() {
        std::mt19937 rng(11);
        for (int trial = 0; trial < 300; ++trial) {
            const int n = 1 + int(rng() % 60);
            std::vector<Box> boxes;
            for (int i = 0; i < n; ++i) {
                const int w = trial % 7 == 0 ? 0 : 1 + int(rng() % 400), h = trial % 11 == 0 ? 0 : 1 + int(rng() % 60);
                boxes.push_back({int(rng() % 1200), int(rng() % 1600), w, h});
            }
            if (trial % 5 == 0) boxes.push_back(boxes.front());  // the same box twice
            std::vector<int> block;
            const auto order = readingOrder(boxes, &block);
            std::vector<int> sortedOrder = order;
            std::sort(sortedOrder.begin(), sortedOrder.end());
            std::vector<int> all(boxes.size());
            std::iota(all.begin(), all.end(), 0);
            QCOMPARE(sortedOrder, all);
            for (size_t k = 1; k < order.size(); ++k) QVERIFY(block[size_t(order[k])] >= block[size_t(order[k - 1])]);
        }
    }

    // Two wide text columns whose lines sit on the same rows (a book's two-column page) are read
    // column by column, not as a table: a table's columns are narrow.
    void readingOrderAlignedTextColumnsAreNotATable() {
        std::vector<Box> boxes;
        std::vector<int> left, right;
        for (int r = 0; r < 10; ++r) {
            left.push_back(int(boxes.size())), boxes.push_back({100, 100 + r * 40, 600, 30});
            right.push_back(int(boxes.size())), boxes.push_back({740, 100 + r * 40, 600, 30});
        }
        std::vector<int> expect = left;
        expect.insert(expect.end(), right.begin(), right.end());
        QCOMPARE(readingOrder(boxes), expect);
    }

    // A magazine's narrow columns (about 10 line heights wide, 15 Chinese characters), their
    // lines on the same rows: read column by column, not as a table, though they are narrower
    // than the wide columns above. A paragraph's last line is short, its first indented.
    void readingOrderNarrowTextColumnsAreNotATable() {
        std::vector<Box> boxes;
        std::vector<int> left, right;
        for (int r = 0; r < 12; ++r) {
            const int indent = r % 5 == 0 ? 100 : 0, w = r % 5 == 4 ? 220 : 500 - indent;
            left.push_back(int(boxes.size())), boxes.push_back({100 + indent, 100 + r * 60, w, 50});
            right.push_back(int(boxes.size())), boxes.push_back({700 + indent, 100 + r * 60, w, 50});
        }
        std::vector<int> expect = left;
        expect.insert(expect.end(), right.begin(), right.end());
        QCOMPARE(readingOrder(boxes), expect);

        // A running head centred over the gutter and set closer to the columns than a line height
        // (its folio beside it), and a footer across the gutter: the columns are still read whole.
        boxes.push_back({520, 70, 160, 25});   // running head, over the gutter (600-700)
        boxes.push_back({1100, 70, 60, 25});   // its folio
        boxes.push_back({500, 830, 300, 30});  // a footer across the gutter
        expect.insert(expect.begin(), {int(boxes.size()) - 3, int(boxes.size()) - 2});
        expect.push_back(int(boxes.size()) - 1);
        QCOMPARE(readingOrder(boxes), expect);
    }

    // Two columns with a pull quote across the gutter halfway down: no x range is empty in every
    // row, so rows alone read the columns interleaved; Tesseract's layout analysis finds the
    // columns above and below the quote, and the lines are read column by column in each.
    void layoutOrderReadsColumnsAcrossAPullQuote() {
        cv::Mat page(1400, 1700, CV_8UC1, cv::Scalar(255));
        const std::vector<std::string> words = {"archive", "register", "parish", "ledger", "volume", "scan"};
        std::vector<Box> boxes;
        std::vector<int> column, band;  // column: 0 left, 1 right, 2 the quote; band: 0 above it, 1 below
        auto line = [&](int x, int y, const std::string& text, int col, int b) {
            int base = 0;
            const cv::Size sz = cv::getTextSize(text, cv::FONT_HERSHEY_DUPLEX, 1.1, 2, &base);
            cv::putText(page, text, {x, y}, cv::FONT_HERSHEY_DUPLEX, 1.1, cv::Scalar(0), 2, cv::LINE_AA);
            boxes.push_back({x - 4, y - sz.height - 6, sz.width + 8, sz.height + base + 12});
            column.push_back(col);
            band.push_back(b);
        };
        for (int r = 0; r < 16; ++r) {
            const int y = 120 + r * 70;
            if (r == 7) {
                line(520, y, "a quote across the columns", 2, 0);
                continue;
            }
            std::string left, right;
            for (int k = 0; k < 3; ++k) left += words[size_t((r + k) % 6)] + " ", right += words[size_t((r + 2 * k + 1) % 6)] + " ";
            line(100, y, left + std::to_string(r), 0, r < 7 ? 0 : 1);
            line(900, y, right + std::to_string(r), 1, r < 7 ? 0 : 1);
        }
        // Where each line is read; "a before b" for every line of the two groups.
        auto readsBefore = [&](const std::vector<int>& order, auto a, auto b) {
            std::vector<int> at(order.size());
            for (int k = 0; k < int(order.size()); ++k) at[size_t(order[size_t(k)])] = k;
            for (size_t i = 0; i < boxes.size(); ++i)
                for (size_t j = 0; j < boxes.size(); ++j)
                    if (a(i) && b(j) && at[i] > at[j]) return false;
            return true;
        };
        auto inOrder = [&](const std::vector<int>& order) {
            auto is = [&](int col, int b) { return [&, col, b](size_t i) { return column[i] == col && band[i] == b; }; };
            auto quote = [&](size_t i) { return column[i] == 2; };
            return readsBefore(order, is(0, 0), is(1, 0)) && readsBefore(order, is(1, 0), quote) &&
                   readsBefore(order, quote, is(0, 1)) && readsBefore(order, is(0, 1), is(1, 1));
        };
        std::vector<int> block;
        const auto byLayout = layoutReadingOrder(page, boxes, &block);
        QCOMPARE(std::set<int>(byLayout.begin(), byLayout.end()).size(), boxes.size());
        QCOMPARE(byLayout.size(), boxes.size());
        QVERIFY(inOrder(byLayout));
        QVERIFY(!inOrder(readingOrder(boxes)));  // what rows alone do with this page
        // Top to bottom inside each column.
        int prevLeftY = -1;
        for (int i : byLayout)
            if (column[size_t(i)] == 0) {
                QVERIFY(boxes[size_t(i)].y > prevLeftY);
                prevLeftY = boxes[size_t(i)].y;
            }
        QVERIFY(block[size_t(byLayout.front())] != block[size_t(byLayout.back())]);
        QCOMPARE(ppocrLayoutFor("eng"), std::string("tesseract"));
        QCOMPARE(ppocrLayoutFor("eng+chi_sim"), std::string("rows"));
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
        // The CPU keeps the integer shape arithmetic (Cast, Slice and Concat of shapes; 36 of 704
        // nodes on these pages): a twelfth of the nodes at most.
        QVERIFY2(onDevice > 11 * onCpu && onCpu > 0, qPrintable(QString("%1 nodes on the device, %2 on the CPU").arg(onDevice).arg(onCpu)));
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
        auto same = [](const Box& a, const Box& b) { return a.x == b.x && a.y == b.y && a.w == b.w && a.h == b.h; };
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
        QVERIFY(same(lines[0].box, {142, 513, 1385, 59}));  // the speck's row, one line
        QVERIFY(same(lines[1].box, {141, 1098, 1391, 62}));
        QCOMPARE(lines[1].block, 0);
        for (int k = 2; k < 6; ++k) QVERIFY(same(lines[size_t(k)].box, boxes[size_t(k + 3)]));
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

    // The reader's visual tokens: one per CTC character and one per line end, 124 values, flags
    // where lines start and end; with ids, the 125th value is the token in the reader's vocabulary.
    void readerVisualTokensFollowTheCtcCharacters() {
        auto engine = PpocrEngine::load(PpocrOptions{});
        QVERIFY(engine);
        QCOMPARE((*engine)->classCount(), reader_vocab::kKeyCount + 2);
        auto read = (*engine)->read(textPage({"Two lines", "of text"}, 1200, 500, 1.4), true);
        QVERIFY(read);
        QCOMPARE(int(read->lines.size()), 2);
        const auto v = ReaderEngine::visualTokens(*read);
        size_t chars = 0;
        for (const auto& l : read->lines) chars += l.charIds.size();
        const size_t tokens = chars + read->lines.size();
        QCOMPARE(v.size(), tokens * size_t(reader_vocab::kVisualDim));
        const auto& first = read->lines[0];
        QCOMPARE(v[120], first.charProbs[0]);
        QCOMPARE(v[121], 1.f);  // line start
        QVERIFY(std::equal(v.begin(), v.begin() + 120, first.features.begin() + size_t(first.charFrames[0]) * 120));
        const size_t end = first.charIds.size();  // the first line's end token
        QVERIFY(std::all_of(v.begin() + long(end * 124), v.begin() + long(end * 124 + 120), [](float x) { return x == 0.f; }));
        QCOMPARE(v[end * 124 + 122], 1.f);
        QCOMPARE(v[end * 124 + 121], 0.f);
        QCOMPARE(v[end * 124 + 123], v[123]);  // the line's vertical place

        // With ids (visual_token_ids models): the restored space between "Two" and "lines" is the
        // space token, the line's end the line-break token.
        const auto w = ReaderEngine::visualTokens(*read, true);
        QCOMPARE(w.size(), tokens * size_t(reader_vocab::kVisualDim + 1));
        QVERIFY(std::equal(v.begin(), v.begin() + 124, w.begin()));
        std::string spelled;
        for (size_t k = 0; k < first.charIds.size(); ++k) {
            const int id = int(w[k * 125 + 124]);
            QCOMPARE(id, ReaderEngine::vocabId(first.charIds[k]));
            spelled += id == reader_vocab::kSpace ? " " : (*engine)->charOf(id - reader_vocab::kFirstChar + 1);
        }
        QCOMPARE(QString::fromStdString(spelled), QString::fromStdString(first.text));
        QVERIFY2(first.text.find(' ') != std::string::npos, first.text.c_str());
        QCOMPARE(int(w[end * 125 + 124]), reader_vocab::kLineBreak);
        QCOMPARE(ReaderEngine::vocabId(reader_vocab::kKeyCount + 1), reader_vocab::kSpace);
        QCOMPARE(ReaderEngine::vocabId(reader_vocab::kKeyCount + 2), reader_vocab::kUnknown);
    }

    // Where the reader model is looked for: an explicit folder only (the engine reads no
    // environment: quire-cli maps $QUIRE_READER_MODEL onto the folder, tst_cli checks that).
    void readerModelIsFoundOrTheSearchIsNamed() {
        QTemporaryDir tmp;
        const auto missing = findReaderModel(tmp.filePath("nowhere").toStdString());
        QVERIFY(!missing);
        QVERIFY2(QString::fromStdString(missing.status().message()).contains("nowhere"), missing.status().message().c_str());
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyReaderConfig(), 1), tmp.filePath("m").toStdString()));
        QCOMPARE(QString::fromStdString(*findReaderModel(tmp.filePath("m").toStdString())), tmp.filePath("m"));
        qputenv("QUIRE_READER_MODEL", tmp.filePath("nowhere").toUtf8());
        const auto notFromEnv = findReaderModel(tmp.filePath("m").toStdString());
        qunsetenv("QUIRE_READER_MODEL");
        QCOMPARE(QString::fromStdString(*notFromEnv), tmp.filePath("m"));
    }

    // The shipped reader places each word where the front-end saw it: word boxes come from the
    // visual tokens the words attended to most.
    void shippedReaderPlacesWordsWhereTheyStand() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        ReaderOptions o;
        o.modelDir = *dir;
        auto reader = ReaderEngine::load(o);
        QVERIFY2(reader, reader.status().message().c_str());
        const std::vector<std::string> lines = {"The words of the reader", "stand where the page has them,",
                                                "line under line."};
        const cv::Mat page = textPage(lines, 1700, 700, 1.4);
        auto got = (*reader)->readPage(page, 300);
        QVERIFY2(got, got.status().message().c_str());
        QVERIFY2(got->failure.empty(), got->failure.c_str());
        auto ppocr = PpocrEngine::load(PpocrOptions{});
        QVERIFY2(ppocr, ppocr.status().message().c_str());
        auto front = (*ppocr)->read(page, true, nullptr);
        QVERIFY(front);
        int words = 0, placed = 0;
        for (const auto& line : got->text.lines)
            for (const auto& w : line.words) {
                ++words;
                const cv::Point centre(w.box.x + w.box.w / 2, w.box.y + w.box.h / 2);
                // Inside the front-end's line that holds the word, and not just the line's corner.
                for (const auto& fl : front->lines) {
                    const Box& b = fl.box;
                    const bool inside = centre.x >= b.x && centre.x < b.x + b.w && centre.y >= b.y && centre.y < b.y + b.h;
                    if (inside && fl.text.find(w.text) != std::string::npos && w.box.w < b.w) {
                        ++placed;
                        break;
                    }
                }
            }
        qInfo("%d of %d words inside the front-end line that holds them", placed, words);
        QVERIFY(words >= 12);
        QVERIFY(placed >= words * 9 / 10);
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

    // A running head set apart from the text by white is a paragraph of its own in the reader's
    // text (so that the book's assembly can tell it from the body), whatever the model wrote at its
    // end; without the rule the model runs it into the body's first sentence on this page.
    void readerKeepsARunningHeadApart() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        const cv::Mat page = textPage({"THE BINDER'S GUIDE", "", "covered in calf or vellum, and the",
                                       "edges gilt or sprinkled with red; the", "boards were of oak or of pasteboard,",
                                       "and the spine was lettered in gold."},
                                      1500, 760, 1.3);
        // The paragraphs of the head's and the body's first words, whether a line holds both, and
        // the page's paragraphs.
        struct Reading {
            int head = -1, body = -1, paragraphs = 0;
            bool mixed = false;
        };
        auto readWith = [&](bool rule) {
            Reading r;
            ReaderOptions o;
            o.modelDir = *dir;
            o.layoutParagraphs = rule;
            auto reader = ReaderEngine::load(o);
            if (!reader) return r;
            auto got = (*reader)->readPage(page, 300);
            if (!got || !got->failure.empty()) return r;
            qInfo("rule %s: %s", rule ? "on" : "off", got->text.plainText().c_str());
            std::set<int> paragraphs;
            for (const auto& line : got->text.lines) {
                bool h = false, b = false;
                for (const auto& w : line.words) {
                    h = h || w.text.find("GUIDE") != std::string::npos;
                    b = b || w.text.find("covered") != std::string::npos;
                }
                if (h) r.head = line.paragraph;
                if (b) r.body = line.paragraph;
                r.mixed = r.mixed || (h && b);
                paragraphs.insert(line.paragraph);
            }
            r.paragraphs = int(paragraphs.size());
            return r;
        };
        const Reading on = readWith(true);
        QVERIFY(on.head >= 0 && on.body >= 0);
        QVERIFY(!on.mixed);
        QVERIFY(on.head < on.body);
        QCOMPARE(on.paragraphs, 2);  // the head, and the body's lines as one paragraph
        const Reading off = readWith(false);
        QVERIFY(off.head >= 0 && off.body >= 0);
        QCOMPARE(off.head, off.body);  // the page shows the rule at work: the model alone joins them
    }

    // A word broken over the page break keeps its hyphen at the end of the page's text, above the
    // folio the reader skips, so that the book joins it (tests/make_page_end_hyphen_page.py).
    void aWordBrokenOverThePageKeepsItsHyphen() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        const cv::Mat page =
            cv::imread((sourceDir() + "/tests/fixtures/page_end_hyphen.png").toStdString(), cv::IMREAD_GRAYSCALE);
        QVERIFY(!page.empty());
        auto readWith = [&](bool rule) {
            ReaderOptions o;
            o.modelDir = *dir;
            o.pageEndHyphen = rule;
            auto reader = ReaderEngine::load(o);
            if (!reader) return std::string("(no reader)");
            auto got = (*reader)->readPage(page, 300);
            if (!got || !got->failure.empty()) return std::string("(failed)");
            return got->text.plainText();
        };
        const std::string on = readWith(true), off = readWith(false);
        qInfo("with the rule: %s", QString::fromStdString(on).replace('\n', " / ").toUtf8().constData());
        qInfo("without: %s", QString::fromStdString(off).replace('\n', " / ").toUtf8().constData());
        auto trimmed = [](std::string s) {
            while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
            return s;
        };
        QVERIFY2(QString::fromStdString(trimmed(on)).endsWith("bind-"), on.c_str());
        QVERIFY2(!QString::fromStdString(trimmed(off)).endsWith("-"), off.c_str());  // the model alone drops it
        QCOMPARE(QString::fromStdString(trimmed(on)).chopped(1), QString::fromStdString(trimmed(off)));
    }

    // Verifying the front-end's characters as a draft many tokens per pass writes what decoding
    // one token at a time writes: the same words, boxes and token counts, confidences to rounding,
    // over pages that carry the context from one to the next.
    void readerDraftWritesWhatOneTokenAtATimeWrites() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        ReaderOptions o;
        o.modelDir = *dir;
        o.draft = false;
        auto plain = ReaderEngine::load(o);
        o.draft = true;
        auto drafted = ReaderEngine::load(o);
        QVERIFY2(plain && drafted, plain ? drafted.status().message().c_str() : plain.status().message().c_str());
        const std::vector<std::vector<std::string>> texts = {
            {"CHAPTER THE FIRST.", "Of the binding of books, and of", "the paper that was used for them."},
            {"12 THE BINDER'S GUIDE", "The sheets were folded, gathered", "and sewn on cords; the boards were"},
            {"THE BINDER'S GUIDE 13", "covered in calf or vellum, and the", "edges gilt or sprinkled with red."},
            // Figures and a blurred, shrunken scan: where the model departs from the front-end,
            // so that draft passes end early and the draft prior meets other guesses.
            {"(see p. 231) in 1868, No. 17; the", "F.3d 1288, 1301-02 (11th Cir.", "1996), at $4.50 or 12%."}};
        int words = 0;
        for (size_t k = 0; k < texts.size(); ++k) {
            cv::Mat page = textPage(texts[k], 1500, 560, 1.3);
            if (k == 3) {
                cv::GaussianBlur(page, page, cv::Size(5, 5), 1.6);
                cv::resize(page, page, cv::Size(), 0.45, 0.45, cv::INTER_AREA);
            }
            auto a = (*plain)->readPage(page, 300);
            auto b = (*drafted)->readPage(page, 300);
            QVERIFY2(a && b, a ? b.status().message().c_str() : a.status().message().c_str());
            QCOMPARE(QString::fromStdString(b->failure), QString::fromStdString(a->failure));
            QCOMPARE(b->tokens, a->tokens);
            QCOMPARE(QString::fromStdString(b->text.plainText()), QString::fromStdString(a->text.plainText()));
            QCOMPARE(b->text.lines.size(), a->text.lines.size());
            for (size_t l = 0; l < a->text.lines.size(); ++l) {
                const auto &wa = a->text.lines[l].words, &wb = b->text.lines[l].words;
                QCOMPARE(wb.size(), wa.size());
                for (size_t w = 0; w < wa.size(); ++w, ++words) {
                    QVERIFY(wb[w].box.x == wa[w].box.x && wb[w].box.y == wa[w].box.y && wb[w].box.w == wa[w].box.w &&
                            wb[w].box.h == wa[w].box.h);
                    QVERIFY(std::abs(wb[w].confidence - wa[w].confidence) < 0.01f);
                }
            }
        }
        QVERIFY(words >= 30);
    }

    // The reader with its decoder and its front-end on devices (the mirrors: the device paths on
    // the host, so this runs without a GPU): pages prefilled there, plain steps, the attended
    // visual tokens (word boxes) tracked there, the front-end's heavy nodes there. The same text, tokens and word boxes as the CPU's reader, across pages
    // that carry the context; no device notice.
    void readerOnADeviceWritesWhatTheCpuWrites() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        ReaderOptions o;
        o.modelDir = *dir;
        auto cpu = ReaderEngine::load(o);
        o.attention.device = decoder::StepDevice::Mirror;
        o.ppocr.device = "mirror";
        auto dev = ReaderEngine::load(o);
        QVERIFY2(cpu && dev, cpu ? dev.status().message().c_str() : cpu.status().message().c_str());
        const std::vector<std::vector<std::string>> texts = {
            {"CHAPTER THE FIRST.", "Of the binding of books, and of"},
            {"12 THE BINDER'S GUIDE", "The sheets were folded, gathered"}};
        int words = 0, sameBoxes = 0;
        for (const auto& lines : texts) {
            const cv::Mat page = textPage(lines, 1100, 300, 1.3);
            auto a = (*cpu)->readPage(page, 300);
            auto b = (*dev)->readPage(page, 300);
            QVERIFY2(a && b, a ? b.status().message().c_str() : a.status().message().c_str());
            QCOMPARE(QString::fromStdString(b->failure), QString::fromStdString(a->failure));
            QCOMPARE(QString::fromStdString(b->text.plainText()), QString::fromStdString(a->text.plainText()));
            QCOMPARE(b->tokens, a->tokens);
            QCOMPARE(b->text.lines.size(), a->text.lines.size());
            for (size_t l = 0; l < a->text.lines.size(); ++l) {
                const auto &wa = a->text.lines[l].words, &wb = b->text.lines[l].words;
                QCOMPARE(wb.size(), wa.size());
                for (size_t w = 0; w < wa.size(); ++w, ++words)
                    sameBoxes += wb[w].box.x == wa[w].box.x && wb[w].box.y == wa[w].box.y && wb[w].box.w == wa[w].box.w &&
                                 wb[w].box.h == wa[w].box.h;
            }
        }
        QVERIFY2((*dev)->deviceNotice().empty(), (*dev)->deviceNotice().c_str());
        QVERIFY(words >= 10);
        // Boxes come from the most-attended visual token, which a near tie could move: all but a few.
        QVERIFY2(sameBoxes >= words - 1, qPrintable(QString("%1 of %2 word boxes the same").arg(sameBoxes).arg(words)));
        qInfo("%d words, %d boxes the same", words, sameBoxes);
    }

    // Asked for a GPU where there is none, a transcription with the reader goes on with the CPU
    // (decoder and front-end) and its log says why; Tesseract refuses --device cuda.
    void readerWithoutAGpuFallsBackWithANote() {
        if (!findReaderModel()) QSKIP("no reader model is shipped");
        if (!gpuDevices().empty()) QSKIP("a GPU is present");
        QTemporaryDir tmp;
        const QString img = tmp.filePath("page.png");
        cv::imwrite(img.toStdString(), textPage({"Of the binding of books, and of"}, 1100, 200, 1.3));
        const auto r = runCli({"transcribe", img, "--project", tmp.filePath("p.quire"), "--engine", "reader", "--device",
                               "cuda", "--export", "txt", "--out", tmp.filePath("out")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("decoding on the CPU") && r.err.contains("PP-OCR on the CPU") && r.err.contains("CUDA"),
                 qPrintable(r.err));
        const auto t = runCli({"transcribe", img, "--project", tmp.filePath("t.quire"), "--engine", "tesseract", "--device", "cuda"});
        QCOMPARE(t.exitCode, 2);
        QVERIFY2(t.err.contains("Tesseract runs on the CPU only"), qPrintable(t.err));
    }

    // A reader run stopped part-way (cancelled here; a kill leaves the same committed state, as the
    // checkpoint is saved in each page's transaction) takes up the context it had: the pages read
    // after the resume come out exactly as in an uninterrupted run.
    void readerResumesWithTheContextItHad() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        QTemporaryDir tmp;
        const std::vector<std::vector<std::string>> texts = {
            {"The register of the parish", "was kept by the clerk"}, {"in a book of ninety leaves,", "bound in calf"},
            {"and he wrote each entry", "in the same hand"}, {"until the year of the flood", "took the vestry"},
            {"and the book with it.", "Nothing else was lost."}, {"The clerk began again", "from memory"},
            {"and the neighbours", "filled in the rest."}};
        // Seven pages: a cancel at the second can still see up to three more committed (the page
        // being read and two finished ones waiting in the queue), and must leave some unread.
        const int total = int(texts.size());
        TranscribeParams p;
        for (size_t k = 0; k < texts.size(); ++k) {
            const QString png = tmp.filePath(QString("page%1.png").arg(k + 1));
            QVERIFY(cv::imwrite(png.toStdString(), textPage(texts[k], 1300, 420, 1.4)));
            p.inputs.push_back(png.toStdString());
        }
        p.recognizer.engine = "reader";
        std::vector<std::string> logs;
        p.onLog = [&](const std::string& m) { logs.push_back(m); };
        auto pageTexts = [](ProjectStore& store) {
            std::vector<std::string> out;
            for (const auto& page : *store.pages()) out.push_back(*store.engineText(page.id));
            return out;
        };

        // The uninterrupted run reads with one thread (no prepare stage); the parted runs with the
        // front-end of the next pages on two prepare threads of their own, handing their pages on
        // in order: the same text either way.
        auto whole = ProjectStore::open(tmp.filePath("whole.quire").toStdString());
        QVERIFY(whole);
        TranscribeParams oneThread = p;
        oneThread.preparers = 0;
        auto r = runTranscription(**whole, oneThread);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->done, total);
        QVERIFY(!(*whole)->decoderState()->has_value());  // a finished run drops its context
        const auto expected = pageTexts(**whole);

        auto parted = ProjectStore::open(tmp.filePath("parted.quire").toStdString());
        QVERIFY(parted);
        std::atomic<bool> cancel{false};
        TranscribeParams first = p;
        first.cancel = &cancel;
        int committed = 0;
        first.onPage = [&](const PageEvent&) {
            if (++committed == 2) cancel = true;
        };
        r = runTranscription(**parted, first);
        QVERIFY2(r, r.status().message().c_str());
        QVERIFY(r->cancelled);
        QVERIFY2(r->done >= 2 && r->done < total, qPrintable(QString::number(r->done)));
        const int doneBefore = r->done;
        auto saved = (*parted)->decoderState();
        QVERIFY(saved && saved->has_value());
        QCOMPARE((*saved)->lastPageId, (*(*parted)->pages())[size_t(doneBefore - 1)].id);
        QVERIFY((*parted)->contextPage(doneBefore - 1));  // every page of the context is kept

        logs.clear();
        r = runTranscription(**parted, p);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->done, total);
        bool continued = false;
        for (const auto& m : logs) continued = continued || m.find("continues with the context it had") != std::string::npos;
        QVERIFY2(continued, logs.empty() ? "no log" : logs.front().c_str());
        const auto got = pageTexts(**parted);
        QCOMPARE(int(got.size()), total);
        for (size_t k = 0; k < got.size(); ++k) QCOMPARE(QString::fromStdString(got[k]), QString::fromStdString(expected[k]));

        // A checkpoint is refused by another model, and a damaged one is named as such.
        auto other = ReaderEngine::load(ReaderOptions{*dir});
        QVERIFY(other);
        DecoderCheckpoint cp = (*other)->checkpoint();
        QVERIFY((*other)->restore(cp.state, {}));
        QTemporaryDir modelDir;
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyReaderConfig(), 5), modelDir.filePath("m").toStdString()));
        auto tiny = ReaderEngine::load(ReaderOptions{modelDir.filePath("m").toStdString()});
        QVERIFY(tiny);
        Status refused = (*tiny)->restore(cp.state, {});
        QVERIFY2(!refused && QString::fromStdString(refused.message()).contains("another reader model"), refused.message().c_str());
        Status damaged = (*other)->restore(cp.state.substr(0, cp.state.size() - 3), {});
        QCOMPARE(damaged.code(), ErrorCode::Corrupt);
    }

    // The reader streams its text token by token to TranscribeParams::onText, per page, while it
    // writes (an untrained model: the pages then fail, but what it generated was seen as it came).
    void readerStreamsTokensAsTheyAreGenerated() {
        QTemporaryDir tmp;
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyReaderConfig(), 5), tmp.filePath("model").toStdString()));
        auto store = ProjectStore::open(tmp.filePath("s.quire").toStdString(), ProjectStore::Mode::OpenOrCreate);
        QVERIFY(store);
        TranscribeParams p;
        for (int k = 0; k < 2; ++k) {  // two short pages keep the test quick (also under ASan)
            const QString png = tmp.filePath(QString("page%1.png").arg(k));
            QVERIFY(cv::imwrite(png.toStdString(), textPage({"Streaming page " + std::to_string(k + 1), "of the reader"}, 1200, 500, 1.4)));
            p.inputs.push_back(png.toStdString());
        }
        p.recognizer.engine = "reader";
        p.recognizer.readerModel = tmp.filePath("model").toStdString();
        std::mutex m;
        std::map<int64_t, int> pieces;
        p.onText = [&](int64_t page, const std::string& piece) {
            QVERIFY(!piece.empty());
            std::lock_guard lock(m);
            ++pieces[page];
        };
        std::set<int64_t> finished;
        p.onPage = [&](const PageEvent& e) { finished.insert(e.page.id); };
        auto r = runTranscription(**store, p);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(int(finished.size()), 2);
        QCOMPARE(int(pieces.size()), 2);  // every page streamed before it ended
        for (const auto& [page, n] : pieces) {
            QVERIFY(finished.count(page));
            QVERIFY(n > 1);
        }
    }

    // An untrained reader model (generated weights) loops or runs to the token cap: each page is a
    // failed page with the reason, nothing is exported for it, and the run exits 3.
    void readerFailuresAreFailedPagesWithTheReason() {
        QTemporaryDir tmp;
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyReaderConfig(), 5), tmp.filePath("model").toStdString()));
        const QString project = tmp.filePath("r.quire");
        auto r = runCli({"transcribe", samplePdf(), "--project", project, "--engine", "reader", "--reader-model",
                         tmp.filePath("model"), "--export", "md", "--out", tmp.path()});
        QCOMPARE(r.exitCode, 3);
        auto s = runCli({"status", "--project", project, "--json", "--pages"});
        QVERIFY(s.out.contains("\"failed\":9"));
        QVERIFY2(s.out.contains("decoding loop") || s.out.contains("token cap"), qPrintable(s.out.left(600)));
        // A missing model folder is one clear message before any page.
        auto m = runCli({"transcribe", samplePdf(), "--project", tmp.filePath("m.quire"), "--engine", "reader",
                         "--reader-model", tmp.filePath("nowhere")});
        QCOMPARE(m.exitCode, 2);
        QVERIFY2(m.err.contains("nowhere"), qPrintable(m.err));
    }

    // The re-read rule: reading forward with the jitter of line ends and skipped heads is no loop;
    // copying earlier lines again in shrinking pieces is.
    void rereadingEarlierLinesIsALoop() {
        RereadDetector forward(2000);
        std::mt19937 rng(3);
        for (int v = 0; v < 2000; ++v) forward.push(std::max(0, v - int(rng() % 12)));  // jitter under 16
        QVERIFY(!forward.looping());
        QCOMPARE(forward.reread(), 0);
        forward.push(-1);  // a step that attended to no visual token of the page
        QVERIFY(!forward.looping());

        RereadDetector pieces(480);
        for (int v = 0; v < 300; ++v) pieces.push(v);
        for (int start = 100; start < 300 && !pieces.looping(); start += 40)  // again from earlier lines
            for (int v = start; v < 300 && !pieces.looping(); ++v) pieces.push(v);
        QVERIFY(pieces.looping());
        QVERIFY(pieces.reread() > RereadDetector::kMinTokens);
        // The limit grows with the page: the same 65 re-read tokens are no loop on a long page.
        RereadDetector longPage(4000);
        for (int v = 0; v < 300; ++v) longPage.push(v);
        for (int v = 100; v < 165; ++v) longPage.push(v);
        QCOMPARE(longPage.reread(), 65);
        QVERIFY(!longPage.looping());
        RereadDetector shortPage(300);
        for (int v = 0; v < 300; ++v) shortPage.push(v);
        for (int v = 100; v < 165; ++v) shortPage.push(v);
        QVERIFY(shortPage.looping());
    }

    // A line end only once each of the line's visual tokens has been written for (text or SKIP).
    void aLineEndWaitsForTheLinesTokens() {
        using namespace reader_vocab;
        const int a = kFirstChar, b = kFirstChar + 1;
        LineEndRule rule({a, b, kSpace, a, kLineBreak, b, kLineBreak, kLineBreak});  // lines of 4, 1 and 0
        QVERIFY(!rule.allowsLineEnd());
        for (int k = 0; k < 3; ++k) rule.push(false);  // "ab " — the dash in mid-line
        QVERIFY(!rule.allowsLineEnd());
        rule.push(false);  // SKIP counts: the line is written for
        QVERIFY(rule.allowsLineEnd());
        rule.push(false);  // a character the front-end missed: still allowed
        QVERIFY(rule.allowsLineEnd());
        rule.push(true);
        QVERIFY(!rule.allowsLineEnd());
        rule.push(false);
        rule.push(true);
        QVERIFY(rule.allowsLineEnd());  // an empty line may end at once
        rule.push(true);
        QVERIFY(rule.allowsLineEnd());  // past the page's last line end
        rule.push(false);
        QVERIFY(rule.allowsLineEnd());
    }

    // The next written token reads on from where the last one looked while that stays in the line
    // being written; attention that left the line does not take the reading place with it.
    void theReadingPlaceStaysInTheLine() {
        using namespace reader_vocab;
        const int a = kFirstChar, b = kFirstChar + 1;
        // Visual tokens: line 0 = 0..3 (end 4), line 1 = 5 (end 6), line 2 empty (end 7).
        LineEndRule rule({a, b, kSpace, a, kLineBreak, b, kLineBreak, kLineBreak});
        QCOMPARE(rule.nextGuess(-1), 0);  // nothing attended yet: the line's first token
        rule.push(false);
        QCOMPARE(rule.nextGuess(0), 1);
        rule.push(false);
        QCOMPARE(rule.nextGuess(2), 3);  // a character the front-end merged: reading follows it
        rule.push(false);
        QCOMPARE(rule.nextGuess(3), 4);  // the line's end
        rule.push(true);
        QCOMPARE(rule.nextGuess(4), 5);  // line 1 starts after line 0's end
        rule.push(false);
        QCOMPARE(rule.nextGuess(1), 6);  // attention went back to line 0: line 1's next by count
        QCOMPARE(rule.nextGuess(-1), 6);
        rule.push(false);
        QCOMPARE(rule.nextGuess(0), 6);  // written past the line's length: its end
        rule.push(true);
        QCOMPARE(rule.nextGuess(2), 7);  // the empty line: its end at once
        rule.push(true);
        QCOMPARE(rule.nextGuess(3), 8);  // past the last line end: the end of the page
    }

    // Where the line being written meets the next: its last visual token and the next line's
    // first. On a Latin-script page the reader masks LINE_JOIN there where the line ends with a
    // letter, digit or closing mark (endsLatinWord) and the next starts with a letter or digit
    // ("so long / that" was written "longthat", "with me.” / My" "me.My").
    void aLineKnowsWhereItMeetsTheNext() {
        using namespace reader_vocab;
        const int a = kFirstChar, b = kFirstChar + 1;
        // line 0 = 0..3 (end 4), line 1 = 5 (end 6), line 2 empty (end 7), line 3 = 8 (end 9).
        LineEndRule rule({a, b, kSpace, a, kLineBreak, b, kLineBreak, kLineBreak, a, kLineBreak});
        using Junction = std::pair<int, int>;
        QCOMPARE(rule.junction(), Junction(3, 5));
        for (int k = 0; k < 4; ++k) rule.push(false);
        QCOMPARE(rule.junction(), Junction(3, 5));  // the same line until its end is written
        rule.push(true);
        QCOMPARE(rule.junction(), Junction(5, -1));  // the next line is empty
        rule.push(false);
        rule.push(true);
        QCOMPARE(rule.junction(), Junction(-1, 8));  // an empty line
        rule.push(true);
        QCOMPARE(rule.junction(), Junction(-1, -1));  // the page's last line: a page break follows

        QVERIFY(isLatinWordCharacter("g") && isLatinWordCharacter("7") && isLatinWordCharacter("\u00e9"));
        QVERIFY(isLatinWordCharacter("\u03b1") && isLatinWordCharacter("\u0434"));  // Greek, Cyrillic
        for (const char* c : {"-", "\u2014", ",", "\u201d", "\u00d7", "\u00a7", "\u7814", "\uff0c", " ", ""})
            QVERIFY2(!isLatinWordCharacter(c), c);
        for (const char* c : {"g", "7", ".", ",", ";", "?", "'", "\u2019", "\u201d", ")"}) QVERIFY2(endsLatinWord(c), c);
        for (const char* c : {"-", "\u2014", "/", "\u201c", "(", "\u3002", " ", ""}) QVERIFY2(!endsLatinWord(c), c);
        for (const char* c : {"\u7814", "\uff0c", "\u3002", "\u3042", "\U00020000"}) QVERIFY2(isCjkCharacter(c), c);
        for (const char* c : {"a", "\u00e9", "\u2014", "\u201c", ""}) QVERIFY2(!isCjkCharacter(c), c);
    }

    // A line-final hyphen the model skipped is written back where the line then ends with a break
    // or a paragraph, not where it joins the next line; a hyphen inside a line, or one the model
    // wrote itself, is never added.
    void aSkippedLineEndHyphenStaysUnlessTheLineJoins() {
        using namespace reader_vocab;
        // visual tokens: "ab-" | "cd" (0..2, end 3, 4..5, end 6); token 1 is also a hyphen mid-line.
        const std::vector<bool> hyphen = {false, true, true, false, false, false, false};
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kFirstChar, 0, 2, false), -1);
            QCOMPARE(rule.pick(kFirstChar, 1, 2, false), -1);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);        // the hyphen skipped
            QCOMPARE(rule.pick(kLineBreak, 3, 2, true), 2);     // then a break: written back
            QCOMPARE(rule.pick(kFirstChar, 4, 6, false), -1);
        }
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);
            QCOMPARE(rule.pick(kParagraph, 3, 2, true), 2);     // a paragraph end too
        }
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);
            QCOMPARE(rule.pick(kLineJoin, 3, 2, true), -1);     // joined: "abcd"
        }
        {
            LineEndHyphen rule(hyphen);
            QCOMPARE(rule.pick(kSkip, 1, 2, false), -1);        // a mid-line hyphen skipped
            QCOMPARE(rule.pick(kFirstChar, 2, 2, false), -1);   // the line's last written
            QCOMPARE(rule.pick(kLineBreak, 3, 2, true), -1);
            QCOMPARE(rule.pick(kSkip, 2, 2, false), -1);        // skipped, then more text: nothing
            QCOMPARE(rule.pick(kFirstChar, 2, 2, false), -1);
            QCOMPARE(rule.pick(kLineBreak, 3, 2, true), -1);
        }
    }

    // Old books' spaced punctuation and long dashes the front-end reads as two dashes come out as
    // reading text on Latin-script pages; spaces after digits, around straight quotes, single
    // dashes and long runs of dashes stay as read.
    void printedSpacingAndDashesBecomeReadingText() {
        using namespace reader_vocab;
        using P = PrintedPunctuation;
        const int a = kFirstChar, semi = kFirstChar + 1, hyph = kFirstChar + 2, em = kFirstChar + 3, quote = kFirstChar + 4;
        const std::vector<int> dashes = {hyph, em};
        QCOMPARE(P::kindOf("e"), P::Letter);
        QCOMPARE(P::kindOf("4"), P::Digit);
        QCOMPARE(P::kindOf(":"), P::Closing);
        QCOMPARE(P::kindOf("\u201c"), P::Opening);
        QCOMPARE(P::kindOf("\u2019"), P::Other);  // opens and closes: left alone
        QCOMPARE(P::kindOf("-"), P::Dash);
        QCOMPARE(P::kindOf("\u2014"), P::LongDash);
        QVERIFY(P::isDash("\u2013") && !P::isDash("~"));
        {   // "a ;3 :": the space after a letter goes, the one after a digit stays
            P rule({P::Letter, P::Space, P::Closing, P::Digit, P::Space, P::Closing}, dashes, em, true);
            QCOMPARE(rule.pick(a, 0), a);
            QCOMPARE(rule.pick(kSpace, 1), kSkip);
            QCOMPARE(rule.pick(semi, 2), semi);
            QCOMPARE(rule.pick(a, 3), a);
            QCOMPARE(rule.pick(kSpace, 4), kSpace);
        }
        {   // the spacing rule off (French): the space stays
            P rule({P::Letter, P::Space, P::Closing}, dashes, em, false);
            QCOMPARE(rule.pick(a, 0), a);
            QCOMPARE(rule.pick(kSpace, 1), kSpace);
        }
        {   // "“ a": dropped only where the model wrote the opening mark itself
            P rule({P::Opening, P::Space, P::Letter}, dashes, em, true);
            QCOMPARE(rule.pick(quote, 0), quote);
            QCOMPARE(rule.pick(kSpace, 1), kSkip);
            P skipped({P::Opening, P::Space, P::Letter}, dashes, em, true);
            QCOMPARE(skipped.pick(kSkip, 0), kSkip);
            QCOMPARE(skipped.pick(kSpace, 1), kSpace);
        }
        {   // "a—-a": one em dash, whichever dash the model writes first
            P rule({P::Letter, P::LongDash, P::Dash, P::Letter}, dashes, em, true);
            QCOMPARE(rule.pick(a, 0), a);
            QCOMPARE(rule.pick(em, 1), em);
            QVERIFY(rule.inWrittenDash(1) && rule.inWrittenDash(2) && !rule.inWrittenDash(3) && !rule.inWrittenDash(0));
            QCOMPARE(rule.pick(hyph, 2), kSkip);
            QCOMPARE(rule.pick(a, 3), a);
            P second({P::Letter, P::Dash, P::LongDash, P::Letter}, dashes, em, true);
            QCOMPARE(second.pick(kSkip, 1), kSkip);
            QCOMPARE(second.pick(em, 2), em);
            QCOMPARE(second.pick(hyph, 2), kSkip);  // (the run's dash is written)
        }
        {   // "a-—a" with the model writing the hyphen: "—"
            P rule({P::Letter, P::Dash, P::LongDash, P::Letter}, dashes, em, true);
            QCOMPARE(rule.pick(hyph, 1), em);
            QCOMPARE(rule.pick(em, 2), kSkip);
        }
        {   // hyphens alone ("--", a single one), a rule of four dashes, the dash rule off: as read
            P rule({P::Letter, P::Dash, P::Letter, P::Dash, P::Dash, P::Letter, P::LongDash, P::LongDash, P::LongDash,
                    P::LongDash}, dashes, em, true);
            QCOMPARE(rule.pick(hyph, 1), hyph);
            QCOMPARE(rule.pick(hyph, 3), hyph);
            QCOMPARE(rule.pick(hyph, 4), hyph);
            QCOMPARE(rule.pick(em, 6), em);
            QCOMPARE(rule.pick(em, 7), em);
            QVERIFY(!rule.inWrittenDash(3) && !rule.inWrittenDash(6));  // nothing was joined
            P off({P::Letter, P::LongDash, P::Dash, P::Letter}, dashes, -1, true);
            QCOMPARE(off.pick(em, 1), em);
            QVERIFY(!off.inWrittenDash(1));
            QCOMPARE(off.pick(hyph, 2), hyph);
        }
    }

    // The shipped reader carries its training counts, and where the front-end reads a character the
    // model never saw, the reader writes that character (the model alone wrote 锁西 for 陕西 and 泊
    // for 沪 on this page: tests/make_rare_characters_page.py).
    void rareCharactersFollowTheFrontEnd() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        QVERIFY2(fs::exists(fs::path(*dir) / "character_counts.tsv"), dir->c_str());
        const cv::Mat page = cv::imread((sourceDir() + "/tests/fixtures/rare_characters_zh.png").toStdString(), cv::IMREAD_GRAYSCALE);
        QVERIFY(!page.empty());
        auto ppocr = PpocrEngine::load(PpocrOptions{});
        QVERIFY2(ppocr, ppocr.status().message().c_str());
        auto front = (*ppocr)->read(page, true, nullptr);
        QVERIFY(front);
        std::string frontText;
        for (const auto& l : front->lines) frontText += l.text;
        ReaderOptions o;
        o.modelDir = *dir;
        auto withCounts = ReaderEngine::load(o);
        o.rareBelow = 0;  // the rule off: the model's own choice
        auto alone = ReaderEngine::load(o);
        QVERIFY2(withCounts && alone, withCounts ? alone.status().message().c_str() : withCounts.status().message().c_str());
        auto a = (*withCounts)->readPage(page, 300);
        auto b = (*alone)->readPage(page, 300);
        QVERIFY2(a && b, a ? b.status().message().c_str() : a.status().message().c_str());
        const std::string text = a->text.plainText(), aloneText = b->text.plainText();
        int read = 0, kept = 0, keptAlone = 0;
        for (const char* c : {"\u9655", "\u6caa", "\u6a71", "\u67ff", "\u68fa", "\u4f84", "\u5bc5"}) {  // 陕沪橱柿棺侄寅
            if (frontText.find(c) == std::string::npos) continue;
            ++read;
            kept += text.find(c) != std::string::npos ? 1 : 0;
            keptAlone += aloneText.find(c) != std::string::npos ? 1 : 0;
        }
        qInfo("front-end read %d of the 7 rare characters; the reader wrote %d of them, %d without the rule:\n%s\n%s", read,
              kept, keptAlone, text.c_str(), aloneText.c_str());
        QVERIFY(read >= 6);
        QCOMPARE(kept, read);
    }

    // character_counts.tsv: checked line by line, the file and line named; characters under the
    // count, and those it does not list, are rare.
    void characterCountsAreReadOrRefused() {
        using namespace reader_vocab;
        QTemporaryDir tmp;
        auto write = [&](const char* name, const std::string& body) {
            const std::string path = tmp.filePath(name).toStdString();
            std::ofstream(path, std::ios::binary) << body;
            return path;
        };
        const std::vector<std::string> chars = {"a", "b", "\u7814", " "};
        auto charOf = [&](int cls) { return chars[size_t(cls - 1)]; };
        auto ok = readRareCharacters(write("ok.tsv", "character\tcount\na\t40\n\u7814\t3\n \t100\n"), 30, 4, charOf);
        QVERIFY2(ok, ok.status().message().c_str());
        QCOMPARE(int(ok->size()), kVocabSize);
        QVERIFY(!(*ok)[kFirstChar] && (*ok)[kFirstChar + 1] && (*ok)[kFirstChar + 2] && !(*ok)[kFirstChar + 3]);
        QVERIFY(!(*ok)[kSpace] && !(*ok)[kFirstChar + 4]);
        const std::vector<std::pair<std::string, std::string>> bad = {
            {"", "empty"}, {"char\tcount\n", ":1: expected the header"}, {"character\tcount\na 40\n", ":2: expected a character"},
            {"character\tcount\na\t4x\n", ":2: the count \"4x\""}, {"character\tcount\na\t1\nb\t2\na\t3\n", ":4: the character is listed twice"}};
        for (size_t k = 0; k < bad.size(); ++k) {
            const std::string path = write(("bad" + std::to_string(k) + ".tsv").c_str(), bad[k].first);
            auto r = readRareCharacters(path, 30, 4, charOf);
            QVERIFY(!r);
            const std::string msg = r.status().message();
            QVERIFY2(msg.find(path) != std::string::npos && msg.find(bad[k].second) != std::string::npos, msg.c_str());
        }
        QVERIFY(!readRareCharacters(tmp.filePath("none.tsv").toStdString(), 30, 4, charOf));
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
