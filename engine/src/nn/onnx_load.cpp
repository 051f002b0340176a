// Loading an ONNX model: the protobuf parsed with ONNX's own classes, every node's attributes
// read and checked, constants folded, batch norms folded into convolutions and elementwise runs
// fused (fusion.cpp); the operators this runtime knows.
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
#include "nn/cpu_exec.h"
#include "nn/graph.h"

namespace quire::nn {
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

}  // namespace

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

std::vector<std::string> supportedOps() {
    std::vector<std::string> out;
    for (const auto& [name, op] : opTable()) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace quire::nn
