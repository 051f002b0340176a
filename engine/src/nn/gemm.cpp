// The front-end's matrix product (nn/gemm.h). Its products are 1×1 convolutions of 16–480
// channels over thousands of columns; OpenBLAS's AVX2 kernels, which some environments force
// (OPENBLAS_CORETYPE), reach half of what the CPU's AVX-512 units do on them, so on such CPUs
// the product is this kernel's: tiles of 12 rows × 32 columns held in 24 registers, each element
// of A broadcast into the multiply-add, K in blocks of 256 (docs/BENCHMARKS.md, 2026-12-06).
#include "nn/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstddef>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define QUIRE_HAVE_AVX512_KERNEL 1
#endif

namespace quire::nn::cpu {

#ifdef QUIRE_HAVE_AVX512_KERNEL
namespace {

constexpr int kRows = 12;       // a tile's rows of A and C: 2 × 12 accumulators of 16 lanes
constexpr int kColumns = 32;    // a tile's columns of B and C: two 16-lane vectors
constexpr int kDepth = 256;     // K in blocks: a tile's B panel (256 × 32 floats) stays in L1

// One tile: C[i][0..32) (+)= sum over k of A[i][k] · B[k][0..32), k in order, one fused
// multiply-add each. Full tiles load and store whole vectors; the last columns go through masks.
template <int R, bool Full>
__attribute__((target("avx512f"), always_inline)) inline void tile(int K, const float* A, size_t lda, const float* B,
                                                                   size_t ldb, float* C, size_t ldc, __mmask16 m0,
                                                                   __mmask16 m1, bool accumulate, const float* bias) {
    __m512 c0[R], c1[R];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
        float* c = C + size_t(i) * ldc;
        if (!accumulate) {
            c0[i] = c1[i] = bias ? _mm512_set1_ps(bias[i]) : _mm512_setzero_ps();
        } else if (Full) {
            c0[i] = _mm512_loadu_ps(c);
            c1[i] = _mm512_loadu_ps(c + 16);
        } else {
            c0[i] = _mm512_maskz_loadu_ps(m0, c);
            c1[i] = _mm512_maskz_loadu_ps(m1, c + 16);
        }
    }
    for (int k = 0; k < K; ++k) {
        const float* b = B + size_t(k) * ldb;
        const __m512 b0 = Full ? _mm512_loadu_ps(b) : _mm512_maskz_loadu_ps(m0, b);
        const __m512 b1 = Full ? _mm512_loadu_ps(b + 16) : _mm512_maskz_loadu_ps(m1, b + 16);
#pragma GCC unroll 16
        for (int i = 0; i < R; ++i) {
            const __m512 a = _mm512_set1_ps(A[size_t(i) * lda + size_t(k)]);
            c0[i] = _mm512_fmadd_ps(a, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(a, b1, c1[i]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
        float* c = C + size_t(i) * ldc;
        if (Full) {
            _mm512_storeu_ps(c, c0[i]);
            _mm512_storeu_ps(c + 16, c1[i]);
        } else {
            _mm512_mask_storeu_ps(c, m0, c0[i]);
            _mm512_mask_storeu_ps(c + 16, m1, c1[i]);
        }
    }
}

template <bool Full>
__attribute__((target("avx512f"))) void tileOfRows(int rows, int K, const float* A, size_t lda, const float* B,
                                                   size_t ldb, float* C, size_t ldc, __mmask16 m0, __mmask16 m1,
                                                   bool accumulate, const float* bias) {
    switch (rows) {
#define QUIRE_TILE(r) \
    case r: tile<r, Full>(K, A, lda, B, ldb, C, ldc, m0, m1, accumulate, bias); break;
        QUIRE_TILE(1) QUIRE_TILE(2) QUIRE_TILE(3) QUIRE_TILE(4) QUIRE_TILE(5) QUIRE_TILE(6)
        QUIRE_TILE(7) QUIRE_TILE(8) QUIRE_TILE(9) QUIRE_TILE(10) QUIRE_TILE(11) QUIRE_TILE(12)
#undef QUIRE_TILE
        default: break;
    }
}

// Column panels outside, row tiles inside: a panel of B is read from L1 by every tile of A.
__attribute__((target("avx512f"))) void gemmAvx512(int M, int N, int K, const float* A, size_t lda, const float* B,
                                                   size_t ldb, float* C, size_t ldc, bool accumulate, const float* bias) {
    for (int k0 = 0; k0 < K; k0 += kDepth) {
        const int depth = std::min(kDepth, K - k0);
        const bool onto = accumulate || k0 > 0;
        for (int n0 = 0; n0 < N; n0 += kColumns) {
            const int cols = std::min(kColumns, N - n0);
            const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
            const __mmask16 m1 = cols >= 32 ? __mmask16(0xFFFF) : cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
            for (int m0row = 0; m0row < M; m0row += kRows) {
                const int rows = std::min(kRows, M - m0row);
                const float* a = A + size_t(m0row) * lda + size_t(k0);
                const float* b = B + size_t(k0) * ldb + size_t(n0);
                float* c = C + size_t(m0row) * ldc + size_t(n0);
                const float* rowBias = bias ? bias + m0row : nullptr;
                if (cols == kColumns) tileOfRows<true>(rows, depth, a, lda, b, ldb, c, ldc, m0, m1, onto, rowBias);
                else tileOfRows<false>(rows, depth, a, lda, b, ldb, c, ldc, m0, m1, onto, rowBias);
            }
        }
    }
}

bool haveAvx512() {
    static const bool have = __builtin_cpu_supports("avx512f");
    return have;
}

}  // namespace
#endif

void gemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate,
          const float* rowBias) {
#ifdef QUIRE_HAVE_AVX512_KERNEL
    if (haveAvx512() && M > 0 && N > 0 && K > 0) {
        gemmAvx512(M, N, K, A, size_t(lda), B, size_t(ldb), C, size_t(ldc), accumulate, rowBias);
        return;
    }
#endif
    gemmOpenBlas(M, N, K, A, lda, B, ldb, C, ldc, accumulate, rowBias);
}

void gemmOpenBlas(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                  bool accumulate, const float* rowBias) {
    if (M <= 0 || N <= 0) return;
    // OpenBLAS adds the product onto C filled with the bias (beta 1).
    if (!accumulate)
        for (int i = 0; i < M; ++i) std::fill_n(C + size_t(i) * size_t(ldc), N, rowBias ? rowBias[i] : 0.f);
    if (K > 0) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.f, A, lda, B, ldb, 1.f, C, ldc);
}

std::string gemmKernel() {
#ifdef QUIRE_HAVE_AVX512_KERNEL
    if (haveAvx512()) return "avx512";
#endif
    return "openblas";
}

}  // namespace quire::nn::cpu
