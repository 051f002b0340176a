// Quire's ONNX runtime's CPU kernels against their definitions: convolutions (with and without
// a fused epilogue), transposed convolutions, broadcasting, MatMul and Transpose, and the fused
// elementwise chains, and the cache of freed activation buffers. The graphs of the PP-OCR models
// are tested in tst_ppocr.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "nn/cpu_ops.h"
#include "nn/gemm.h"
#include "nn/graph.h"
#include "quire/nn/buffer_cache.h"

using namespace quire;
using namespace quire::nn;

namespace {

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

}  // namespace

class TestNn : public QObject {
    Q_OBJECT

private slots:
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
        // With an epilogue a 1×1 convolution goes in bands of 2^17 output floats: 64 × 512 a row,
        // so 4 rows a band and the last of three bands short.
        QTest::newRow("1x1 in epilogue bands") << 16 << 64 << 1 << 1 << 0 << 1 << 1 << 10 << 512;
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

        // With an epilogue (a fused elementwise chain): every output passes through it once, and
        // the floats are those of the convolution followed by the same steps — to the bit where
        // the product is made as before; a 1×1 product made in bands may round its last bit apart.
        int64_t seen = 0;
        const cpu::Epilogue affine = [&seen](float* run, int64_t count) {
            seen += count;
            for (int64_t i = 0; i < count; ++i) run[i] = std::max(run[i] * 0.5f - 1.f, -1.5f);
        };
        const Tensor fused = cpu::conv2d(x, w, b.data(), p, &affine);
        QCOMPARE(seen, int64_t(got.size()));
        Tensor after = got;
        for (float& v : after.f) v = std::max(v * 0.5f - 1.f, -1.5f);
        if (k == 1) QVERIFY2(maxAbsDiff(fused.data(), after.data(), after.f.size()) < 1e-5, "the epilogue changed the sums");
        else QVERIFY2(std::memcmp(fused.data(), after.data(), sizeof(float) * after.f.size()) == 0, "the epilogue changed the sums");
    }

    // A depthwise convolution sums in one fixed order, bias first and then the taps in (ky, kx)
    // order, a tap outside the image skipped: to the bit, over widths that leave its 16-column
    // blocks whole, short and absent, and over the strides the front-end's graphs use and others.
    void depthwiseSumsInTapOrder_data() {
        QTest::addColumn<int>("k");
        QTest::addColumn<int>("strideH");
        QTest::addColumn<int>("strideW");
        QTest::addColumn<int>("pad");
        QTest::addColumn<int>("dil");
        QTest::newRow("3x3") << 3 << 1 << 1 << 1 << 1;
        QTest::newRow("5x5") << 5 << 1 << 1 << 2 << 1;
        QTest::newRow("3x3 stride 2") << 3 << 2 << 2 << 1 << 1;
        QTest::newRow("5x5 stride 2, 1") << 5 << 2 << 1 << 2 << 1;
        QTest::newRow("3x3 stride 3, no pad") << 3 << 1 << 3 << 0 << 1;
        QTest::newRow("3x3 dilated, wide pad") << 3 << 1 << 2 << 4 << 2;
    }
    void depthwiseSumsInTapOrder() {
        QFETCH(int, k);
        QFETCH(int, strideH);
        QFETCH(int, strideW);
        QFETCH(int, pad);
        QFETCH(int, dil);
        ConvShape p;
        p.kh = p.kw = k;
        p.strideH = strideH;
        p.strideW = strideW;
        p.padT = p.padL = p.padB = p.padR = pad;
        p.dilH = p.dilW = dil;
        const int C = 3;
        p.group = C;
        std::mt19937 rng(11);
        for (int W : {1, 4, 15, 33, 64, 100, 257}) {
            const int H = 5;
            const Tensor x = randomTensor({1, C, H, W}, rng);
            const Tensor w = randomTensor({C, 1, k, k}, rng);
            const Tensor b = randomTensor({C}, rng);
            const Tensor got = cpu::conv2d(x, w, b.data(), p);
            const int Ho = int(got.shape[2]), Wo = int(got.shape[3]);
            for (int c = 0; c < C; ++c)
                for (int oy = 0; oy < Ho; ++oy)
                    for (int ox = 0; ox < Wo; ++ox) {
                        float acc = b.f[size_t(c)];
                        for (int ky = 0; ky < k; ++ky)
                            for (int kx = 0; kx < k; ++kx) {
                                const int iy = oy * strideH - pad + ky * dil, ix = ox * strideW - pad + kx * dil;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                                const float product = w.f[size_t((c * k + ky) * k + kx)] * x.f[size_t((c * H + iy) * W + ix)];
                                acc += product;
                            }
                        const float out = got.f[size_t((c * Ho + oy) * Wo + ox)];
                        if (std::memcmp(&out, &acc, sizeof acc) != 0)
                            QFAIL(qPrintable(QStringLiteral("W %1, channel %2, (%3, %4): %5 against %6")
                                                 .arg(W).arg(c).arg(oy).arg(ox).arg(double(out), 0, 'g', 9).arg(double(acc), 0, 'g', 9)));
                    }
        }
    }

    // The product, in this CPU's kernel and in OpenBLAS (nn/gemm.h): against the sums in double, over
    // shapes that leave its 12-row tiles and 32-column panels whole, short and single, K across
    // its 256-deep blocks and empty, rows of A, B and C wider than the product (whose extra floats
    // it must leave alone), and onto C's floats, onto a bias per row, or onto nothing.
    void productMatchesDefinition_data() {
        QTest::addColumn<bool>("openBlas");
        QTest::newRow("this CPU's kernel") << false;
        QTest::newRow("OpenBLAS") << true;
    }
    void productMatchesDefinition() {
        QFETCH(bool, openBlas);
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> u(-1.f, 1.f);
        struct Case { int M, N, K; };
        for (const Case c : {Case{1, 1, 1}, Case{12, 32, 7}, Case{13, 33, 5}, Case{25, 91, 300}, Case{11, 15, 513},
                             Case{24, 64, 256}, Case{5, 17, 0}, Case{7, 50, 40}, Case{30, 100, 120}}) {
            for (const int onto : {0, 1, 2}) {  // nothing, C, a bias per row
                const bool accumulate = onto == 1;
                const int lda = c.K + 3, ldb = c.N + 5, ldc = c.N + 2;
                std::vector<float> A(size_t(c.M) * size_t(lda)), B(size_t(std::max(c.K, 1)) * size_t(ldb)),
                    C(size_t(c.M) * size_t(ldc));
                for (float& v : A) v = u(rng);
                for (float& v : B) v = u(rng);
                for (float& v : C) v = u(rng);
                std::vector<float> bias(size_t(c.M));
                for (float& v : bias) v = u(rng);
                const std::vector<float> before = C;
                (openBlas ? cpu::gemmOpenBlas : cpu::gemm)(c.M, c.N, c.K, A.data(), lda, B.data(), ldb, C.data(), ldc,
                                                           accumulate, onto == 2 ? bias.data() : nullptr);
                const QString where = QString("%1×%2×%3%4 (%5)")
                                          .arg(c.M).arg(c.N).arg(c.K)
                                          .arg(onto == 1 ? " onto C" : onto == 2 ? " onto a bias" : "")
                                          .arg(QString::fromStdString(openBlas ? "openblas" : cpu::gemmKernel()));
                for (int i = 0; i < c.M; ++i)
                    for (int j = 0; j < ldc; ++j) {
                        const size_t at = size_t(i) * size_t(ldc) + size_t(j);
                        if (j >= c.N) {
                            QVERIFY2(C[at] == before[at], qPrintable("wrote past its columns: " + where));
                            continue;
                        }
                        double want = onto == 1 ? before[at] : onto == 2 ? bias[size_t(i)] : 0.0;
                        for (int k = 0; k < c.K; ++k)
                            want += double(A[size_t(i) * size_t(lda) + size_t(k)]) * B[size_t(k) * size_t(ldb) + size_t(j)];
                        QVERIFY2(std::abs(C[at] - want) < 1e-6 * (c.K + 1) + 1e-6, qPrintable("differs: " + where));
                    }
            }
        }
    }

    // The recognizer's commonest chain (hard-swish, /6, scale, shift) runs as one loop: the same
    // floats as its steps one after another, on both sides of the clip and at its ends.
    void hardSwishChainIsItsSteps() {
        using quire::nn::Micro;
        Micro gate{Micro::SelfGate};
        gate.gate = {{Micro::AddC, 3.f}, {Micro::Clip, 0.f, 6.f}};
        const std::vector<Micro> chain = {gate, {Micro::MulC, 1.f / 6.f}, {Micro::MulC, 0.73f}, {Micro::AddC, -0.2f}};
        std::vector<float> x(5000);
        std::mt19937 rng(11);
        std::uniform_real_distribution<float> u(-9.f, 9.f);
        for (float& v : x) v = u(rng);
        x[0] = -3.f, x[1] = 3.f, x[2] = 0.f;
        std::vector<float> want = x;
        for (float& v : want) {
            float g = std::min(std::max(v + 3.f, 0.f), 6.f);
            v = v * g;
            v = v * (1.f / 6.f);
            v = v * 0.73f;
            v = v + -0.2f;
        }
        quire::nn::runChain(chain, x.data(), int64_t(x.size()));
        QVERIFY(x == want);
        // The same steps with a sixth (a step that changes nothing) take the general path: equal.
        std::vector<Micro> longer = chain;
        longer.push_back({Micro::MulC, 1.f});
        std::vector<float> y(want.size());
        for (size_t k = 0; k < y.size(); ++k) y[k] = u(rng);
        std::vector<float> z = y;
        quire::nn::runChain(chain, y.data(), int64_t(y.size()));
        quire::nn::runChain(longer, z.data(), int64_t(z.size()));
        QVERIFY(y == z);
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

    // Large freed buffers come back for a request of a nearby size; small ones, and more than the
    // limit, go back to the heap; the sizes round to eight steps per doubling.
    void freedBuffersAreReused() {
        const size_t mb = size_t(1) << 20;
        QCOMPARE(bufferCacheRoundedSize(1000), size_t(1000));
        QCOMPARE(bufferCacheRoundedSize(mb), mb);
        QCOMPARE(bufferCacheRoundedSize(mb + 1), mb + mb / 8);
        QCOMPARE(bufferCacheRoundedSize(3 * mb + 5), 3 * mb + mb / 4);
        for (size_t n : {mb, mb + 7, 5 * mb + 123, 37 * mb + 1}) {
            const size_t r = bufferCacheRoundedSize(n);
            QVERIFY(r >= n && r - n <= n / 8 + 1);
        }
        bufferCacheTrim();
        QCOMPARE(bufferCacheHeldBytes(), size_t(0));
        void* a = bufferCacheAllocate(2 * mb + 100);
        std::memset(a, 1, 2 * mb + 100);
        bufferCacheFree(a, 2 * mb + 100);
        QCOMPARE(bufferCacheHeldBytes(), bufferCacheRoundedSize(2 * mb + 100));
        void* b = bufferCacheAllocate(2 * mb + 200);  // the same rounded size: the same memory
        QCOMPARE(b, a);
        QCOMPARE(bufferCacheHeldBytes(), size_t(0));
        bufferCacheFree(b, 2 * mb + 200);
        void* small = bufferCacheAllocate(4096);
        bufferCacheFree(small, 4096);
        QCOMPARE(bufferCacheHeldBytes(), bufferCacheRoundedSize(2 * mb + 100));
        // Past the limit (64 MB) the oldest go.
        std::vector<void*> many;
        for (int i = 0; i < 40; ++i) many.push_back(bufferCacheAllocate(3 * mb));
        for (void* p : many) bufferCacheFree(p, 3 * mb);
        QVERIFY(bufferCacheHeldBytes() <= size_t(64) * mb);
        QVERIFY(bufferCacheHeldBytes() >= size_t(60) * mb);
        bufferCacheTrim();
        QCOMPARE(bufferCacheHeldBytes(), size_t(0));
        // Tensors from several threads at once (ThreadSanitizer's and ASan's case).
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([t] {
                for (int i = 0; i < 50; ++i) {
                    Tensor x = Tensor::uninit({int64_t(1 + (i + t) % 5), 512, 1024});
                    x.f[0] = float(i);
                    x.f[x.f.size() - 1] = float(t);
                }
            });
        for (auto& th : threads) th.join();
        QVERIFY(bufferCacheHeldBytes() <= size_t(64) * mb);
    }

};

QTEST_GUILESS_MAIN(TestNn)
#include "tst_nn.moc"
