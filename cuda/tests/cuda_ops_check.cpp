// Every CUDA op against a CPU reference over a sweep of shapes. Tolerances: fp32 ops 1e-4 relative
// to the largest magnitude, bf16-input GEMM 2e-2; any NaN fails. Prints "N passed, M failed";
// exits 0 with a note where no GPU is present (ctest label gpu). Plain C++, so it also builds on a
// GPU machine without the rest of Quire's dependencies (tools/gpu-check.sh).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "quire_cuda/device.h"
#include "quire_cuda/ops.h"
#include "check_util.h"

using namespace quire::cuda;
using namespace quire::cuda::check;

namespace {

int g_passed = 0, g_failed = 0;
std::string g_case;

#define CHECK(cond, detail)                                                                                  \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            std::printf("FAIL %s: %s %s (line %d)\n", g_case.c_str(), #cond, std::string(detail).c_str(), __LINE__); \
            ++g_failed;                                                                                      \
            return;                                                                                          \
        }                                                                                                    \
    } while (0)

void run(const std::string& name, const std::function<void()>& f) {
    g_case = name;
    const int before = g_failed;
    f();
    if (g_failed == before) ++g_passed, std::printf("PASS %s\n", name.c_str());
}

void cpuRope(float* v, int64_t pos, int D, double theta) {
    for (int i = 0; i < D / 2; ++i) {
        const double a = double(pos) * std::pow(theta, -2.0 * i / D);
        const float c = float(std::cos(a)), s = float(std::sin(a)), x0 = v[i], x1 = v[i + D / 2];
        v[i] = x0 * c - x1 * s;
        v[i + D / 2] = x0 * s + x1 * c;
    }
}

void testRmsNorm(int rows, int n) {
    const auto x = randomVec(size_t(rows) * n, 1), w = randomVec(size_t(n), 2);
    std::vector<float> want(x.size());
    for (int r = 0; r < rows; ++r) {
        double ss = 0;
        for (int i = 0; i < n; ++i) ss += double(x[size_t(r) * n + i]) * x[size_t(r) * n + i];
        const double s = 1.0 / std::sqrt(ss / n + 1e-5);
        for (int i = 0; i < n; ++i) want[size_t(r) * n + i] = float(x[size_t(r) * n + i] * s * w[size_t(i)]);
    }
    auto dx = toDevice(x), dw = toDevice(w);
    DeviceBuffer out(x.size() * 4);
    const std::string err = rmsNorm(dx.as<float>(), dw.as<float>(), out.as<float>(), rows, n, 1e-5f);
    CHECK(err.empty(), err);
    const double e = maxRelErr(fromDevice<float>(out, x.size()), want);
    CHECK(e < 1e-4, std::to_string(e));
}

void testRopeSwigluEmbedding() {
    const int rows = 5, heads = 6, D = 64;
    auto x = randomVec(size_t(rows) * heads * D, 3);
    const std::vector<int64_t> pos = {0, 7, 1000, 123456, 3000000};
    auto want = x;
    for (int r = 0; r < rows; ++r)
        for (int h = 0; h < heads; ++h) cpuRope(&want[(size_t(r) * heads + h) * D], pos[size_t(r)], D, 10000.0);
    auto dx = toDevice(x), dp = toDevice(pos);
    CHECK(rope(dx.as<float>(), dp.as<int64_t>(), rows, heads, D, 10000.0).empty(), "rope");
    CHECK(maxRelErr(fromDevice<float>(dx, x.size()), want) < 1e-4, "rope values");

    const auto g = randomVec(1000, 4), u = randomVec(1000, 5);
    std::vector<float> sw(1000);
    for (size_t i = 0; i < 1000; ++i) sw[i] = float(g[i] / (1 + std::exp(-g[i])) * u[i]);
    auto dg = toDevice(g), du = toDevice(u);
    DeviceBuffer dout(4000);
    CHECK(swiglu(dg.as<float>(), du.as<float>(), dout.as<float>(), 1000).empty(), "swiglu");
    CHECK(maxRelErr(fromDevice<float>(dout, 1000), sw) < 1e-4, "swiglu values");

    const auto table = randomVec(50 * 32, 6);
    const std::vector<int32_t> toks = {3, 0, 49, 7};
    auto dt = toDevice(table), dtok = toDevice(toks);
    DeviceBuffer emb(4 * 32 * 4);
    CHECK(embedding(dtok.as<int32_t>(), dt.as<float>(), emb.as<float>(), 4, 32).empty(), "embedding");
    const auto e = fromDevice<float>(emb, 4 * 32);
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 32; ++j) CHECK(e[size_t(i) * 32 + j] == table[size_t(toks[size_t(i)]) * 32 + j], "embedding values");
}

