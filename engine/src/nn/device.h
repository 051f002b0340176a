// A device for the ONNX runtime (internal to engine/src/nn and the PP-OCR front-end): where the
// front-end's nodes run — convolutions (group 1 and depthwise), fused elementwise chains,
// Add/Sub/Mul/Div/Pow of same-shaped, per-channel, per-row or last-axis-vector operands, batch
// norms (as a per-channel scale and shift), pools, global average pools and last-axis means,
// softmax over the last axis, nearest resizes, transposed convolutions, MatMul (batched or
// against one matrix), Transpose, Slice, Concat, and the shape-only Reshape, Squeeze and
// Unsqueeze — so that a page's tensors stay on the device from the input to the outputs. A node
// it does not take (integer shape arithmetic) runs on the CPU as before, its inputs copied back
// (OnnxModel::run with a device).
//
// Implementations: CUDA (cuda/src/nn_ops.cu through nn/cuda_device.cpp) and the mirror, which
// keeps its "device" tensors in host memory and computes with the CPU kernels, bit for bit what
// the CPU runtime computes: tests compare a page read through it with the CPU's reading to check
// the executor's side (which nodes go where, what is copied when) without a GPU.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nn/graph.h"
#include "quire/core/status.h"

namespace quire::nn {

class NnDevice {
public:
    virtual ~NnDevice() = default;
    virtual const char* name() const = 0;
    struct Buffer {
        virtual ~Buffer() = default;
    };
    using Handle = std::shared_ptr<Buffer>;

    virtual Result<Handle> upload(const float* data, size_t n) = 0;
    virtual Status download(const Handle& h, float* out, size_t n) = 0;
    virtual Result<Handle> alloc(size_t n) = 0;
    virtual Status copy(const Handle& from, const Handle& to, size_t n) = 0;
    // A graph constant (weights), uploaded once and kept while the device lives.
    Result<Handle> constant(const Tensor* t);

    // y = conv(x, w) + bias (bias may be null), shapes as `s`, then the epilogue's steps (a fused
    // chain, as cpu::conv2d runs it; empty for none; the caller checked canChain).
    virtual Status conv2d(const Handle& x, const Handle& w, const Handle& bias, const ConvShape& s, const Handle& y,
                          const std::vector<Micro>& epilogue) = 0;
    // y[n, s.m, oh, ow] = convTranspose(x[n, s.c, h, w], w[s.c, s.m, kh, kw]) + bias (may be null),
    // as cpu::convTranspose2d (group 1).
    virtual Status convTranspose2d(const Handle& x, const Handle& w, const Handle& bias, const ConvShape& s, int oh, int ow,
                                   const Handle& y) = 0;
    // y[nc, oh, ow] = an average or max pool of x[nc, h, w], as cpu::pool2d (pads top, left, bottom, right).
    virtual Status pool2d(const Handle& x, const Handle& y, int nc, int h, int w, int kh, int kw, int sh, int sw,
                          const int pads[4], int oh, int ow, bool max, bool countIncludePad) = 0;
    // x[n] ← chain(x[n]) in place; false when the chain is beyond the device (nested gates, too long).
    virtual bool canChain(const std::vector<Micro>& micro) const = 0;
    virtual Status chain(const Handle& x, size_t n, const std::vector<Micro>& micro) = 0;
    // y[outer, inner] = a[outer, inner] op b, b either [outer, inner] (channels 0), one value per
    // channel, b[o % channels] (channels ≥ 1), or one value per inner index, b[i] (channels -1).
    // op: 0 add, 1 sub, 2 mul, 3 div, 4 pow.
    virtual Status binary(const Handle& a, const Handle& b, const Handle& y, size_t outer, size_t inner, int channels, int op) = 0;
    // y[rows] = mean of x[rows, n] (a global average pool, a mean over the last axis).
    virtual Status rowMean(const Handle& x, const Handle& y, size_t rows, size_t n) = 0;
    // x[rows, n] ← the softmax of each row.
    virtual Status softmaxRows(const Handle& x, size_t rows, size_t n) = 0;
    // y[nc, oh, ow] = x[nc, h, w] at the nearest source pixel (as cpu::resizeNearest).
    virtual Status resizeNearest(const Handle& x, const Handle& y, int nc, int h, int w, int oh, int ow) = 0;
    // y over `shape` (row-major) = x[offset + Σ index_d · strides[d]]: a Transpose, a Slice.
    virtual Status gather(const Handle& x, const Handle& y, const Shape& shape, const std::vector<int64_t>& strides,
                          int64_t offset) = 0;
    // to[dstOffset + r · dstPitch + i] = from[r · srcPitch + i] for r < rows, i < width: a Concat.
    virtual Status copyRows(const Handle& from, const Handle& to, size_t rows, size_t width, size_t srcPitch, size_t dstPitch,
                            size_t dstOffset) = 0;
    // y = a[as] × b[bs] as cpu::matmul, for the layouts matmulLayout() accepts.
    virtual Status matmul(const Handle& a, const Shape& as, const Handle& b, const Shape& bs, const Handle& y) = 0;

    // One graph run at a time on a device (the reader prepares pages on two threads).
    std::mutex& runLock() { return m_run; }
    // Nodes run on the device and on the CPU since the device was made (a test's, or a benchmark's, count).
    int64_t deviceNodes = 0, cpuNodes = 0;
    // Set when the device itself failed a run (out of memory, a launch error), as opposed to the
    // graph or its inputs: the caller may go on without it.
    std::atomic<bool> failed{false};

private:
    std::mutex m_run;
    std::mutex m_constants;
    std::vector<std::pair<const Tensor*, Handle>> m_constantCache;
};

// A MatMul's layout on a device: y[batch, m, n] = a[batch, m, k] · b[batch, k, n], a's and b's
// batches strideA and strideB floats apart (0: one matrix for all), and the output's shape as
// cpu::matmul gives it. False for batch dimensions that broadcast otherwise (the CPU runs those).
struct MatmulLayout {
    int batch = 1, m = 0, n = 0, k = 0;
    int64_t strideA = 0, strideB = 0;
    Shape out;
};
bool matmulLayout(const Shape& as, const Shape& bs, MatmulLayout& l);

// The mirror: host memory, CPU kernels (built in; the tests choose it to check the device path).
std::unique_ptr<NnDevice> makeMirrorNnDevice();
// The GPU (cuda/): fails with the reason where there is none or the build has no CUDA.
Result<std::unique_ptr<NnDevice>> makeCudaNnDevice();

}  // namespace quire::nn
