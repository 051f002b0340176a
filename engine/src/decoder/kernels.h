// The CPU decoder's elementwise kernels: the softmax parts of attention, the SiLU of the MLP and
// the probability of a picked token. Compiled with -O3 and, on x86-64, cloned for AVX2 (picked
// when the program starts): GCC vectorises these loops, where a call to libm's exp per element
// and a running double sum (a serial chain) kept attention's softmax at a third of the decoder's
// time. Every clone computes the same values (no fused multiply-adds; sums kept in eight fixed
// partial sums), so results do not depend on the machine's vector width.
#pragma once
#include <cstddef>

namespace quire::decoder::kernels {

// The largest of x[0..n); -infinity when n is 0.
float maxOf(const float* x, size_t n);
// x[i] = exp(x[i] - shift) for i < n, and the sum of the new values. exp is a polynomial
// (Cephes' expf): within 2 ulp of the exact value over the range where the result is a normal
// float; arguments below it give about 1.2e-38 (clamped to the smallest normal float), and +infinity
// is never produced (clamped above too).
float expShifted(float* x, size_t n, float shift);
// The sum of exp(x[i] - shift) for i < n, x left as it is.
float sumExpShifted(const float* x, size_t n, float shift);
// The token selector's Quest bound of one block: the sum over heads h and dims i of
// max(q_i * kMin_i, q_i * kMax_i), q = head h of `query` (heads * D floats) rotated by `trig`
// (cos of each of the D / 2 frequencies, then sin; nullptr: `query` is already rotated), kMin and
// kMax those of head h's KV group (heads / groupSize groups, D floats each).
float questBound(const float* query, const float* trig, const float* kMin, const float* kMax, int heads, int groupSize,
                 int D);
// a . b over n floats: eight partial sums, combined ((0+4)+(1+5))+((2+6)+(3+7)), then the last
// n % 8 products added one by one.
float dot(const float* a, const float* b, int n);
// out[t] = scale * dot(q, rows[t], D) for t < count, rows `count` consecutive vectors of D floats.
void dotRows(const float* q, const float* rows, int count, int D, float scale, float* out);
// out += sum over t < count of w[t] * rows[t] (D floats each).
void addWeightedRows(const float* w, const float* rows, int count, int D, float* out);
// dst[i] += src[i].
void addTo(float* dst, const float* src, size_t n);
// x[i] *= s.
void scale(float* x, size_t n, float s);
// gate[i] = silu(gate[i]) * up[i] (SwiGLU), silu(g) = g / (1 + exp(-g)).
void swiglu(float* gate, const float* up, size_t n);

// Products with a matrix packed once, for a few rows at a time. A draft pass multiplies at most
// 2 x 16 rows by each weight matrix (and by the window's keys and values); OpenBLAS copies the
// whole matrix into its own panels on every call, which cost the decoder more than the
// multiplication itself (docs/BENCHMARKS.md). Packed here: `rows` rows of
// `cols` floats in panels of kPanel rows, each panel column after column ([cols][kPanel]), the
// last panel padded with zeros. Each output is one sum over c in increasing order, so a row's
// result does not depend on how many rows go with it, nor on the machine's vector width (an
// AVX-512 version, picked where the CPU has it, works in tiles of eight rows and one register a
// panel row; the AVX2 and baseline clones in tiles of four; no fused multiply-add in any).
constexpr int kPanel = 16;
inline size_t packedSize(int rows, int cols) { return size_t((rows + kPanel - 1) / kPanel) * kPanel * size_t(cols); }
// Packs W[rows][cols] (row r at w + r * ldw) into out (packedSize(rows, cols) floats).
void packRows(const float* w, int rows, int cols, size_t ldw, float* out);
// Packs the transpose of V[cols][rows] (row n at v + n * ldv): the packed matrix is Vᵀ, `rows` rows
// of `cols` floats. (Attention's weighted sum of values, O = S V, is a product with Vᵀ packed.)
void packColumns(const float* v, int rows, int cols, size_t ldv, float* out);
// Y[t][r] = alpha * sum over c < cols of X[t][c] W[r][c], for t < T and r < rows, with W packed by
// packRows (or packColumns). X rows are ldx floats apart, Y rows ldy apart.
void gemmPacked(const float* packed, int rows, int cols, const float* X, size_t ldx, int T, float* Y, size_t ldy,
                float alpha = 1.f);

}  // namespace quire::decoder::kernels
