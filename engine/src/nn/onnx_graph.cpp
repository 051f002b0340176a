#include "quire/nn/onnx_graph.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "nn/cpu_ops.h"
#include "nn/device.h"
#include "nn/graph.h"

namespace quire::nn {

// No tensor above 2^28 elements (1 GiB of floats): a hostile graph cannot make the process
// allocate without bound. Kernels whose output size is known before computing check it first.
constexpr int64_t kMaxElements = int64_t(1) << 28;

// Float to integer without undefined behaviour: NaN is 0, out-of-range values saturate.
int64_t toInt64(double v) {
    if (std::isnan(v)) return 0;
    return int64_t(std::clamp(v, -4.6e18, 4.6e18));
}

namespace {

const std::unordered_map<std::string, Op>& opTable() {
    static const std::unordered_map<std::string, Op> t = {
        {"Constant", Op::Constant}, {"Identity", Op::Identity}, {"Conv", Op::Conv},
        {"ConvTranspose", Op::ConvTranspose}, {"BatchNormalization", Op::BatchNorm}, {"Relu", Op::Relu},
        {"Sigmoid", Op::Sigmoid}, {"HardSigmoid", Op::HardSigmoid}, {"Clip", Op::Clip}, {"Sqrt", Op::Sqrt},
        {"Add", Op::Add}, {"Sub", Op::Sub}, {"Mul", Op::Mul}, {"Div", Op::Div}, {"Pow", Op::Pow},
        {"GlobalAveragePool", Op::GlobalAveragePool}, {"AveragePool", Op::AveragePool},
        {"MaxPool", Op::MaxPool}, {"Resize", Op::Resize}, {"Concat", Op::Concat}, {"MatMul", Op::MatMul},
        {"Softmax", Op::Softmax}, {"ReduceMean", Op::ReduceMean}, {"Reshape", Op::Reshape},
        {"Transpose", Op::Transpose}, {"Slice", Op::Slice}, {"Squeeze", Op::Squeeze},
        {"Unsqueeze", Op::Unsqueeze}, {"Shape", Op::Shape}, {"Cast", Op::Cast},
    };
    return t;
}

}  // namespace

namespace {

using Values = std::vector<std::shared_ptr<const Tensor>>;


Status nodeError(const Graph& g, const Node& n, const std::string& what) {
    return Status(ErrorCode::Engine, g.label + ": node '" + n.name + "' (" + n.opType + "): " + what);
}

Result<Tensor> tensorFromProto(const onnx::TensorProto& t, const std::string& what) {
    Shape shape(t.dims().begin(), t.dims().end());
    // Sizes are checked against the data before anything is allocated: a header may lie.
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0 || d > (int64_t(1) << 31)) return Status(ErrorCode::Corrupt, what + ": bad dimension " + std::to_string(d));
        if (d && n > kMaxElements / d) return Status(ErrorCode::Corrupt, what + ": shape " + shapeString(shape) + " is too large");
        n *= d;
    }
    const size_t typed = size_t(std::max({t.float_data_size(), t.double_data_size(), t.int64_data_size(), t.int32_data_size()}));
    const size_t elemSize = t.data_type() == onnx::TensorProto::DOUBLE || t.data_type() == onnx::TensorProto::INT64 ? 8 : 4;
    if (!t.raw_data().empty() ? t.raw_data().size() != size_t(n) * elemSize : typed != size_t(n))
        return Status(ErrorCode::Corrupt, what + ": shape " + shapeString(shape) + " does not match the tensor's data");
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
        return Status(ErrorCode::UnsupportedFormat, what + ": external tensor data is not supported");
    const std::string& raw = t.raw_data();
    auto sizeError = [&](size_t have, size_t elem) {
        return Status(ErrorCode::Corrupt, what + ": shape " + shapeString(shape) + " needs " +
                                              std::to_string(n * int64_t(elem)) + " bytes, the file has " +
                                              std::to_string(have));
    };
    switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: {
        Tensor out = Tensor::floats(shape);
        if (!raw.empty()) {
            if (raw.size() != size_t(n) * 4) return sizeError(raw.size(), 4);
            std::memcpy(out.f.data(), raw.data(), raw.size());
        } else {
            if (t.float_data_size() != n) return sizeError(static_cast<size_t>(t.float_data_size()) * 4, 4);
            std::copy(t.float_data().begin(), t.float_data().end(), out.f.begin());
        }
        for (float v : out.f)
            if (!std::isfinite(v)) return Status(ErrorCode::Corrupt, what + ": contains NaN or infinite values");
        return out;
    }
    case onnx::TensorProto::DOUBLE: {
        Tensor out = Tensor::floats(shape);
        if (!raw.empty()) {
            if (raw.size() != size_t(n) * 8) return sizeError(raw.size(), 8);
            for (int64_t k = 0; k < n; ++k) {
                double v;
                std::memcpy(&v, raw.data() + k * 8, 8);
                out.f[size_t(k)] = float(v);
            }
        } else {
            if (t.double_data_size() != n) return sizeError(static_cast<size_t>(t.double_data_size()) * 8, 8);
            for (int64_t k = 0; k < n; ++k) out.f[size_t(k)] = float(t.double_data(int(k)));
        }
        return out;
    }
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::INT32: {
        const size_t elem = t.data_type() == onnx::TensorProto::INT64 ? 8 : 4;
        std::vector<int64_t> v(static_cast<size_t>(n));
        if (!raw.empty()) {
            if (raw.size() != size_t(n) * elem) return sizeError(raw.size(), elem);
            for (int64_t k = 0; k < n; ++k) {
                if (elem == 8) std::memcpy(&v[size_t(k)], raw.data() + k * 8, 8);
                else {
                    int32_t x;
                    std::memcpy(&x, raw.data() + k * 4, 4);
                    v[size_t(k)] = x;
                }
            }
        } else if (elem == 8) {
            if (t.int64_data_size() != n) return sizeError(static_cast<size_t>(t.int64_data_size()) * 8, 8);
            std::copy(t.int64_data().begin(), t.int64_data().end(), v.begin());
        } else {
            if (t.int32_data_size() != n) return sizeError(static_cast<size_t>(t.int32_data_size()) * 4, 4);
            std::copy(t.int32_data().begin(), t.int32_data().end(), v.begin());
        }
        return Tensor::ints(shape, std::move(v));
    }
    default:
        return Status(ErrorCode::UnsupportedFormat,
                      what + ": tensor data type " + std::to_string(t.data_type()) + " is not supported");
    }
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}
std::vector<int64_t> attrInts(const onnx::NodeProto& n, const char* name, std::vector<int64_t> dflt = {}) {
    const auto* a = attr(n, name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : dflt;
}
int64_t attrInt(const onnx::NodeProto& n, const char* name, int64_t dflt) {
    const auto* a = attr(n, name);
    return a ? a->i() : dflt;
}
float attrFloat(const onnx::NodeProto& n, const char* name, float dflt) {
    const auto* a = attr(n, name);
    return a ? a->f() : dflt;
}
std::string attrString(const onnx::NodeProto& n, const char* name, std::string dflt) {
    const auto* a = attr(n, name);
    return a ? a->s() : dflt;
}

// Reads the spatial attributes of Conv/ConvTranspose/pools; refuses what the kernels do not do.
Status readSpatial(const Graph& g, Node& node, const onnx::NodeProto& p, bool conv) {
    const std::string autoPad = attrString(p, "auto_pad", "NOTSET");
    if (autoPad != "NOTSET") return nodeError(g, node, "auto_pad=" + autoPad + " is not supported");
    const auto k = attrInts(p, "kernel_shape"), s = attrInts(p, "strides", {1, 1}),
               d = attrInts(p, "dilations", {1, 1}), pd = attrInts(p, "pads", {0, 0, 0, 0});
    if ((!k.empty() && k.size() != 2) || s.size() != 2 || d.size() != 2 || pd.size() != 4)
        return nodeError(g, node, "only 2-D convolutions and pools are supported");
    for (auto v : s)
        if (v < 1 || v > 64) return nodeError(g, node, "stride out of range (1..64)");
    for (auto v : d)
        if (v < 1 || v > 64) return nodeError(g, node, "dilation out of range (1..64)");
    for (auto v : pd)
        if (v < 0 || v > 4096) return nodeError(g, node, "padding out of range (0..4096)");
    for (auto v : k)
        if (v < 1 || v > 1024) return nodeError(g, node, "kernel size out of range (1..1024)");
    if (const auto grp = attrInt(p, "group", 1); grp < 1 || grp > (1 << 20)) return nodeError(g, node, "bad group");
    if (conv) {
        auto& c = node.conv;
        node.kernelGiven = k.size() == 2;
        if (k.size() == 2) c.kh = int(k[0]), c.kw = int(k[1]);
        c.strideH = int(s[0]), c.strideW = int(s[1]), c.dilH = int(d[0]), c.dilW = int(d[1]);
        c.padT = int(pd[0]), c.padL = int(pd[1]), c.padB = int(pd[2]), c.padR = int(pd[3]);
        c.group = int(attrInt(p, "group", 1));
        if (!attrInts(p, "output_padding").empty() || !attrInts(p, "output_shape").empty()) {
            for (auto v : attrInts(p, "output_padding"))
                if (v) return nodeError(g, node, "output_padding is not supported");
            if (!attrInts(p, "output_shape").empty()) return nodeError(g, node, "output_shape is not supported");
        }
    } else {
        if (k.size() != 2) return nodeError(g, node, "kernel_shape missing");
        node.kh = int(k[0]), node.kw = int(k[1]), node.sh = int(s[0]), node.sw = int(s[1]);
        for (int i = 0; i < 4; ++i) node.pads[i] = int(pd[size_t(i)]);
        node.countIncludePad = attrInt(p, "count_include_pad", 0) != 0;
        if (attrInt(p, "ceil_mode", 0) != 0) return nodeError(g, node, "ceil_mode is not supported");
    }
    return Status::ok();
}

Status parseNode(Graph& g, const onnx::NodeProto& p, Node& node) {
    node.opType = p.op_type();
    node.name = p.name().empty() ? (p.output_size() ? p.output(0) : std::string("?")) : p.name();
    if (!p.domain().empty() && p.domain() != "ai.onnx")
        return nodeError(g, node, "operator domain '" + p.domain() + "' is not supported");
    auto it = opTable().find(p.op_type());
    if (it == opTable().end()) return nodeError(g, node, "operator is not supported by Quire's runtime");
    node.op = it->second;
    switch (node.op) {
    case Op::Conv:
    case Op::ConvTranspose: return readSpatial(g, node, p, true);
    case Op::AveragePool:
    case Op::MaxPool: return readSpatial(g, node, p, false);
    case Op::BatchNorm: node.epsilon = attrFloat(p, "epsilon", 1e-5f); break;
    case Op::HardSigmoid:
        node.alpha = attrFloat(p, "alpha", 0.2f);
        node.beta = attrFloat(p, "beta", 0.5f);
        break;
    case Op::Clip:
        if (attr(p, "min") || attr(p, "max") || g.opset < 11) {
            node.clipFromAttrs = true;
            node.clipMin = attrFloat(p, "min", -INFINITY);
            node.clipMax = attrFloat(p, "max", INFINITY);
        }
        break;
    case Op::Concat:
    case Op::Softmax:
        node.hasAxis = attr(p, "axis") != nullptr;
        node.axis = int(attrInt(p, "axis", node.op == Op::Softmax ? (g.opset >= 13 ? -1 : 1) : 0));
        if (node.op == Op::Concat && !node.hasAxis) return nodeError(g, node, "axis missing");
        break;
    case Op::ReduceMean:
        node.axes = attrInts(p, "axes");
        node.keepDims = attrInt(p, "keepdims", 1) != 0;
        break;
    case Op::Transpose: node.perm = attrInts(p, "perm"); break;
    case Op::Slice:
        node.starts = attrInts(p, "starts");
        node.ends = attrInts(p, "ends");
        node.axes = attrInts(p, "axes");
        break;
    case Op::Squeeze:
    case Op::Unsqueeze: node.axes = attrInts(p, "axes"); break;
    case Op::Cast:
        node.castTo = int(attrInt(p, "to", 1));
        if (node.castTo != onnx::TensorProto::FLOAT && node.castTo != onnx::TensorProto::INT32 &&
            node.castTo != onnx::TensorProto::INT64 && node.castTo != onnx::TensorProto::DOUBLE)
            return nodeError(g, node, "cast to type " + std::to_string(node.castTo) + " is not supported");
        break;
    case Op::Resize: {
        const std::string mode = attrString(p, "mode", "nearest");
        const std::string ctm = attrString(p, "coordinate_transformation_mode", "half_pixel");
        const std::string nm = attrString(p, "nearest_mode", "round_prefer_floor");
        if (mode != "nearest" || (g.opset >= 11 && (ctm != "asymmetric" || nm != "floor")))
            return nodeError(g, node, "only nearest/asymmetric/floor resizing is supported (got " + mode + "/" +
                                          ctm + "/" + nm + ")");
        break;
    }
    default: break;
    }
    return Status::ok();
}

int normAxis(int64_t axis, int rank) { return int(axis < 0 ? axis + rank : axis); }

std::shared_ptr<Tensor> copyOf(const Tensor& t) { return std::make_shared<Tensor>(t); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Execution of one node. `values` holds the live tensors; outputs are written into it.
namespace {

// Whether node k is the last reader of value `id` in this run (lastUse), which is neither a
// constant nor fetched (keep, may be null) nor read twice by the node: it may overwrite it.
bool lastReader(const Graph& g, const Node& n, int k, int id, const std::vector<int>& lastUse, const std::vector<bool>* keep) {
    return k >= 0 && !g.constants[size_t(id)] && lastUse[size_t(id)] == k && std::count(n.in.begin(), n.in.end(), id) == 1 &&
           (keep == nullptr || !(*keep)[size_t(id)]);
}

struct Exec {
    const Graph& g;
    Values& v;
    int nodeIndex;
    const std::vector<bool>* keep = nullptr;  // values the caller fetches: never modified in place
    const std::vector<int>* lastUse = nullptr;  // per value: the last node of this run reading it (run() only)

    const Tensor* in(const Node& n, size_t k) const {
        if (k >= n.in.size() || n.in[k] < 0) return nullptr;
        return v[size_t(n.in[k])].get();
    }
    // Whether input k may be modified: nobody reads it after this node.
    bool canTake(const Node& n, size_t k) const {
        const int id = n.in[k];
        return lastUse && lastReader(g, n, nodeIndex, id, *lastUse, keep) && v[size_t(id)].use_count() == 1;
    }
    // A tensor that may be modified: the input itself when nobody else needs it afterwards.
    std::shared_ptr<Tensor> takeInput(const Node& n, size_t k) const {
        if (canTake(n, k)) return std::const_pointer_cast<Tensor>(v[size_t(n.in[k])]);
        return copyOf(*v[size_t(n.in[k])]);
    }
    void set(const Node& n, size_t k, Tensor t) const { v[size_t(n.out[k])] = std::make_shared<Tensor>(std::move(t)); }
    void set(const Node& n, size_t k, std::shared_ptr<Tensor> t) const { v[size_t(n.out[k])] = std::move(t); }
};

template <typename F>
Status unary(const Exec& e, const Node& n, F f) {
    if (e.in(n, 0)->isInt) return nodeError(e.g, n, "expects a float tensor");
    auto t = e.takeInput(n, 0);
    for (float& x : t->f) x = f(x);
    e.set(n, 0, std::move(t));
    return Status::ok();
}

Result<std::vector<int64_t>> intsOf(const Graph& g, const Node& n, const Tensor* t, const char* what) {
    if (!t) return nodeError(g, n, std::string(what) + " missing");
    if (t->isInt) return t->i;
    std::vector<int64_t> out;
    for (float x : t->f) out.push_back(toInt64(x));
    return out;
}

// Shapes and ranges some nodes compute from their attributes and (host) integer inputs, shared by
// the CPU's execution and a device's. `input(k)` gives input k (null when absent).
using InputOf = std::function<const Tensor*(size_t)>;

Result<Shape> resizeShape(const Graph& g, const Node& n, const Shape& in, const InputOf& input) {
    if (in.size() != 4) return nodeError(g, n, "needs a 4-D input");
    const Tensor* scales = input(g.opset >= 11 ? 2 : 1);
    const Tensor* sizes = input(3);
    Shape out = in;
    if (sizes && sizes->size() == 4 && sizes->isInt) {
        out = sizes->i;
    } else if (scales && scales->size() == 4 && !scales->isInt) {
        for (int k = 0; k < 4; ++k) out[size_t(k)] = toInt64(std::floor(double(in[size_t(k)]) * scales->f[size_t(k)]));
    } else {
        return nodeError(g, n, "needs 4 scales or 4 sizes");
    }
    if (out[0] != in[0] || out[1] != in[1]) return nodeError(g, n, "resizes batch or channels");
    if (out[2] <= 0 || out[3] <= 0 || out[2] > 100000 || out[3] > 100000 || numel(out) > kMaxElements)
        return nodeError(g, n, "bad output size " + shapeString(out));
    return out;
}

// Reshape, Squeeze and Unsqueeze: the output's shape (the data is the input's, in order).
Result<Shape> reshapedShape(const Graph& g, const Node& n, const Shape& in, const InputOf& input) {
    if (n.op == Op::Reshape) {
        auto target = intsOf(g, n, input(1), "shape");
        if (!target) return target.status();
        Shape s = *target;
        int infer = -1;
        int64_t known = 1;
        for (size_t k = 0; k < s.size(); ++k) {
            if (s[k] == 0) {
                if (k >= in.size()) return nodeError(g, n, "0 in shape beyond the input's rank");
                s[k] = in[k];
            }
            if (s[k] == -1) {
                if (infer >= 0) return nodeError(g, n, "more than one -1 in shape");
                infer = int(k);
            } else if (s[k] < 0) {
                return nodeError(g, n, "negative dimension in shape");
            } else if (s[k] > kMaxElements || (s[k] && known > kMaxElements / s[k])) {
                return nodeError(g, n, "target shape too large");
            } else {
                known *= s[k];
            }
        }
        if (infer >= 0) s[size_t(infer)] = known ? numel(in) / known : 0;
        if (numel(s) != numel(in)) return nodeError(g, n, "cannot reshape " + shapeString(in) + " to " + shapeString(s));
        return s;
    }
    std::vector<int64_t> axes = n.axes;
    if (g.opset >= 13 && input(1)) {
        auto given = intsOf(g, n, input(1), "axes");
        if (!given) return given.status();
        axes = *given;
    }
    Shape s = in;
    if (n.op == Op::Squeeze) {
        s.clear();
        const int r = int(in.size());
        for (int d = 0; d < r; ++d) {
            const bool listed = std::any_of(axes.begin(), axes.end(), [&](int64_t a) { return normAxis(a, r) == d; });
            if (listed && in[size_t(d)] != 1) return nodeError(g, n, "squeezes a dimension that is not 1");
            if (!(listed || (axes.empty() && in[size_t(d)] == 1))) s.push_back(in[size_t(d)]);
        }
        return s;
    }
    const int r = int(in.size() + axes.size());
    std::vector<int64_t> sorted;
    for (auto a : axes) sorted.push_back(normAxis(a, r));
    std::sort(sorted.begin(), sorted.end());
    for (auto a : sorted) {
        if (a < 0 || a > int64_t(s.size())) return nodeError(g, n, "axis out of range");
        s.insert(s.begin() + a, 1);
    }
    return s;
}

// Slice: the kept range [lo, hi) of every axis.
Result<std::pair<std::vector<int64_t>, std::vector<int64_t>>> sliceRange(const Graph& g, const Node& n, const Shape& in,
                                                                         const InputOf& input) {
    std::vector<int64_t> starts = n.starts, ends = n.ends, axes = n.axes, steps;
    if (g.opset >= 10) {
        auto s = intsOf(g, n, input(1), "starts");
        auto en = intsOf(g, n, input(2), "ends");
        if (!s) return s.status();
        if (!en) return en.status();
        starts = *s, ends = *en;
        if (input(3)) {
            auto a = intsOf(g, n, input(3), "axes");
            if (!a) return a.status();
            axes = *a;
        }
        if (input(4)) {
            auto st = intsOf(g, n, input(4), "steps");
            if (!st) return st.status();
            steps = *st;
        }
    }
    if (axes.empty())
        for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
    if (starts.size() != ends.size() || axes.size() != starts.size()) return nodeError(g, n, "starts/ends/axes differ in length");
    const int r = int(in.size());
    std::vector<int64_t> lo(static_cast<size_t>(r), 0), hi(in.begin(), in.end());
    for (size_t k = 0; k < axes.size(); ++k) {
        if (!steps.empty() && steps[k] != 1) return nodeError(g, n, "only step 1 is supported");
        const int a = normAxis(axes[k], r);
        if (a < 0 || a >= r) return nodeError(g, n, "axis out of range");
        const int64_t dim = in[size_t(a)];
        auto clampIdx = [dim](int64_t i) { return std::clamp(i < 0 ? i + dim : i, int64_t(0), dim); };
        lo[size_t(a)] = clampIdx(starts[k]);
        hi[size_t(a)] = std::max(lo[size_t(a)], clampIdx(ends[k]));
    }
    return std::pair{lo, hi};
}

// Transpose: the permutation (reversed axes by default), checked.
Result<std::vector<int64_t>> transposePerm(const Graph& g, const Node& n, int rank) {
    std::vector<int64_t> perm = n.perm;
    if (perm.empty())
        for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
        if (sorted[k] != int64_t(k) || int(perm.size()) != rank) return nodeError(g, n, "bad perm");
    return perm;
}

// Concat of inputs with shapes `in`: the output's shape, and the rows before the axis (outer) and
// the values per unit of the axis after it (inner), each input a block of rows.
struct ConcatLayout {
    Shape out;
    int axis = 0;
    int64_t outer = 1, inner = 1;
};
Result<ConcatLayout> concatLayout(const Graph& g, const Node& n, const std::vector<const Shape*>& in) {
    ConcatLayout l;
    const Shape& first = *in.front();
    const int r = int(first.size());
    l.axis = normAxis(n.axis, r);
    if (l.axis < 0 || l.axis >= r) return nodeError(g, n, "axis out of range");
    l.out = first;
    l.out[size_t(l.axis)] = 0;
    for (const Shape* s : in) {
        if (int(s->size()) != r) return nodeError(g, n, "inputs differ in rank or type");
        for (int d = 0; d < r; ++d)
            if (d != l.axis && (*s)[size_t(d)] != first[size_t(d)])
                return nodeError(g, n, "input shapes " + shapeString(first) + " and " + shapeString(*s) + " do not concatenate");
        l.out[size_t(l.axis)] += (*s)[size_t(l.axis)];
    }
    for (int d = 0; d < l.axis; ++d) l.outer *= l.out[size_t(d)];
    for (int d = l.axis + 1; d < r; ++d) l.inner *= l.out[size_t(d)];
    return l;
}

Status execNode(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    for (size_t k = 0; k < n.in.size(); ++k)
        if (n.in[k] >= 0 && !e.v[size_t(n.in[k])])
            return nodeError(g, n, "input '" + g.valueNames[size_t(n.in[k])] + "' has no value");
    const Tensor* x = e.in(n, 0);
    if (!x) return nodeError(g, n, "its first input is missing");
    switch (n.op) {  // operators that take integer tensors too
    case Op::Identity: case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: case Op::Concat:
    case Op::Reshape: case Op::Transpose: case Op::Slice: case Op::Squeeze: case Op::Unsqueeze: case Op::Shape:
    case Op::Cast: case Op::Constant: break;
    default:
        if (x->isInt) return nodeError(g, n, "expects a float tensor, got integers");
    }
    std::string err;
    switch (n.op) {
    case Op::Constant: return Status::ok();  // evaluated at load
    case Op::Chain: {
        if (x->isInt) return nodeError(g, n, "expects a float tensor");
        auto t = e.takeInput(n, 0);
        runChain(n.micro, t->data(), t->size());
        e.set(n, 0, std::move(t));
        return Status::ok();
    }
    case Op::Identity: e.set(n, 0, copyOf(*x)); return Status::ok();
    case Op::Relu: return unary(e, n, [](float a) { return a > 0.f ? a : 0.f; });
    case Op::Sigmoid: return unary(e, n, [](float a) { return 1.f / (1.f + std::exp(-a)); });
    case Op::Sqrt: return unary(e, n, [](float a) { return std::sqrt(a); });
    case Op::HardSigmoid: {
        const float al = n.alpha, be = n.beta;
        return unary(e, n, [al, be](float a) { return std::clamp(al * a + be, 0.f, 1.f); });
    }
    case Op::Clip: {
        float lo = n.clipMin, hi = n.clipMax;
        if (!n.clipFromAttrs) {
            if (const Tensor* t = e.in(n, 1); t && t->size() == 1) lo = t->isInt ? float(t->i[0]) : t->f[0];
            if (const Tensor* t = e.in(n, 2); t && t->size() == 1) hi = t->isInt ? float(t->i[0]) : t->f[0];
        }
        return unary(e, n, [lo, hi](float a) { return std::min(std::max(a, lo), hi); });
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Pow: {
        const Tensor* y = e.in(n, 1);
        if (!y) return nodeError(g, n, "second operand missing");
        Tensor pa, pb;  // only a mixed int/float pair (Pow(x, 2) styles) is promoted to float
        const Tensor* a = x;
        const Tensor* b = y;
        if (a->isInt != b->isInt) {
            for (auto [src, dst] : {std::pair{&a, &pa}, std::pair{&b, &pb}})
                if ((*src)->isInt) {
                    dst->shape = (*src)->shape;
                    dst->f.assign((*src)->i.begin(), (*src)->i.end());
                    *src = dst;
                }
        }
        static constexpr cpu::BinaryOp ops[] = {cpu::BinaryOp::Add, cpu::BinaryOp::Sub, cpu::BinaryOp::Mul,
                                                cpu::BinaryOp::Div, cpu::BinaryOp::Pow};
        const cpu::BinaryOp bop = ops[int(n.op) - int(Op::Add)];
        Shape outShape;
        const bool broadcasts = cpu::broadcastShapeOf(a->shape, b->shape, outShape);  // else cpu::binary says why
        if (broadcasts && numel(outShape) > kMaxElements)
            return nodeError(g, n, "output " + shapeString(outShape) + " exceeds the runtime's limit");
        if (!a->isInt && !b->isInt && a == x && b == y && broadcasts) {
            // Write into an operand that nobody reads afterwards and that has the output's shape:
            // no allocation (these activation chains dominate the front-end's memory traffic).
            for (size_t k : {size_t(0), size_t(1)}) {
                const Tensor* self = k == 0 ? a : b;
                const Tensor* other = k == 0 ? b : a;
                if (self->shape != outShape || !e.canTake(n, k)) continue;
                auto t = e.takeInput(n, k);
                cpu::binaryInPlace(*t, *other, bop, k == 1);
                e.set(n, 0, std::move(t));
                return Status::ok();
            }
        }
        Tensor out = cpu::binary(*a, *b, bop, &err);
        if (!err.empty()) return nodeError(g, n, err);
        e.set(n, 0, std::move(out));
        return Status::ok();
    }
    case Op::Conv:
    case Op::ConvTranspose: {
        const Tensor* w = e.in(n, 1);
        const Tensor* b = e.in(n, 2);
        if (!w || x->rank() != 4 || w->rank() != 4 || x->isInt || w->isInt)
            return nodeError(g, n, "needs a 4-D input and 4-D weights, got " + shapeString(x->shape));
        const int64_t C = x->shape[1];
        cpu::Conv2dParams params = n.conv;
        if (!n.kernelGiven) {  // ONNX: kernel_shape defaults to the weights' spatial shape
            if (w->shape[2] < 1 || w->shape[2] > 1024 || w->shape[3] < 1 || w->shape[3] > 1024)
                return nodeError(g, n, "weights have an unusable kernel size");
            params.kh = int(w->shape[2]), params.kw = int(w->shape[3]);
        }
        {
            const auto& c = params;
            const int64_t M = n.op == Op::Conv ? w->shape[0] : w->shape[1];
            const int64_t Ho = n.op == Op::Conv ? x->shape[2] / c.strideH + 1 : (x->shape[2] + 1) * c.strideH + c.dilH * c.kh;
            const int64_t Wo = n.op == Op::Conv ? x->shape[3] / c.strideW + 1 : (x->shape[3] + 1) * c.strideW + c.dilW * c.kw;
            const int64_t cols = int64_t(c.kh) * c.kw * (n.op == Op::Conv ? C : M) * Ho * Wo;
            if (double(x->shape[0]) * M * Ho * Wo > double(kMaxElements) || double(cols) > double(kMaxElements))
                return nodeError(g, n, "output exceeds the runtime's limit");
        }
        if (n.op == Op::Conv) {
            const int group = params.group;
            const bool dw = group > 1 && group == C && w->shape[0] == C && w->shape[1] == 1;
            if (!(group == 1 && w->shape[1] == C) && !dw)
                return nodeError(g, n, "input " + shapeString(x->shape) + " does not fit weights " +
                                           shapeString(w->shape) + " with group " + std::to_string(group));
            if (w->shape[2] != params.kh || w->shape[3] != params.kw)
                return nodeError(g, n, "kernel_shape disagrees with the weights");
            if (b && (b->size() != w->shape[0] || b->isInt)) return nodeError(g, n, "bias size disagrees with the weights");
            e.set(n, 0, cpu::conv2d(*x, *w, b ? b->data() : nullptr, params));
        } else {
            if (params.group != 1 || w->shape[0] != C)
                return nodeError(g, n, "input " + shapeString(x->shape) + " does not fit weights " +
                                           shapeString(w->shape));
            if (w->shape[2] != params.kh || w->shape[3] != params.kw)
                return nodeError(g, n, "kernel_shape disagrees with the weights");
            if (b && (b->size() != w->shape[1] || b->isInt)) return nodeError(g, n, "bias size disagrees with the weights");
            e.set(n, 0, cpu::convTranspose2d(*x, *w, b ? b->data() : nullptr, params));
        }
        return Status::ok();
    }
    case Op::BatchNorm: {
        const Tensor *sc = e.in(n, 1), *bi = e.in(n, 2), *me = e.in(n, 3), *va = e.in(n, 4);
        if (!sc || !bi || !me || !va || x->rank() < 2) return nodeError(g, n, "needs 5 inputs and rank ≥ 2");
        const int64_t C = x->shape[1];
        for (const Tensor* t : {sc, bi, me, va})
            if (t->size() != C || t->isInt) return nodeError(g, n, "parameter size or type disagrees with channels");
        if (x->isInt) return nodeError(g, n, "expects a float tensor");
        auto t = e.takeInput(n, 0);
        const int64_t plane = C ? t->size() / (x->shape[0] * C) : 0;
        for (int64_t i = 0; i < x->shape[0]; ++i)
            for (int64_t c = 0; c < C; ++c) {
                const float s = sc->f[size_t(c)] / std::sqrt(va->f[size_t(c)] + n.epsilon);
                const float sh = bi->f[size_t(c)] - me->f[size_t(c)] * s;
                float* p = t->data() + (i * C + c) * plane;
                for (int64_t k = 0; k < plane; ++k) p[k] = p[k] * s + sh;
            }
        e.set(n, 0, std::move(t));
        return Status::ok();
    }
    case Op::GlobalAveragePool:
        if (x->rank() < 3) return nodeError(g, n, "needs rank ≥ 3");
        e.set(n, 0, cpu::globalAveragePool(*x));
        return Status::ok();
    case Op::AveragePool:
    case Op::MaxPool:
        if (x->rank() != 4) return nodeError(g, n, "needs a 4-D input");
        e.set(n, 0, cpu::pool2d(*x, n.op == Op::MaxPool ? cpu::PoolKind::Max : cpu::PoolKind::Average, n.kh, n.kw,
                                n.sh, n.sw, n.pads, n.countIncludePad));
        return Status::ok();
    case Op::Resize: {
        if (x->isInt) return nodeError(g, n, "expects a float tensor");
        auto out = resizeShape(g, n, x->shape, [&](size_t k) { return e.in(n, k); });
        if (!out) return out.status();
        e.set(n, 0, cpu::resizeNearest(*x, *out));
        return Status::ok();
    }
    case Op::Concat: {
        std::vector<const Shape*> shapes;
        for (size_t k = 0; k < n.in.size(); ++k) {
            const Tensor* t = e.in(n, k);
            if (!t || t->isInt != x->isInt) return nodeError(g, n, "inputs differ in rank or type");
            shapes.push_back(&t->shape);
        }
        auto layout = concatLayout(g, n, shapes);
        if (!layout) return layout.status();
        const auto& [out, axis, outer, inner] = *layout;
        Tensor y;
        y.shape = out;
        y.isInt = x->isInt;
        if (y.isInt) y.i.resize(size_t(numel(out)));
        else y.f.resize(size_t(numel(out)));
        int64_t offset = 0;
        const int64_t rowOut = out[size_t(axis)] * inner;
        for (size_t k = 0; k < n.in.size(); ++k) {
            const Tensor* t = e.in(n, k);
            const int64_t row = t->shape[size_t(axis)] * inner;
            for (int64_t o = 0; o < outer; ++o) {
                if (y.isInt) std::copy_n(t->i.data() + o * row, row, y.i.data() + o * rowOut + offset);
                else std::copy_n(t->f.data() + o * row, row, y.f.data() + o * rowOut + offset);
            }
            offset += row;
        }
        e.set(n, 0, std::move(y));
        return Status::ok();
    }
    case Op::MatMul: {
        const Tensor* y = e.in(n, 1);
        if (!y) return nodeError(g, n, "second operand missing");
        if (x->rank() >= 2 && y->rank() >= 2) {  // [batch, M, K] × [batch, K, N] → [batch, M, N]
            const double M = double(x->shape[size_t(x->rank() - 2)]), K = double(std::max<int64_t>(1, x->shape.back()));
            const double N = double(y->shape.back()), K2 = double(std::max<int64_t>(1, y->shape[size_t(y->rank() - 2)]));
            const double batchA = double(x->size()) / std::max(1.0, M * K), batchB = double(y->size()) / std::max(1.0, K2 * N);
            if (std::max(batchA, batchB) * M * N > double(kMaxElements))
                return nodeError(g, n, "output exceeds the runtime's limit");
        }
        Tensor out = cpu::matmul(*x, *y, &err);
        if (!err.empty()) return nodeError(g, n, err);
        e.set(n, 0, std::move(out));
        return Status::ok();
    }
    case Op::Softmax: {
        const int axis = normAxis(n.axis, x->rank());
        if (axis < 0 || axis >= x->rank() || x->isInt) return nodeError(g, n, "bad axis or type");
        auto t = e.takeInput(n, 0);
        cpu::softmaxInPlace(*t, axis, g.opset < 13);
        e.set(n, 0, std::move(t));
        return Status::ok();
    }
    case Op::ReduceMean: {
        std::vector<int64_t> axes = n.axes;
        if (axes.empty())
            for (int d = 0; d < x->rank(); ++d) axes.push_back(d);
        for (auto& a : axes) {
            a = normAxis(a, x->rank());
            if (a < 0 || a >= x->rank()) return nodeError(g, n, "axis out of range");
        }
        std::sort(axes.rbegin(), axes.rend());
        Tensor t = *x;
        for (auto a : axes) t = cpu::reduceMean(t, int(a), n.keepDims);
        e.set(n, 0, std::move(t));
        return Status::ok();
    }
    case Op::Reshape:
    case Op::Squeeze:
    case Op::Unsqueeze: {
        auto s = reshapedShape(g, n, x->shape, [&](size_t k) { return e.in(n, k); });
        if (!s) return s.status();
        auto t = e.takeInput(n, 0);
        t->shape = *s;
        e.set(n, 0, std::move(t));
        return Status::ok();
    }
    case Op::Transpose: {
        auto perm = transposePerm(g, n, x->rank());
        if (!perm) return perm.status();
        e.set(n, 0, cpu::transpose(*x, *perm));
        return Status::ok();
    }
    case Op::Slice: {
        auto range = sliceRange(g, n, x->shape, [&](size_t k) { return e.in(n, k); });
        if (!range) return range.status();
        const auto& [lo, hi] = *range;
        const int r = x->rank();
        Shape out(static_cast<size_t>(r));
        for (int d = 0; d < r; ++d) out[size_t(d)] = hi[size_t(d)] - lo[size_t(d)];
        Tensor y;
        y.shape = out;
        y.isInt = x->isInt;
        const int64_t total = numel(out);
        if (y.isInt) y.i.resize(size_t(total));
        else y.f.resize(size_t(total));
        std::vector<int64_t> stride(static_cast<size_t>(r), 1);
        for (int d = r - 2; d >= 0; --d) stride[size_t(d)] = stride[size_t(d + 1)] * x->shape[size_t(d + 1)];
        for (int64_t o = 0; o < total; ++o) {
            int64_t rem = o, off = 0;
            for (int d = r - 1; d >= 0; --d) {
                const int64_t i = rem % out[size_t(d)];
                rem /= out[size_t(d)];
                off += (i + lo[size_t(d)]) * stride[size_t(d)];
            }
            if (y.isInt) y.i[size_t(o)] = x->i[size_t(off)];
            else y.f[size_t(o)] = x->f[size_t(off)];
        }
        e.set(n, 0, std::move(y));
        return Status::ok();
    }
    case Op::Shape:
        e.set(n, 0, Tensor::ints({x->rank()}, std::vector<int64_t>(x->shape.begin(), x->shape.end())));
        return Status::ok();
    case Op::Cast: {
        const bool toInt = n.castTo == onnx::TensorProto::INT32 || n.castTo == onnx::TensorProto::INT64;
        Tensor y;
        y.shape = x->shape;
        y.isInt = toInt;
        if (toInt) {
            if (x->isInt) y.i = x->i;
            else
                for (float f : x->f) y.i.push_back(toInt64(f));
        } else {
            if (x->isInt) y.f.assign(x->i.begin(), x->i.end());
            else y.f = x->f;
        }
        e.set(n, 0, std::move(y));
        return Status::ok();
    }
    }
    return nodeError(g, n, "unhandled operator");
}

// Folds BatchNormalization nodes that directly follow a convolution into its weights.
void foldBatchNorms(Graph& g) {
    // An optional input left empty in the file has id -1 (fuzz_onnx found one as a Conv weight).
    auto constant = [&g](int id) -> std::shared_ptr<const Tensor> {
        return id >= 0 && size_t(id) < g.constants.size() ? g.constants[size_t(id)] : nullptr;
    };
    std::vector<int> consumers(g.valueNames.size(), 0);
    for (const auto& n : g.nodes)
        for (int id : n.in)
            if (id >= 0) ++consumers[size_t(id)];
    for (int id : g.outputs)
        if (id >= 0 && size_t(id) < consumers.size()) ++consumers[size_t(id)];
    std::unordered_map<int, size_t> producer;
    for (size_t k = 0; k < g.nodes.size(); ++k)
        for (int id : g.nodes[k].out) producer[id] = k;
    std::vector<bool> drop(g.nodes.size(), false);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        Node& bn = g.nodes[k];
        if (bn.op != Op::BatchNorm || bn.in.size() != 5 || bn.out.size() != 1) continue;
        auto pit = producer.find(bn.in[0]);
        if (pit == producer.end() || consumers[size_t(bn.in[0])] != 1) continue;
        Node& conv = g.nodes[pit->second];
        if (conv.op != Op::Conv || conv.in.size() < 2) continue;
        const std::shared_ptr<const Tensor> wc = constant(conv.in[1]);
        const std::shared_ptr<const Tensor> bc = conv.in.size() > 2 ? constant(conv.in[2]) : nullptr;
        if (!wc || (conv.in.size() > 2 && conv.in[2] >= 0 && !bc)) continue;
        std::shared_ptr<const Tensor> params[4];  // scale, bias, mean, variance: float constants
        bool paramsConst = true;
        for (int j = 0; j < 4; ++j) {
            params[j] = constant(bn.in[size_t(j) + 1]);
            paramsConst = paramsConst && params[j] && !params[j]->isInt;
        }
        if (!paramsConst || wc->rank() != 4 || wc->isInt || (bc && (bc->isInt || bc->size() != wc->shape[0]))) continue;
        const int64_t M = wc->shape[0];
        const Tensor &sc = *params[0], &bi = *params[1], &me = *params[2], &va = *params[3];
        if (sc.size() != M || bi.size() != M || me.size() != M || va.size() != M) continue;
        Tensor w = *wc;
        Tensor b = Tensor::floats({M});
        const int64_t per = w.size() / M;
        for (int64_t m = 0; m < M; ++m) {
            const float s = sc.f[size_t(m)] / std::sqrt(va.f[size_t(m)] + bn.epsilon);
            for (int64_t j = 0; j < per; ++j) w.f[size_t(m * per + j)] *= s;
            const float b0 = bc ? bc->f[size_t(m)] : 0.f;
            b.f[size_t(m)] = (b0 - me.f[size_t(m)]) * s + bi.f[size_t(m)];
        }
        const int wId = g.id(g.valueNames[size_t(conv.in[1])] + "#bn_folded");
        const int bId = g.id(g.valueNames[size_t(bn.in[0])] + "#bn_bias");
        g.constants.resize(g.valueNames.size());
        g.constants[size_t(wId)] = std::make_shared<Tensor>(std::move(w));
        g.constants[size_t(bId)] = std::make_shared<Tensor>(std::move(b));
        conv.in = {conv.in[0], wId, bId};
        conv.out = bn.out;
        drop[k] = true;
        ++g.folded;
    }
    std::vector<Node> kept;
    for (size_t k = 0; k < g.nodes.size(); ++k)
        if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
    g.nodes = std::move(kept);
}

Status buildGraph(Graph& g, const onnx::ModelProto& model) {
    for (const auto& o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") g.opset = int(o.version());
    if (g.opset == 0) return Status(ErrorCode::Corrupt, g.label + ": no default-domain opset import");
    if (g.opset > 17) return Status(ErrorCode::UnsupportedFormat, g.label + ": opset " + std::to_string(g.opset) + " is newer than supported (≤ 17)");
    const auto& graph = model.graph();
    std::vector<bool> defined;
    auto markDefined = [&](int id) {
        if (size_t(id) >= defined.size()) defined.resize(size_t(id) + 1, false);
        defined[size_t(id)] = true;
    };
    for (const auto& init : graph.initializer()) {
        auto t = tensorFromProto(init, g.label + ": initializer '" + init.name() + "'");
        if (!t) return t.status();
        const int id = g.id(init.name());
        g.constants[size_t(id)] = std::make_shared<Tensor>(std::move(t).value());
        markDefined(id);
    }
    for (const auto& in : graph.input()) {
        const int id = g.id(in.name());
        if (!g.constants[size_t(id)]) g.inputs.push_back(id);
        markDefined(id);
    }
    for (const auto& p : graph.node()) {
        Node node;
        node.opType = p.op_type();
        if (auto st = parseNode(g, p, node); !st) return st;
        for (const auto& name : p.input()) {
            if (name.empty()) {
                node.in.push_back(-1);
                continue;
            }
            const int id = g.id(name);
            if (size_t(id) >= defined.size() || !defined[size_t(id)])
                return nodeError(g, node, "reads '" + name + "', which no earlier node produces (truncated or "
                                              "unsorted graph)");
            node.in.push_back(id);
        }
        for (const auto& name : p.output()) {
            const int id = g.id(name);
            node.out.push_back(id);
            markDefined(id);
        }
        if (node.out.empty()) return nodeError(g, node, "has no output");
        if (node.op == Op::Constant) {
            const auto* a = attr(p, "value");
            if (!a || !a->has_t()) return nodeError(g, node, "only tensor-valued constants are supported");
            auto t = tensorFromProto(a->t(), g.label + ": constant '" + node.name + "'");
            if (!t) return t.status();
            g.constants[size_t(node.out[0])] = std::make_shared<Tensor>(std::move(t).value());
            continue;  // constants live in the value table; no node at run time
        }
        g.nodes.push_back(std::move(node));
    }
    for (const auto& out : graph.output()) {
        auto it = g.ids.find(out.name());
        if (it == g.ids.end() || size_t(it->second) >= defined.size() || !defined[size_t(it->second)])
            return Status(ErrorCode::Corrupt, g.label + ": graph output '" + out.name() + "' is never produced");
        g.outputs.push_back(it->second);
    }
    if (g.inputs.empty() || g.outputs.empty())
        return Status(ErrorCode::Corrupt, g.label + ": graph has no inputs or no outputs");
    foldBatchNorms(g);

    // Nodes whose inputs are all constant (casts of constants, shape arithmetic on them) are
    // evaluated once here.
    std::vector<Node> runtime;
    g.constants.resize(g.valueNames.size());
    Values folded(g.constants.begin(), g.constants.end());  // one value table for every folded node
    for (auto& n : g.nodes) {
        const bool allConst = n.op != Op::Shape && std::all_of(n.in.begin(), n.in.end(), [&](int id) {
                                  return id < 0 || g.constants[size_t(id)];
                              });
        if (allConst) {
            Exec e{g, folded, -1};
            if (auto st = execNode(e, n); !st) return st;
            for (int id : n.out) g.constants[size_t(id)] = folded[size_t(id)];
            continue;
        }
        runtime.push_back(std::move(n));
    }
    g.nodes = std::move(runtime);
    g.fused = fuseElementwise(g);
    g.constants.resize(g.valueNames.size());
    return Status::ok();
}

// setOperatorProfiling(true): seconds per operator kind (and per convolution kind), printed at exit;
// in a run with a device, each kind split by where its nodes ran ([device] or [cpu]).
std::atomic<bool> profiling{false};
struct Profile {
    std::mutex mutex;
    std::map<std::string, std::pair<double, long>> seconds;
    ~Profile() {
        std::vector<std::pair<std::string, std::pair<double, long>>> rows(seconds.begin(), seconds.end());
        std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
        for (const auto& [k, v] : rows) std::fprintf(stderr, "nn-profile %-60s %9.3f s %8ld calls\n", k.c_str(), v.first, v.second);
    }
};
void profileAdd(const std::string& label, const Node& n, double s, const char* where) {
    static Profile p;
    std::string key = std::filesystem::path(label).filename().string() + " " + n.opType;
    if (n.op == Op::Chain) key = std::filesystem::path(label).filename().string() + " fused elementwise";
    if (n.op == Op::Conv) key += n.conv.group > 1 ? " depthwise " + std::to_string(n.conv.kh) + "x" + std::to_string(n.conv.kw)
                                                  : " " + std::to_string(n.conv.kh) + "x" + std::to_string(n.conv.kw);
    if (where) key += std::string(" [") + where + "]";
    std::lock_guard lock(p.mutex);
    auto& slot = p.seconds[key];
    slot.first += s;
    ++slot.second;
}

}  // namespace

void setOperatorProfiling(bool on) { profiling = on; }

OnnxModel::OnnxModel() = default;
OnnxModel::~OnnxModel() = default;
OnnxModel::OnnxModel(OnnxModel&&) noexcept = default;
OnnxModel& OnnxModel::operator=(OnnxModel&&) noexcept = default;

Result<OnnxModel> OnnxModel::fromBytes(const std::string& bytes, const std::string& label) {
    onnx::ModelProto proto;
    if (bytes.empty()) return Status(ErrorCode::Corrupt, label + ": the file is empty");
    if (!proto.ParseFromString(bytes))
        return Status(ErrorCode::Corrupt, label + ": not a valid ONNX model (the protobuf does not parse; truncated or "
                                                  "damaged)");
    if (!proto.has_graph()) return Status(ErrorCode::Corrupt, label + ": the ONNX file has no graph");
    OnnxModel m;
    m.m_graph = std::make_unique<Graph>();
    m.m_graph->label = label;
    if (auto st = buildGraph(*m.m_graph, proto); !st) return st;
    return m;
}

Result<OnnxModel> OnnxModel::load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return Status(ErrorCode::NotFound, path + ": cannot open the model file");
    std::ostringstream ss;
    ss << f.rdbuf();
    if (!f.good() && !f.eof()) return Status(ErrorCode::Unreadable, path + ": read error");
    return fromBytes(ss.str(), path);
}

std::vector<std::string> OnnxModel::inputNames() const {
    std::vector<std::string> out;
    for (int id : m_graph->inputs) out.push_back(m_graph->valueNames[size_t(id)]);
    return out;
}
std::vector<std::string> OnnxModel::outputNames() const {
    std::vector<std::string> out;
    for (int id : m_graph->outputs) out.push_back(m_graph->valueNames[size_t(id)]);
    return out;
}
int OnnxModel::nodeCount() const { return int(m_graph->nodes.size()); }
const Tensor* OnnxModel::constant(const std::string& name) const {
    auto it = m_graph->ids.find(name);
    return it == m_graph->ids.end() ? nullptr : m_graph->constants[size_t(it->second)].get();
}
int OnnxModel::foldedBatchNorms() const { return m_graph->folded; }
int OnnxModel::fusedNodes() const { return m_graph->fused; }

// ---------------------------------------------------------------------------------------------
// Execution with a device (nn/device.h): the nodes it takes run there and leave their outputs
// there; any other node gets its inputs copied back and runs on the CPU as in run().
namespace {

struct DeviceValue {
    NnDevice::Handle h;
    Shape shape;
};

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
    Result<NnDevice::Handle> onDevice(int id) {
        if (dv[size_t(id)]) return dv[size_t(id)]->h;
        const Tensor* t = v[size_t(id)].get();
        if (!t || t->isInt) return Status(ErrorCode::Internal, g.label + ": value '" + g.valueNames[size_t(id)] + "' is not a float tensor");
        auto h = g.constants[size_t(id)] ? dev.constant(t) : dev.upload(t->data(), size_t(t->size()));
        if (!h) return h.status();
        dv[size_t(id)] = DeviceValue{*h, t->shape};
        return *h;
    }
    // The value in host memory, copied back from the device if it is only there.
    Status onHost(int id) {
        if (v[size_t(id)] || !dv[size_t(id)]) return Status::ok();
        Tensor t = Tensor::uninit(dv[size_t(id)]->shape);  // written in full by the download
        if (Status s = dev.download(dv[size_t(id)]->h, t.data(), size_t(t.size())); !s) return s;
        v[size_t(id)] = std::make_shared<Tensor>(std::move(t));
        return Status::ok();
    }
    // Whether node k may overwrite its input `id` on the device: nobody reads it afterwards.
    bool mayOverwrite(const Node& n, int k, int id) const { return lastReader(g, n, k, id, lastUse, &keep); }
    void setOut(const Node& n, NnDevice::Handle h, Shape shape) {
        v[size_t(n.out[0])].reset();
        dv[size_t(n.out[0])] = DeviceValue{std::move(h), std::move(shape)};
    }

    // Runs node k on the device when it is one the device takes with inputs it can compute;
    // false (nothing done) otherwise, and the CPU runs it (and reports any error in it).
    Result<bool> tryNode(const Node& n, int k) {
        if (n.out.empty() || n.in.empty() || n.in[0] < 0) return false;
        switch (n.op) {
        case Op::Conv: case Op::ConvTranspose: return conv(n);
        case Op::BatchNorm: return batchNorm(n);
        case Op::AveragePool: case Op::MaxPool: return pool(n);
        case Op::Chain: return chain(n, k);
        case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow: return binary(n);
        case Op::GlobalAveragePool: case Op::ReduceMean: return mean(n);
        case Op::Softmax: return softmax(n, k);
        case Op::Resize: return resize(n);
        case Op::MatMul: return matmul(n);
        case Op::Concat: return concat(n);
        case Op::Transpose: case Op::Slice: return gather(n);
        case Op::Reshape: case Op::Squeeze: case Op::Unsqueeze: return reshape(n, k);
        case Op::Shape: return shape(n);
        default: return false;
        }
    }

    // Input k of node n in host memory, or null (a device-only value, an absent input).
    const Tensor* hostIn(const Node& n, size_t k) const {
        return k < n.in.size() && n.in[k] >= 0 ? v[size_t(n.in[k])].get() : nullptr;
    }
    // A value that lives on the device only (the nodes that move data, not compute it, run on the
    // device only for those: copying a host tensor up to reshape it gains nothing).
    bool deviceOnly(int id) const { return id >= 0 && dv[size_t(id)] && !v[size_t(id)]; }
    static std::vector<int64_t> stridesOf(const Shape& s) {
        std::vector<int64_t> st(s.size(), 1);
        for (int d = int(s.size()) - 2; d >= 0; --d) st[size_t(d)] = st[size_t(d + 1)] * s[size_t(d + 1)];
        return st;
    }

    // Node n's output as input `xi` in place when n is its last reader, else in a copy.
    Result<NnDevice::Handle> ownCopy(const Node& n, int k, int xi, size_t count) {
        auto x = onDevice(xi);
        if (!x) return x.status();
        if (mayOverwrite(n, k, xi)) {
            v[size_t(xi)].reset(), dv[size_t(xi)].reset();  // taken over: no copy of it stays valid
            return *x;
        }
        auto fresh = dev.alloc(count);
        if (!fresh) return fresh.status();
        if (Status st = dev.copy(*x, *fresh, count); !st) return st;
        return *fresh;
    }

    // GlobalAveragePool over every axis after the channels; ReduceMean over the last axis only.
    Result<bool> mean(const Node& n) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (!xs || !isFloat(xi) || xs->empty()) return false;
        const int r = int(xs->size());
        Shape out;
        size_t rows, len;
        if (n.op == Op::GlobalAveragePool) {
            if (r < 3) return false;
            out = {(*xs)[0], (*xs)[1]};
            out.resize(size_t(r), 1);
            rows = size_t((*xs)[0] * (*xs)[1]);
        } else {
            if (n.axes.size() != 1 || normAxis(n.axes[0], r) != r - 1) return false;
            out = *xs;
            if (n.keepDims) out.back() = 1;
            else out.pop_back();
            rows = size_t(numel(*xs) / std::max<int64_t>(1, xs->back()));
        }
        len = rows ? size_t(numel(*xs)) / rows : 0;
        if (rows == 0 || len == 0) return false;
        auto x = onDevice(xi);
        if (!x) return x.status();
        auto y = dev.alloc(rows);
        if (!y) return y.status();
        if (Status st = dev.rowMean(*x, *y, rows, len); !st) return st;
        setOut(n, *y, out);
        return true;
    }

    // Softmax over the last axis (or, before opset 13, over every axis from `axis` on).
    Result<bool> softmax(const Node& n, int k) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (!xs || !isFloat(xi) || xs->empty()) return false;
        const int r = int(xs->size()), axis = normAxis(n.axis, r);
        if (axis < 0 || axis >= r || (g.opset >= 13 && axis != r - 1)) return false;
        int64_t rows = 1;
        for (int d = 0; d < axis; ++d) rows *= (*xs)[size_t(d)];
        const Shape shape = *xs;
        const size_t count = size_t(numel(shape));
        if (rows == 0 || count == 0) return false;
        auto y = ownCopy(n, k, xi, count);
        if (!y) return y.status();
        if (Status st = dev.softmaxRows(*y, size_t(rows), count / size_t(rows)); !st) return st;
        setOut(n, *y, shape);
        return true;
    }

    Result<bool> resize(const Node& n) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (!xs || !isFloat(xi)) return false;
        auto out = resizeShape(g, n, *xs, [&](size_t k) { return hostIn(n, k); });
        if (!out) return false;  // the CPU says why
        const Shape in = *xs;
        auto x = onDevice(xi);
        if (!x) return x.status();
        auto y = dev.alloc(size_t(numel(*out)));
        if (!y) return y.status();
        if (Status st = dev.resizeNearest(*x, *y, int(in[0] * in[1]), int(in[2]), int(in[3]), int((*out)[2]), int((*out)[3])); !st)
            return st;
        setOut(n, *y, *out);
        return true;
    }

    Result<bool> matmul(const Node& n) {
        if (n.in.size() < 2 || n.in[1] < 0) return false;
        const int ai = n.in[0], bi = n.in[1];
        if (!isFloat(ai) || !isFloat(bi) || !shapeOf(ai) || !shapeOf(bi)) return false;
        const Shape as = *shapeOf(ai), bs = *shapeOf(bi);
        MatmulLayout l;
        if (!matmulLayout(as, bs, l) || numel(l.out) > kMaxElements) return false;
        auto a = onDevice(ai);
        if (!a) return a.status();
        auto b = onDevice(bi);
        if (!b) return b.status();
        auto y = dev.alloc(size_t(numel(l.out)));
        if (!y) return y.status();
        if (Status st = dev.matmul(*a, as, *b, bs, *y); !st) return st;
        setOut(n, *y, l.out);
        return true;
    }

    // Concat of float tensors, at least one of them on the device only.
    Result<bool> concat(const Node& n) {
        bool anyOnDevice = false;
        std::vector<const Shape*> shapes;
        for (int id : n.in) {
            const Shape* s = id >= 0 ? shapeOf(id) : nullptr;
            if (!s || !isFloat(id)) return false;
            shapes.push_back(s);
            anyOnDevice = anyOnDevice || deviceOnly(id);
        }
        if (!anyOnDevice) return false;
        auto layout = concatLayout(g, n, shapes);
        if (!layout) return false;  // the CPU says why
        const auto& [out, axis, outer, inner] = *layout;
        if (numel(out) > kMaxElements || numel(out) == 0) return false;
        auto y = dev.alloc(size_t(numel(out)));
        if (!y) return y.status();
        const int64_t rowOut = out[size_t(axis)] * inner;
        int64_t offset = 0;
        for (int id : n.in) {
            const int64_t row = (*shapeOf(id))[size_t(axis)] * inner;
            auto x = onDevice(id);
            if (!x) return x.status();
            if (Status st = dev.copyRows(*x, *y, size_t(outer), size_t(row), size_t(row), size_t(rowOut), size_t(offset)); !st)
                return st;
            offset += row;
        }
        setOut(n, *y, out);
        return true;
    }

    // Transpose and Slice of a tensor on the device only: a strided gather.
    Result<bool> gather(const Node& n) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (!xs || !isFloat(xi) || !deviceOnly(xi) || xs->empty()) return false;
        const Shape in = *xs;
        const std::vector<int64_t> st = stridesOf(in);
        Shape out(in.size());
        std::vector<int64_t> strides(in.size());
        int64_t offset = 0;
        if (n.op == Op::Transpose) {
            auto perm = transposePerm(g, n, int(in.size()));
            if (!perm) return false;
            for (size_t d = 0; d < in.size(); ++d) out[d] = in[size_t((*perm)[d])], strides[d] = st[size_t((*perm)[d])];
        } else {
            auto range = sliceRange(g, n, in, [&](size_t k) { return hostIn(n, k); });
            if (!range) return false;
            for (size_t d = 0; d < in.size(); ++d) {
                out[d] = range->second[d] - range->first[d], strides[d] = st[d];
                offset += range->first[d] * st[d];
            }
        }
        auto x = onDevice(xi);
        if (!x) return x.status();
        auto y = dev.alloc(size_t(std::max<int64_t>(1, numel(out))));
        if (!y) return y.status();
        if (numel(out) > 0)
            if (Status s = dev.gather(*x, *y, out, strides, offset); !s) return s;
        setOut(n, *y, out);
        return true;
    }

    // Shape of a tensor on the device only: its shape, without copying it back to read that.
    Result<bool> shape(const Node& n) {
        const int xi = n.in[0];
        if (!deviceOnly(xi)) return false;
        const Shape& s = dv[size_t(xi)]->shape;
        v[size_t(n.out[0])] = std::make_shared<Tensor>(Tensor::ints({int64_t(s.size())}, std::vector<int64_t>(s.begin(), s.end())));
        return true;
    }

    // Reshape, Squeeze and Unsqueeze of a tensor on the device only: the same data, another shape.
    Result<bool> reshape(const Node& n, int k) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (!xs || !isFloat(xi) || !deviceOnly(xi)) return false;
        auto out = reshapedShape(g, n, *xs, [&](size_t i) { return hostIn(n, i); });
        if (!out) return false;
        auto y = ownCopy(n, k, xi, size_t(numel(*xs)));
        if (!y) return y.status();
        setOut(n, *y, *out);
        return true;
    }

    // A (transposed) convolution's input, weights and bias (bi -1: none) on the device, and a
    // buffer for its output.
    struct ConvIo {
        NnDevice::Handle x, w, b, y;
    };
    Result<ConvIo> convIo(int xi, int wi, int bi, const Shape& out) {
        ConvIo io;
        for (auto [id, h] : {std::pair{xi, &io.x}, std::pair{wi, &io.w}, std::pair{bi, &io.b}}) {
            if (id < 0) continue;
            auto r = onDevice(id);
            if (!r) return r.status();
            *h = *r;
        }
        auto y = dev.alloc(size_t(numel(out)));
        if (!y) return y.status();
        io.y = *y;
        return io;
    }

    // A convolution (group 1 or depthwise) or a transposed convolution (group 1) with constant
    // weights, as the CPU's.
    Result<bool> conv(const Node& n) {
        if (n.in.size() < 2 || n.in[1] < 0) return false;
        const bool transposed = n.op == Op::ConvTranspose;
        const int xi = n.in[0], wi = n.in[1], bi = n.in.size() > 2 ? n.in[2] : -1;
        const Shape* xs = shapeOf(xi);
        const Tensor* w = g.constants[size_t(wi)].get();
        const Tensor* b = bi >= 0 ? g.constants[size_t(bi)].get() : nullptr;
        if (!xs || xs->size() != 4 || !isFloat(xi) || !w || w->isInt || w->rank() != 4) return false;
        cpu::Conv2dParams p = n.conv;
        if (!n.kernelGiven) p.kh = int(w->shape[2]), p.kw = int(w->shape[3]);
        const int64_t C = (*xs)[1], M = w->shape[transposed ? 1 : 0];
        if (bi >= 0 && (!b || b->isInt || b->size() != M)) return false;
        if (w->shape[2] != p.kh || w->shape[3] != p.kw) return false;
        if (transposed) {
            if (p.group != 1 || w->shape[0] != C) return false;
        } else {
            const bool dw = p.group > 1 && p.group == C && w->shape[0] == C && w->shape[1] == 1;
            if (!(p.group == 1 && w->shape[1] == C) && !dw) return false;
        }
        DeviceConv s;
        s.n = int((*xs)[0]), s.c = int(C), s.h = int((*xs)[2]), s.w = int((*xs)[3]), s.m = int(M);
        s.kh = p.kh, s.kw = p.kw, s.strideH = p.strideH, s.strideW = p.strideW, s.dilH = p.dilH, s.dilW = p.dilW;
        s.padT = p.padT, s.padL = p.padL, s.padB = p.padB, s.padR = p.padR, s.group = p.group;
        const int64_t Ho = transposed ? cpu::transposedOutSize(s.h, s.kh, s.strideH, s.dilH, s.padT, s.padB) : s.outH();
        const int64_t Wo = transposed ? cpu::transposedOutSize(s.w, s.kw, s.strideW, s.dilW, s.padL, s.padR) : s.outW();
        const Shape out{s.n, s.m, Ho, Wo};
        const int64_t scratch = transposed ? M * s.kh * s.kw * int64_t(s.h) * s.w : int64_t(s.kh) * s.kw * C * Ho * Wo;
        if (Ho <= 0 || Wo <= 0 || numel(out) > kMaxElements || scratch > kMaxElements) return false;
        auto io = convIo(xi, wi, b ? bi : -1, out);
        if (!io) return io.status();
        const Status st = transposed ? dev.convTranspose2d(io->x, io->w, io->b, s, int(Ho), int(Wo), io->y)
                                     : dev.conv2d(io->x, io->w, io->b, s, io->y);
        if (!st) return st;
        setOut(n, io->y, out);
        return true;
    }

    // A batch norm left after folding: per channel, x · scale + shift with the CPU's scale and shift.
    Result<bool> batchNorm(const Node& n) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (n.in.size() < 5 || !xs || xs->size() < 2 || !isFloat(xi)) return false;
        const int64_t N = (*xs)[0], C = (*xs)[1];
        const Tensor *sc = hostIn(n, 1), *bi = hostIn(n, 2), *me = hostIn(n, 3), *va = hostIn(n, 4);
        for (const Tensor* t : {sc, bi, me, va})
            if (!t || t->isInt || t->size() != C) return false;
        if (N * C == 0) return false;
        std::vector<float> scale(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
        for (int64_t c = 0; c < C; ++c) {  // as execNode computes them
            scale[size_t(c)] = sc->f[size_t(c)] / std::sqrt(va->f[size_t(c)] + n.epsilon);
            shift[size_t(c)] = bi->f[size_t(c)] - me->f[size_t(c)] * scale[size_t(c)];
        }
        const Shape shape = *xs;
        const size_t total = size_t(numel(shape)), plane = total / size_t(N * C);
        auto x = onDevice(xi);
        if (!x) return x.status();
        auto hs = dev.upload(scale.data(), scale.size());
        if (!hs) return hs.status();
        auto hb = dev.upload(shift.data(), shift.size());
        if (!hb) return hb.status();
        auto y = dev.alloc(total);
        if (!y) return y.status();
        if (Status st = dev.binary(*x, *hs, *y, size_t(N * C), plane, int(C), 2); !st) return st;
        if (Status st = dev.binary(*y, *hb, *y, size_t(N * C), plane, int(C), 0); !st) return st;
        setOut(n, *y, shape);
        return true;
    }

    Result<bool> pool(const Node& n) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (!xs || xs->size() != 4 || !isFloat(xi)) return false;
        const int64_t NC = (*xs)[0] * (*xs)[1];
        const int H = int((*xs)[2]), W = int((*xs)[3]);
        if (n.sh < 1 || n.sw < 1 || n.kh < 1 || n.kw < 1 || NC == 0) return false;
        const int Ho = cpu::outSize(H, n.kh, n.sh, 1, n.pads[0], n.pads[2]), Wo = cpu::outSize(W, n.kw, n.sw, 1, n.pads[1], n.pads[3]);
        if (Ho <= 0 || Wo <= 0) return false;
        const Shape out{(*xs)[0], (*xs)[1], Ho, Wo};
        if (numel(out) > kMaxElements) return false;
        auto x = onDevice(xi);
        if (!x) return x.status();
        auto y = dev.alloc(size_t(numel(out)));
        if (!y) return y.status();
        if (Status st = dev.pool2d(*x, *y, int(NC), H, W, n.kh, n.kw, n.sh, n.sw, n.pads, Ho, Wo, n.op == Op::MaxPool, n.countIncludePad);
            !st)
            return st;
        setOut(n, *y, out);
        return true;
    }

    Result<bool> chain(const Node& n, int k) {
        const int xi = n.in[0];
        const Shape* xs = shapeOf(xi);
        if (!xs || !isFloat(xi) || !dev.canChain(n.micro)) return false;
        const Shape shape = *xs;
        const size_t count = size_t(numel(shape));
        auto y = ownCopy(n, k, xi, count);
        if (!y) return y.status();
        if (Status st = dev.chain(*y, count, n.micro); !st) return st;
        setOut(n, *y, shape);
        return true;
    }

    Result<bool> binary(const Node& n) {
        if (n.in.size() < 2 || n.in[1] < 0) return false;
        int ai = n.in[0], bi = n.in[1];
        if (!isFloat(ai) || !isFloat(bi) || !shapeOf(ai) || !shapeOf(bi)) return false;
        const int op = int(n.op) - int(Op::Add);  // Add, Sub, Mul, Div, Pow
        // b one value per channel of a (or one value in all, or one per image and channel: the
        // squeeze-excite scales of a batch of lines), a the full tensor; Add and Mul either way round.
        auto perChannel = [&](const Shape& a, const Shape& b) -> int {
            if (numel(b) == 1 && a.size() >= 1 && b.size() <= a.size()) return 1;
            if (a.size() == 4 && numel(b) == a[1] && ((b.size() == 4 && b[0] == 1 && b[2] == 1 && b[3] == 1) ||
                                                       (b.size() == 3 && b[1] == 1 && b[2] == 1)))
                return int(a[1]);
            if (a.size() == 4 && b.size() == 4 && b[0] == a[0] && b[1] == a[1] && b[2] == 1 && b[3] == 1) return int(a[0] * a[1]);
            return 0;
        };
        // b one value per row of a's last axis (b = a's shape with the last axis 1: a LayerNorm's
        // mean), or one vector along it (b's only axis above 1 is the last, a's length: its weights).
        auto perRow = [&](const Shape& a, const Shape& b) {
            if (a.size() < 2 || b.size() != a.size() || b.back() != 1 || a.back() < 2) return false;
            return std::equal(a.begin(), a.end() - 1, b.begin());
        };
        auto lastAxisVector = [&](const Shape& a, const Shape& b) {
            if (a.empty() || b.empty() || b.size() > a.size() || b.back() != a.back() || a.back() < 2) return false;
            return numel(b) == b.back();
        };
        Shape sa = *shapeOf(ai), sb = *shapeOf(bi);
        int channels = -2;
        size_t outer = 0, inner = 0;
        const bool commutes = n.op == Op::Add || n.op == Op::Mul;
        if (sa == sb) {
            channels = 0;
        } else if (int ch = perChannel(sa, sb); ch > 0) {
            channels = ch;
        } else if (commutes && perChannel(sb, sa) > 0) {
            channels = perChannel(sb, sa);
            std::swap(ai, bi), std::swap(sa, sb);
        } else if (perRow(sa, sb)) {
            outer = size_t(numel(sa) / sa.back()), inner = size_t(sa.back());
            channels = int(outer);
        } else if (lastAxisVector(sa, sb) || (commutes && lastAxisVector(sb, sa))) {
            if (!lastAxisVector(sa, sb)) std::swap(ai, bi), std::swap(sa, sb);
            outer = size_t(numel(sa) / sa.back()), inner = size_t(sa.back());
            channels = -1;
        }
        if (channels < -1 || numel(sa) > kMaxElements) return false;
        const size_t total = size_t(numel(sa));
        if (inner == 0) {
            outer = channels == 0 ? total : size_t(channels == 1 ? total : sa[0] * sa[1]);
            inner = channels == 0 ? 1 : channels == 1 ? 1 : size_t(sa[2] * sa[3]);
        }
        auto a = onDevice(ai);
        if (!a) return a.status();
        auto b = onDevice(bi);
        if (!b) return b.status();
        auto y = dev.alloc(total);
        if (!y) return y.status();
        if (Status st = dev.binary(*a, *b, *y, outer, inner, channels, op); !st) return st;
        setOut(n, *y, sa);
        return true;
    }
};

}  // namespace

