// The front-end's CPU kernels: convolutions (im2col + nn/gemm, depthwise), pools, resizes,
// broadcasts, matrix products, softmax, transposes.
#include "nn/cpu_ops.h"

#include "core/simd.h"
#include "nn/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace quire::nn {

int64_t numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string shapeString(const Shape& shape) {
    std::string s = "[";
    for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
    return s + "]";
}

namespace cpu {

int outSize(int in, int k, int stride, int dil, int padA, int padB) {
    return (in + padA + padB - (dil * (k - 1) + 1)) / stride + 1;
}

int64_t transposedOutSize(int64_t in, int k, int stride, int dil, int padA, int padB) {
    return (in - 1) * stride + int64_t(dil) * (k - 1) + 1 - padA - padB;
}

namespace {

// Floats of the unfolded input a convolution holds at once (16 MB): a band of output rows at a time.
constexpr int64_t kIm2colBudget = int64_t(1) << 22;
// Floats of output a 1×1 convolution with an epilogue writes per band (512 KB, half the L2 of the
// machines measured): the epilogue reads them back from cache, not memory.
constexpr int64_t kEpilogueBand = int64_t(1) << 17;

// cols [C*kh*kw, (oy1-oy0)*Wo] from one image x [C, H, W]: output rows oy0 to oy1 only.
QUIRE_CLONES void im2col(const float* x, int C, int H, int W, const ConvShape& p, int oy0, int oy1, int Wo, float* cols) {
    const int64_t band = int64_t(oy1 - oy0) * Wo;
    for (int c = 0; c < C; ++c)
        for (int ky = 0; ky < p.kh; ++ky)
            for (int kx = 0; kx < p.kw; ++kx) {
                float* row = cols + ((int64_t(c) * p.kh + ky) * p.kw + kx) * band;
                const float* plane = x + int64_t(c) * H * W;
                for (int oy = oy0; oy < oy1; ++oy) {
                    const int iy = oy * p.strideH - p.padT + ky * p.dilH;
                    float* out = row + int64_t(oy - oy0) * Wo;
                    if (iy < 0 || iy >= H) {
                        std::fill(out, out + Wo, 0.f);
                        continue;
                    }
                    const float* in = plane + int64_t(iy) * W;
                    const int off = kx * p.dilW - p.padL;
                    if (p.strideW == 1) {
                        // Valid ox range: 0 <= ox + off < W.
                        const int lo = std::clamp(-off, 0, Wo), hi = std::clamp(W - off, 0, Wo);
                        std::fill(out, out + lo, 0.f);
                        if (hi > lo) std::memcpy(out + lo, in + lo + off, sizeof(float) * size_t(hi - lo));
                        std::fill(out + std::max(hi, lo), out + Wo, 0.f);
                    } else {
                        for (int ox = 0; ox < Wo; ++ox) {
                            const int ix = ox * p.strideW + off;
                            out[ox] = (ix >= 0 && ix < W) ? in[ix] : 0.f;
                        }
                    }
                }
            }
}

// One tap of a depthwise convolution at an output row: its input row, weight and column offset.
struct DepthwiseTap {
    const float* row;
    float kv;
    int off;
};

// out[ox] = bias + Σ kv·in[ox·S + off] over the taps in (ky, kx) order, a tap skipped where its
// column falls outside the row. The sum's order is the tap loop's, so the blocked interior and the
// checked edges give the values one tap-by-tap pass gave. S = 0: the stride is run-time.
template <int S>
inline void depthwiseRow(const DepthwiseTap* taps, int nt, float b, int stride, int W, int Wo, float* o) {
    const int s = S ? S : stride;
    int lo = 0, hi = Wo;  // columns where every tap lies inside the row
    int maxOff = 0;
    for (int t = 0; t < nt; ++t) {
        const int off = taps[t].off;
        maxOff = std::max(maxOff, off);
        lo = std::max(lo, off < 0 ? (-off + s - 1) / s : 0);
        hi = std::min(hi, W - 1 - off < 0 ? 0 : (W - 1 - off) / s + 1);
    }
    lo = std::min(lo, Wo);  // a pad wider than the row: every column is an edge
    hi = std::max(hi, lo);
    auto checked = [&](int ox) {
        float acc = b;
        for (int t = 0; t < nt; ++t) {
            const int ix = ox * s + taps[t].off;
            if (ix >= 0 && ix < W) acc += taps[t].kv * taps[t].row[ix];
        }
        o[ox] = acc;
    };
    for (int ox = 0; ox < lo; ++ox) checked(ox);
    // Sixteen outputs held in two 8-lane registers while every tap adds into them: one load a
    // product, no store and reload of the output row per tap (GCC vector types; the baseline clone
    // splits them in halves).
    using v8 = float __attribute__((vector_size(32)));
    int ox = lo;
    if constexpr (S == 1 || S == 2) {
        // With stride 2 a block reads 32 columns, the last one past its last tap's: it too must
        // lie inside the row.
        for (; ox + 16 <= hi && (S == 1 || int64_t(ox) * 2 + maxOff + 31 < W); ox += 16) {
            v8 acc0 = v8{} + b, acc1 = v8{} + b;
            for (int t = 0; t < nt; ++t) {
                const float* in = taps[t].row + int64_t(ox) * S + taps[t].off;
                v8 x0, x1;
                if constexpr (S == 1) {
                    std::memcpy(&x0, in, sizeof x0);
                    std::memcpy(&x1, in + 8, sizeof x1);
                } else {  // the even columns of 32 (GCC 12 and clang both have __builtin_shufflevector)
                    v8 r0, r1, r2, r3;
                    std::memcpy(&r0, in, sizeof r0);
                    std::memcpy(&r1, in + 8, sizeof r1);
                    std::memcpy(&r2, in + 16, sizeof r2);
                    std::memcpy(&r3, in + 24, sizeof r3);
                    x0 = __builtin_shufflevector(r0, r1, 0, 2, 4, 6, 8, 10, 12, 14);
                    x1 = __builtin_shufflevector(r2, r3, 0, 2, 4, 6, 8, 10, 12, 14);
                }
                const v8 kv = v8{} + taps[t].kv;
                acc0 += kv * x0;
                acc1 += kv * x1;
            }
            std::memcpy(o + ox, &acc0, sizeof acc0);
            std::memcpy(o + ox + 8, &acc1, sizeof acc1);
        }
    }
    for (; ox < hi; ++ox) {  // inside the row: no column checks
        float acc = b;
        for (int t = 0; t < nt; ++t) acc += taps[t].kv * taps[t].row[int64_t(ox) * s + taps[t].off];
        o[ox] = acc;
    }
    for (; ox < Wo; ++ox) checked(ox);
}

QUIRE_CLONES void depthwise(const float* x, const float* w, const float* bias, int C, int H, int W, const ConvShape& p,
               int Ho, int Wo, float* y, const Epilogue* epilogue) {
    std::vector<DepthwiseTap> taps(size_t(p.kh) * p.kw);
    for (int c = 0; c < C; ++c) {
        const float* plane = x + int64_t(c) * H * W;
        const float* k = w + int64_t(c) * p.kh * p.kw;
        float* out = y + int64_t(c) * Ho * Wo;
        const float b = bias ? bias[c] : 0.f;
        for (int oy = 0; oy < Ho; ++oy) {
            int nt = 0;  // the taps of rows inside the image, in (ky, kx) order
            for (int ky = 0; ky < p.kh; ++ky) {
                const int iy = oy * p.strideH - p.padT + ky * p.dilH;
                if (iy < 0 || iy >= H) continue;
                for (int kx = 0; kx < p.kw; ++kx)
                    taps[size_t(nt++)] = {plane + int64_t(iy) * W, k[ky * p.kw + kx], kx * p.dilW - p.padL};
            }
            float* o = out + int64_t(oy) * Wo;
            if (p.strideW == 1)
                depthwiseRow<1>(taps.data(), nt, b, 1, W, Wo, o);
            else if (p.strideW == 2)
                depthwiseRow<2>(taps.data(), nt, b, 2, W, Wo, o);
            else
                depthwiseRow<0>(taps.data(), nt, b, p.strideW, W, Wo, o);
        }
        if (epilogue) (*epilogue)(out, int64_t(Ho) * Wo);
    }
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const float* bias, const ConvShape& p, const Epilogue* epilogue) {
    const int N = int(x.shape[0]), C = int(x.shape[1]), H = int(x.shape[2]), W = int(x.shape[3]);
    const int M = int(w.shape[0]);
    const int Ho = outSize(H, p.kh, p.strideH, p.dilH, p.padT, p.padB);
    const int Wo = outSize(W, p.kw, p.strideW, p.dilW, p.padL, p.padR);
    Tensor y = Tensor::uninit({N, M, std::max(Ho, 0), std::max(Wo, 0)});
    if (Ho <= 0 || Wo <= 0) return y;
    const int64_t plane = int64_t(Ho) * Wo;
    if (p.group > 1) {  // depthwise (checked by the caller: group == C == M)
        for (int n = 0; n < N; ++n)
            depthwise(x.data() + int64_t(n) * C * H * W, w.data(), bias, C, H, W, p, Ho, Wo,
                      y.data() + int64_t(n) * M * plane, epilogue);
        return y;
    }
    const int K = C * p.kh * p.kw;
    if (K == 0 || x.f.empty()) {  // no input channels or an empty image: the bias alone
        for (int n = 0; n < N; ++n)
            for (int m = 0; m < M; ++m) {
                float* run = y.data() + (int64_t(n) * M + m) * plane;
                std::fill_n(run, plane, bias ? bias[m] : 0.f);
                if (epilogue) (*epilogue)(run, plane);
            }
        return y;
    }
    const bool pointwise = p.kh == 1 && p.kw == 1 && p.strideH == 1 && p.strideW == 1 && p.padT == 0 &&
                           p.padL == 0 && p.padB == 0 && p.padR == 0;
    // The unfolded input is made a band of output rows at a time: whole, it was the front-end's
    // largest buffer (the detector's 3×3 convolutions at a quarter of the page: 140 MB). A 1×1
    // convolution with an epilogue goes in bands too, so that the epilogue finds its band in cache.
    const int bandRows = pointwise ? (epilogue ? int(std::clamp<int64_t>(kEpilogueBand / (int64_t(M) * Wo), 1, Ho)) : Ho)
                                   : int(std::clamp<int64_t>(kIm2colBudget / (int64_t(K) * Wo), 1, Ho));
    FloatBuffer cols(pointwise ? 0 : size_t(K) * size_t(bandRows) * size_t(Wo));
    for (int n = 0; n < N; ++n) {
        const float* xn = x.data() + int64_t(n) * C * H * W;
        float* yn = y.data() + int64_t(n) * M * plane;
        for (int oy0 = 0; oy0 < Ho; oy0 += bandRows) {
            const int oy1 = std::min(Ho, oy0 + bandRows);
            const int band = (oy1 - oy0) * Wo;
            float* yb = yn + int64_t(oy0) * Wo;
            // The product added onto the bias, as before the bands: a band made for an epilogue
            // may round its last bit apart from the whole product, no more.
            const float* B = xn + int64_t(oy0) * Wo;
            int ldb = int(plane);
            if (!pointwise) {
                im2col(xn, C, H, W, p, oy0, oy1, Wo, cols.data());
                B = cols.data();
                ldb = band;
            }
            gemm(M, band, K, w.data(), K, B, ldb, yb, int(plane), false, bias);
            if (epilogue)
                for (int m = 0; m < M; ++m) (*epilogue)(yb + m * plane, band);
        }
    }
    return y;
}

Tensor convTranspose2d(const Tensor& x, const Tensor& w, const float* bias, const ConvShape& p) {
    const int N = int(x.shape[0]), C = int(x.shape[1]), H = int(x.shape[2]), W = int(x.shape[3]);
    const int M = int(w.shape[1]);
    const int Ho = int(transposedOutSize(H, p.kh, p.strideH, p.dilH, p.padT, p.padB));
    const int Wo = int(transposedOutSize(W, p.kw, p.strideW, p.dilW, p.padL, p.padR));
    Tensor y = Tensor::floats({N, M, std::max(Ho, 0), std::max(Wo, 0)});
    if (Ho <= 0 || Wo <= 0) return y;
    const int K = M * p.kh * p.kw;
    const int64_t HW = int64_t(H) * W;
    if (C == 0 || HW == 0 || K == 0) {  // nothing to scatter: the bias alone
        for (int n = 0; n < N; ++n)
            for (int m = 0; m < M; ++m)
                std::fill_n(y.data() + (int64_t(n) * M + m) * Ho * Wo, int64_t(Ho) * Wo, bias ? bias[m] : 0.f);
        return y;
    }
    FloatBuffer cols(size_t(K) * size_t(HW));
    for (int n = 0; n < N; ++n) {
        // cols [M*kh*kw, H*W] = wᵀ [M*kh*kw, C] × x [C, H*W]
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, K, int(HW), C, 1.f, w.data(), K,
                    x.data() + int64_t(n) * C * HW, int(HW), 0.f, cols.data(), int(HW));
        float* yn = y.data() + int64_t(n) * M * Ho * Wo;
        for (int m = 0; m < M; ++m)
            std::fill(yn + int64_t(m) * Ho * Wo, yn + int64_t(m + 1) * Ho * Wo, bias ? bias[m] : 0.f);
        for (int m = 0; m < M; ++m)
            for (int ky = 0; ky < p.kh; ++ky)
                for (int kx = 0; kx < p.kw; ++kx) {
                    const float* row = cols.data() + ((int64_t(m) * p.kh + ky) * p.kw + kx) * HW;
                    for (int iy = 0; iy < H; ++iy) {
                        const int oy = iy * p.strideH - p.padT + ky * p.dilH;
                        if (oy < 0 || oy >= Ho) continue;
                        float* o = yn + (int64_t(m) * Ho + oy) * Wo;
                        for (int ix = 0; ix < W; ++ix) {
                            const int ox = ix * p.strideW - p.padL + kx * p.dilW;
                            if (ox >= 0 && ox < Wo) o[ox] += row[int64_t(iy) * W + ix];
                        }
                    }
                }
    }
    return y;
}

Tensor pool2d(const Tensor& x, PoolKind kind, int kh, int kw, int sh, int sw, const int pads[4],
              bool countIncludePad) {
    const int N = int(x.shape[0]), C = int(x.shape[1]), H = int(x.shape[2]), W = int(x.shape[3]);
    const int Ho = outSize(H, kh, sh, 1, pads[0], pads[2]), Wo = outSize(W, kw, sw, 1, pads[1], pads[3]);
    Tensor y = Tensor::uninit({N, C, std::max(Ho, 0), std::max(Wo, 0)});
    if (Ho <= 0 || Wo <= 0) return y;  // a window larger than the padded input: empty output
    for (int64_t nc = 0; nc < int64_t(N) * C; ++nc) {
        const float* in = x.data() + nc * H * W;
        float* out = y.data() + nc * Ho * Wo;
        for (int oy = 0; oy < Ho; ++oy)
            for (int ox = 0; ox < Wo; ++ox) {
                const int y0 = oy * sh - pads[0], x0 = ox * sw - pads[1];
                float acc = kind == PoolKind::Max ? -std::numeric_limits<float>::infinity() : 0.f;
                int count = 0;
                for (int yy = std::max(y0, 0); yy < std::min(y0 + kh, H); ++yy)
                    for (int xx = std::max(x0, 0); xx < std::min(x0 + kw, W); ++xx) {
                        const float v = in[int64_t(yy) * W + xx];
                        acc = kind == PoolKind::Max ? std::max(acc, v) : acc + v;
                        ++count;
                    }
                if (kind == PoolKind::Average) acc /= float(countIncludePad ? kh * kw : std::max(count, 1));
                out[int64_t(oy) * Wo + ox] = acc;
            }
    }
    return y;
}

Tensor globalAveragePool(const Tensor& x) {
    const int64_t N = x.shape[0], C = x.shape[1];
    const int64_t plane = x.size() / std::max<int64_t>(N * C, 1);
    Shape s = {N, C};
    for (int k = 2; k < x.rank(); ++k) s.push_back(1);
    Tensor y = Tensor::floats(s);
    for (int64_t nc = 0; nc < N * C; ++nc) {
        double acc = 0;
        const float* in = x.data() + nc * plane;
        for (int64_t k = 0; k < plane; ++k) acc += in[k];
        y.f[size_t(nc)] = plane ? float(acc / double(plane)) : 0.f;
    }
    return y;
}

namespace {

// Broadcast strides of `s` (right-aligned) against an output of rank `rank`.
std::vector<int64_t> broadcastStrides(const Shape& s, const Shape& out) {
    std::vector<int64_t> st(out.size(), 0);
    int64_t stride = 1;
    for (int k = int(s.size()) - 1, o = int(out.size()) - 1; k >= 0; --k, --o) {
        st[size_t(o)] = s[size_t(k)] == 1 ? 0 : stride;
        stride *= s[size_t(k)];
    }
    return st;
}

bool broadcastShape(const Shape& a, const Shape& b, Shape& out) {
    const size_t r = std::max(a.size(), b.size());
    out.assign(r, 1);
    for (size_t k = 0; k < r; ++k) {
        const int64_t da = k < r - a.size() ? 1 : a[k - (r - a.size())];
        const int64_t db = k < r - b.size() ? 1 : b[k - (r - b.size())];
        if (da != db && da != 1 && db != 1) return false;
        out[k] = da == 1 ? db : da;
    }
    return true;
}

template <typename T, typename F>
void broadcastApply(const T* a, const T* b, T* y, Shape out, std::vector<int64_t> sa, std::vector<int64_t> sb, F f) {
    // Merge adjacent dimensions that are contiguous for both operands.
    Shape dims;
    std::vector<int64_t> da, db;
    for (size_t k = 0; k < out.size(); ++k) {
        if (out[k] == 1) continue;
        if (!dims.empty() && da.back() == sa[k] * out[k] && db.back() == sb[k] * out[k]) {
            dims.back() *= out[k];
            da.back() = sa[k];
            db.back() = sb[k];
        } else {
            dims.push_back(out[k]);
            da.push_back(sa[k]);
            db.push_back(sb[k]);
        }
    }
    if (dims.empty()) {
        y[0] = f(a[0], b[0]);
        return;
    }
    const size_t R = dims.size();
    const int64_t inner = dims[R - 1], ia = da[R - 1], ib = db[R - 1];
    const int64_t outer = numel(dims) / inner;
    std::vector<int64_t> idx(R, 0);
    int64_t offA = 0, offB = 0;
    for (int64_t o = 0; o < outer; ++o) {
        T* yo = y + o * inner;
        const T* ao = a + offA;
        const T* bo = b + offB;
        if (ia == 1 && ib == 1)
            for (int64_t k = 0; k < inner; ++k) yo[k] = f(ao[k], bo[k]);
        else if (ia == 1 && ib == 0)
            for (int64_t k = 0; k < inner; ++k) yo[k] = f(ao[k], bo[0]);
        else if (ia == 0 && ib == 1)
            for (int64_t k = 0; k < inner; ++k) yo[k] = f(ao[0], bo[k]);
        else
            for (int64_t k = 0; k < inner; ++k) yo[k] = f(ao[k * ia], bo[k * ib]);
        for (int d = int(R) - 2; d >= 0; --d) {  // odometer over the outer dimensions
            ++idx[size_t(d)];
            offA += da[size_t(d)];
            offB += db[size_t(d)];
            if (idx[size_t(d)] < dims[size_t(d)]) break;
            offA -= da[size_t(d)] * dims[size_t(d)];
            offB -= db[size_t(d)] * dims[size_t(d)];
            idx[size_t(d)] = 0;
        }
    }
}

template <typename T>
void applyOp(const T* a, const T* b, T* y, const Shape& out, const std::vector<int64_t>& sa,
             const std::vector<int64_t>& sb, BinaryOp op) {
    switch (op) {
    case BinaryOp::Add: broadcastApply(a, b, y, out, sa, sb, [](T u, T v) { return u + v; }); break;
    case BinaryOp::Sub: broadcastApply(a, b, y, out, sa, sb, [](T u, T v) { return u - v; }); break;
    case BinaryOp::Mul: broadcastApply(a, b, y, out, sa, sb, [](T u, T v) { return u * v; }); break;
    case BinaryOp::Div:
        broadcastApply(a, b, y, out, sa, sb, [](T u, T v) { return v == T(0) && std::is_integral_v<T> ? T(0) : u / v; });
        break;
    case BinaryOp::Pow:
        broadcastApply(a, b, y, out, sa, sb, [](T u, T v) {
            if constexpr (std::is_floating_point_v<T>) return v == T(2) ? u * u : T(std::pow(u, v));
            else return T(std::pow(double(u), double(v)));
        });
        break;
    }
}

}  // namespace

bool broadcastShapeOf(const Shape& a, const Shape& b, Shape& out) { return broadcastShape(a, b, out); }

Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op, std::string* error) {
    Shape out;
    if (!broadcastShape(a.shape, b.shape, out)) {
        *error = "shapes " + shapeString(a.shape) + " and " + shapeString(b.shape) + " do not broadcast";
        return {};
    }
    if (a.isInt != b.isInt) {
        *error = "mixes integer and float operands";
        return {};
    }
    const auto sa = broadcastStrides(a.shape, out), sb = broadcastStrides(b.shape, out);
    if (a.isInt) {
        Tensor y = Tensor::ints(out, std::vector<int64_t>(size_t(numel(out))));
        if (!y.i.empty()) applyOp(a.i.data(), b.i.data(), y.i.data(), out, sa, sb, op);
        return y;
    }
    Tensor y = Tensor::uninit(out);
    if (!y.f.empty()) applyOp(a.data(), b.data(), y.data(), out, sa, sb, op);
    return y;
}

