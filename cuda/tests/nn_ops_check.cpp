// The front-end's CUDA ops (quire_cuda/nn_ops.h) against direct CPU definitions over a sweep of
// shapes. Tolerance 1e-4 relative to the largest magnitude (fp32 throughout); any NaN fails.
// Exits 0 with a note where no GPU is present (ctest label gpu). Plain C++ (tools/gpu-check.sh).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "quire_cuda/device.h"
#include "quire_cuda/nn_ops.h"
#include "quire_cuda/ops.h"
#include "check_util.h"

using namespace quire::cuda;
using namespace quire::cuda::check;
namespace qn = quire::cuda::nn;

namespace {

int g_passed = 0, g_failed = 0;

void run(const std::string& name, const std::function<std::string()>& f) {
    const std::string err = f();
    if (err.empty()) ++g_passed, std::printf("PASS %s\n", name.c_str());
    else ++g_failed, std::printf("FAIL %s: %s\n", name.c_str(), err.c_str());
}

std::string compare(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-4) {
    const double e = maxRelErr(got, want);
    if (!(e <= tol)) return "max relative error " + std::to_string(e) + (std::isinf(e) ? " (NaN or inf in the result)" : "");
    return {};
}

std::string testConv(qn::ConvShape s) {
    const int oh = s.outH(), ow = s.outW(), cg = s.c / s.group;
    const auto x = randomVec(size_t(s.n) * s.c * s.h * s.w, 1), w = randomVec(size_t(s.m) * cg * s.kh * s.kw, 2),
               b = randomVec(size_t(s.m), 3);
    std::vector<float> want(size_t(s.n) * s.m * oh * ow);
    for (int n = 0; n < s.n; ++n)
        for (int m = 0; m < s.m; ++m)
            for (int oy = 0; oy < oh; ++oy)
                for (int ox = 0; ox < ow; ++ox) {
                    double acc = b[size_t(m)];
                    const int g = m / (s.m / s.group);
                    for (int c = 0; c < cg; ++c)
                        for (int ky = 0; ky < s.kh; ++ky)
                            for (int kx = 0; kx < s.kw; ++kx) {
                                const int iy = oy * s.strideH - s.padT + ky * s.dilH, ix = ox * s.strideW - s.padL + kx * s.dilW;
                                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                                acc += double(x[((size_t(n) * s.c + g * cg + c) * s.h + iy) * s.w + ix]) *
                                       w[((size_t(m) * cg + c) * s.kh + ky) * s.kw + kx];
                            }
                    want[((size_t(n) * s.m + m) * oh + oy) * ow + ox] = float(acc);
                }
    DeviceBuffer dx = toDevice(x), dw = toDevice(w), db = toDevice(b), dy(want.size() * sizeof(float)),
                 ws(std::max<size_t>(4, qn::conv2dWorkspaceBytes(s)));
    if (auto e = qn::conv2d(dx.as<float>(), dw.as<float>(), db.as<float>(), s, ws.get(), dy.as<float>()); !e.empty()) return e;
    if (auto e = synchronize(); !e.empty()) return e;
    return compare(fromDevice<float>(dy, want.size()), want);
}

std::string testChain() {
    // Learnable affine, hard-swish as x·clip(x+3, 0, 6), /6, affine; then swish and a sigmoid.
    std::vector<qn::ChainStep> steps = {{0, 0.9f}, {1, 0.1f}, {7, 0, 0, 2}, {1, 3.f}, {2, 0.f, 6.f},
                                        {0, 1.f / 6.f}, {7, 0, 0, 1}, {4}, {5, 0.2f, 0.5f}};
    const auto x = randomVec(100003, 4);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        float v = x[i] * 0.9f + 0.1f;
        v = v * std::min(std::max(v + 3.f, 0.f), 6.f) / 6.f;
        v = v * (1.f / (1.f + std::exp(-v)));
        want[i] = std::min(std::max(0.2f * v + 0.5f, 0.f), 1.f);
    }
    DeviceBuffer d = toDevice(x);
    if (auto e = qn::chain(d.as<float>(), x.size(), steps.data(), int(steps.size())); !e.empty()) return e;
    if (auto e = synchronize(); !e.empty()) return e;
    return compare(fromDevice<float>(d, x.size()), want);
}

