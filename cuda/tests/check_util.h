// What the CUDA op checks share: random inputs, host↔device copies and the error measure.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "quire_cuda/ops.h"

namespace quire::cuda::check {

inline std::vector<float> randomVec(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.f, 1.f);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

template <typename T>
DeviceBuffer toDevice(const std::vector<T>& v) {
    DeviceBuffer b(v.size() * sizeof(T));
    b.upload(v.data(), v.size() * sizeof(T));
    return b;
}

template <typename T>
std::vector<T> fromDevice(const DeviceBuffer& b, size_t n) {
    std::vector<T> v(n);
    b.download(v.data(), n * sizeof(T));
    return v;
}

// Largest absolute difference relative to the largest reference magnitude; infinite when the
// result holds a NaN or an infinity.
inline double maxRelErr(const std::vector<float>& got, const std::vector<float>& want) {
    double err = 0, mag = 1e-12;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        err = std::max(err, double(std::abs(got[i] - want[i])));
        mag = std::max(mag, double(std::abs(want[i])));
    }
    return err / mag;
}

}  // namespace quire::cuda::check