void testAttention(int heads, int kvHeads, int D, int splits) {
    const int layers = 2, layer = 1, numBlocks = 40, G = heads / kvHeads;
    const size_t half = size_t(layers) * kvHeads * 16 * D;
    const auto pool = randomVec(size_t(numBlocks) * 2 * half, 7);
    const auto q = randomVec(size_t(heads) * D, 8);
    std::vector<AttentionSpan> spans;
    for (int b = 0; b < numBlocks; b += 3) spans.push_back({b, b % 5, 16 - b % 5, int64_t(b) * 16 + 50});
    std::vector<float> want(size_t(heads) * D, 0.f);
    for (int h = 0; h < heads; ++h) {
        const int g = h / G;
        std::vector<double> sc;
        std::vector<const float*> vs;
        for (const auto& s : spans) {
            std::vector<float> qr(q.begin() + h * D, q.begin() + (h + 1) * D);
            cpuRope(qr.data(), s.queryPos, D, 10000.0);
            const float* kb = pool.data() + size_t(s.block) * 2 * half + (size_t(layer) * kvHeads + g) * 16 * D;
            for (int t = s.first; t < s.first + s.count; ++t) {
                double dot = 0;
                for (int i = 0; i < D; ++i) dot += double(qr[size_t(i)]) * kb[size_t(t) * D + i];
                sc.push_back(dot / std::sqrt(double(D)));
                vs.push_back(kb + half + size_t(t) * D);
            }
        }
        const double mx = *std::max_element(sc.begin(), sc.end());
        double sum = 0;
        for (auto& v : sc) sum += (v = std::exp(v - mx));
        for (size_t j = 0; j < sc.size(); ++j)
            for (int i = 0; i < D; ++i) want[size_t(h) * D + i] += float(sc[j] / sum * vs[j][i]);
    }
    auto dpool = toDevice(pool), dq = toDevice(q), dspans = toDevice(spans);
    DeviceBuffer ws(attentionWorkspaceBytes(heads, D, splits)), out(size_t(heads) * D * 4);
    const std::string err = pagedDecodeAttention(dq.as<float>(), dpool.as<float>(), dspans.as<AttentionSpan>(),
                                                 int(spans.size()), layer, layers, heads, kvHeads, D, 10000.0, splits,
                                                 ws.get(), out.as<float>());
    CHECK(err.empty(), err);
    const double e = maxRelErr(fromDevice<float>(out, want.size()), want);
    CHECK(e < 1e-4, std::to_string(e));
}

