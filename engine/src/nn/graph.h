// The loaded graph of the ONNX runtime (internal to engine/src/nn).
#pragma once

#include <cmath>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/cpu_ops.h"
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
    cpu::Conv2dParams conv;
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
    std::vector<Micro> micro;  // Op::Chain: elementwise steps applied in one pass
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


// Fuses elementwise operators at load: scalar Mul/Add/Sub/Div, activations and the
// x·f(x) gates (hard-swish, swish) become one Chain node per run of them, and affine steps right
// after a convolution are folded into its weights. Returns the number of nodes removed.
int fuseElementwise(Graph& g);
// Applies a chain to n floats in place.
void runChain(const std::vector<Micro>& chain, float* x, int64_t n);

}  // namespace quire::nn
