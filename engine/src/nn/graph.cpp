// The small helpers every part of the ONNX runtime uses (declared in nn/graph.h).
#include <algorithm>
#include <cmath>

#include "nn/graph.h"

namespace quire::nn {

int64_t toInt64(double v) {
    if (std::isnan(v)) return 0;
    return int64_t(std::clamp(v, -4.6e18, 4.6e18));
}

Status nodeError(const Graph& g, const Node& n, const std::string& what) {
    return Status(ErrorCode::Engine, g.label + ": node '" + n.name + "' (" + n.opType + "): " + what);
}

int normAxis(int64_t axis, int rank) { return int(axis < 0 ? axis + rank : axis); }

std::shared_ptr<Tensor> copyOf(const Tensor& t) { return std::make_shared<Tensor>(t); }

bool lastReader(const Graph& g, const Node& n, int k, int id, const std::vector<int>& lastUse, const std::vector<bool>* keep) {
    return k >= 0 && !g.constants[size_t(id)] && lastUse[size_t(id)] == k && std::count(n.in.begin(), n.in.end(), id) == 1 &&
           (keep == nullptr || !(*keep)[size_t(id)]);
}

}  // namespace quire::nn
