// Execution with a device (nn/device.h): the nodes a device takes run there and leave their
// outputs there, one function per operator kind; any other node gets its inputs copied back and
// runs on the CPU (cpu_exec.h).
#pragma once

#include <optional>
#include <vector>

#include "nn/device.h"
#include "nn/graph.h"

namespace quire::nn {

// A value that lives on the device.
struct DeviceValue {
    NnDevice::Handle h;
    Shape shape;
};

// One run's device side: the values on the device beside those in host memory.
struct DeviceRun {
    const Graph& g;
    NnDevice& dev;
    Values& v;
    std::vector<std::optional<DeviceValue>>& dv;
    const std::vector<bool>& keep;
    const std::vector<int>& lastUse;

    const Shape* shapeOf(int id) const { return v[size_t(id)] ? &v[size_t(id)]->shape : dv[size_t(id)] ? &dv[size_t(id)]->shape : nullptr; }
    bool isFloat(int id) const { return v[size_t(id)] ? !v[size_t(id)]->isInt : dv[size_t(id)].has_value(); }
    // The value on the device, copied there (a constant once per device) if it is not yet.
    Result<NnDevice::Handle> onDevice(int id);
    // The value in host memory, copied back from the device if it is only there.
    Status onHost(int id);
    // Whether node k may overwrite its input `id` on the device: nobody reads it afterwards.
    bool mayOverwrite(const Node& n, int k, int id) const { return lastReader(g, n, k, id, lastUse, &keep); }
    void setOut(const Node& n, NnDevice::Handle h, Shape shape);

    // Runs node k on the device when it is one the device takes with inputs it can compute;
    // false (nothing done) otherwise, and the CPU runs it (and reports any error in it).
    Result<bool> tryNode(const Node& n, int k);

    // Input k of node n in host memory, or null (a device-only value, an absent input).
    const Tensor* hostIn(const Node& n, size_t k) const;
    // A value that lives on the device only (the nodes that move data, not compute it, run on the
    // device only for those: copying a host tensor up to reshape it gains nothing).
    bool deviceOnly(int id) const { return id >= 0 && dv[size_t(id)] && !v[size_t(id)]; }
    static std::vector<int64_t> stridesOf(const Shape& s);

    // Node n's output as input `xi` in place when n is its last reader, else in a copy.
    Result<NnDevice::Handle> ownCopy(const Node& n, int k, int xi, size_t count);

    // GlobalAveragePool over every axis after the channels; ReduceMean over the last axis only.
    Result<bool> mean(const Node& n);

    // Softmax over the last axis (or, before opset 13, over every axis from `axis` on).
    Result<bool> softmax(const Node& n, int k);

    Result<bool> resize(const Node& n);

    Result<bool> matmul(const Node& n);

    // Concat of float tensors, at least one of them on the device only.
    Result<bool> concat(const Node& n);

    // Transpose and Slice of a tensor on the device only: a strided gather.
    Result<bool> gather(const Node& n);

    // Shape of a tensor on the device only: its shape, without copying it back to read that.
    Result<bool> shape(const Node& n);

    // Reshape, Squeeze and Unsqueeze of a tensor on the device only: the same data, another shape.
    Result<bool> reshape(const Node& n, int k);

    // A (transposed) convolution's input, weights and bias (bi -1: none) on the device, and a
    // buffer for its output.
    struct ConvIo {
        NnDevice::Handle x, w, b, y;
    };
    Result<ConvIo> convIo(int xi, int wi, int bi, const Shape& out);

    // A convolution (group 1 or depthwise) or a transposed convolution (group 1) with constant
    // weights, as the CPU's.
    Result<bool> conv(const Node& n);

    // A batch norm left after folding: per channel, x · scale + shift with the CPU's scale and shift.
    Result<bool> batchNorm(const Node& n);

    Result<bool> pool(const Node& n);

    Result<bool> chain(const Node& n, int k);

    Result<bool> binary(const Node& n);
};

}  // namespace quire::nn