std::string testBinarySoftmaxArgmaxResize() {
    const int outer = 6, inner = 37, channels = 3, rows = 5, n = 6625;
    auto x = randomVec(size_t(outer) * inner, 5);
    const auto c = randomVec(size_t(channels), 6);
    std::vector<float> want = x;
    for (size_t i = 0; i < want.size(); ++i) want[i] *= c[(i / inner) % channels];
    DeviceBuffer dx = toDevice(x), dc = toDevice(c);
    if (auto e = qn::channelBinary(dx.as<float>(), dc.as<float>(), outer, inner, channels, 2); !e.empty()) return e;
    if (auto e = compare(fromDevice<float>(dx, x.size()), want); !e.empty()) return "channelBinary: " + e;

    auto logits = randomVec(size_t(rows) * n, 7);
    std::vector<float> sm = logits, mean(rows);
    std::vector<int> best(rows);
    for (int r = 0; r < rows; ++r) {
        float* row = sm.data() + size_t(r) * n;
        const float mx = *std::max_element(row, row + n);
        double s = 0, m = 0;
        for (int i = 0; i < n; ++i) m += logits[size_t(r) * n + i];
        mean[size_t(r)] = float(m / n);
        for (int i = 0; i < n; ++i) s += (row[i] = std::exp(row[i] - mx));
        for (int i = 0; i < n; ++i) row[i] = float(row[i] / s);
        best[size_t(r)] = int(std::max_element(row, row + n) - row);
    }
    DeviceBuffer dl = toDevice(logits), dm(rows * sizeof(float)), dbest(rows * sizeof(int)), dprob(rows * sizeof(float));
    if (auto e = qn::rowMean(dl.as<float>(), dm.as<float>(), rows, n); !e.empty()) return e;
    if (auto e = compare(fromDevice<float>(dm, rows), mean); !e.empty()) return "rowMean: " + e;
    if (auto e = qn::softmaxRows(dl.as<float>(), rows, n); !e.empty()) return e;
    if (auto e = compare(fromDevice<float>(dl, sm.size()), sm); !e.empty()) return "softmax: " + e;
    if (auto e = qn::argmaxRows(dl.as<float>(), rows, n, dbest.as<int>(), dprob.as<float>()); !e.empty()) return e;
    std::vector<int> gotBest(rows);
    dbest.download(gotBest.data(), rows * sizeof(int));
    if (gotBest != best) return "argmax differs";

    const auto img = randomVec(2 * 5 * 7, 8);
    std::vector<float> rw(2 * 10 * 14);
    for (int p = 0; p < 2; ++p)
        for (int y = 0; y < 10; ++y)
            for (int xx = 0; xx < 14; ++xx) rw[(size_t(p) * 10 + y) * 14 + xx] = img[(size_t(p) * 5 + y / 2) * 7 + xx / 2];
    DeviceBuffer di = toDevice(img), dr(rw.size() * sizeof(float));
    if (auto e = qn::resizeNearest(di.as<float>(), dr.as<float>(), 2, 5, 7, 10, 14); !e.empty()) return e;
    if (auto e = synchronize(); !e.empty()) return e;
    return compare(fromDevice<float>(dr, rw.size()), rw);
}