void binaryInPlace(Tensor& a, const Tensor& b, BinaryOp op, bool reversed) {
    const auto sa = broadcastStrides(a.shape, a.shape), sb = broadcastStrides(b.shape, a.shape);
    if (a.f.empty()) return;
    if (reversed) applyOp(b.data(), a.data(), a.data(), a.shape, sb, sa, op);
    else applyOp(a.data(), b.data(), a.data(), a.shape, sa, sb, op);
}

Tensor matmul(const Tensor& a, const Tensor& b, std::string* error) {
    if (a.rank() < 2 || b.rank() < 2 || a.isInt || b.isInt) {
        *error = "needs float operands of rank ≥ 2, got " + shapeString(a.shape) + " × " + shapeString(b.shape);
        return {};
    }
    const int64_t M = a.shape[size_t(a.rank() - 2)], K = a.shape[size_t(a.rank() - 1)];
    const int64_t K2 = b.shape[size_t(b.rank() - 2)], N = b.shape[size_t(b.rank() - 1)];
    if (K != K2) {
        *error = "inner dimensions differ: " + shapeString(a.shape) + " × " + shapeString(b.shape);
        return {};
    }
    const Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
    if (bb.empty() || numel(bb) == 1) {  // one weight matrix: a single GEMM over all rows of a
        Shape out = a.shape;
        out.back() = N;
        Tensor y = Tensor::uninit(out);
        if (K == 0) {
            std::fill(y.f.begin(), y.f.end(), 0.f);
            if (b.rank() > a.rank()) y.shape.insert(y.shape.begin(), size_t(b.rank() - a.rank()), 1);
            return y;
        }
        const int64_t rows = a.size() / K;
        if (rows > 0 && N > 0)
            gemm(int(rows), int(N), int(K), a.data(), int(K), b.data(), int(N), y.data(), int(N), false);
        if (b.rank() > a.rank()) y.shape.insert(y.shape.begin(), size_t(b.rank() - a.rank()), 1);
        return y;
    }
    Shape batch;
    if (!broadcastShape(ba, bb, batch)) {
        *error = "batch dimensions do not broadcast: " + shapeString(a.shape) + " × " + shapeString(b.shape);
        return {};
    }
    const auto sa = broadcastStrides(ba, batch), sb = broadcastStrides(bb, batch);
    Shape out = batch;
    out.push_back(M);
    out.push_back(N);
    if (K == 0 || a.f.empty() || b.f.empty()) return Tensor::floats(out);
    Tensor y = Tensor::uninit(out);  // every product writes its whole [M, N] block
    const int64_t nb = numel(batch);
    std::vector<int64_t> idx(batch.size(), 0);
    for (int64_t t = 0; t < nb; ++t) {
        int64_t oa = 0, ob = 0, rem = t;
        for (int d = int(batch.size()) - 1; d >= 0; --d) {
            const int64_t i = rem % batch[size_t(d)];
            rem /= batch[size_t(d)];
            oa += i * sa[size_t(d)];
            ob += i * sb[size_t(d)];
        }
        gemm(int(M), int(N), int(K), a.data() + oa * M * K, int(K), b.data() + ob * K * N, int(N), y.data() + t * M * N,
             int(N), false);
    }
    return y;
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
    const int R = x.rank();
    Shape out(static_cast<size_t>(R));
    std::vector<int64_t> inStride(static_cast<size_t>(R), 1), st(static_cast<size_t>(R));
    for (int k = R - 2; k >= 0; --k) inStride[size_t(k)] = inStride[size_t(k + 1)] * x.shape[size_t(k + 1)];
    for (int k = 0; k < R; ++k) {
        out[size_t(k)] = x.shape[size_t(perm[size_t(k)])];
        st[size_t(k)] = inStride[size_t(perm[size_t(k)])];
    }
    Tensor y;
    y.shape = out;
    y.isInt = x.isInt;
    const int64_t n = numel(out);
    if (x.isInt) y.i.resize(size_t(n));
    else y.f.resize(size_t(n));
    if (n == 0) return y;
    std::vector<int64_t> idx(static_cast<size_t>(R), 0);
    int64_t off = 0;
    const int64_t inner = R ? out[size_t(R - 1)] : 1, is = R ? st[size_t(R - 1)] : 0;
    for (int64_t o = 0; o < n; o += inner) {
        if (x.isInt)
            for (int64_t k = 0; k < inner; ++k) y.i[size_t(o + k)] = x.i[size_t(off + k * is)];
        else
            for (int64_t k = 0; k < inner; ++k) y.f[size_t(o + k)] = x.f[size_t(off + k * is)];
        for (int d = R - 2; d >= 0; --d) {
            ++idx[size_t(d)];
            off += st[size_t(d)];
            if (idx[size_t(d)] < out[size_t(d)]) break;
            off -= st[size_t(d)] * out[size_t(d)];
            idx[size_t(d)] = 0;
        }
    }
    return y;
}

