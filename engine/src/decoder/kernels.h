#pragma once
// The CPU decoder's elementwise kernels: the softmax parts of attention, the SiLU of the MLP and
// the probability of a picked token. Compiled with -O3 and, on x86-64, cloned for AVX2 (picked
// when the program starts): GCC vectorises these loops, where a call to libm's exp per element
// and a running double sum (a serial chain) kept attention's softmax at a third of the decoder's
// time. Every clone computes the same values (no fused multiply-adds; sums kept in eight fixed
// partial sums), so results do not depend on the machine's vector width.
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

}  // namespace quire::decoder::kernels