void testArgmaxQuestTopK() {
    const auto logits = randomVec(6627, 9);
    std::vector<uint8_t> banned(6627, 0);
    const int best = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    banned[size_t(best)] = 1;
    auto l2 = logits;
    l2[size_t(best)] = -INFINITY;
    const int second = int(std::max_element(l2.begin(), l2.end()) - l2.begin());
    auto dl = toDevice(logits), db = toDevice(banned);
    DeviceBuffer res(4);
    CHECK(argmaxUnbanned(dl.as<float>(), db.as<uint8_t>(), 6627, res.as<int32_t>()).empty(), "argmax");
    CHECK(fromDevice<int32_t>(res, 1)[0] == second, "argmax skips the banned best token");

    const int blocks = 50, heads = 4, kv = 2, D = 32;
    const auto q = randomVec(size_t(heads) * D, 10), a = randomVec(size_t(blocks) * kv * D, 11),
               b = randomVec(size_t(blocks) * kv * D, 12);
    std::vector<float> mn(a.size()), mx(a.size()), want(static_cast<size_t>(blocks));
    for (size_t i = 0; i < a.size(); ++i) mn[i] = std::min(a[i], b[i]), mx[i] = std::max(a[i], b[i]);
    for (int bl = 0; bl < blocks; ++bl) {
        double s = 0;
        for (int h = 0; h < heads; ++h)
            for (int c = 0; c < D; ++c) {
                const size_t o = (size_t(bl) * kv + h / (heads / kv)) * D + c;
                s += std::max(q[size_t(h) * D + c] * mn[o], q[size_t(h) * D + c] * mx[o]);
            }
        want[size_t(bl)] = float(s);
    }
    auto dq = toDevice(q), dmn = toDevice(mn), dmx = toDevice(mx);
    DeviceBuffer scores(size_t(blocks) * 4), idx(8 * 4);
    CHECK(questScores(dq.as<float>(), dmn.as<float>(), dmx.as<float>(), blocks, heads, kv, D, scores.as<float>()).empty(), "quest");
    const auto got = fromDevice<float>(scores, size_t(blocks));
    CHECK(maxRelErr(got, want) < 1e-4, "quest values");
    CHECK(topK(scores.as<float>(), blocks, 8, idx.as<int32_t>()).empty(), "topK");
    const auto top = fromDevice<int32_t>(idx, 8);
    std::vector<int> order(static_cast<size_t>(blocks));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int x, int y) { return got[size_t(x)] > got[size_t(y)]; });
    for (int i = 0; i < 8; ++i) CHECK(top[size_t(i)] == order[size_t(i)], "topK order");
}

void testGemm(bool bf16, double tolerance) {
    for (auto [m, n, k] : {std::tuple{1, 384, 384}, std::tuple{16, 1024, 384}, std::tuple{273, 1280, 1280}}) {
        const auto A = randomVec(size_t(m) * k, 13), B = randomVec(size_t(n) * k, 14);
        std::vector<float> want(size_t(m) * n);
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j) {
                double s = 0;
                for (int t = 0; t < k; ++t) s += double(A[size_t(i) * k + t]) * B[size_t(j) * k + t];
                want[size_t(i) * n + j] = float(s);
            }
        auto dA = toDevice(A), dB = toDevice(B);
        DeviceBuffer dC(want.size() * 4);
        const std::string err = gemmRowMajor(dA.as<float>(), dB.as<float>(), dC.as<float>(), m, n, k, bf16);
        CHECK(err.empty(), err);
        const double e = maxRelErr(fromDevice<float>(dC, want.size()), want);
        CHECK(e < tolerance, std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ": " + std::to_string(e));
    }
}

}  // namespace

int main() {
    std::string why;
    const auto devices = listDevices(&why);
    if (devices.empty()) {
        std::printf("no GPU (%s): CUDA op checks skipped\n0 passed, 0 failed, 11 skipped\n", why.c_str());
        return 0;
    }
    std::printf("GPU: %s\n", devices[0].name.c_str());
    for (auto [r, n] : {std::pair{1, 64}, std::pair{3, 384}, std::pair{7, 1280}, std::pair{2, 4097}})
        run("rmsNorm " + std::to_string(r) + "x" + std::to_string(n), [=] { testRmsNorm(r, n); });
    run("rope, swiglu, embedding", testRopeSwigluEmbedding);
    run("attention gqa 6/2 x64, 1 split", [] { testAttention(6, 2, 64, 1); });
    run("attention gqa 6/2 x64, 8 splits", [] { testAttention(6, 2, 64, 8); });
    run("attention mha 10/10 x128, 16 splits", [] { testAttention(10, 10, 128, 16); });
    run("argmax with bans, Quest scores, top-k", testArgmaxQuestTopK);
    run("gemm fp32", [] { testGemm(false, 1e-4); });
    run("gemm bf16 inputs, fp32 accumulate", [] { testGemm(true, 2e-2); });
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
