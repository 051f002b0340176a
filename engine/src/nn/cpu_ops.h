// CPU kernels of the neural front-end's runtime (NCHW float tensors). Shapes are checked by the
// caller (the graph executor), which turns a mismatch into a Status naming the node; these
// functions assume valid shapes and never allocate beyond their outputs and scratch.
#pragma once

#include <functional>

#include "quire/core/status.h"
#include "quire/nn/tensor.h"
#include "quire_cuda/conv_shape.h"

namespace quire::nn {
using ConvShape = cuda::nn::ConvShape;
}  // namespace quire::nn

namespace quire::nn::cpu {

// Output length along one axis of a convolution or pool (pads before and after the axis) ...
int outSize(int in, int k, int stride, int dil, int padA, int padB);
// ... and of a transposed convolution: (in - 1)·stride + dil·(k - 1) + 1 - padA - padB.
int64_t transposedOutSize(int64_t in, int k, int stride, int dil, int padA, int padB);

// Run on each finished run of a convolution's outputs (one output channel's rows, bias added)
// while it is still in cache: a fused elementwise chain, instead of a second pass over the tensor.
using Epilogue = std::function<void(float* run, int64_t count)>;

// x [N, C, H, W], w [M, C/group, kh, kw], bias [M] or nullptr → y [N, M, Ho, Wo], then the
// epilogue (if any) on every output. group must be 1 or C (depthwise, M == C); checked by the caller.
Tensor conv2d(const Tensor& x, const Tensor& w, const float* bias, const ConvShape& p, const Epilogue* epilogue = nullptr);
// x [N, C, H, W], w [C, M, kh, kw] (group 1), bias [M] or nullptr → y [N, M, Ho, Wo] with
// Ho = (H-1)*stride + dil*(kh-1) + 1 - padT - padB.
Tensor convTranspose2d(const Tensor& x, const Tensor& w, const float* bias, const ConvShape& p);

enum class PoolKind { Average, Max };
// Pads are [top, left, bottom, right]; Average honours count_include_pad.
Tensor pool2d(const Tensor& x, PoolKind kind, int kh, int kw, int sh, int sw, const int pads[4],
              bool countIncludePad);
Tensor globalAveragePool(const Tensor& x);

// a [..., M, K] × b [..., K, N] with numpy broadcasting of the batch dimensions. Returns an
// error message (empty on success) through `error`.
Tensor matmul(const Tensor& a, const Tensor& b, std::string* error);

// Elementwise binary operation with numpy broadcasting; works on float or int64 tensors (both
// operands of the same kind).
enum class BinaryOp { Add, Sub, Mul, Div, Pow };
Tensor binary(const Tensor& a, const Tensor& b, BinaryOp op, std::string* error);
// a = a op b (or b op a when `reversed`), where b broadcasts to a's shape (float tensors).
void binaryInPlace(Tensor& a, const Tensor& b, BinaryOp op, bool reversed);
bool broadcastShapeOf(const Shape& a, const Shape& b, Shape& out);

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm);
// Softmax along `axis` over the block [axis, rank) (ONNX opset < 13 semantics when
// `coerce2d`, otherwise along the single axis).
void softmaxInPlace(Tensor& x, int axis, bool coerce2d);
// Mean over one axis, keeping it as size 1 when keepDims.
Tensor reduceMean(const Tensor& x, int axis, bool keepDims);
// Nearest-neighbour resize, asymmetric coordinates, floor rounding (what Paddle exports).
Tensor resizeNearest(const Tensor& x, const Shape& outShape);

}  // namespace quire::nn::cpu
