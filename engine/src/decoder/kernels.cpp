// The CPU decoder's packed products and elementwise kernels (kernels.h says why they look so).
#include "decoder/kernels.h"

#include "core/simd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#define QUIRE_INLINE inline __attribute__((always_inline))

namespace quire::decoder::kernels {
namespace {

// Eight lanes in GCC's (and Clang's) vector extensions: one AVX register in the AVX2 clone, two
// SSE registers otherwise, the same arithmetic either way.
typedef float V8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

QUIRE_INLINE V8 load(const float* p) {
    V8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
QUIRE_INLINE void store(float* p, V8 v) { std::memcpy(p, &v, sizeof v); }
QUIRE_INLINE V8 splat(float x) { return V8{x, x, x, x, x, x, x, x}; }
QUIRE_INLINE V8 vmax(V8 a, V8 b) { return a < b ? b : a; }
QUIRE_INLINE V8 vmin(V8 a, V8 b) { return a < b ? a : b; }

// exp(x) as Cephes' expf computes it: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by a polynomial,
// times 2^n built in the exponent bits. Branch-free, eight at a time.
QUIRE_INLINE V8 expPoly(V8 x) {
    x = vmin(vmax(x, splat(-87.33f)), splat(88.37f));  // 2^n stays a normal float
    const V8 kRound = splat(12582912.f);               // 1.5 * 2^23: adding it rounds to an integer
    const V8 t = x * splat(1.44269504088896341f) + kRound;
    const V8 n = t - kRound;
    const V8 r = (x - n * splat(0.693359375f)) - n * splat(-2.12194440e-4f);
    V8 p = splat(1.9875691500e-4f);
    p = p * r + splat(1.3981999507e-3f);
    p = p * r + splat(8.3334519073e-3f);
    p = p * r + splat(4.1665795894e-2f);
    p = p * r + splat(1.6666665459e-1f);
    p = p * r + splat(5.0000001201e-1f);
    const V8 y = p * r * r + r + splat(1.f);
    const I8 e = __builtin_bit_cast(I8, t) - 0x4B400000;  // n, from t's low mantissa bits
    const I8 bits = (e + 127) << 23;
    return y * __builtin_bit_cast(V8, bits);
}

QUIRE_INLINE float lane(V8 v, int i) { return v[i]; }
QUIRE_INLINE float hsum(V8 s) {
    return ((lane(s, 0) + lane(s, 4)) + (lane(s, 1) + lane(s, 5))) + ((lane(s, 2) + lane(s, 6)) + (lane(s, 3) + lane(s, 7)));
}

// The tail (n % 8 elements) through the same vector code: padded with `fill`, written back.
template <typename F>
QUIRE_INLINE V8 tail(const float* x, size_t n, float fill, F f, float* out = nullptr) {
    float buf[8];
    std::fill_n(buf, 8, fill);
    std::copy_n(x, n, buf);
    const V8 v = f(load(buf));
    if (out) {
        store(buf, v);
        std::copy_n(buf, n, out);
    }
    return v;
}

}  // namespace

QUIRE_CLONES float maxOf(const float* x, size_t n) {
    V8 m = splat(-INFINITY);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) m = vmax(m, load(x + i));
    if (i < n) m = vmax(m, tail(x + i, n - i, -INFINITY, [](V8 v) { return v; }));
    return std::max(std::max(std::max(m[0], m[4]), std::max(m[1], m[5])), std::max(std::max(m[2], m[6]), std::max(m[3], m[7])));
}

QUIRE_CLONES float expShifted(float* x, size_t n, float shift) {
    const V8 sh = splat(shift);
    V8 s = splat(0.f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const V8 e = expPoly(load(x + i) - sh);
        store(x + i, e);
        s += e;
    }
    if (i < n) {
        V8 e = tail(x + i, n - i, -INFINITY, [&](V8 v) { return expPoly(v - sh); }, x + i);
        for (size_t l = n - i; l < 8; ++l) e[l] = 0.f;
        s += e;
    }
    return hsum(s);
}

QUIRE_CLONES float sumExpShifted(const float* x, size_t n, float shift) {
    const V8 sh = splat(shift);
    V8 s = splat(0.f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) s += expPoly(load(x + i) - sh);
    if (i < n) {
        V8 e = tail(x + i, n - i, -INFINITY, [&](V8 v) { return expPoly(v - sh); });
        for (size_t l = n - i; l < 8; ++l) e[l] = 0.f;
        s += e;
    }
    return hsum(s);
}

QUIRE_CLONES float questBound(const float* query, const float* trig, const float* kMin, const float* kMax, int heads,
                              int groupSize, int D) {
    const int half = D / 2;
    V8 acc = splat(0.f);
    float rest = 0;
    for (int h = 0; h < heads; ++h) {
        const float* q = query + size_t(h) * D;
        const size_t o = size_t(h / groupSize) * D;
        const float *lo = kMin + o, *hi = kMax + o;
        int i = 0;
        for (; i + 8 <= half; i += 8) {
            V8 a = load(q + i), b = load(q + i + half);
            if (trig) {
                const V8 cs = load(trig + i), sn = load(trig + half + i);
                const V8 a2 = a * cs - b * sn;
                b = a * sn + b * cs;
                a = a2;
            }
            acc += vmax(a * load(lo + i), a * load(hi + i));
            acc += vmax(b * load(lo + i + half), b * load(hi + i + half));
        }
        for (; i < half; ++i) {
            float a = q[i], b = q[i + half];
            if (trig) {
                const float a2 = a * trig[i] - b * trig[half + i];
                b = a * trig[half + i] + b * trig[i];
                a = a2;
            }
            rest += std::max(a * lo[i], a * hi[i]) + std::max(b * lo[i + half], b * hi[i + half]);
        }
    }
    return hsum(acc) + rest;
}

namespace {
QUIRE_INLINE float dotInline(const float* a, const float* b, int n) {
    V8 acc = splat(0.f);
    int i = 0;
    for (; i + 8 <= n; i += 8) acc += load(a + i) * load(b + i);
    float sum = hsum(acc);
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}
}  // namespace

QUIRE_CLONES float dot(const float* a, const float* b, int n) { return dotInline(a, b, n); }

QUIRE_CLONES void dotRows(const float* q, const float* rows, int count, int D, float scale, float* out) {
    for (int t = 0; t < count; ++t) out[t] = dotInline(q, rows + size_t(t) * D, D) * scale;
}

QUIRE_CLONES void addWeightedRows(const float* w, const float* rows, int count, int D, float* out) {
    for (int t = 0; t < count; ++t) {
        const float* r = rows + size_t(t) * D;
        for (int i = 0; i < D; ++i) out[i] += w[t] * r[i];
    }
}

QUIRE_CLONES void addTo(float* dst, const float* src, size_t n) {
    for (size_t i = 0; i < n; ++i) dst[i] += src[i];
}

QUIRE_CLONES void scale(float* x, size_t n, float s) {
    for (size_t i = 0; i < n; ++i) x[i] *= s;
}

QUIRE_CLONES void swiglu(float* gate, const float* up, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const V8 g = load(gate + i);
        store(gate + i, g / (splat(1.f) + expPoly(-g)) * load(up + i));
    }
    for (; i < n; ++i) {
        float g[8] = {gate[i]};
        const V8 v = load(g);
        gate[i] = (v / (splat(1.f) + expPoly(-v)))[0] * up[i];
    }
}

