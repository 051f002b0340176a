// The decoding runtime's pieces on the CPU: model loading and its refusals, the kernels against
// libm and plain loops, the decode benchmark, greedy decoding rules. What tokens attend to is
// tst_decoder_attention; passes of many tokens at once, tst_decoder_batch.
#include <QTemporaryDir>
#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include "decoder/kernels.h"
#include "quire/decoder/bench.h"
#include "quire/decoder/model.h"
#include "quire/decoder/safetensors.h"
#include "quire/decoder/session.h"
#include "test_util.h"

using namespace quire;
using namespace quire::decoder;
using namespace quire::test;

// sum over c of x[c] * w[c] in float, in order, each product rounded before it is added (no fused
// multiply-add: GCC's "optimize" attribute, and one operation per statement for Clang).
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
static float inOrderSum(const float* x, const float* w, int n) {
    volatile float sum = 0.f;
    for (int c = 0; c < n; ++c) {
        const float p = x[c] * w[c];
        sum = sum + p;
    }
    return sum;
}

class TestDecoder : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    // Hostile headers refused with the file named: offsets far beyond any integer (a fuzz finding:
    // converting 1e60 for the message was undefined behaviour), reversed or past the end.
    void safetensorsRefusesOffsetsOutsideTheFile_data() {
        QTest::addColumn<QString>("offsets");
        QTest::addColumn<QString>("said");
        QTest::newRow("beyond any integer") << "[1e60, 22]" << "offsets 1e+60..22";
        QTest::newRow("reversed") << "[16, 8]" << "offsets 16..8";
        QTest::newRow("past the end") << "[0, 4096]" << "offsets 0..4096, data size 16";
        QTest::newRow("negative") << "[-8, 8]" << "offsets -8..8";
    }
    void safetensorsRefusesOffsetsOutsideTheFile() {
        QFETCH(QString, offsets);
        QFETCH(QString, said);
        QTemporaryDir dir;
        const QString file = dir.filePath("m.safetensors");
        QByteArray header = QString(R"({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": %1}})").arg(offsets).toUtf8();
        while (header.size() % 8) header += ' ';
        QByteArray bytes(8, 0);
        const quint64 n = quint64(header.size());
        std::memcpy(bytes.data(), &n, 8);
        bytes += header + QByteArray(16, 0);
        writeFile(file, bytes.toStdString());
        auto st = decoder::SafeTensors::open(file.toStdString());
        QVERIFY(!st);
        QCOMPARE(st.status().code(), ErrorCode::Corrupt);
        const QString message = QString::fromStdString(st.status().message());
        QVERIFY2(message.contains(file) && message.contains(said), qPrintable(message));
    }

    // The softmax and SwiGLU kernels against libm in double precision: exp within 3 ulp over the
    // whole range where it is a normal float (and about the smallest normal float below it),
    // maxima and sums right for every length (the vector loop's tail included), the same sums
    // whether the values are written back or not.
    void kernelsMatchLibm() {
        namespace k = quire::decoder::kernels;
        std::vector<float> x;
        for (float v = -100.f; v <= 88.f; v += 0.00731f) x.push_back(v);
        std::vector<float> y = x;
        k::expShifted(y.data(), y.size(), 0.f);
        for (size_t i = 0; i < x.size(); ++i) {
            const double e = std::exp(double(x[i]));
            if (e < 1.19e-38) QVERIFY2(y[i] <= 1.19e-38f, qPrintable(QString::number(x[i])));
            else QVERIFY2(std::abs(y[i] - e) <= 3 * 5.97e-8 * e, qPrintable(QString("exp(%1) = %2").arg(x[i]).arg(y[i])));
        }
        std::mt19937 rng(5);
        std::normal_distribution<float> nd(0.f, 4.f);
        for (size_t n = 0; n <= 41; ++n) {
            std::vector<float> a(n);
            for (float& v : a) v = nd(rng);
            double mx = -INFINITY, sum = 0;
            for (float v : a) mx = std::max(mx, double(v));
            QCOMPARE(double(k::maxOf(a.data(), n)), mx);
            for (float v : a) sum += std::exp(double(v) - mx);
            const float shift = float(n ? mx : 0.0);
            const float s1 = k::sumExpShifted(a.data(), n, shift);
            std::vector<float> b = a;
            QCOMPARE(k::expShifted(b.data(), n, shift), s1);
            QVERIFY(std::abs(s1 - sum) <= 1e-6 * std::max(1.0, sum));
            for (size_t i = 0; i < n; ++i) QVERIFY(std::abs(b[i] - std::exp(double(a[i]) - mx)) <= 3e-7);
            std::vector<float> g = a, up(n, 1.5f);
            k::swiglu(g.data(), up.data(), n);
            for (size_t i = 0; i < n; ++i) {
                const double want = double(a[i]) / (1 + std::exp(-double(a[i]))) * 1.5;
                QVERIFY(std::abs(g[i] - want) <= 1e-6 * std::max(1.0, std::abs(want)));
            }
        }
    }

    // The packed product (draft passes' weights) against a plain double-precision loop, for shapes
    // the panels and the four- and eight-row tiles divide and ones they do not; a row's result is
    // the same bits whatever rows go with it, and the same bits as a plain float loop summing in
    // order (so the AVX-512, AVX2 and baseline versions agree: this checks the one this machine
    // runs); alpha, rows of Y apart, and the transposed packing.
    void packedProductMatchesPlainLoops() {
        namespace k = quire::decoder::kernels;
        std::mt19937 rng(17);
        std::normal_distribution<float> nd(0.f, 1.f);
        for (const auto [T, rows, cols] :
             {std::tuple{1, 16, 48}, {3, 37, 20}, {7, 6632 % 97, 192}, {13, 40, 48}, {16, 64, 513}}) {
            std::vector<float> W(size_t(rows) * cols), X(size_t(T) * cols);
            for (float& v : W) v = nd(rng);
            for (float& v : X) v = nd(rng);
            std::vector<float> P(k::packedSize(rows, cols)), Y(size_t(T) * rows, 0.f);
            k::packRows(W.data(), rows, cols, size_t(cols), P.data());
            k::gemmPacked(P.data(), rows, cols, X.data(), size_t(cols), T, Y.data(), size_t(rows));
            for (int t = 0; t < T; ++t)
                for (int r = 0; r < rows; ++r) {
                    double want = 0, mag = 0;
                    for (int c = 0; c < cols; ++c) {
                        want += double(X[size_t(t) * cols + c]) * W[size_t(r) * cols + c];
                        mag += std::abs(double(X[size_t(t) * cols + c]) * W[size_t(r) * cols + c]);
                    }
                    QVERIFY2(std::abs(Y[size_t(t) * rows + r] - want) <= 1e-6 * mag + 1e-30,
                             qPrintable(QString("T %1 rows %2 cols %3: [%4][%5]").arg(T).arg(rows).arg(cols).arg(t).arg(r)));
                }
            // A float loop: each product rounded, then added, in the order of c.
            for (int t = 0; t < T; ++t)
                for (int r = 0; r < rows; ++r)
                    QCOMPARE(std::bit_cast<uint32_t>(Y[size_t(t) * rows + r]),
                             std::bit_cast<uint32_t>(inOrderSum(&X[size_t(t) * cols], &W[size_t(r) * cols], cols)));
            // Each row alone: the same bits as in the batch.
            for (int t = 0; t < T; ++t) {
                std::vector<float> one(static_cast<size_t>(rows));
                k::gemmPacked(P.data(), rows, cols, &X[size_t(t) * cols], size_t(cols), 1, one.data(), size_t(rows));
                QVERIFY(std::equal(one.begin(), one.end(), Y.begin() + long(t) * rows));
            }
            // alpha: 0.5 X Wᵀ, written into rows ldy apart.
            const size_t ldy = size_t(rows) + 3;
            std::vector<float> Z(size_t(T) * ldy, 2.f);
            k::gemmPacked(P.data(), rows, cols, X.data(), size_t(cols), T, Z.data(), ldy, 0.5f);
            for (int t = 0; t < T; ++t) {
                for (int r = 0; r < rows; ++r)
                    QVERIFY(std::abs(Z[size_t(t) * ldy + r] - 0.5f * Y[size_t(t) * rows + r]) <=
                            1e-6f * std::abs(Y[size_t(t) * rows + r]));
                QCOMPARE(Z[size_t(t) * ldy + size_t(rows)], 2.f);  // past the row: untouched
            }
            // The transpose packed from W stored column-major (Wᵀ [cols][rows]): the same product.
            std::vector<float> Wt(size_t(cols) * rows), Pt(k::packedSize(rows, cols));
            for (int r = 0; r < rows; ++r)
                for (int c = 0; c < cols; ++c) Wt[size_t(c) * rows + r] = W[size_t(r) * cols + c];
            k::packColumns(Wt.data(), rows, cols, size_t(rows), Pt.data());
            QVERIFY(Pt == P);
        }
    }

    // The selector's bound and the small attention kernels against plain loops, for a head size
    // the vector loop divides (48) and one it does not (20).
    void attentionKernelsMatchPlainLoops() {
        namespace k = quire::decoder::kernels;
        std::mt19937 rng(11);
        std::normal_distribution<float> nd(0.f, 1.f);
        for (int D : {48, 20}) {
            const int heads = 4, group = 2, half = D / 2;
            std::vector<float> q(size_t(heads) * D), lo(size_t(heads / group) * D), hi(lo.size()), trig(static_cast<size_t>(D));
            for (float& v : q) v = nd(rng);
            for (size_t i = 0; i < lo.size(); ++i) {
                const float a = nd(rng), b = nd(rng);
                lo[i] = std::min(a, b), hi[i] = std::max(a, b);
            }
            for (int i = 0; i < half; ++i) trig[size_t(i)] = std::cos(0.3f * i), trig[size_t(half + i)] = std::sin(0.3f * i);
            for (bool rotated : {false, true}) {
                double want = 0;
                for (int h = 0; h < heads; ++h) {
                    std::vector<float> r(q.begin() + h * D, q.begin() + (h + 1) * D);
                    if (rotated)
                        for (int i = 0; i < half; ++i) {
                            const float a = r[size_t(i)], b = r[size_t(i + half)];
                            r[size_t(i)] = a * trig[size_t(i)] - b * trig[size_t(half + i)];
                            r[size_t(i + half)] = a * trig[size_t(half + i)] + b * trig[size_t(i)];
                        }
                    const size_t o = size_t(h / group) * D;
                    for (int i = 0; i < D; ++i) want += std::max(r[size_t(i)] * lo[o + i], r[size_t(i)] * hi[o + i]);
                }
                const float got = k::questBound(q.data(), rotated ? trig.data() : nullptr, lo.data(), hi.data(), heads, group, D);
                QVERIFY2(std::abs(got - want) <= 1e-4 * std::max(1.0, std::abs(want)), qPrintable(QString::number(D)));
            }
            const int count = 13;
            std::vector<float> rows(size_t(count) * D), dots(static_cast<size_t>(count)), w(static_cast<size_t>(count)),
                out(static_cast<size_t>(D), 0.5f);
            for (float& v : rows) v = nd(rng);
            for (float& v : w) v = nd(rng);
            k::dotRows(q.data(), rows.data(), count, D, 0.25f, dots.data());
            k::addWeightedRows(w.data(), rows.data(), count, D, out.data());
            for (int t = 0; t < count; ++t) {
                double d = 0;
                for (int i = 0; i < D; ++i) d += double(q[size_t(i)]) * rows[size_t(t * D + i)];
                QVERIFY(std::abs(dots[size_t(t)] - 0.25 * d) <= 1e-5);
            }
            for (int i = 0; i < D; ++i) {
                double o = 0.5;
                for (int t = 0; t < count; ++t) o += double(w[size_t(t)]) * rows[size_t(t * D + i)];
                QVERIFY(std::abs(out[size_t(i)] - o) <= 1e-5);
            }
        }
    }

    void modelRoundTrip_data() {
        QTest::addColumn<int>("dtype");
        QTest::addColumn<double>("tolerance");
        QTest::newRow("f32") << int(DType::F32) << 0.0;
        QTest::newRow("bf16") << int(DType::BF16) << 1.0 / 128;
        QTest::newRow("f16") << int(DType::F16) << 1.0 / 1024;
    }
    void modelRoundTrip() {
        QFETCH(int, dtype);
        QFETCH(double, tolerance);
        const ModelWeights m = randomModel(tinyDecoderConfig(), 7);
        const QString dir = m_dir.filePath(QString("model-%1").arg(dtype));
        QVERIFY(saveModel(m, dir.toStdString(), DType(dtype)));
        auto loaded = loadModel(dir.toStdString());
        QVERIFY2(loaded, loaded.status().message().c_str());
        QCOMPARE((*loaded)->parameterCount(), m.parameterCount());
        const auto& a = (*loaded)->layers[1].wq;
        for (size_t i = 0; i < a.size(); ++i)
            QVERIFY(std::abs(a[i] - m.layers[1].wq[i]) <= tolerance * std::max(1.0f, std::abs(m.layers[1].wq[i])));
    }

    // Visual tokens that carry vocabulary ids: the flag survives config.json, and a token whose id is
    // not a vocabulary index is refused before the session changes.
    void visualTokenIdsAreCheckedAtTheDoor() {
        ModelConfig c = tinyDecoderConfig();
        c.visualTokenIds = true;
        QCOMPARE(c.visualStride(), c.visualDim + 1);
        auto parsed = ModelConfig::fromJson(c.toJson(), "config.json");
        QVERIFY(parsed);
        QVERIFY(parsed->visualTokenIds);
        QVERIFY(!ModelConfig::fromJson(tinyDecoderConfig().toJson(), "config.json")->visualTokenIds);
        auto model = std::make_shared<const ModelWeights>(randomModel(c, 3));
        DecodeSession s(model, AttentionParams{});
        QVERIFY(s.begin({1}));
        std::vector<float> page(size_t(3) * c.visualStride(), 0.25f);
        for (int t = 0; t < 3; ++t) page[size_t(t) * c.visualStride() + c.visualDim] = float(7 + t);
        for (float bad : {-1.f, float(c.vocabSize), 2.5f, std::nanf("")}) {
            auto broken = page;
            broken[size_t(2) * c.visualStride() + c.visualDim] = bad;
            const Status st = s.addPage(0, broken.data(), 3);
            QVERIFY(!st);
            QVERIFY2(QString::fromStdString(st.message()).contains("vocabulary id"), st.message().c_str());
        }
        QVERIFY(s.addPage(0, page.data(), 3));  // the refusals left no half-fed page behind
        QVERIFY(s.step(1));
    }

    // The front-end's line batch a reader model was trained with survives config.json; a file
    // without it means 8 (every model before the key), and a batch outside 1..64 is refused.
    void frontEndLineBatchSurvivesTheConfig() {
        ModelConfig c = tinyDecoderConfig();
        c.visualTokenIds = true;
        QCOMPARE(ModelConfig::fromJson(c.toJson(), "config.json")->frontEndLineBatch, 8);
        c.frontEndLineBatch = 1;
        auto parsed = ModelConfig::fromJson(c.toJson(), "config.json");
        QVERIFY2(parsed, parsed.status().message().c_str());
        QCOMPARE(parsed->frontEndLineBatch, 1);
        std::string json = c.toJson();
        QVERIFY(json.find("\"front_end_line_batch\": 1") != std::string::npos);
        json.replace(json.find("\"front_end_line_batch\": 1"), 25, "\"front_end_line_batch\": 0");
        const auto refused = ModelConfig::fromJson(json, "config.json");
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.status().message()).contains("front_end_line_batch"),
                 refused.status().message().c_str());
    }

    // Evidence ids (visual_evidence_ids) survive config.json, need visual_token_ids, widen each
    // visual token by their count, and each is -1 (none) or a vocabulary id; the model file holds
    // their gains, and a gain-less model reads as if the evidence were absent.
    void evidenceIdsAreCheckedAtTheDoor() {
        ModelConfig c = tinyDecoderConfig();
        c.visualTokenIds = true;
        c.visualEvidenceIds = 2;
        QCOMPARE(c.visualStride(), c.visualDim + 3);
        auto parsed = ModelConfig::fromJson(c.toJson(), "config.json");
        QVERIFY2(parsed, parsed.status().message().c_str());
        QCOMPARE(parsed->visualEvidenceIds, 2);
        QCOMPARE(ModelConfig::fromJson(tinyDecoderConfig().toJson(), "config.json")->visualEvidenceIds, 0);
        ModelConfig noIds = c;
        noIds.visualTokenIds = false;
        const Status st = noIds.validate("config.json");
        QVERIFY2(!st && QString::fromStdString(st.message()).contains("visual_evidence_ids"), st.message().c_str());
        ModelWeights w = randomModel(c, 3);
        QCOMPARE(w.evidenceGain.size(), size_t(2 * c.hiddenSize));
        QTemporaryDir dir;
        QVERIFY(saveModel(w, dir.path().toStdString()));
        auto loaded = loadModel(dir.path().toStdString());
        QVERIFY2(loaded, loaded.status().message().c_str());
        QCOMPARE((*loaded)->evidenceGain, w.evidenceGain);
        std::vector<float> page(size_t(3) * c.visualStride(), 0.25f);
        for (int t = 0; t < 3; ++t) {
            float* row = &page[size_t(t) * c.visualStride() + c.visualDim];
            row[0] = float(7 + t), row[1] = t == 1 ? -1.f : float(9 + t), row[2] = -1.f;
        }
        auto model = std::make_shared<const ModelWeights>(w);
        DecodeSession s(model, AttentionParams{});
        QVERIFY(s.begin({1}));
        for (float bad : {-2.f, float(c.vocabSize), 0.5f, std::nanf("")}) {
            auto broken = page;
            broken[size_t(2) * c.visualStride() + c.visualDim + 2] = bad;
            const Status refused = s.addPage(0, broken.data(), 3);
            QVERIFY2(!refused && QString::fromStdString(refused.message()).contains("evidence id"), refused.message().c_str());
        }
        QVERIFY(s.addPage(0, page.data(), 3));
        auto withEvidence = s.step(1);
        QVERIFY(withEvidence);
        // The same page without its evidence (every id -1) is another input: other logits; with the
        // gains zero, the logits of a model without evidence ids on the page without them.
        auto none = page;
        for (int t = 0; t < 3; ++t) none[size_t(t) * c.visualStride() + c.visualDim + 1] = -1.f;
        auto logitsOf = [&](std::shared_ptr<const ModelWeights> m, const std::vector<float>& p) {
            DecodeSession d(m, AttentionParams{});
            if (!d.begin({1}) || !d.addPage(0, p.data(), 3)) {  // the test fails; the comparisons are void
                QTest::qFail("the session refused the page", __FILE__, __LINE__);
                return std::vector<float>{};
            }
            return *d.step(1)->logits;
        };
        QVERIFY(logitsOf(model, none) != *withEvidence->logits);
        ModelWeights quiet = w;
        std::fill(quiet.evidenceGain.begin(), quiet.evidenceGain.end(), 0.f);
        ModelWeights plain = w;
        plain.config.visualEvidenceIds = 0, plain.evidenceGain.clear();
        std::vector<float> noEvidence;
        for (int t = 0; t < 3; ++t)
            noEvidence.insert(noEvidence.end(), page.begin() + long(t) * c.visualStride(),
                              page.begin() + long(t) * c.visualStride() + c.visualDim + 1);
        QCOMPARE(logitsOf(std::make_shared<const ModelWeights>(quiet), page),
                 logitsOf(std::make_shared<const ModelWeights>(plain), noEvidence));
    }

    // Line-aligned positions survive config.json, and a config that cannot use them is refused.
    void lineAlignedConfigRoundTripsAndIsChecked() {
        ModelConfig c = tinyDecoderConfig();
        makeLineAligned(c);
        auto parsed = ModelConfig::fromJson(c.toJson(), "config.json");
        QVERIFY2(parsed, parsed.status().message().c_str());
        QCOMPARE(parsed->lineEndTokenIds, c.lineEndTokenIds);
        QCOMPARE(parsed->visualLineEndTokenId, 5);
        QVERIFY(!ModelConfig::fromJson(tinyDecoderConfig().toJson(), "config.json")->lineAlignedPositions());
        ModelConfig noIds = c;
        noIds.visualTokenIds = false;
        const Status st = noIds.validate("config.json");
        QVERIFY2(!st && QString::fromStdString(st.message()).contains("visual_token_ids"), st.message().c_str());
        ModelConfig badId = c;
        badId.visualLineEndTokenId = c.vocabSize;
        QVERIFY(!badId.validate("config.json"));
        ModelConfig pageBreak = c;
        pageBreak.lineEndTokenIds = {c.pageBreakTokenId};
        QVERIFY(!pageBreak.validate("config.json"));
    }

    // The SR-SWA pattern a model was trained under survives config.json; a model without one has
    // none; a pattern that cannot be run is refused with the field named.
    void trainedPatternRoundTripsAndIsChecked() {
        ModelConfig c = tinyDecoderConfig();
        QVERIFY(!ModelConfig::fromJson(c.toJson(), "config.json")->srswa);
        c.srswa = TrainedPattern{};
        c.srswa->windowAfter = 1, c.srswa->gatedPages = 3, c.srswa->blocksPerGatedPage = 6, c.srswa->gateHold = 0.25f;
        c.srswa->recentTokens = 96;
        auto parsed = ModelConfig::fromJson(c.toJson(), "config.json");
        QVERIFY2(parsed, parsed.status().message().c_str());
        QVERIFY(parsed->srswa);
        QCOMPARE(parsed->srswa->windowBefore, 0);
        QCOMPARE(parsed->srswa->windowAfter, 1);
        QCOMPARE(parsed->srswa->gatedPages, 3);
        QCOMPARE(parsed->srswa->blocksPerGatedPage, 6);
        QCOMPARE(parsed->srswa->gateHold, 0.25f);
        QCOMPARE(parsed->srswa->recentTokens, 96);
        QCOMPARE(parsed->srswa->gateRefreshSteps, 8);
        // As tools/train writes it: the training config's "srswa" object, keys it leaves out default.
        std::string json = tinyDecoderConfig().toJson();
        json.insert(json.rfind('}'), ", \"srswa\": {\"window_after\": 2, \"recent\": 64}");
        parsed = ModelConfig::fromJson(json, "config.json");
        QVERIFY2(parsed && parsed->srswa, parsed ? "no pattern" : parsed.status().message().c_str());
        QCOMPARE(parsed->srswa->windowAfter, 2);
        QCOMPARE(parsed->srswa->recentTokens, 64);
        QCOMPARE(parsed->srswa->gatedPages, 4);
        for (const char* bad : {"\"srswa\": 1", "\"srswa\": {\"window_after\": -1}", "\"srswa\": {\"window_after\": 1.5}",
                                "\"srswa\": {\"recent\": 0}", "\"srswa\": {\"gate_hold\": -2}"}) {
            std::string j = tinyDecoderConfig().toJson();
            j.insert(j.rfind('}'), std::string(", ") + bad);
            const auto r = ModelConfig::fromJson(j, "m/config.json");
            QVERIFY2(!r && r.status().code() == ErrorCode::Corrupt, bad);
            QVERIFY2(QString::fromStdString(r.status().message()).contains("m/config.json: 'srswa"), r.status().message().c_str());
        }
    }

    void loaderRefusesBrokenFiles_data() {
        QTest::addColumn<QString>("damage");
        QTest::addColumn<QString>("words");
        QTest::newRow("truncated") << "truncate" << "outside the file";
        QTest::newRow("header lies") << "header" << "header claims";
        QTest::newRow("wrong dtype") << "dtype" << "dtype 'I8'";
        QTest::newRow("nan weights") << "nan" << "NaN";
        QTest::newRow("shape mismatch") << "shape" << "the config needs";
        QTest::newRow("missing tensor") << "missing" << "is missing";
        QTest::newRow("bad config") << "config" << "num_heads must be a multiple";
    }
    void loaderRefusesBrokenFiles() {
        QFETCH(QString, damage);
        QFETCH(QString, words);
        ModelWeights m = randomModel(tinyDecoderConfig(), 3);
        const QString dir = m_dir.filePath("broken-" + damage);
        if (damage == "nan") m.layers[0].wv[5] = NAN;
        QVERIFY(saveModel(m, dir.toStdString()));
        const QString st = dir + "/model.safetensors";
        std::string bytes = readFile(st);
        if (damage == "truncate") bytes.resize(bytes.size() - 100);
        if (damage == "header") bytes[6] = '\x7f';
        if (damage == "dtype") bytes.replace(bytes.find("\"F32\""), 5, "\"I8\" ");
        if (damage == "shape") {
            ModelConfig c = tinyDecoderConfig();
            c.intermediateSize = 40;
            writeFile(dir + "/config.json", c.toJson());
        }
        if (damage == "missing") bytes.replace(bytes.find("layers.1.up_proj.weight"), 6, "LAYERS");
        if (damage == "config") {
            ModelConfig c = tinyDecoderConfig();
            std::string js = c.toJson();
            js.replace(js.find("\"num_kv_heads\": 2"), 17, "\"num_kv_heads\": 3");
            writeFile(dir + "/config.json", js);
        }
        writeFile(st, bytes);
        auto loaded = loadModel(dir.toStdString());
        QVERIFY(!loaded);
        const QString msg = QString::fromStdString(loaded.status().message());
        QVERIFY2(msg.contains(words) && msg.contains(dir), qPrintable(msg));
    }

    // `bench decode --batch`: three volumes stepped together on the CPU, and on a shared (mirror)
    // device; their KV memory is three sessions', and the run reports the batch.
    void decodeBenchRunsABatch_data() {
        QTest::addColumn<QString>("device");
        QTest::newRow("cpu") << "cpu";
        QTest::newRow("shared mirror device") << "mirror";
    }
    void decodeBenchRunsABatch() {
        QFETCH(QString, device);
        DecodeBenchParams p;
        p.config = tinyDecoderConfig();
        p.pages = 12, p.pageTokens = 30, p.tokensPerPage = 6, p.checkpoints = {10};
        p.attention.maxPageTokens = 30;
        p.device = device.toStdString();
        DecodeBenchParams one = p;
        p.batch = 3;
        auto single = runDecodeBench(one);
        auto r = runDecodeBench(p);
        QVERIFY2(r, r ? "" : r.status().message().c_str());
        QVERIFY(single);
        QCOMPARE(r->batch, 3);
        QCOMPARE(r->pagesDone, 12);
        QVERIFY2(r->note.empty(), r->note.c_str());
        QCOMPARE(int(r->checkpoints.size()), 1);
        QCOMPARE(r->peakKvBytes, 3 * single->peakKvBytes);
        QVERIFY(r->checkpoints[0].bytesPerStep > single->checkpoints[0].bytesPerStep);
        QVERIFY(r->tokensPerSecond > 0);
    }

    // A model whose visual tokens carry vocabulary ids with line-aligned positions (the shipped
    // reader's kind) is benchmarked too: the bench gives each token an id and each line an end.
    // Before, it fed no id column and the session refused the first page.
    void decodeBenchRunsAModelWithTokenIds() {
        DecodeBenchParams p;
        p.config = tinyDecoderConfig();
        makeLineAligned(p.config);
        p.pages = 12, p.pageTokens = 100, p.tokensPerPage = 6, p.checkpoints = {10};
        p.attention.maxPageTokens = 100;
        for (const auto mode : {AttentionMode::SrSwa, AttentionMode::RSwa, AttentionMode::Full}) {
            p.attention.mode = mode;
            auto r = runDecodeBench(p);
            QVERIFY2(r, r ? "" : r.status().message().c_str());
            QCOMPARE(r->pagesDone, 12);
            QCOMPARE(int(r->checkpoints.size()), 1);
            QVERIFY(r->checkpoints[0].attendedTokens > 0);
        }
    }

    // The spill file's directory cannot be used: feeding a page fails with a message naming it,
    // and the session is not left half-fed.
    void unusableSpillDirectoryIsAClearError() {
        const QByteArray saved = qgetenv("TMPDIR");
        qputenv("TMPDIR", "/nonexistent/quire-spill");
        auto model = std::make_shared<const ModelWeights>(randomModel(tinyDecoderConfig(), 9));
        AttentionParams p;
        p.maxPageTokens = 16;
        DecodeSession s(model, p);
        QVERIFY(s.begin({1}));
        const auto f = pageFeatures(0, 16, model->config.visualDim);
        const Status st = s.addPage(0, f.data(), 16);
        if (saved.isNull()) qunsetenv("TMPDIR");
        else qputenv("TMPDIR", saved);
        QVERIFY(!st);
        QCOMPARE(int(st.code()), int(ErrorCode::Io));
        QVERIFY2(QString::fromStdString(st.message()).contains("/nonexistent/quire-spill"), st.message().c_str());
        QCOMPARE(s.pagesAdded(), 0);
        QVERIFY(s.addPage(0, f.data(), 16));  // the directory is back: the same page goes in
    }

    void greedyBansRepeatedNgramsAndSeesLoops() {
        GreedySampler g({3, 100, 100, 4, 8});
        for (int t : {5, 6, 7, 5, 6}) g.push(t);
        std::vector<float> logits(10, 0.f);
        logits[7] = 5.f;  // would complete "5 6 7" a second time
        logits[2] = 1.f;
        QCOMPARE(g.pick(logits), 2);
        QVERIFY(!g.looping());
        GreedySampler loop({0, 100, 100, 4, 8});
        for (int i = 0; i < 12; ++i) loop.push(i % 3 == 0 ? 4 : 9);
        QVERIFY(loop.looping());
        QCOMPARE(loop.loopSpan(), 12);  // period 3, four times: the tokens the message quotes
        // With a minimum span (the reader's character tokens), a dotted leader of 20 is no loop;
        // 64 dots are.
        GreedySampler leader({0, 100, 100, 4, 64, 64});
        for (int i = 0; i < 20; ++i) leader.push(15);
        QVERIFY(!leader.looping());
        for (int i = 20; i < 64; ++i) leader.push(15);
        QVERIFY(leader.looping());
        QCOMPARE(leader.loopSpan(), 64);
        // A page that repeats the pages before it (a form, a heading) is no loop; repeating itself is.
        GreedySampler pages({0, 100, 100, 4, 8});
        for (int p = 0; p < 5; ++p) {
            pages.beginPage();
            for (int t : {3, 4, 5}) pages.push(t);
            QVERIFY(!pages.looping());
        }
        for (int i = 0; i < 3; ++i)
            for (int t : {3, 4, 5}) pages.push(t);
        QVERIFY(pages.looping());
    }

    // The rules keep only the tokens they look at: a long volume's history stays bounded, and the
    // decisions are those of the whole history.
    void greedyHistoryIsBoundedWithoutChangingDecisions() {
        const GreedyOptions o{4, 50, 100, 4, 8};
        GreedySampler g(o);
        std::vector<int> all;
        std::mt19937 rng(7);
        for (int i = 0; i < 5000; ++i) {
            const int t = int(rng() % 6);
            g.push(t), all.push_back(t);
            QVERIFY(int(g.history().size()) < 2 * g.memory());
            if (i % 97 == 0) {
                GreedySampler whole(o);
                whole.restoreHistory(all);  // the untrimmed history gives the same choice
                std::vector<float> logits(6);
                for (auto& l : logits) l = float(rng() % 100);
                QCOMPARE(g.pick(logits), whole.pick(logits));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestDecoder)
#include "tst_decoder.moc"