void softmaxInPlace(Tensor& x, int axis, bool coerce2d) {
    if (x.f.empty()) return;
    int64_t outer = 1, n = 1, inner = 1;
    for (int k = 0; k < x.rank(); ++k) {
        if (k < axis) outer *= x.shape[size_t(k)];
        else if (k == axis || coerce2d) n *= x.shape[size_t(k)];
        else inner *= x.shape[size_t(k)];
    }
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            float* p = x.data() + o * n * inner + i;
            float mx = -std::numeric_limits<float>::infinity();
            for (int64_t k = 0; k < n; ++k) mx = std::max(mx, p[k * inner]);
            double sum = 0;
            for (int64_t k = 0; k < n; ++k) {
                p[k * inner] = std::exp(p[k * inner] - mx);
                sum += p[k * inner];
            }
            const float inv = float(1.0 / sum);
            for (int64_t k = 0; k < n; ++k) p[k * inner] *= inv;
        }
}

Tensor reduceMean(const Tensor& x, int axis, bool keepDims) {
    int64_t outer = 1, n = x.shape[size_t(axis)], inner = 1;
    for (int k = 0; k < axis; ++k) outer *= x.shape[size_t(k)];
    for (int k = axis + 1; k < x.rank(); ++k) inner *= x.shape[size_t(k)];
    Shape s = x.shape;
    if (keepDims) s[size_t(axis)] = 1;
    else s.erase(s.begin() + axis);
    Tensor y = Tensor::floats(s);
    if (n == 0 || x.f.empty()) return y;  // the mean of nothing: zeros
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            double acc = 0;
            const float* p = x.data() + o * n * inner + i;
            for (int64_t k = 0; k < n; ++k) acc += p[k * inner];
            y.f[size_t(o * inner + i)] = n ? float(acc / double(n)) : 0.f;
        }
    return y;
}

Tensor resizeNearest(const Tensor& x, const Shape& outShape) {
    const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
    const int64_t Ho = outShape[2], Wo = outShape[3];
    Tensor y = Tensor::uninit({N, C, Ho, Wo});
    std::vector<int64_t> xs(static_cast<size_t>(Wo));
    for (int64_t ox = 0; ox < Wo; ++ox)
        xs[size_t(ox)] = std::min<int64_t>(W - 1, int64_t(std::floor(double(ox) * double(W) / double(Wo))));
    for (int64_t nc = 0; nc < N * C; ++nc)
        for (int64_t oy = 0; oy < Ho; ++oy) {
            const int64_t iy = std::min<int64_t>(H - 1, int64_t(std::floor(double(oy) * double(H) / double(Ho))));
            const float* in = x.data() + (nc * H + iy) * W;
            float* out = y.data() + (nc * Ho + oy) * Wo;
            for (int64_t ox = 0; ox < Wo; ++ox) out[ox] = in[xs[size_t(ox)]];
        }
    return y;
}

}  // namespace cpu
}  // namespace quire::nn