// A LayerNorm's pieces and an attention block's data movement: per-row and last-axis-vector
// arithmetic, x², a transpose and a slice by gather, a concatenation by rows, batched products.
std::string testAttentionBlockOps() {
    const int rows = 7, d = 33;
    auto x = randomVec(size_t(rows) * d, 21);
    const auto perRow = randomVec(size_t(rows), 22), vec = randomVec(size_t(d), 23);
    std::vector<float> wantRow = x, wantVec = x, wantSq = x;
    for (int r = 0; r < rows; ++r)
        for (int i = 0; i < d; ++i) {
            const size_t at = size_t(r) * d + i;
            wantRow[at] = x[at] - perRow[size_t(r)], wantVec[at] = x[at] * vec[size_t(i)], wantSq[at] = x[at] * x[at];
        }
    DeviceBuffer dr = toDevice(x), dv = toDevice(x), dsq = toDevice(x), dpr = toDevice(perRow), dvec = toDevice(vec);
    const std::vector<float> two{2.f};
    DeviceBuffer dtwo = toDevice(two);
    if (auto e = qn::channelBinary(dr.as<float>(), dpr.as<float>(), rows, d, rows, 1); !e.empty()) return e;
    if (auto e = qn::channelBinary(dv.as<float>(), dvec.as<float>(), rows, d, -1, 2); !e.empty()) return e;
    if (auto e = qn::channelBinary(dsq.as<float>(), dtwo.as<float>(), size_t(rows) * d, 1, 1, 4); !e.empty()) return e;
    if (auto e = compare(fromDevice<float>(dr, x.size()), wantRow); !e.empty()) return "per-row sub: " + e;
    if (auto e = compare(fromDevice<float>(dv, x.size()), wantVec); !e.empty()) return "last-axis mul: " + e;
    if (auto e = compare(fromDevice<float>(dsq, x.size()), wantSq); !e.empty()) return "pow 2: " + e;

    // [2, 3, 4, 5] transposed to [0, 2, 1, 3]; sliced [:, 1:3, :, 2:5].
    auto t = randomVec(120, 24);
    std::vector<float> wantT(120), wantS;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 3; ++b)
            for (int c = 0; c < 4; ++c)
                for (int e = 0; e < 5; ++e) wantT[((size_t(a) * 4 + c) * 3 + b) * 5 + e] = t[((size_t(a) * 3 + b) * 4 + c) * 5 + e];
    for (int a = 0; a < 2; ++a)
        for (int b = 1; b < 3; ++b)
            for (int c = 0; c < 4; ++c)
                for (int e = 2; e < 5; ++e) wantS.push_back(t[((size_t(a) * 3 + b) * 4 + c) * 5 + e]);
    DeviceBuffer dt = toDevice(t), dT(120 * sizeof(float)), dS(wantS.size() * sizeof(float));
    const long long tShape[4] = {2, 4, 3, 5}, tStrides[4] = {60, 5, 20, 1};
    const long long sShape[4] = {2, 2, 4, 3}, sStrides[4] = {60, 20, 5, 1};
    if (auto e = qn::gather(dt.as<float>(), dT.as<float>(), 4, tShape, tStrides, 0); !e.empty()) return e;
    if (auto e = qn::gather(dt.as<float>(), dS.as<float>(), 4, sShape, sStrides, 20 + 2); !e.empty()) return e;
    if (auto e = compare(fromDevice<float>(dT, 120), wantT); !e.empty()) return "transpose: " + e;
    if (auto e = compare(fromDevice<float>(dS, wantS.size()), wantS); !e.empty()) return "slice: " + e;

    // Concat on axis 1 of [3, 2, 4] and [3, 5, 4] by rows.
    const auto c1 = randomVec(24, 25), c2 = randomVec(60, 26);
    std::vector<float> wantC;
    for (int o = 0; o < 3; ++o) {
        wantC.insert(wantC.end(), c1.begin() + o * 8, c1.begin() + o * 8 + 8);
        wantC.insert(wantC.end(), c2.begin() + o * 20, c2.begin() + o * 20 + 20);
    }
    DeviceBuffer d1 = toDevice(c1), d2 = toDevice(c2), dc(84 * sizeof(float));
    if (auto e = qn::copyRows(d1.as<float>(), dc.as<float>(), 3, 8, 8, 28, 0); !e.empty()) return e;
    if (auto e = qn::copyRows(d2.as<float>(), dc.as<float>(), 3, 20, 20, 28, 8); !e.empty()) return e;
    if (auto e = compare(fromDevice<float>(dc, 84), wantC); !e.empty()) return "concat: " + e;

    // Batched [4, 6, 9] x [4, 9, 5], and [4·6, 9] x one [9, 5].
    const int B = 4, M = 6, K = 9, N = 5;
    const auto A = randomVec(size_t(B) * M * K, 27), Bm = randomVec(size_t(B) * K * N, 28);
    std::vector<float> wantB(size_t(B) * M * N), wantOne(size_t(B) * M * N);
    for (int b = 0; b < B; ++b)
        for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n) {
                double s = 0, s1 = 0;
                for (int k = 0; k < K; ++k) {
                    s += double(A[(size_t(b) * M + m) * K + k]) * Bm[(size_t(b) * K + k) * N + n];
                    s1 += double(A[(size_t(b) * M + m) * K + k]) * Bm[size_t(k) * N + n];
                }
                wantB[(size_t(b) * M + m) * N + n] = float(s), wantOne[(size_t(b) * M + m) * N + n] = float(s1);
            }
    DeviceBuffer da = toDevice(A), db = toDevice(Bm), dy(wantB.size() * sizeof(float)), dy1(wantB.size() * sizeof(float));
    if (auto e = qn::matmulBatched(da.as<float>(), db.as<float>(), dy.as<float>(), B, M, N, K, M * K, K * N); !e.empty()) return e;
    if (auto e = qn::matmulBatched(da.as<float>(), db.as<float>(), dy1.as<float>(), 1, B * M, N, K, 0, 0); !e.empty()) return e;
    if (auto e = synchronize(); !e.empty()) return e;
    if (auto e = compare(fromDevice<float>(dy, wantB.size()), wantB); !e.empty()) return "batched matmul: " + e;
    return compare(fromDevice<float>(dy1, wantOne.size()), wantOne);
}