namespace {
// W [rows][cols] with element (r, c) at w[r * rowStride + c * colStride], into panels.
void packStrided(const float* w, int rows, int cols, size_t rowStride, size_t colStride, float* out) {
    for (int p0 = 0; p0 < rows; p0 += kPanel, out += size_t(kPanel) * cols)
        for (int c = 0; c < cols; ++c)
            for (int j = 0; j < kPanel; ++j)
                out[size_t(c) * kPanel + j] = p0 + j < rows ? w[size_t(p0 + j) * rowStride + size_t(c) * colStride] : 0.f;
}
}  // namespace

void packRows(const float* w, int rows, int cols, size_t ldw, float* out) { packStrided(w, rows, cols, ldw, 1, out); }

void packColumns(const float* v, int rows, int cols, size_t ldv, float* out) { packStrided(v, rows, cols, 1, ldv, out); }

namespace {
// R rows of X against one panel: one multiply and one add per element (no fused multiply-add, as
// everywhere here: this file is compiled with -ffp-contract=off, which the AVX-512 version needs,
// AVX-512 implying FMA). Each output is the same sum in the same order in every version.
// Narrow: the panel's sixteen lanes as two eight-lane vectors (AVX2, or two SSE registers each).
template <int R>
QUIRE_INLINE void panelRows(const float* panel, int cols, const float* X, size_t ldx, float* Y, size_t ldy, int width,
                            float alpha) {
    V8 lo[R], hi[R];
    for (int r = 0; r < R; ++r) lo[r] = splat(0.f), hi[r] = splat(0.f);
    for (int c = 0; c < cols; ++c) {
        const V8 w0 = load(panel + size_t(c) * kPanel), w1 = load(panel + size_t(c) * kPanel + 8);
        for (int r = 0; r < R; ++r) {
            const float x = X[size_t(r) * ldx + c];  // (vector times scalar: a broadcast load)
            lo[r] += w0 * x;
            hi[r] += w1 * x;
        }
    }
    const V8 a = splat(alpha);
    if (width == kPanel) {
        for (int r = 0; r < R; ++r) {
            store(Y + size_t(r) * ldy, lo[r] * a);
            store(Y + size_t(r) * ldy + 8, hi[r] * a);
        }
        return;
    }
    for (int r = 0; r < R; ++r) {  // the last panel's rows, through a buffer
        float buf[kPanel];
        store(buf, lo[r] * a);
        store(buf + 8, hi[r] * a);
        std::copy_n(buf, width, Y + size_t(r) * ldy);
    }
}

// Wide: the panel's sixteen lanes as one vector, for the AVX-512 version only (GCC lowers a
// 64-byte vector badly for AVX2: the decoder took three times as long).
typedef float V16 __attribute__((vector_size(64)));
static_assert(kPanel == 16);

template <int R>
QUIRE_INLINE void panelRowsWide(const float* panel, int cols, const float* X, size_t ldx, float* Y, size_t ldy,
                                int width, float alpha) {
    V16 acc[R] = {};
    for (int c = 0; c < cols; ++c) {
        V16 w;
        std::memcpy(&w, panel + size_t(c) * kPanel, sizeof w);
        for (int r = 0; r < R; ++r) acc[r] += w * X[size_t(r) * ldx + c];
    }
    for (int r = 0; r < R; ++r) {
        float buf[kPanel];
        const V16 y = acc[r] * alpha;
        if (width == kPanel) {
            std::memcpy(Y + size_t(r) * ldy, &y, sizeof y);
        } else {  // the last panel's rows, through a buffer
            std::memcpy(buf, &y, sizeof y);
            std::copy_n(buf, width, Y + size_t(r) * ldy);
        }
    }
}

template <bool Wide, int R>
QUIRE_INLINE void tileRows(const float* panel, int cols, const float* X, size_t ldx, float* Y, size_t ldy, int width,
                           float alpha) {
    if constexpr (Wide)
        panelRowsWide<R>(panel, cols, X, ldx, Y, ldy, width, alpha);
    else
        panelRows<R>(panel, cols, X, ldx, Y, ldy, width, alpha);
}

// The product, T rows of X at a time in tiles of up to 4 (narrow) or 8 rows (wide); each tile
// reads a panel once.
template <bool Wide>
QUIRE_INLINE void gemmPanels(const float* packed, int rows, int cols, const float* X, size_t ldx, int T, float* Y,
                             size_t ldy, float alpha) {
    for (int p0 = 0; p0 < rows; p0 += kPanel) {
        const float* panel = packed + size_t(p0 / kPanel) * kPanel * cols;
        const int width = std::min(kPanel, rows - p0);
        int t = 0;
        if constexpr (Wide)
            for (; t + 8 <= T; t += 8)
                tileRows<Wide, 8>(panel, cols, X + size_t(t) * ldx, ldx, Y + size_t(t) * ldy + p0, ldy, width, alpha);
        for (; t + 4 <= T; t += 4)
            tileRows<Wide, 4>(panel, cols, X + size_t(t) * ldx, ldx, Y + size_t(t) * ldy + p0, ldy, width, alpha);
        const float* x = X + size_t(t) * ldx;
        float* y = Y + size_t(t) * ldy + p0;
        switch (T - t) {
            case 3: tileRows<Wide, 3>(panel, cols, x, ldx, y, ldy, width, alpha); break;
            case 2: tileRows<Wide, 2>(panel, cols, x, ldx, y, ldy, width, alpha); break;
            case 1: tileRows<Wide, 1>(panel, cols, x, ldx, y, ldy, width, alpha); break;
            default: break;
        }
    }
}

// Four rows a tile on AVX2 and below (eight accumulators of eight lanes and the panel's two fill
// 10 of the 16 registers); on AVX-512 a panel's row is one register and 32 of them hold tiles of
// eight rows (a tenth faster on the decoder's attention than four; docs/BENCHMARKS.md).
QUIRE_CLONES void gemmNarrow(const float* packed, int rows, int cols, const float* X, size_t ldx, int T, float* Y,
                             size_t ldy, float alpha) {
    gemmPanels<false>(packed, rows, cols, X, ldx, T, Y, ldy, alpha);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define QUIRE_HAVE_AVX512_GEMM 1
__attribute__((target("avx512f"))) void gemmWide(const float* packed, int rows, int cols, const float* X, size_t ldx,
                                                 int T, float* Y, size_t ldy, float alpha) {
    gemmPanels<true>(packed, rows, cols, X, ldx, T, Y, ldy, alpha);
}
#endif
}  // namespace

void gemmPacked(const float* packed, int rows, int cols, const float* X, size_t ldx, int T, float* Y, size_t ldy,
                float alpha) {
#ifdef QUIRE_HAVE_AVX512_GEMM
    static const bool wide = __builtin_cpu_supports("avx512f");
    if (wide) return gemmWide(packed, rows, cols, X, ldx, T, Y, ldy, alpha);
#endif
    gemmNarrow(packed, rows, cols, X, ldx, T, Y, ldy, alpha);
}

}  // namespace quire::decoder::kernels
