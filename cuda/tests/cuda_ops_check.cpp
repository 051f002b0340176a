// The decoder's row-wise CUDA ops (quire_cuda/ops.h) against a CPU reference over a sweep of
// shapes, 1e-4 relative to the largest magnitude; any NaN fails. The step's attention, KV store and
// products are checked as they ship, inside the whole step (decoder_step_check). Prints "N passed, M failed";
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

void testSwigluEmbedding() {
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

}  // namespace

int main() {
    std::string why;
    const auto devices = listDevices(&why);
    if (devices.empty()) {
        std::printf("no GPU (%s): CUDA op checks skipped\n0 passed, 0 failed, 5 skipped\n", why.c_str());
        return 0;
    }
    std::printf("GPU: %s\n", devices[0].name.c_str());
    for (auto [r, n] : {std::pair{1, 64}, std::pair{3, 384}, std::pair{7, 1280}, std::pair{2, 4097}})
        run("rmsNorm " + std::to_string(r) + "x" + std::to_string(n), [=] { testRmsNorm(r, n); });
    run("swiglu, embedding", testSwigluEmbedding);
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