// The detector's head: a 2×2 stride-2 transposed convolution with bias (and a 3×3 stride-2 one
// with padding and dilation), and average/max pooling with pads, against direct loops.
std::string testConvTransposePool() {
    for (int variant = 0; variant < 2; ++variant) {
        qn::ConvShape s;
        s.n = 2, s.c = 6, s.h = 5, s.w = 7, s.m = 4, s.group = 1;
        s.kh = s.kw = variant == 0 ? 2 : 3, s.strideH = s.strideW = 2;
        if (variant == 1) s.padT = s.padL = s.padB = s.padR = 1, s.dilH = s.dilW = 2;
        const int oh = (s.h - 1) * s.strideH + s.dilH * (s.kh - 1) + 1 - s.padT - s.padB;
        const int ow = (s.w - 1) * s.strideW + s.dilW * (s.kw - 1) + 1 - s.padL - s.padR;
        const auto x = randomVec(size_t(s.n) * s.c * s.h * s.w, 31), w = randomVec(size_t(s.c) * s.m * s.kh * s.kw, 32),
                   b = randomVec(size_t(s.m), 33);
        std::vector<double> acc(size_t(s.n) * s.m * oh * ow, 0.0);
        for (int n = 0; n < s.n; ++n)
            for (int m = 0; m < s.m; ++m) {
                for (int i = 0; i < oh * ow; ++i) acc[(size_t(n) * s.m + m) * oh * ow + i] = b[size_t(m)];
                for (int c = 0; c < s.c; ++c)
                    for (int iy = 0; iy < s.h; ++iy)
                        for (int ix = 0; ix < s.w; ++ix)
                            for (int ky = 0; ky < s.kh; ++ky)
                                for (int kx = 0; kx < s.kw; ++kx) {
                                    const int oy = iy * s.strideH - s.padT + ky * s.dilH, ox = ix * s.strideW - s.padL + kx * s.dilW;
                                    if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                                    acc[((size_t(n) * s.m + m) * oh + oy) * ow + ox] +=
                                        double(x[((size_t(n) * s.c + c) * s.h + iy) * s.w + ix]) *
                                        w[((size_t(c) * s.m + m) * s.kh + ky) * s.kw + kx];
                                }
            }
        const std::vector<float> want(acc.begin(), acc.end());
        DeviceBuffer dx = toDevice(x), dw = toDevice(w), db = toDevice(b), dy(want.size() * sizeof(float)),
                     ws(qn::convTranspose2dWorkspaceBytes(s));
        if (auto e = qn::convTranspose2d(dx.as<float>(), dw.as<float>(), db.as<float>(), s, oh, ow, ws.get(), dy.as<float>()); !e.empty())
            return e;
        if (auto e = compare(fromDevice<float>(dy, want.size()), want); !e.empty())
            return "transposed convolution " + std::to_string(variant) + ": " + e;
    }
    const int nc = 3, h = 6, w = 9, kh = 3, kw = 2, sh = 2, sw = 2, pt = 1, pl = 1, pb = 1, pr = 0;
    const int oh = (h + pt + pb - kh) / sh + 1, ow = (w + pl + pr - kw) / sw + 1;
    const auto x = randomVec(size_t(nc) * h * w, 34);
    for (int isMax = 0; isMax < 2; ++isMax)
        for (int include = 0; include < 2; ++include) {
            std::vector<float> want(size_t(nc) * oh * ow);
            for (int p = 0; p < nc; ++p)
                for (int oy = 0; oy < oh; ++oy)
                    for (int ox = 0; ox < ow; ++ox) {
                        float a = isMax ? -INFINITY : 0.f;
                        int count = 0;
                        for (int yy = std::max(oy * sh - pt, 0); yy < std::min(oy * sh - pt + kh, h); ++yy)
                            for (int xx = std::max(ox * sw - pl, 0); xx < std::min(ox * sw - pl + kw, w); ++xx) {
                                const float v = x[(size_t(p) * h + yy) * w + xx];
                                a = isMax ? std::max(a, v) : a + v, ++count;
                            }
                        if (!isMax) a /= float(include ? kh * kw : std::max(count, 1));
                        want[(size_t(p) * oh + oy) * ow + ox] = a;
                    }
            DeviceBuffer dx = toDevice(x), dy(want.size() * sizeof(float));
            if (auto e = qn::pool2d(dx.as<float>(), dy.as<float>(), nc, h, w, kh, kw, sh, sw, pt, pl, oh, ow, isMax, include); !e.empty())
                return e;
            if (auto e = compare(fromDevice<float>(dy, want.size()), want); !e.empty())
                return std::string(isMax ? "max" : "average") + " pool: " + e;
        }
    return {};
}

}  // namespace

