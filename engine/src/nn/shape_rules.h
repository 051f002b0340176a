// Shape rules: the output shapes and ranges some nodes compute from their attributes and (host)
// integer inputs, one function each, shared by the CPU's execution and a device's.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "nn/graph.h"

namespace quire::nn {

// A node's input k (null when absent).
using InputOf = std::function<const Tensor*(size_t)>;

// An integer input as int64 values (a float tensor is converted); an error names `what`.
Result<std::vector<int64_t>> intsOf(const Graph& g, const Node& n, const Tensor* t, const char* what);
// Resize (nearest): the output shape from its scales or sizes input.
Result<Shape> resizeShape(const Graph& g, const Node& n, const Shape& in, const InputOf& input);
// Reshape, Squeeze, Unsqueeze: the output shape.
Result<Shape> reshapedShape(const Graph& g, const Node& n, const Shape& in, const InputOf& input);
// Slice: the first and one-past-last index per axis.
Result<std::pair<std::vector<int64_t>, std::vector<int64_t>>> sliceRange(const Graph& g, const Node& n, const Shape& in,
                                                                          const InputOf& input);
// Transpose: the permutation (reversed axes by default).
Result<std::vector<int64_t>> transposePerm(const Graph& g, const Node& n, int rank);

// Concat: the output shape and the copy layout (rows of `inner` floats, `outer` of them).
struct ConcatLayout {
    Shape out;
    int axis = 0;
    int64_t outer = 1, inner = 1;
};
Result<ConcatLayout> concatLayout(const Graph& g, const Node& n, const std::vector<const Shape*>& in);

}  // namespace quire::nn
