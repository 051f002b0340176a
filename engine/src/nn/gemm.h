// The front-end's single-precision matrix product, C = A·B or C += A·B (row-major, B's rows
// contiguous): the convolutions' products, MatMul and the recognizer's classifier.
#pragma once

#include <string>

namespace quire::nn::cpu {

// C [M][N] (rows ldc apart) = A [M][K] (lda) × B [K][N] (ldb), added onto C when `accumulate`,
// else onto rowBias[i] in row i where given (a convolution's bias, without a pass to write it
// first). Where the CPU has AVX-512, Quire's own kernel; elsewhere OpenBLAS.
void gemm(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate,
          const float* rowBias = nullptr);
// The same through OpenBLAS on any CPU: gemm's path without AVX-512 (tests run it everywhere).
void gemmOpenBlas(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                  bool accumulate, const float* rowBias = nullptr);

// Which of the two runs here: "avx512" or "openblas" (for benchmark records).
std::string gemmKernel();

}  // namespace quire::nn::cpu
