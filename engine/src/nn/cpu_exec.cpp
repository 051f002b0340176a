// The CPU's execution of one node: a compute function per operator, chosen from a table by the
// node's operator (as ggml's compute_forward_<op>); execNode checks what every operator needs.
#include "nn/cpu_exec.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "nn/cpu_ops.h"
#include "nn/shape_rules.h"

namespace quire::nn {
namespace {

template <typename F>
Status unary(const Exec& e, const Node& n, F f) {
    if (e.in(n, 0)->isInt) return nodeError(e.g, n, "expects a float tensor");
    auto t = e.takeInput(n, 0);
    for (float& x : t->f) x = f(x);
    e.set(n, 0, std::move(t));
    return Status::ok();
}

// Constant
Status computeConstant(const Exec& /*e*/, const Node& /*n*/) {
    return Status::ok();  // evaluated at load
}

// Chain
Status computeChain(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    if (x->isInt) return nodeError(g, n, "expects a float tensor");
    auto t = e.takeInput(n, 0);
    runChain(n.micro, t->data(), t->size());
    e.set(n, 0, std::move(t));
    return Status::ok();
}

// Identity
Status computeIdentity(const Exec& e, const Node& n) {
    const Tensor* x = e.in(n, 0);
    e.set(n, 0, copyOf(*x));
    return Status::ok();
}

// Relu
Status computeRelu(const Exec& e, const Node& n) {
    return unary(e, n, [](float a) { return a > 0.f ? a : 0.f; });
}

// Sigmoid
Status computeSigmoid(const Exec& e, const Node& n) {
    return unary(e, n, [](float a) { return 1.f / (1.f + std::exp(-a)); });
}

// Sqrt
Status computeSqrt(const Exec& e, const Node& n) {
    return unary(e, n, [](float a) { return std::sqrt(a); });
}

// HardSigmoid
Status computeHardSigmoid(const Exec& e, const Node& n) {
    const float al = n.alpha, be = n.beta;
    return unary(e, n, [al, be](float a) { return std::clamp(al * a + be, 0.f, 1.f); });
}

// Clip
Status computeClip(const Exec& e, const Node& n) {
    float lo = n.clipMin, hi = n.clipMax;
    if (!n.clipFromAttrs) {
        if (const Tensor* t = e.in(n, 1); t && t->size() == 1) lo = t->isInt ? float(t->i[0]) : t->f[0];
        if (const Tensor* t = e.in(n, 2); t && t->size() == 1) hi = t->isInt ? float(t->i[0]) : t->f[0];
    }
    return unary(e, n, [lo, hi](float a) { return std::min(std::max(a, lo), hi); });
}

// Add, Sub, Mul, Div, Pow
Status computeBinary(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    std::string err;
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

// Conv, ConvTranspose
Status computeConv(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    const Tensor* w = e.in(n, 1);
    const Tensor* b = e.in(n, 2);
    if (!w || x->rank() != 4 || w->rank() != 4 || x->isInt || w->isInt)
        return nodeError(g, n, "needs a 4-D input and 4-D weights, got " + shapeString(x->shape));
    const int64_t C = x->shape[1];
    ConvShape params = n.conv;
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
        e.set(n, 0, conv2dWithChain(*x, *w, b ? b->data() : nullptr, params, n.micro));
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

// BatchNorm
Status computeBatchNorm(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
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

// GlobalAveragePool
Status computeGlobalAveragePool(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    if (x->rank() < 3) return nodeError(g, n, "needs rank ≥ 3");
    e.set(n, 0, cpu::globalAveragePool(*x));
    return Status::ok();
}

// AveragePool, MaxPool
Status computePool(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    if (x->rank() != 4) return nodeError(g, n, "needs a 4-D input");
    e.set(n, 0, cpu::pool2d(*x, n.op == Op::MaxPool ? cpu::PoolKind::Max : cpu::PoolKind::Average, n.kh, n.kw,
                            n.sh, n.sw, n.pads, n.countIncludePad));
    return Status::ok();
}

// Resize
Status computeResize(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    if (x->isInt) return nodeError(g, n, "expects a float tensor");
    auto out = resizeShape(g, n, x->shape, [&](size_t k) { return e.in(n, k); });
    if (!out) return out.status();
    e.set(n, 0, cpu::resizeNearest(*x, *out));
    return Status::ok();
}

// Concat
Status computeConcat(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
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

// MatMul
Status computeMatMul(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    std::string err;
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

// Softmax
Status computeSoftmax(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    const int axis = normAxis(n.axis, x->rank());
    if (axis < 0 || axis >= x->rank() || x->isInt) return nodeError(g, n, "bad axis or type");
    auto t = e.takeInput(n, 0);
    cpu::softmaxInPlace(*t, axis, g.opset < 13);
    e.set(n, 0, std::move(t));
    return Status::ok();
}

// ReduceMean
Status computeReduceMean(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
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

// Reshape, Squeeze, Unsqueeze
Status computeReshape(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    auto s = reshapedShape(g, n, x->shape, [&](size_t k) { return e.in(n, k); });
    if (!s) return s.status();
    auto t = e.takeInput(n, 0);
    t->shape = *s;
    e.set(n, 0, std::move(t));
    return Status::ok();
}

// Transpose
Status computeTranspose(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
    auto perm = transposePerm(g, n, x->rank());
    if (!perm) return perm.status();
    e.set(n, 0, cpu::transpose(*x, *perm));
    return Status::ok();
}

// Slice
Status computeSlice(const Exec& e, const Node& n) {
    const Graph& g = e.g;
    const Tensor* x = e.in(n, 0);
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

// Shape
Status computeShape(const Exec& e, const Node& n) {
    const Tensor* x = e.in(n, 0);
    e.set(n, 0, Tensor::ints({x->rank()}, std::vector<int64_t>(x->shape.begin(), x->shape.end())));
    return Status::ok();
}

// Cast
Status computeCast(const Exec& e, const Node& n) {
    const Tensor* x = e.in(n, 0);
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

using Compute = Status (*)(const Exec&, const Node&);
constexpr size_t kOpCount = size_t(Op::Chain) + 1;

const std::array<Compute, kOpCount>& computeTable() {
    static const std::array<Compute, kOpCount> table = [] {
        std::array<Compute, kOpCount> t{};
        t[size_t(Op::Constant)] = computeConstant;
        t[size_t(Op::Chain)] = computeChain;
        t[size_t(Op::Identity)] = computeIdentity;
        t[size_t(Op::Relu)] = computeRelu;
        t[size_t(Op::Sigmoid)] = computeSigmoid;
        t[size_t(Op::Sqrt)] = computeSqrt;
        t[size_t(Op::HardSigmoid)] = computeHardSigmoid;
        t[size_t(Op::Clip)] = computeClip;
        t[size_t(Op::Add)] = computeBinary;
        t[size_t(Op::Sub)] = computeBinary;
        t[size_t(Op::Mul)] = computeBinary;
        t[size_t(Op::Div)] = computeBinary;
        t[size_t(Op::Pow)] = computeBinary;
        t[size_t(Op::Conv)] = computeConv;
        t[size_t(Op::ConvTranspose)] = computeConv;
        t[size_t(Op::BatchNorm)] = computeBatchNorm;
        t[size_t(Op::GlobalAveragePool)] = computeGlobalAveragePool;
        t[size_t(Op::AveragePool)] = computePool;
        t[size_t(Op::MaxPool)] = computePool;
        t[size_t(Op::Resize)] = computeResize;
        t[size_t(Op::Concat)] = computeConcat;
        t[size_t(Op::MatMul)] = computeMatMul;
        t[size_t(Op::Softmax)] = computeSoftmax;
        t[size_t(Op::ReduceMean)] = computeReduceMean;
        t[size_t(Op::Reshape)] = computeReshape;
        t[size_t(Op::Squeeze)] = computeReshape;
        t[size_t(Op::Unsqueeze)] = computeReshape;
        t[size_t(Op::Transpose)] = computeTranspose;
        t[size_t(Op::Slice)] = computeSlice;
        t[size_t(Op::Shape)] = computeShape;
        t[size_t(Op::Cast)] = computeCast;
        return t;
    }();
    return table;
}

}  // namespace

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
    const Compute compute = size_t(n.op) < kOpCount ? computeTable()[size_t(n.op)] : nullptr;
    if (!compute) return nodeError(g, n, "unhandled operator");
    return compute(e, n);
}

}  // namespace quire::nn
