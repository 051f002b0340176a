// The loaded graph of the ONNX runtime (internal to engine/src/nn): operators, nodes and values,
// and the helpers its loading (onnx_load.cpp), shape rules (shape_rules.cpp), CPU execution
// (cpu_exec.cpp), device execution (device_exec.cpp) and runner (onnx_graph.cpp) share.
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/cpu_ops.h"
#include "quire/core/status.h"
#include "quire/nn/tensor.h"

namespace quire::nn {

enum class Op {
    Constant, Identity, Conv, ConvTranspose, BatchNorm, Relu, Sigmoid, HardSigmoid, Clip, Sqrt,
    Add, Sub, Mul, Div, Pow, GlobalAveragePool, AveragePool, MaxPool, Resize, Concat, MatMul,
    Softmax, ReduceMean, Reshape, Transpose, Slice, Squeeze, Unsqueeze, Shape, Cast,
    Chain,  // fused elementwise steps (created at load, never in a file)
};

// One step of a fused elementwise chain.
struct Micro {
    enum Kind { MulC, AddC, Clip, Relu, Sigmoid, HardSigmoid, Sqrt, SelfGate } kind;
    float a = 0, b = 0;
    std::vector<Micro> gate = {};  // SelfGate: x * gate(x)
};

struct Node {
    Op op{};
    std::string name, opType;
    std::vector<int> in, out;  // value ids; -1 for an omitted optional input
    ConvShape conv;  // kernel, strides, dilations, pads, group (the input's sizes at run time)
    bool kernelGiven = false;  // kernel_shape present; otherwise it is the weights'
    std::vector<int64_t> perm, axes, starts, ends;
    float alpha = 0.2f, beta = 0.5f, epsilon = 1e-5f;
    float clipMin = -INFINITY, clipMax = INFINITY;
    bool clipFromAttrs = false;
    int axis = 0;
    bool hasAxis = false;
    int castTo = 1;
    bool keepDims = true, countIncludePad = false;
    int kh = 1, kw = 1, sh = 1, sw = 1;
    int pads[4] = {0, 0, 0, 0};
    std::vector<Micro> micro;  // Op::Chain: elementwise steps applied in one pass; Op::Conv: its epilogue
};

struct Graph {
    std::string label;
    int opset = 0;
    std::vector<std::string> valueNames;
    std::unordered_map<std::string, int> ids;
    std::vector<std::shared_ptr<const Tensor>> constants;  // per value id, null when computed at run time
    std::vector<Node> nodes;
    std::vector<int> inputs, outputs;
    int folded = 0;  // batch norms folded into convolutions
    int fused = 0;   // elementwise nodes removed by fusion

    int id(const std::string& name) {
        auto [it, added] = ids.emplace(name, int(valueNames.size()));
        if (added) {
            valueNames.push_back(name);
            constants.emplace_back();
        }
        return it->second;
    }
};

// The live tensors of a run, by value id (null: not computed, or freed after its last use).
using Values = std::vector<std::shared_ptr<const Tensor>>;

// No tensor above 2^28 elements (1 GiB of floats): a hostile graph cannot make the process
// allocate without bound. Kernels whose output size is known before computing check it first.
constexpr int64_t kMaxElements = int64_t(1) << 28;

// Float to integer without undefined behaviour: NaN is 0, out-of-range values saturate.
int64_t toInt64(double v);
// An error of node n of graph g, naming both.
Status nodeError(const Graph& g, const Node& n, const std::string& what);
// A negative ONNX axis counted from the end.
int normAxis(int64_t axis, int rank);
std::shared_ptr<Tensor> copyOf(const Tensor& t);
// Whether node k is the last reader of value `id` in this run (lastUse), which is neither a
// constant nor fetched (keep, may be null) nor read twice by the node: it may overwrite it.
bool lastReader(const Graph& g, const Node& n, int k, int id, const std::vector<int>& lastUse, const std::vector<bool>* keep);
// Folds BatchNormalization nodes that follow a convolution into its weights (at load).
void foldBatchNorms(Graph& g);

// Fuses elementwise operators at load: scalar Mul/Add/Sub/Div, activations and the
// x·f(x) gates (hard-swish, swish) become one Chain node per run of them, affine steps right
// after a convolution are folded into its weights, and the rest of a chain that only reads a
// convolution becomes that convolution's epilogue. Returns the number of nodes removed.
int fuseElementwise(Graph& g);
// Applies a chain to n floats in place.
void runChain(const std::vector<Micro>& chain, float* x, int64_t n);
// cpu::conv2d with `chain` run on its output as its epilogue (none where the chain is empty): the
// CPU executor's and the mirror device's convolution.
Tensor conv2dWithChain(const Tensor& x, const Tensor& w, const float* bias, const ConvShape& s,
                       const std::vector<Micro>& chain);

}  // namespace quire::nn
