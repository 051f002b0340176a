// Over 900 lines: one test program for the decoding runtime; its cases share the reference attention and model helpers.
// The decoding runtime on the CPU: model loading and its refusals, R-SWA against an independent
// masked full-attention reference, SR-SWA against R-SWA, constant KV memory, greedy decoding rules.
#include <cstring>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <bit>
#include <cmath>
#include <random>
#include <set>
#include <thread>

#include "decoder/kernels.h"
#include "quire/decoder/bench.h"
#include "quire/decoder/model.h"
#include "quire/decoder/safetensors.h"
#include "quire/decoder/session.h"
#include "test_util.h"

using namespace quire;
using namespace quire::decoder;
using namespace quire::test;

namespace {

ModelConfig tinyConfig() { return tinyDecoderConfig(); }

// SR-SWA budgets small enough that the tiny model's volumes leave pages behind the window and
// the gate chooses among them.
AttentionParams smallSrSwa() {
    AttentionParams p;
    p.mode = AttentionMode::SrSwa;
    p.recentTokens = 24;
    p.maxPageTokens = 40;
    p.gatedPages = 2;
    p.blocksPerGatedPage = 2;
    return p;
}

// Per layer, the attended positions in ascending order (the set, whatever order spans came in).
std::vector<std::vector<int64_t>> sorted(std::vector<std::vector<int64_t>> v) {
    for (auto& l : v) std::sort(l.begin(), l.end());
    return v;
}

// An independent reference: every token's keys and values recomputed from the full token list with
// an explicit visibility rule, naive loops, no blocks, no eviction.
struct RefToken {
    int kind;  // 0 sink, 1 visual, 2 generated
    int page, genIndex, token;
    std::vector<float> visual;
};

std::vector<float> referenceLogits(const ModelWeights& m, const std::vector<RefToken>& seq, int recent) {
    const ModelConfig& c = m.config;
    const int n = int(seq.size()), H = c.hiddenSize, D = c.headDim, G = c.groupSize();
    std::vector<std::vector<float>> x(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(H)));
    for (int i = 0; i < n; ++i) {
        if (seq[size_t(i)].kind == 1) {
            for (int r = 0; r < H; ++r) {
                double s = m.visualB[size_t(r)];
                for (int j = 0; j < c.visualDim; ++j) s += double(m.visualW[size_t(r) * c.visualDim + j]) * seq[size_t(i)].visual[size_t(j)];
                x[size_t(i)][size_t(r)] = float(s);
            }
        } else {
            for (int r = 0; r < H; ++r) x[size_t(i)][size_t(r)] = m.embed[size_t(seq[size_t(i)].token) * H + r];
        }
    }
    auto visible = [&](int i, int j) {
        const RefToken &a = seq[size_t(i)], &b = seq[size_t(j)];
        if (j > i) return false;
        if (b.kind == 0) return true;
        if (a.kind == 0) return false;
        if (a.kind == 1) return b.kind == 1 && b.page == a.page;
        if (b.kind == 1) return true;
        return b.genIndex > a.genIndex - recent;
    };
    auto matvec = [](const std::vector<float>& w, int rows, int cols, const std::vector<float>& v) {
        std::vector<float> out(static_cast<size_t>(rows));
        for (int r = 0; r < rows; ++r) {
            double s = 0;
            for (int j = 0; j < cols; ++j) s += double(w[size_t(r) * cols + j]) * v[size_t(j)];
            out[size_t(r)] = float(s);
        }
        return out;
    };
    auto norm = [&](const std::vector<float>& v, const std::vector<float>& w) {
        double ss = 0;
        for (float f : v) ss += double(f) * f;
        const double r = 1.0 / std::sqrt(ss / v.size() + c.rmsNormEps);
        std::vector<float> o(v.size());
        for (size_t i = 0; i < v.size(); ++i) o[i] = float(v[i] * r * w[i]);
        return o;
    };
    auto rope = [&](std::vector<float>& v, int off, int pos) {
        for (int i = 0; i < D / 2; ++i) {
            const double a = pos * std::pow(c.ropeTheta, -2.0 * i / D);
            const double x0 = v[size_t(off + i)], x1 = v[size_t(off + i + D / 2)];
            v[size_t(off + i)] = float(x0 * std::cos(a) - x1 * std::sin(a));
            v[size_t(off + i + D / 2)] = float(x0 * std::sin(a) + x1 * std::cos(a));
        }
    };
    for (const LayerWeights& L : m.layers) {
        std::vector<std::vector<float>> qs, ks, vs;
        for (int i = 0; i < n; ++i) {
            const auto hn = norm(x[size_t(i)], L.attnNorm);
            qs.push_back(matvec(L.wq, c.numHeads * D, H, hn));
            ks.push_back(matvec(L.wk, c.numKvHeads * D, H, hn));
            vs.push_back(matvec(L.wv, c.numKvHeads * D, H, hn));
            for (int hh = 0; hh < c.numHeads; ++hh) rope(qs.back(), hh * D, i);
            for (int g = 0; g < c.numKvHeads; ++g) rope(ks.back(), g * D, i);
        }
        for (int i = 0; i < n; ++i) {
            std::vector<float> att(size_t(c.numHeads) * D, 0.f);
            for (int hh = 0; hh < c.numHeads; ++hh) {
                const int g = hh / G;
                std::vector<double> w;
                std::vector<int> js;
                for (int j = 0; j < n; ++j)
                    if (visible(i, j)) {
                        double s = 0;
                        for (int d = 0; d < D; ++d) s += double(qs[size_t(i)][size_t(hh * D + d)]) * ks[size_t(j)][size_t(g * D + d)];
                        w.push_back(s / std::sqrt(double(D)));
                        js.push_back(j);
                    }
                const double mx = *std::max_element(w.begin(), w.end());
                double sum = 0;
                for (auto& e : w) sum += (e = std::exp(e - mx));
                for (size_t t = 0; t < js.size(); ++t)
                    for (int d = 0; d < D; ++d) att[size_t(hh * D + d)] += float(w[t] / sum * vs[size_t(js[t])][size_t(g * D + d)]);
            }
            const auto o = matvec(L.wo, H, c.numHeads * D, att);
            for (int r = 0; r < H; ++r) x[size_t(i)][size_t(r)] += o[size_t(r)];
            const auto hn = norm(x[size_t(i)], L.mlpNorm);
            auto gt = matvec(L.wGate, c.intermediateSize, H, hn);
            const auto up = matvec(L.wUp, c.intermediateSize, H, hn);
            for (size_t j = 0; j < gt.size(); ++j) gt[j] = float(gt[j] / (1.0 + std::exp(-gt[j])) * up[j]);
            const auto dn = matvec(L.wDown, H, c.intermediateSize, gt);
            for (int r = 0; r < H; ++r) x[size_t(i)][size_t(r)] += dn[size_t(r)];
        }
    }
    const auto hn = norm(x.back(), m.finalNorm);
    return matvec(m.embed, c.vocabSize, H, hn);
}

}  // namespace


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
        const ModelWeights m = randomModel(tinyConfig(), 7);
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
        ModelConfig c = tinyConfig();
        c.visualTokenIds = true;
        QCOMPARE(c.visualStride(), c.visualDim + 1);
        auto parsed = ModelConfig::fromJson(c.toJson(), "config.json");
        QVERIFY(parsed);
        QVERIFY(parsed->visualTokenIds);
        QVERIFY(!ModelConfig::fromJson(tinyConfig().toJson(), "config.json")->visualTokenIds);
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

    // Line-aligned positions survive config.json, and a config that cannot use them is refused.
    void lineAlignedConfigRoundTripsAndIsChecked() {
        ModelConfig c = tinyConfig();
        makeLineAligned(c);
        auto parsed = ModelConfig::fromJson(c.toJson(), "config.json");
        QVERIFY2(parsed, parsed.status().message().c_str());
        QCOMPARE(parsed->lineEndTokenIds, c.lineEndTokenIds);
        QCOMPARE(parsed->visualLineEndTokenId, 5);
        QVERIFY(!ModelConfig::fromJson(tinyConfig().toJson(), "config.json")->lineAlignedPositions());
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
        ModelWeights m = randomModel(tinyConfig(), 3);
        const QString dir = m_dir.filePath("broken-" + damage);
        if (damage == "nan") m.layers[0].wv[5] = NAN;
        QVERIFY(saveModel(m, dir.toStdString()));
        const QString st = dir + "/model.safetensors";
        std::string bytes = readFile(st);
        if (damage == "truncate") bytes.resize(bytes.size() - 100);
        if (damage == "header") bytes[6] = '\x7f';
        if (damage == "dtype") bytes.replace(bytes.find("\"F32\""), 5, "\"I8\" ");
        if (damage == "shape") {
            ModelConfig c = tinyConfig();
            c.intermediateSize = 40;
            writeFile(dir + "/config.json", c.toJson());
        }
        if (damage == "missing") bytes.replace(bytes.find("layers.1.up_proj.weight"), 6, "LAYERS");
        if (damage == "config") {
            ModelConfig c = tinyConfig();
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

    void rswaMatchesMaskedFullAttention() {
        const ModelWeights m = randomModel(tinyConfig(), 11);
        auto model = std::make_shared<const ModelWeights>(m);
        AttentionParams p;
        p.mode = AttentionMode::RSwa;
        p.recentTokens = 5;
        DecodeSession s(model, p);
        std::vector<RefToken> seq;
        const std::vector<int> sinks = {1, 7, 9};
        QVERIFY(s.begin(sinks));
        for (int t : sinks) seq.push_back({0, -1, -1, t, {}});
        int gen = 0;
        for (int page = 0; page < 3; ++page) {
            const auto f = pageFeatures(page, 20, m.config.visualDim);
            QVERIFY(s.addPage(page, f.data(), 20));
            for (int i = 0; i < 20; ++i)
                seq.push_back({1, page, -1, 0, std::vector<float>(f.begin() + i * m.config.visualDim, f.begin() + (i + 1) * m.config.visualDim)});
            for (int k = 0; k < 9; ++k) {
                const int token = (k == 8) ? m.config.pageBreakTokenId : 10 + (gen * 7) % 30;
                auto r = s.step(token);
                QVERIFY(r);
                seq.push_back({2, page, gen++, token, {}});
                const auto ref = referenceLogits(m, seq, p.recentTokens);
                QVERIFY2(relDiff(*r->logits, ref) < 1e-4, qPrintable(QString("step %1: %2").arg(gen).arg(relDiff(*r->logits, ref))));
            }
        }
    }

    // The PyTorch implementation of the family (tools/train/model.py), with the runtime's masks,
    // and the C++ runtime give the same logits on the same exported weights
    // (tests/fixtures/reader_parity, made by tools/train/make_parity_fixture.py).
    void matchesThePyTorchReader_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<QString>("fixture");
        // reader_parity_ids: the visual tokens also carry vocabulary ids (visual_token_ids).
        // reader_parity_aligned: ids and page-aligned positions (page_aligned_positions).
        // reader_parity_lines: ids and line-aligned positions (line_end_token_ids).
        // reader_golden: the shipped reader (resources/models/reader) against logits PyTorch gave
        // for it, at a fixed set of ids (make_parity_fixture.py --trained).
        for (const char* fixture : {"reader_parity", "reader_parity_ids", "reader_parity_aligned", "reader_parity_lines",
                                    "reader_golden"}) {
            QTest::addRow("%s, full", fixture) << "full" << fixture;
            QTest::addRow("%s, rswa", fixture) << "rswa" << fixture;
            QTest::addRow("%s, srswa, covering budgets", fixture) << "srswa" << fixture;
        }
    }
    void matchesThePyTorchReader() {
        QFETCH(QString, mode);
        QFETCH(QString, fixture);
        const QString dir = sourceDir() + "/tests/fixtures/" + fixture;
        const bool golden = fixture == "reader_golden";
        if (golden && !QFile::exists(dir + "/case.json")) QSKIP("no reader model is shipped");
        auto model = loadModel((golden ? sourceDir() + "/resources/models/reader" : dir).toStdString());
        QVERIFY2(model, model.status().message().c_str());
        QFile f(dir + "/case.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject c = QJsonDocument::fromJson(f.readAll()).object();
        auto ints = [](const QJsonValue& v) {
            std::vector<int> out;
            for (const auto& x : v.toArray()) out.push_back(x.toInt());
            return out;
        };
        auto page = [&](int k) {
            std::vector<float> out;
            for (const auto& row : c["pages"].toArray()[k].toArray())
                for (const auto& x : row.toArray()) out.push_back(float(x.toDouble()));
            return out;
        };
        AttentionParams p;
        p.mode = mode == "full" ? AttentionMode::Full : mode == "rswa" ? AttentionMode::RSwa : AttentionMode::SrSwa;
        p.recentTokens = c["recent"].toInt();
        p.windowBefore = 8;  // SR-SWA's window covers both pages: it must equal R-SWA
        const QJsonArray expected = c["logits"].toObject()[mode == "full" ? "full" : "rswa"].toArray();
        DecodeSession s(*model, p);
        QVERIFY(s.begin(ints(c["sinks"])));
        const auto p0 = page(0), p1 = page(1);
        const int stride = (*model)->config.visualStride();
        if (!golden) {
            QCOMPARE((*model)->config.visualTokenIds, fixture != "reader_parity");
            QCOMPARE((*model)->config.pageAlignedPositions, fixture.endsWith("_aligned") || fixture.endsWith("_lines"));
            QCOMPARE((*model)->config.lineAlignedPositions(), fixture.endsWith("_lines"));
        }
        std::vector<int> watched;  // golden: the ids whose logits the case holds
        for (const auto& x : c["ids"].toArray()) watched.push_back(x.toInt());
        QVERIFY(s.addPage(0, p0.data(), int(p0.size()) / stride));
        int step = 0;
        double worst = 0;
        auto check = [&](int token) {
            auto r = s.step(token);
            QVERIFY(r);
            std::vector<float> want;
            for (const auto& x : expected[step++].toArray()) want.push_back(float(x.toDouble()));
            std::vector<float> got = *r->logits;
            if (!watched.empty()) {
                got.clear();
                for (int id : watched) got.push_back((*r->logits)[size_t(id)]);
            }
            worst = std::max(worst, relDiff(got, want));
        };
        for (int t : ints(c["gen0"])) check(t);
        QVERIFY(s.addPage(1, p1.data(), int(p1.size()) / stride));
        for (int t : ints(c["gen1"])) check(t);
        QCOMPARE(step, expected.size());
        qInfo("%s: worst relative difference to PyTorch %.2e over %d steps", qPrintable(mode), worst, step);
        QVERIFY(worst < 1e-4);
    }

    // Training and the runtime attend the same positions: tools/train/srswa.py replays SR-SWA (the
    // window with one page of look-ahead, the page gate, the Quest selector, the ring, the position
    // frame) over a volume of eight pages under small budgets, and DecodeSession, fed the same way,
    // must attend exactly the positions the replay lists for every generated token and layer, and
    // compute its logits (tests/fixtures/reader_srswa, made by make_srswa_parity_fixture.py).
    void srswaAttendsWhatTrainingAttends_data() {
        QTest::addColumn<bool>("drafts");
        QTest::newRow("steps") << false;
        QTest::newRow("drafts") << true;  // each page's text fed as drafts, many tokens a pass
    }
    void srswaAttendsWhatTrainingAttends() {
        QFETCH(bool, drafts);
        const QString dir = sourceDir() + "/tests/fixtures/reader_srswa";
        auto model = loadModel(dir.toStdString());
        QVERIFY2(model, model.status().message().c_str());
        QFile f(dir + "/case.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject c = QJsonDocument::fromJson(f.readAll()).object();
        const QJsonObject pat = c["pattern"].toObject();
        AttentionParams p;
        p.mode = AttentionMode::SrSwa;
        p.windowBefore = pat["window_before"].toInt();
        p.windowAfter = pat["window_after"].toInt();
        p.gatedPages = pat["gated_pages"].toInt();
        p.blocksPerGatedPage = pat["blocks_per_gated_page"].toInt();
        p.gateRefreshSteps = pat["gate_refresh_steps"].toInt();
        p.gateQueryTokens = pat["gate_query_tokens"].toInt();
        p.gateHold = float(pat["gate_hold"].toDouble());
        p.recentTokens = pat["recent"].toInt();
        p.maxPageTokens = 64;
        DecodeSession s(*model, p);
        std::vector<int> sinks;
        for (const auto& x : c["sinks"].toArray()) sinks.push_back(x.toInt());
        QVERIFY(s.begin(sinks));
        const QJsonArray attended = c["attended"].toArray(), logits = c["logits"].toArray();
        int step = 0, lookAheadSteps = 0, passes = 0;
        double worst = 0;
        QString mismatch;
        // Each generated step: its attended positions per layer against the replay's, its logits.
        auto check = [&](const StepResult& r) {
            if (step >= attended.size()) return false;
            const auto got = s.lastAttendedPositions();
            const QJsonArray want = attended[step].toArray();
            for (size_t l = 0; l < got.size() && mismatch.isEmpty(); ++l) {
                std::vector<int64_t> g = got[l], w;
                std::sort(g.begin(), g.end());
                for (const auto& run : want[int(l)].toArray())
                    for (int k = 0; k < run.toArray()[1].toInt(); ++k) w.push_back(run.toArray()[0].toInt() + k);
                const auto at = std::mismatch(g.begin(), g.end(), w.begin(), w.end());
                if (at.first != g.end() || at.second != w.end())
                    mismatch = QString("step %1, layer %2: the runtime attends %3 positions, training %4; first difference "
                                       "at the %5th: %6 against %7")
                                   .arg(step).arg(l).arg(g.size()).arg(w.size()).arg(at.first - g.begin())
                                   .arg(at.first != g.end() ? *at.first : -1).arg(at.second != w.end() ? *at.second : -1);
            }
            if (got.size() != size_t(want.size())) mismatch = "layer count";
            lookAheadSteps += s.stats().position < int64_t(got[0].back());
            std::vector<float> wantLogits;
            for (const auto& x : logits[step].toArray()) wantLogits.push_back(float(x.toDouble()));
            worst = std::max(worst, relDiff(*r.logits, wantLogits));
            ++step;
            return mismatch.isEmpty();
        };
        std::vector<int> text;  // the current page's tokens, fed when the next page comes or at the end
        auto feedText = [&]() {
            for (size_t i = 0; i < text.size() && mismatch.isEmpty();) {
                if (!drafts) {
                    auto r = s.step(text[i++]);
                    QVERIFY(r);
                    check(*r);
                    continue;
                }
                auto fed = s.stepDraft(std::vector<int>(text.begin() + long(i), text.end()),
                                       [&](int, const StepResult& r) { return check(r); });
                QVERIFY(fed);
                i += size_t(*fed);
                ++passes;
            }
            text.clear();
        };
        for (const auto& ev : c["events"].toArray()) {
            const QJsonObject e = ev.toObject();
            if (!e.contains("page")) {
                text.push_back(e["token"].toInt());
                continue;
            }
            feedText();
            std::vector<float> rows;
            for (const auto& row : e["rows"].toArray())
                for (const auto& x : row.toArray()) rows.push_back(float(x.toDouble()));
            QVERIFY(s.addPage(e["page"].toInt(), rows.data(), int(rows.size()) / (*model)->config.visualStride()));
        }
        feedText();
        QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
        QCOMPARE(step, int(attended.size()));
        qInfo("%d steps (%d draft passes), %d attending a page ahead; worst relative logit difference %.2e", step, passes,
              lookAheadSteps, worst);
        QVERIFY(lookAheadSteps > step / 2);  // the look-ahead page is in the set
        if (drafts) QVERIFY(passes < step);  // drafts took several tokens a pass
        QVERIFY(worst < 1e-4);
    }

    void srswaWithCoveringBudgetsEqualsRswa_data() {
        QTest::addColumn<int>("maxPositions");
        QTest::addColumn<bool>("pageAligned");
        QTest::addColumn<bool>("lineAligned");
        QTest::newRow("absolute positions") << (1 << 20) << false << false;
        QTest::newRow("framed positions") << 256 << false << false;  // the volume spans far more than the trained range
        // Text positions overlap their page's: framing keeps each page-and-text interval whole.
        QTest::newRow("page-aligned, absolute") << (1 << 20) << true << false;
        QTest::newRow("page-aligned, framed") << 256 << true << false;
        // Positions jump back to each line's start: generated blocks start at every line.
        QTest::newRow("line-aligned, absolute") << (1 << 20) << true << true;
        QTest::newRow("line-aligned, framed") << 256 << true << true;
    }
    void srswaWithCoveringBudgetsEqualsRswa() {
        QFETCH(int, maxPositions);
        QFETCH(bool, pageAligned);
        QFETCH(bool, lineAligned);
        ModelConfig cfg = tinyConfig();
        cfg.maxPositions = maxPositions;
        cfg.pageAlignedPositions = pageAligned;
        if (lineAligned) makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 5));
        AttentionParams r;
        r.mode = AttentionMode::RSwa;
        r.recentTokens = 32;
        AttentionParams s = r;
        s.mode = AttentionMode::SrSwa;
        s.gatedPages = 1000;        // every earlier page ...
        s.blocksPerGatedPage = 100; // ... and every block of it
        s.maxPageTokens = 24;
        DecodeSession a(model, r), b(model, s);
        QVERIFY(a.begin({1, 5}) && b.begin({1, 5}));
        GreedySampler ga({3, 64, 1 << 30, 1000, 1}), gb({3, 64, 1 << 30, 1000, 1});
        int fed = -1, token = cfg.bosTokenId, worst = 0;
        double worstDiff = 0;
        for (int step = 0; step < 2000; ++step) {
            const int page = a.stats().currentPage;
            while (fed < page + r.windowAfter) {
                ++fed;
                const auto f = lineAligned ? pageWithIds(fed, 24, cfg.visualDim, 5) : pageFeatures(fed, 24, cfg.visualDim);
                QVERIFY(a.addPage(fed, f.data(), 24) && b.addPage(fed, f.data(), 24));
            }
            auto ra = a.step(token);
            auto rb = b.step(token);
            QVERIFY(ra && rb);
            const double diff = relDiff(*rb->logits, *ra->logits);
            if (diff > worstDiff) worstDiff = diff, worst = step;
            const int na = ga.pick(*ra->logits), nb = gb.pick(*rb->logits);
            QCOMPARE(nb, na);
            ga.push(na), gb.push(nb);
            // A page break every 40 tokens keeps the volume moving; line ends every 7 move the text.
            token = (step % 40 == 39) ? cfg.pageBreakTokenId : lineAligned && step % 7 == 6 ? 4 + 2 * (step % 2) : na;
        }
        QVERIFY2(worstDiff <= 1e-3, qPrintable(QString("logits differ by %1 at step %2").arg(worstDiff).arg(worst)));
        QVERIFY(a.stats().currentPage >= 40);
    }

    // Pages behind the window are dropped from memory and computed again from the spill file when
    // the gate picks them: the same logits and attended positions, bit for bit, as keeping every
    // page's keys and values in host memory (what measureRecall does for its probe).
    void spilledPagesComputeAgainExactly_data() {
        QTest::addColumn<int>("maxPositions");
        QTest::addColumn<bool>("lineAligned");
        QTest::newRow("absolute") << (1 << 20) << false;
        QTest::newRow("framed, line-aligned") << 256 << true;
    }
    void spilledPagesComputeAgainExactly() {
        QFETCH(int, maxPositions);
        QFETCH(bool, lineAligned);
        ModelConfig cfg = tinyConfig();
        cfg.maxPositions = maxPositions;
        if (lineAligned) makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 31));
        AttentionParams kept = smallSrSwa();
        kept.measureRecall = true;  // every page's keys and values stay in host memory (probe off)
        AttentionParams spilled = kept;
        spilled.measureRecall = false;
        spilled.gatedCachePages = 1;  // as few as the gate needs: pages are computed again often
        DecodeSession a(model, kept), b(model, spilled);
        QVERIFY(a.begin({1, 5}) && b.begin({1, 5}));
        int fed = -1, token = cfg.bosTokenId;
        for (int step = 0; step < 1500; ++step) {
            const int page = a.stats().currentPage;
            while (fed < page + kept.windowAfter) {
                ++fed;
                const int n = 20 + fed % 3 * 10;  // pages of 20, 30 and 40 tokens
                const auto f = lineAligned ? pageWithIds(fed, n, cfg.visualDim, 5) : pageFeatures(fed, n, cfg.visualDim);
                QVERIFY(a.addPage(fed, f.data(), n) && b.addPage(fed, f.data(), n));
            }
            auto ra = a.step(token);
            auto rb = b.step(token);
            QVERIFY(ra && rb);
            QVERIFY2(*ra->logits == *rb->logits, qPrintable(QString("logits differ at step %1").arg(step)));
            QCOMPARE(b.lastAttendedPositions(), a.lastAttendedPositions());
            const int next = int(std::max_element(ra->logits->begin() + 6, ra->logits->end()) - ra->logits->begin());
            token = (step % 30 == 29) ? cfg.pageBreakTokenId : lineAligned && step % 7 == 6 ? 4 + 2 * (step % 2) : next;
        }
        const SessionStats sa = a.stats(), sb = b.stats();
        QVERIFY(sa.currentPage >= 45);
        QCOMPARE(sb.poolUsedBytes, sa.poolUsedBytes);
        QVERIFY(sb.recomputedPages > sa.currentPage);  // pages came back many times
        QVERIFY(sb.spillBytes > 0);
        QVERIFY(sb.hostBytes * 10 < sa.hostBytes);    // two gated pages against every page behind the window
        qInfo("%d pages, %lld pages computed again; host memory %zu bytes (kept: %zu), spill file %zu bytes",
              sb.currentPage, (long long)sb.recomputedPages, sb.hostBytes, sa.hostBytes, sb.spillBytes);
    }

    // A page that leaves the window takes its keys and values into the gated pages' cache: with a
    // cache that holds every page of a short volume, no page is computed again, and the logits are
    // those of a session that keeps every page in host memory.
    void pagesLeavingTheWindowAreNotComputedAgain() {
        ModelConfig cfg = tinyConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 37));
        AttentionParams kept = smallSrSwa();
        kept.measureRecall = true;
        AttentionParams cached = kept;
        cached.measureRecall = false;
        cached.gatedCachePages = 64;
        DecodeSession a(model, kept), b(model, cached);
        QVERIFY(a.begin({1, 5}) && b.begin({1, 5}));
        int fed = -1, token = cfg.bosTokenId;
        for (int step = 0; step < 300; ++step) {
            const int page = a.stats().currentPage;
            while (fed < page + kept.windowAfter) {
                ++fed;
                const auto f = pageFeatures(fed, 30, cfg.visualDim);
                QVERIFY(a.addPage(fed, f.data(), 30) && b.addPage(fed, f.data(), 30));
            }
            auto ra = a.step(token);
            auto rb = b.step(token);
            QVERIFY(ra && rb);
            QVERIFY2(*ra->logits == *rb->logits, qPrintable(QString("logits differ at step %1").arg(step)));
            token = (step % 20 == 19) ? cfg.pageBreakTokenId
                                      : int(std::max_element(ra->logits->begin() + 6, ra->logits->end()) - ra->logits->begin());
        }
        QVERIFY(b.stats().currentPage >= 14);
        QCOMPARE(b.stats().recomputedPages, int64_t(0));
    }

    // The gate's hold: a page it holds stays picked unless another beats it by more than
    // gateHold. Without a hold the picks flip among near-equal pages as the query drifts; with an
    // unbeatable one, the gate keeps its first full set of pages for the rest of the volume (they
    // stay behind the window); the default lies between.
    void gateHoldsItsPages() {
        const ModelConfig cfg = tinyConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 31));
        auto changes = [&](float hold, std::vector<int>* last) {
            AttentionParams p = smallSrSwa();
            p.gateRefreshSteps = 4;
            p.gateHold = hold;
            DecodeSession s(model, p);
            if (!s.begin({1, 5})) return -1;
            int fed = -1, token = cfg.bosTokenId, changed = 0;
            std::vector<int> before;
            for (int step = 0; step < 1200; ++step) {
                while (fed < s.stats().currentPage + p.windowAfter) {
                    ++fed;
                    const int n = 20 + fed % 3 * 10;
                    const auto f = pageFeatures(fed, n, cfg.visualDim);
                    if (!s.addPage(fed, f.data(), n)) return -1;
                }
                auto r = s.step(token);
                if (!r) return -1;
                const std::vector<int> now = s.gatedPages();
                if (before.size() == size_t(p.gatedPages) && now != before) ++changed;
                before = now;
                const int next = int(std::max_element(r->logits->begin() + 6, r->logits->end()) - r->logits->begin());
                token = step % 30 == 29 ? cfg.pageBreakTokenId : next;
            }
            if (last) *last = before;
            return changed;
        };
        std::vector<int> held;
        const int free = changes(0.f, nullptr), byDefault = changes(AttentionParams{}.gateHold, nullptr),
                  never = changes(1e9f, &held);
        qInfo("gate set changes over 1,200 steps (40 pages): no hold %d, default hold %d, unbeatable hold %d", free,
              byDefault, never);
        QVERIFY(free > 0 && byDefault >= 0);
        QVERIFY(byDefault < free);
        QCOMPARE(never, 0);
        QCOMPARE(int(held.size()), 2);
    }

    // The page prefill's matrix products give what the decode step's attention gives token by
    // token: pages longer than one 256-row chunk, several sinks, absolute and framed positions.
    void batchedPrefillMatchesTokenByToken_data() {
        QTest::addColumn<int>("maxPositions");
        QTest::newRow("absolute") << (1 << 20);
        QTest::newRow("framed") << 256;
    }
    void batchedPrefillMatchesTokenByToken() {
        QFETCH(int, maxPositions);
        ModelConfig cfg = tinyConfig();
        cfg.maxPositions = maxPositions;
        cfg.pageAlignedPositions = true;
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 17));
        AttentionParams fast;
        fast.mode = AttentionMode::RSwa;
        fast.maxPageTokens = 700;
        AttentionParams ref = fast;
        ref.referencePrefill = true;
        DecodeSession a(model, fast), b(model, ref);
        QVERIFY(a.begin({1, 7, 8}) && b.begin({1, 7, 8}));
        double worst = 0;
        for (int page = 0; page < 3; ++page) {
            const int count = page == 1 ? 37 : 600;
            const auto f = pageFeatures(page, count, cfg.visualDim);
            QVERIFY(a.addPage(page, f.data(), count) && b.addPage(page, f.data(), count));
            for (int k = 0; k < 5; ++k) {
                const int token = k == 0 && page ? cfg.pageBreakTokenId : 10 + k;
                auto ra = a.step(token);
                auto rb = b.step(token);
                QVERIFY(ra && rb);
                worst = std::max(worst, relDiff(*ra->logits, *rb->logits));
            }
        }
        qInfo("worst relative difference %.2e", worst);
        QVERIFY(worst < 1e-4);
    }

    // A page's prefill on two threads (rows of its matrix products, KV groups of its attention):
    // the same gate summaries and the same logits after it as on one, to the bit, for pages longer
    // than the packed products take (64 rows) and than the attention's row chunks (256), with and
    // without token ids among the visual features.
    void twoThreadsPrefillWhatOneDoes() {
        for (const bool lineAligned : {false, true}) {
            ModelConfig cfg = tinyConfig();
            if (lineAligned) makeLineAligned(cfg);
            auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 31));
            AttentionParams p;
            p.maxPageTokens = 400;
            AttentionParams p2 = p;
            p2.threads = 2;
            DecodeSession a(model, p), b(model, p2);
            QVERIFY(a.begin({1, 5}));
            QVERIFY(b.begin({1, 5}));
            const int counts[] = {300, 203, 70};
            for (int page = 0; page < 3; ++page) {
                const auto f = lineAligned ? pageWithIds(page, counts[page], cfg.visualDim, 5)
                                           : pageFeatures(page, counts[page], cfg.visualDim);
                QVERIFY(a.addPage(page, f.data(), counts[page]));
                QVERIFY(b.addPage(page, f.data(), counts[page]));
                const auto sa = a.pageSummary(page), sb = b.pageSummary(page);
                QVERIFY(!sa.empty());
                QVERIFY(sa.size() == sb.size() && std::memcmp(sa.data(), sb.data(), sa.size() * sizeof(float)) == 0);
            }
            int token = cfg.bosTokenId;
            for (int i = 0; i < 24; ++i) {
                auto ra = a.step(token);
                auto rb = b.step(token);
                QVERIFY(ra && rb);
                QVERIFY(std::memcmp(ra->logits->data(), rb->logits->data(), ra->logits->size() * sizeof(float)) == 0);
                token = 7 + (token * 13 + i) % (cfg.vocabSize - 7);
            }
        }
    }

    // AttentionParams::threads 2 splits a draft pass (attention by KV group, the weights and the LM
    // head by rows) between two threads: the same logits to the bit, the same attended tokens and
    // the same state as one thread, with gated, framed and line-aligned spans in the drafts.
    void twoThreadsComputeWhatOneDoes() {
        ModelConfig cfg = tinyConfig();
        cfg.maxPositions = 160;
        cfg.pageAlignedPositions = true;
        makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 29));
        AttentionParams p;
        p.recentTokens = 20;
        p.windowBefore = 1, p.windowAfter = 1;
        p.gatedPages = 2, p.blocksPerGatedPage = 1;
        p.maxPageTokens = 40;
        p.trackAttention = true;
        const int pageTokens = 40, steps = 400;
        AttentionParams p2 = p;
        p2.threads = 2;
        DecodeSession a(model, p), b(model, p2);
        QVERIFY(a.begin({1, 5}));
        QVERIFY(b.begin({1, 5}));
        int fed = -1, at = 0, token = cfg.bosTokenId, compared = 0;
        while (at < steps) {
            const int target = a.stats().currentPage + (token == cfg.pageBreakTokenId ? 1 : 0) + p.windowAfter;
            while (fed < target) {
                ++fed;
                const auto f = pageWithIds(fed, pageTokens, cfg.visualDim, 5);
                QVERIFY(a.addPage(fed, f.data(), pageTokens));
                QVERIFY(b.addPage(fed, f.data(), pageTokens));
            }
            // A draft of up to 12: page breaks every 45 tokens, written line ends every 7.
            std::vector<int> draft{token};
            for (int j = at + 1; j < at + 12 && j % 45 != 0; ++j)
                draft.push_back(j % 7 == 6 ? 4 + 2 * (j % 2) : 7 + (j * 11) % (cfg.vocabSize - 7));
            std::vector<std::vector<float>> logitsA;
            std::vector<int> attendedA;
            std::vector<std::vector<std::vector<int64_t>>> positionsA;
            auto fedA = a.stepDraft(draft, [&](int i, const StepResult& r) {
                logitsA.push_back(*r.logits);
                attendedA.push_back(r.attendedVisual);
                positionsA.push_back(a.lastAttendedPositions());
                return i % 5 != 4;  // a guess refused now and then
            });
            QVERIFY(fedA);
            auto fedB = b.stepDraft(draft, [&](int i, const StepResult& r) {
                const size_t n = size_t(i);
                if (n >= logitsA.size()) return false;
                const bool same = r.logits->size() == logitsA[n].size() &&
                                  std::memcmp(r.logits->data(), logitsA[n].data(), logitsA[n].size() * sizeof(float)) == 0 &&
                                  r.attendedVisual == attendedA[n] && b.lastAttendedPositions() == positionsA[n];
                if (same) ++compared;
                else qWarning("token %d: two threads computed otherwise than one", at + i);
                return i % 5 != 4;
            });
            QVERIFY(fedB);
            QCOMPARE(*fedB, *fedA);
            at += *fedA;
            const int last = draft[size_t(*fedA) - 1];
            token = at % 45 == 0 ? cfg.pageBreakTokenId : 7 + (last * 5 + at) % (cfg.vocabSize - 7);
        }
        QCOMPARE(compared, at);
        QCOMPARE(b.stats().position, a.stats().position);
        QCOMPARE(b.stats().currentPage, a.stats().currentPage);
        QCOMPARE(b.gatedPages(), a.gatedPages());
        QVERIFY(a.stats().currentPage >= 8);
        QVERIFY(!a.gatedPages().empty());
    }

    // Draft verification computes what plain steps compute: a session fed a volume token by token
    // and one fed the same tokens as drafts (with wrong guesses among them, which are not fed)
    // give the same logits, the same attended positions and most-attended visual tokens, and end
    // in the same state. Small budgets so that the gate, the block selector, eviction and (framed)
    // position frames all act; line-aligned positions move the text.
    void draftStepsMatchPlainSteps_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<int>("maxPositions");
        QTest::addColumn<bool>("lineAligned");
        QTest::addColumn<int>("rotaryCache");  // 0: the default
        QTest::newRow("srswa") << int(AttentionMode::SrSwa) << (1 << 20) << false << 0;
        QTest::newRow("srswa framed, line-aligned") << int(AttentionMode::SrSwa) << 160 << true << 0;
        // The rotary cache cleared inside draft passes (a pointer into it once outlived a
        // clearing: the text then varied from run to run).
        QTest::newRow("srswa framed, rotary cache of 3") << int(AttentionMode::SrSwa) << 160 << true << 3;
        QTest::newRow("rswa") << int(AttentionMode::RSwa) << (1 << 20) << true << 0;
        QTest::newRow("full") << int(AttentionMode::Full) << (1 << 20) << false << 0;
    }
    void draftStepsMatchPlainSteps() {
        QFETCH(int, mode);
        QFETCH(int, maxPositions);
        QFETCH(bool, lineAligned);
        QFETCH(int, rotaryCache);
        ModelConfig cfg = tinyConfig();
        cfg.maxPositions = maxPositions;
        cfg.pageAlignedPositions = true;
        if (lineAligned) makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 23));
        AttentionParams p;
        p.mode = AttentionMode(mode);
        p.recentTokens = 20;
        p.windowBefore = 1, p.windowAfter = 1;
        p.gatedPages = 2, p.blocksPerGatedPage = 1;
        p.maxPageTokens = 40;
        p.trackAttention = true;
        const int pageTokens = 40, steps = 500;
        auto page = [&](int n) { return lineAligned ? pageWithIds(n, pageTokens, cfg.visualDim, 5) : pageFeatures(n, pageTokens, cfg.visualDim); };
        // Pages are added ahead of the step that turns to them, as a reader does.
        auto feedPages = [&](DecodeSession& s, int& fed, int input) {
            const int target = s.stats().currentPage + (input == cfg.pageBreakTokenId ? 1 : 0) + p.windowAfter;
            while (fed < target) {
                ++fed;
                const auto f = page(fed);
                if (!s.addPage(fed, f.data(), pageTokens)) return false;
            }
            return true;
        };
        // The plain run: inputs, logits, attended positions and visual tokens, step by step.
        DecodeSession a(model, p);
        QVERIFY(a.begin({1, 5}));
        std::vector<int> inputs;
        std::vector<std::vector<float>> logits;
        std::vector<std::vector<std::vector<int64_t>>> positions;
        std::vector<int> attended;
        int fedA = -1, token = cfg.bosTokenId;
        for (int s = 0; s < steps; ++s) {
            QVERIFY(feedPages(a, fedA, token));
            auto r = a.step(token);
            QVERIFY(r);
            inputs.push_back(token);
            logits.push_back(*r->logits);
            positions.push_back(a.lastAttendedPositions());
            attended.push_back(r->attendedVisual);
            const int best = int(std::max_element(r->logits->begin(), r->logits->end()) - r->logits->begin());
            token = (s % 45 == 44) ? cfg.pageBreakTokenId : lineAligned && s % 7 == 6 ? 4 + 2 * (s % 2) : best;
        }
        // The same tokens as drafts of up to 12, every 13th guess wrong.
        DecodeSession b(model, p);
        if (rotaryCache > 0) b.setRotaryCacheLimit(size_t(rotaryCache));
        QVERIFY(b.begin({1, 5}));
        int fedB = -1, at = 0, calls = 0, longest = 0, positionsDiffer = 0, attendedDiffer = 0;
        double worst = 0;
        while (at < steps) {
            QVERIFY(feedPages(b, fedB, inputs[size_t(at)]));
            std::vector<int> draft;
            for (int j = at; j < std::min(steps, at + 12); ++j)
                draft.push_back(j > at && j % 13 == 0 ? (inputs[size_t(j)] + 1) % cfg.vocabSize : inputs[size_t(j)]);
            auto fed = b.stepDraft(draft, [&](int i, const StepResult& r) {
                const size_t s = size_t(at + i);
                worst = std::max(worst, relDiff(*r.logits, logits[s]));
                attendedDiffer += r.attendedVisual != attended[s];
                positionsDiffer += sorted(b.lastAttendedPositions()) != sorted(positions[s]);
                return size_t(i) + 1 < draft.size() && draft[size_t(i) + 1] == inputs[s + 1];
            });
            QVERIFY(fed);
            ++calls, longest = std::max(longest, *fed);
            at += *fed;
        }
        QCOMPARE(at, steps);
        QCOMPARE(positionsDiffer, 0);
        QCOMPARE(attendedDiffer, 0);
        qInfo("%d steps in %d calls (longest %d), worst relative logit difference %.2e", steps, calls, longest, worst);
        QVERIFY2(worst < 1e-4, qPrintable(QString("logits differ by %1").arg(worst)));
        QVERIFY(calls < steps / 3);  // the drafts were taken many tokens at a time
        QCOMPARE(b.stats().position, a.stats().position);
        QCOMPARE(b.stats().currentPage, a.stats().currentPage);
        QCOMPARE(b.stats().poolUsedBytes, a.stats().poolUsedBytes);
        QVERIFY(a.stats().currentPage >= 10);
    }

    // A batch of sessions stepped together computes what each computes alone, bit for bit: six
    // volumes on one model, in SR-SWA (framed positions and tracking among them), R-SWA and full
    // attention, each turning its pages at its own pace; one on the mirror device (which takes its
    // own steps inside the batch); the first with two threads (the sessions' attention split
    // between them). Then the batch's refusals.
    void batchedStepsMatchSessionsAlone() {
        ModelConfig cfg = tinyConfig();
        cfg.maxPositions = 160;
        cfg.pageAlignedPositions = true;
        makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 31));
        auto params = [&](int i) {
            AttentionParams p;
            p.mode = i == 3 ? AttentionMode::RSwa : i == 4 ? AttentionMode::Full : AttentionMode::SrSwa;
            p.recentTokens = 20;
            p.windowBefore = 1, p.windowAfter = 1;
            p.gatedPages = 2, p.blocksPerGatedPage = 1;
            p.maxPageTokens = 40;
            p.trackAttention = i != 5;
            p.threads = i == 0 ? 2 : 1;
            if (i == 5) p.device = StepDevice::Mirror;
            return p;
        };
        constexpr int kSessions = 6, kSteps = 300, kPageTokens = 40;
        const int breakEvery[kSessions] = {45, 31, 52, 40, 27, 38};
        struct Run {
            std::unique_ptr<DecodeSession> s;
            int fed = -1, token = 0;
        };
        auto start = [&](std::vector<Run>& runs) {
            for (int i = 0; i < kSessions; ++i) {
                runs.push_back({std::make_unique<DecodeSession>(model, params(i)), -1, cfg.bosTokenId});
                QVERIFY(runs.back().s->begin({1, 5, 6 + i}));
            }
        };
        auto feed = [&](Run& r, int i) {
            const int target = r.s->stats().currentPage + (r.token == cfg.pageBreakTokenId ? 1 : 0) + 1;
            while (r.fed < target) {
                ++r.fed;
                const auto f = pageWithIds(r.fed + 100 * i, kPageTokens, cfg.visualDim, 5);
                if (!r.s->addPage(r.fed, f.data(), kPageTokens)) return false;
            }
            return true;
        };
        auto next = [&](const StepResult& r, int i, int step) {
            const int best = int(std::max_element(r.logits->begin(), r.logits->end()) - r.logits->begin());
            return step % breakEvery[i] == breakEvery[i] - 1 ? cfg.pageBreakTokenId : step % 7 == 6 ? 4 + 2 * (step % 2) : best;
        };
        // Alone: each session's logits, attended positions and visual tokens, step by step.
        std::vector<Run> alone, batch;
        start(alone);
        std::vector<std::vector<std::vector<float>>> logits(kSessions);
        std::vector<std::vector<std::vector<std::vector<int64_t>>>> positions(kSessions);
        std::vector<std::vector<int>> attended(kSessions);
        for (int i = 0; i < kSessions; ++i)
            for (int step = 0; step < kSteps; ++step) {
                Run& r = alone[size_t(i)];
                QVERIFY(feed(r, i));
                auto res = r.s->step(r.token);
                QVERIFY(res);
                logits[size_t(i)].push_back(*res->logits);
                positions[size_t(i)].push_back(r.s->lastAttendedPositions());
                attended[size_t(i)].push_back(res->attendedVisual);
                r.token = next(*res, i, step);
            }
        // Together.
        start(batch);
        int differ = 0;
        for (int step = 0; step < kSteps; ++step) {
            std::vector<DecodeSession*> sessions;
            std::vector<int> inputs;
            for (int i = 0; i < kSessions; ++i) {
                QVERIFY(feed(batch[size_t(i)], i));
                sessions.push_back(batch[size_t(i)].s.get());
                inputs.push_back(batch[size_t(i)].token);
            }
            auto res = DecodeSession::stepBatch(sessions, inputs);
            QVERIFY2(res, res ? "" : res.status().message().c_str());
            QCOMPARE(int(res->size()), kSessions);
            for (int i = 0; i < kSessions; ++i) {
                const StepResult& r = (*res)[size_t(i)];
                const auto& want = logits[size_t(i)][size_t(step)];
                const bool same = r.logits->size() == want.size() &&
                                  std::memcmp(r.logits->data(), want.data(), want.size() * sizeof(float)) == 0 &&
                                  r.attendedVisual == attended[size_t(i)][size_t(step)] &&
                                  batch[size_t(i)].s->lastAttendedPositions() == positions[size_t(i)][size_t(step)];
                if (!same && differ++ < 5) qWarning("session %d, step %d: the batch computed otherwise", i, step);
                batch[size_t(i)].token = next(r, i, step);
            }
        }
        QCOMPARE(differ, 0);
        for (int i = 0; i < kSessions; ++i) {
            const SessionStats a = alone[size_t(i)].s->stats(), b = batch[size_t(i)].s->stats();
            QCOMPARE(b.position, a.position);
            QCOMPARE(b.currentPage, a.currentPage);
            QCOMPARE(b.poolUsedBytes, a.poolUsedBytes);
            QCOMPARE(batch[size_t(i)].s->gatedPages(), alone[size_t(i)].s->gatedPages());
            QVERIFY(a.currentPage >= 5);
        }
        QVERIFY(batch[5].s->deviceNotice().empty());  // the mirror device kept its session
        QVERIFY(!batch[0].s->gatedPages().empty());

        // Refusals: sessions on different models, a session twice, inputs not matching, a bad token.
        auto other = std::make_shared<const ModelWeights>(randomModel(cfg, 32));
        DecodeSession foreign(other, params(1));
        QVERIFY(foreign.begin({1, 5}));
        auto mixed = DecodeSession::stepBatch({batch[1].s.get(), &foreign}, {7, 7});
        QVERIFY(!mixed);
        QVERIFY(QString::fromStdString(mixed.status().message()).contains("different models"));
        QVERIFY(!DecodeSession::stepBatch({batch[1].s.get(), batch[1].s.get()}, {7, 7}));
        QVERIFY(!DecodeSession::stepBatch({batch[1].s.get()}, {7, 7}));
        QVERIFY(!DecodeSession::stepBatch({}, {}));
        const int64_t before = batch[1].s->stats().position;
        QVERIFY(!DecodeSession::stepBatch({batch[1].s.get(), batch[2].s.get()}, {7, cfg.vocabSize}));
        QCOMPARE(batch[1].s->stats().position, before);  // refused before any session moved
    }

    // Sessions of one shared (mirror) device on two threads at once, each its own volume: each
    // computes what it computes on a device of its own, bit for bit (the shared device takes one
    // call at a time; run under ThreadSanitizer in CI).
    void sharedDeviceTakesSessionsFromTwoThreads() {
        const ModelConfig cfg = tinyConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 35));
        auto shared = SharedDevice::open(model, StepDevice::Mirror);
        QVERIFY(shared);
        constexpr int kSteps = 200;
        auto run = [&](bool share, int volume, std::vector<std::vector<float>>& logits) {
            AttentionParams p = smallSrSwa();
            p.device = StepDevice::Mirror;
            if (share) p.sharedDevice = *shared;
            DecodeSession s(model, p);
            if (!s.begin({1, 5, 6 + volume})) return;
            int fed = -1, token = cfg.bosTokenId;
            for (int step = 0; step < kSteps; ++step) {
                while (fed < s.stats().currentPage + (token == cfg.pageBreakTokenId ? 1 : 0) + p.windowAfter) {
                    ++fed;
                    const auto f = pageFeatures(fed + 100 * volume, 30, cfg.visualDim);
                    if (!s.addPage(fed, f.data(), 30)) return;
                }
                auto r = s.step(token);
                if (!r || !s.deviceNotice().empty()) return;
                logits.push_back(*r->logits);
                const int best = int(std::max_element(r->logits->begin() + 4, r->logits->end()) - r->logits->begin());
                token = step % (20 + 7 * volume) == 19 + 7 * volume ? cfg.pageBreakTokenId : best;
            }
        };
        std::vector<std::vector<float>> alone[2], together[2];
        run(false, 0, alone[0]);
        run(false, 1, alone[1]);
        std::thread other([&] { run(true, 1, together[1]); });
        run(true, 0, together[0]);
        other.join();
        for (int v = 0; v < 2; ++v) {
            QCOMPARE(int(alone[v].size()), kSteps);
            QCOMPARE(int(together[v].size()), kSteps);
            QVERIFY(alone[v] == together[v]);
        }
    }

    // More sessions than one batched pass takes (64): the batch runs in passes, each session's
    // logits still its own steps'.
    void batchLargerThanOnePass() {
        const ModelConfig cfg = tinyConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 33));
        AttentionParams p;
        p.mode = AttentionMode::RSwa;
        p.maxPageTokens = 16;
        constexpr int kSessions = 70, kSteps = 6;
        std::vector<std::unique_ptr<DecodeSession>> alone, together;
        std::vector<DecodeSession*> batch;
        for (int i = 0; i < kSessions; ++i) {
            for (auto* list : {&alone, &together}) {
                list->push_back(std::make_unique<DecodeSession>(model, p));
                QVERIFY(list->back()->begin({1, 5}));
                const auto f = pageFeatures(i, 16, cfg.visualDim);
                QVERIFY(list->back()->addPage(0, f.data(), 16));
            }
            batch.push_back(together.back().get());
        }
        std::vector<int> inputs(kSessions, cfg.bosTokenId);
        int differ = 0;
        for (int step = 0; step < kSteps; ++step) {
            auto res = DecodeSession::stepBatch(batch, inputs);
            QVERIFY(res);
            for (int i = 0; i < kSessions; ++i) {
                auto want = alone[size_t(i)]->step(inputs[size_t(i)]);
                QVERIFY(want);
                differ += *want->logits != *(*res)[size_t(i)].logits;
                const auto& l = *(*res)[size_t(i)].logits;
                inputs[size_t(i)] = 4 + int(std::max_element(l.begin() + 4, l.end()) - l.begin() - 4);
            }
        }
        QCOMPARE(differ, 0);
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
        p.config = tinyConfig();
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
        p.config = tinyConfig();
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
        auto model = std::make_shared<const ModelWeights>(randomModel(tinyConfig(), 9));
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

    void kvPoolIsConstantAcrossTheVolume() {
        auto model = std::make_shared<const ModelWeights>(randomModel(tinyConfig(), 9));
        AttentionParams p;
        p.mode = AttentionMode::SrSwa;
        p.recentTokens = 16;
        p.maxPageTokens = 16;
        p.gatedPages = 2;
        p.blocksPerGatedPage = 1;
        DecodeSession s(model, p);
        AttentionParams rp = p;
        rp.mode = AttentionMode::RSwa;
        DecodeSession r(model, rp);
        QVERIFY(s.begin({1}) && r.begin({1}));
        SessionStats at10, at100, at1000, r10, r1000;
        int fed = -1;
        for (int page = 0; page <= 1000; ++page) {
            while (fed < page + p.windowAfter) {
                ++fed;
                const auto f = pageFeatures(fed % 50, 16, model->config.visualDim);
                QVERIFY(s.addPage(fed, f.data(), 16));
                if (page <= 100) QVERIFY(r.addPage(fed, f.data(), 16));
            }
            for (int k = 0; k < 3; ++k) {
                const int tok = k == 2 ? model->config.pageBreakTokenId : 12 + k;
                QVERIFY(s.step(tok));
                if (page <= 100) QVERIFY(r.step(tok));
            }
            if (page == 10) at10 = s.stats(), r10 = r.stats();
            if (page == 100) r1000 = r.stats(), at100 = s.stats();
            if (page == 1000) at1000 = s.stats();
        }
        QCOMPARE(at1000.poolCapacityBytes, at10.poolCapacityBytes);
        QCOMPARE(at1000.poolUsedBytes, at10.poolUsedBytes);
        QCOMPARE(at1000.attendedTokens, at10.attendedTokens);
        // Host memory: the cache of computed gated pages, at most gatedCachePages pages (of one block here).
        const auto& mc = model->config;
        const size_t pageBytes = 2 * size_t(mc.numLayers) * mc.numKvHeads * kBlockTokens * mc.headDim * sizeof(float);
        QVERIFY(at1000.hostBytes > 0);
        QVERIFY(at100.hostBytes <= size_t(p.gatedCachePages) * pageBytes);
        QVERIFY(at1000.hostBytes <= size_t(p.gatedCachePages) * pageBytes);
        QVERIFY(at1000.spillBytes > 9 * at100.spillBytes);  // pages behind the window wait on disk
        QVERIFY(r1000.poolUsedBytes > 5 * r10.poolUsedBytes);  // R-SWA's references grow with the volume
        QVERIFY(at1000.attendedTokens * 10 < r1000.attendedTokens);  // and so does what it attends to
        qInfo("SR-SWA pool %zu bytes at page 10 and at page 1000; R-SWA %zu at page 10, %zu at page 100",
              at10.poolCapacityBytes, r10.poolUsedBytes, r1000.poolUsedBytes);
    }

    void savedStateContinuesWithIdenticalTokens_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<bool>("lineAligned");
        QTest::newRow("srswa") << int(AttentionMode::SrSwa) << false;
        QTest::newRow("rswa") << int(AttentionMode::RSwa) << false;
        QTest::newRow("srswa, line-aligned") << int(AttentionMode::SrSwa) << true;  // saved mid-line
    }
    void savedStateContinuesWithIdenticalTokens() {
        QFETCH(int, mode);
        QFETCH(bool, lineAligned);
        ModelConfig cfg = tinyConfig();
        if (lineAligned) makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 21));
        AttentionParams p;
        p.mode = AttentionMode(mode);
        p.recentTokens = 20;
        p.maxPageTokens = 64;  // four blocks a page: the selector has a choice to keep
        p.gatedPages = 2;
        p.blocksPerGatedPage = 1;
        const int dim = model->config.visualDim;
        auto pageOf = [&](int page) { return lineAligned ? pageWithIds(page, 64, dim, 5) : pageFeatures(page, 64, dim); };
        DecodeSession a(model, p);
        QVERIFY(a.begin({1, 4}));
        int fed = -1, token = 1;
        auto drive = [&](DecodeSession& s, int steps, std::vector<std::vector<float>>* logits) {
            for (int k = 0; k < steps; ++k) {
                while (fed < s.stats().currentPage + p.windowAfter) {
                    ++fed;
                    const auto f = pageOf(fed);
                    QVERIFY(s.addPage(fed, f.data(), 64));
                }
                auto r = s.step(token);
                QVERIFY(r);
                if (logits) logits->push_back(*r->logits);
                token = (k % 17 == 16) ? model->config.pageBreakTokenId
                        : lineAligned && k % 5 == 4 ? 4
                                       : int(std::max_element(r->logits->begin() + 7, r->logits->end()) - r->logits->begin());
            }
        };
        // Well into the volume (pages offloaded, ring wrapped), between two refreshes of the gate:
        // the token selector's choice at the last refresh is part of the state (without it this
        // test fails at the first step after the restore).
        drive(a, 150, nullptr);
        const std::string state = a.saveState();
        const int fedAtSave = fed, tokenAtSave = token;
        std::vector<std::vector<float>> expected, got;
        drive(a, 60, &expected);
        auto b = DecodeSession::restore(model, p, state, [&](int page) -> Result<std::vector<float>> {
            return pageOf(page);
        });
        QVERIFY2(b, b.status().message().c_str());
        const int64_t computedWithout = (*b)->stats().computedPages;
        fed = fedAtSave, token = tokenAtSave;
        drive(**b, 60, &got);
        QCOMPARE(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i) QVERIFY2(got[i] == expected[i], qPrintable(QString("step %1 differs").arg(i)));
        // Pages given back with their summaries (what the reader keeps): under SR-SWA the pages
        // behind the window are not computed at resume, and the steps are the same again.
        auto withSummaries = DecodeSession::restore(model, p, state, [&](int page) -> Result<std::vector<float>> {
            std::vector<float> row = pageOf(page);
            const std::vector<float> summary = a.pageSummary(page);
            row.insert(row.end(), summary.begin(), summary.end());
            return row;
        });
        QVERIFY2(withSummaries, withSummaries.status().message().c_str());
        const int64_t computedAtResume = (*withSummaries)->stats().computedPages;
        QCOMPARE((*withSummaries)->pagesAdded(), fedAtSave + 1);
        fed = fedAtSave, token = tokenAtSave;
        got.clear();
        drive(**withSummaries, 60, &got);
        QCOMPARE(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i) QVERIFY2(got[i] == expected[i], qPrintable(QString("step %1 differs (with summaries)").arg(i)));
        if (p.mode == AttentionMode::SrSwa) {
            // The window's pages and the gated ones, not the whole context.
            QVERIFY2(computedAtResume <= 1 + p.windowBefore + p.windowAfter + p.gatedPages,
                     qPrintable(QString("%1 pages computed at resume of %2").arg(computedAtResume).arg(fedAtSave + 1)));
            QVERIFY(computedWithout >= fedAtSave + 1);  // without summaries: every page of the context
            qInfo("resume at page %d: %lld pages computed with summaries, %lld without", fedAtSave + 1,
                  (long long)computedAtResume, (long long)computedWithout);
        }
        // A damaged state is refused, not half-restored.
        auto broken = DecodeSession::restore(model, p, state.substr(0, state.size() / 2),
                                             [&](int page) -> Result<std::vector<float>> { return pageOf(page); });
        QVERIFY(!broken);
        // Any byte of the state overwritten (counts, indices, sizes; fuzz_decoder_state found three
        // such holes): refused, or restored into a session that steps; never a crash or a huge
        // allocation (ASan and UBSan watch this in CI).
        int refused = 0, restored = 0;
        const size_t stride = std::max<size_t>(1, (state.size() - 120) / 150);  // every header byte, then 150 more
        for (size_t at = 0; at < state.size(); at += at < 120 ? 1 : stride)
            for (char v : {char(0xff), char(0x80), char(0x00), char(0x7f)}) {
                std::string damaged = state;
                if (damaged[at] == v) continue;
                damaged[at] = v;
                auto s = DecodeSession::restore(model, p, damaged, [&](int page) -> Result<std::vector<float>> {
                    if (page < 0 || page > 200) return Status(ErrorCode::NotFound, "no such page");
                    return pageOf(page);
                });
                if (!s) {
                    ++refused;
                    continue;
                }
                ++restored;
                (void)(*s)->step(10);
            }
        qInfo("damaged states: %d refused, %d restored", refused, restored);
        QVERIFY(refused > 0);
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
        // With a minimum span (the reader's character tokens), a dotted leader of 20 is no loop;
        // 64 dots are.
        GreedySampler leader({0, 100, 100, 4, 64, 64});
        for (int i = 0; i < 20; ++i) leader.push(15);
        QVERIFY(!leader.looping());
        for (int i = 20; i < 64; ++i) leader.push(15);
        QVERIFY(leader.looping());
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
