// The front-end's (PP-OCR) device operations: the CUDA counterparts of engine/src/nn/cpu_ops.h,
// as plain functions over device pointers (no CUDA types here). NCHW float tensors; every tensor
// parameter carries its shape. Each returns an empty string on success, else what failed.
#pragma once

#include <cstddef>
#include <string>

#include "quire_cuda/conv_shape.h"

namespace quire::cuda::nn {

// Bytes of scratch conv2d needs (the im2col matrix of one image; 0 for 1×1 and depthwise).
size_t conv2dWorkspaceBytes(const ConvShape& s);
// y[n, m, outH, outW] = conv(x[n, c, h, w], w[m, c/group, kh, kw]) + bias[m] (bias may be null).
// Group 1 runs im2col + cuBLAS SGEMM; depthwise a direct kernel.
std::string conv2d(const float* x, const float* w, const float* bias, const ConvShape& s, void* workspace, float* y,
                   void* stream = nullptr);

// Transposed convolution (group 1): y[n, m, oh, ow] = Σ scatter of w[c, m, kh, kw]ᵀ · x[n, c, h, w],
// plus bias[m] (may be null); s.c input channels, s.m output channels, s's strides, dilations
// and pads as ONNX's (oh, ow given: (h - 1)·stride + dil·(k - 1) + 1 - pads). cols = wᵀ · x by
// cuBLAS, then every output pixel gathers what lands on it.
size_t convTranspose2dWorkspaceBytes(const ConvShape& s);
std::string convTranspose2d(const float* x, const float* w, const float* bias, const ConvShape& s, int oh, int ow,
                            void* workspace, float* y, void* stream = nullptr);
// Average or max pooling of x[nc, h, w] into y[nc, oh, ow], pads top/left as given (the window
// clipped to the input; an average divides by the window's size with countIncludePad, else by the
// pixels inside).
std::string pool2d(const float* x, float* y, int nc, int h, int w, int kh, int kw, int sh, int sw, int padT, int padL,
                   int oh, int ow, bool max, bool countIncludePad, void* stream = nullptr);

// One step of a fused elementwise chain, as in engine/src/nn/graph.h (Micro). kind: 0 MulC,
// 1 AddC, 2 Clip(a, b), 3 Relu, 4 Sigmoid, 5 HardSigmoid(a, b), 6 Sqrt, 7 SelfGate: x ·
// gate(x), where the gate is the next `gateSteps` steps (no nesting).
struct ChainStep {
    int kind = 0;
    float a = 0, b = 0;
    int gateSteps = 0;
};
constexpr int kMaxChainSteps = 24;
// x[n] ← chain(x[n]) in place.
std::string chain(float* x, size_t n, const ChainStep* steps, int count, void* stream = nullptr);

// x[outer, inner] ← x op c[outer % channels] (per-channel scalar; channels 1 = one scalar), or
// with channels -1, x op c[inner index] (a vector along the last axis: a LayerNorm's weights).
// op: 0 add, 1 sub, 2 mul, 3 div, 4 pow (x · x for an exponent of 2, as the CPU does).
std::string channelBinary(float* x, const float* c, size_t outer, size_t inner, int channels, int op,
                          void* stream = nullptr);
// y[n] = a[n] op b[n].
std::string elementwise(const float* a, const float* b, float* y, size_t n, int op, void* stream = nullptr);

// A strided gather (a Transpose, a Slice): y in row-major order over shape[rank] (rank ≤ 6),
// y[i_0, …] = x[offset + Σ i_d · strides[d]].
constexpr int kMaxGatherRank = 6;
std::string gather(const float* x, float* y, int rank, const long long* shape, const long long* strides, long long offset,
                   void* stream = nullptr);
// rows of `width` floats: to[dstOffset + r · dstPitch + i] = from[r · srcPitch + i] (a Concat's
// input into its place).
std::string copyRows(const float* from, float* to, size_t rows, size_t width, size_t srcPitch, size_t dstPitch,
                     size_t dstOffset, void* stream = nullptr);
// y[b, m, n] = a[b, m, k] · bm[b, k, n] for b < batch (row-major), a's and bm's batches
// strideA and strideB floats apart (0: one matrix for every b); cuBLAS, fp32.
std::string matmulBatched(const float* a, const float* bm, float* y, int batch, int m, int n, int k, long long strideA,
                          long long strideB, void* stream = nullptr);

// y[rows] = mean of x[rows, n].
std::string rowMean(const float* x, float* y, int rows, int n, void* stream = nullptr);
// x[rows, n] ← softmax over each row.
std::string softmaxRows(float* x, int rows, int n, void* stream = nullptr);
// CTC greedy step: best[rows], prob[rows] = argmax and max of p[rows, n].
std::string argmaxRows(const float* p, int rows, int n, int* best, float* prob, void* stream = nullptr);
// y[nc, oh, ow] = x[nc, h, w] at (floor(oy·h/oh), floor(ox·w/ow)).
std::string resizeNearest(const float* x, float* y, int nc, int h, int w, int oh, int ow, void* stream = nullptr);

}  // namespace quire::cuda::nn