int main() {
    std::string why;
    const auto devices = listDevices(&why);
    if (devices.empty()) {
        std::printf("no GPU (%s): front-end CUDA op checks skipped\n0 passed, 0 failed, 10 skipped\n", why.c_str());
        return 0;
    }
    std::printf("GPU: %s\n", devices[0].name.c_str());
    auto conv = [](int n, int c, int h, int w, int m, int k, int stride, int pad, int group) {
        qn::ConvShape s;
        s.n = n, s.c = c, s.h = h, s.w = w, s.m = m, s.kh = s.kw = k, s.strideH = s.strideW = stride;
        s.padT = s.padL = s.padB = s.padR = pad, s.group = group;
        return s;
    };
    run("conv 1x1", [&] { return testConv(conv(2, 16, 9, 13, 24, 1, 1, 0, 1)); });
    run("conv 3x3 pad 1", [&] { return testConv(conv(1, 3, 48, 96, 16, 3, 1, 1, 1)); });
    run("conv 3x3 stride 2", [&] { return testConv(conv(2, 8, 17, 31, 12, 3, 2, 1, 1)); });
    run("conv 1x3 asymmetric stride", [&] {
        auto s = conv(1, 8, 6, 40, 8, 1, 1, 0, 1);
        s.kw = 3, s.padL = s.padR = 1, s.strideW = 2;
        return testConv(s);
    });
    run("depthwise 3x3", [&] { return testConv(conv(2, 32, 12, 50, 32, 3, 1, 1, 32)); });
    run("depthwise 5x5 stride 2", [&] { return testConv(conv(1, 48, 24, 80, 48, 5, 2, 2, 48)); });
    run("fused elementwise chain (affine, hard-swish, swish, hard-sigmoid)", testChain);
    run("channel binary, row mean, softmax over 6625, argmax, nearest resize", testBinarySoftmaxArgmaxResize);
    run("per-row and last-axis arithmetic, pow, transpose, slice, concat, batched matmul", testAttentionBlockOps);
    run("transposed convolutions, average and max pools", testConvTransposePool);
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