Result<std::map<std::string, Tensor>> OnnxModel::run(std::map<std::string, Tensor> inputs, const std::vector<std::string>& fetch,
                                                     NnDevice* device) const {
    if (!device) return run(std::move(inputs), fetch);
    std::lock_guard lock(device->runLock());
    return runOn(std::move(inputs), fetch, device);
}

Result<std::map<std::string, Tensor>> OnnxModel::run(std::map<std::string, Tensor> inputs,
                                                     const std::vector<std::string>& fetch) const {
    return runOn(std::move(inputs), fetch, nullptr);
}

Result<std::map<std::string, Tensor>> OnnxModel::runOn(std::map<std::string, Tensor> inputs, const std::vector<std::string>& fetch,
                                                       NnDevice* device) const {
    const Graph& g = *m_graph;
    Values v(g.constants.begin(), g.constants.end());
    for (int id : g.inputs) {
        auto it = inputs.find(g.valueNames[size_t(id)]);
        if (it == inputs.end()) return Status(ErrorCode::InvalidArgument, g.label + ": input '" + g.valueNames[size_t(id)] + "' not given");
        v[size_t(id)] = std::make_shared<Tensor>(std::move(it->second));  // no copy of a page-sized input
    }
    std::vector<int> want;
    for (const auto& name : fetch.empty() ? outputNames() : fetch) {
        auto it = g.ids.find(name);
        if (it == g.ids.end()) return Status(ErrorCode::InvalidArgument, g.label + ": no value named '" + name + "'");
        want.push_back(it->second);
    }
    std::vector<bool> keep(g.valueNames.size(), false);
    for (int id : want) keep[size_t(id)] = true;
    // Only the nodes the fetched values depend on run (the recognizer's reader features are
    // fetched without its classifier and softmax), each value freed after the last of them reads it.
    std::vector<bool> needed(g.valueNames.size(), false), runs(g.nodes.size(), false);
    for (int id : want) needed[size_t(id)] = true;
    for (size_t k = g.nodes.size(); k-- > 0;) {
        const Node& n = g.nodes[k];
        if (std::none_of(n.out.begin(), n.out.end(), [&](int id) { return id >= 0 && needed[size_t(id)]; })) continue;
        runs[k] = true;
        for (int id : n.in)
            if (id >= 0) needed[size_t(id)] = true;
    }
    std::vector<int> lastUse(g.valueNames.size(), -1);
    for (size_t k = 0; k < g.nodes.size(); ++k)
        if (runs[k])
            for (int id : g.nodes[k].in)
                if (id >= 0) lastUse[size_t(id)] = int(k);
    const bool profile = profiling.load(std::memory_order_relaxed);
    std::vector<std::optional<DeviceValue>> dv(device ? g.valueNames.size() : 0);
    std::optional<DeviceRun> onDev;
    if (device) onDev.emplace(DeviceRun{g, *device, v, dv, keep, lastUse});
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        if (!runs[k]) continue;
        const Node& n = g.nodes[k];
        const auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        bool done = false;
        if (onDev) {
            auto r = onDev->tryNode(n, int(k));
            if (!r) {
                device->failed = true;
                return r.status();
            }
            done = *r;
            ++(done ? device->deviceNodes : device->cpuNodes);
            if (!done)
                for (int id : n.in)
                    if (id >= 0)
                        if (Status s = onDev->onHost(id); !s) {
                            device->failed = true;
                            return s;
                        }
        }
        if (!done) {
            Exec e{g, v, int(k), &keep, &lastUse};
            if (auto st = execNode(e, n); !st) return st;
            for (int id : n.out)
                if (v[size_t(id)] && v[size_t(id)]->size() > kMaxElements)
                    return nodeError(g, n, "output " + shapeString(v[size_t(id)]->shape) + " exceeds the runtime's limit");
        }
        if (profile)
            profileAdd(g.label, n, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                       device ? (done ? "device" : "cpu") : nullptr);
        for (int id : n.in)
            if (id >= 0 && lastUse[size_t(id)] == int(k) && !keep[size_t(id)] && !g.constants[size_t(id)]) {
                v[size_t(id)].reset();
                if (device) dv[size_t(id)].reset();
            }
    }
    std::map<std::string, Tensor> out;
    for (int id : want) {
        if (onDev)
            if (Status s = onDev->onHost(id); !s) {
                device->failed = true;
                return s;
            }
        if (out.count(g.valueNames[size_t(id)])) continue;  // asked for twice
        if (!v[size_t(id)]) return Status(ErrorCode::Internal, g.label + ": value '" + g.valueNames[size_t(id)] + "' was not computed");
        // Moved out when nothing else holds it (the recognizer's class probabilities are the
        // largest tensor of a page); copied when it is also a constant or fetched twice.
        if (v[size_t(id)].use_count() == 1 && !g.constants[size_t(id)])
            out.emplace(g.valueNames[size_t(id)], std::move(*std::const_pointer_cast<Tensor>(v[size_t(id)])));
        else
            out.emplace(g.valueNames[size_t(id)], *v[size_t(id)]);
        v[size_t(id)].reset();
    }
    return out;
}

std::vector<std::string> supportedOps() {
    std::vector<std::string> out;
    for (const auto& [name, op] : opTable()) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace quire::nn
