// A device for the ONNX runtime (internal to engine/src/nn and the PP-OCR front-end): where the
// nodes that dominate the front-end's time run — convolutions (group 1 and depthwise), fused
// elementwise chains, and Add/Sub/Mul/Div of same-shaped or per-channel operands. Every other
// node runs on the CPU as before, its inputs copied back (OnnxModel::run with a device).
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
#include "quire/status.h"

namespace quire::nn {

struct DeviceConv {
    int n = 1, c = 1, h = 1, w = 1;  // input [n, c, h, w]
    int m = 1;                       // output channels
    int kh = 1, kw = 1, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
    int padT = 0, padL = 0, padB = 0, padR = 0;
    int group = 1;                   // 1, or c (depthwise, m == c)
    int outH() const { return (h + padT + padB - dilH * (kh - 1) - 1) / strideH + 1; }
    int outW() const { return (w + padL + padR - dilW * (kw - 1) - 1) / strideW + 1; }
};

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

    // y = conv(x, w) + bias (bias may be null), shapes as `s`.
    virtual Status conv2d(const Handle& x, const Handle& w, const Handle& bias, const DeviceConv& s, const Handle& y) = 0;
    // x[n] ← chain(x[n]) in place; false when the chain is beyond the device (nested gates, too long).
    virtual bool canChain(const std::vector<Micro>& micro) const = 0;
    virtual Status chain(const Handle& x, size_t n, const std::vector<Micro>& micro) = 0;
    // y[outer, inner] = a[outer, inner] op b, b either [outer, inner] (channels 0) or one value per
    // channel, b[o % channels] (channels ≥ 1). op: 0 add, 1 sub, 2 mul, 3 div.
    virtual Status binary(const Handle& a, const Handle& b, const Handle& y, size_t outer, size_t inner, int channels, int op) = 0;

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

// The mirror (tests): host memory, CPU kernels.
std::unique_ptr<NnDevice> makeMirrorNnDevice();
// The GPU (cuda/): fails with the reason where there is none or the build has no CUDA.
Result<std::unique_ptr<NnDevice>> makeCudaNnDevice();

}  // namespace quire::nn
