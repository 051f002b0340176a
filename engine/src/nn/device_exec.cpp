// The device runner's per-operator functions (device_exec.h).
#include "nn/device_exec.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "nn/cpu_ops.h"
#include "nn/shape_rules.h"

namespace quire::nn {

Result<NnDevice::Handle> DeviceRun::onDevice(int id) {
    if (dv[size_t(id)]) return dv[size_t(id)]->h;
    const Tensor* t = v[size_t(id)].get();
    if (!t || t->isInt) return Status(ErrorCode::Internal, g.label + ": value '" + g.valueNames[size_t(id)] + "' is not a float tensor");
    auto h = g.constants[size_t(id)] ? dev.constant(t) : dev.upload(t->data(), size_t(t->size()));
    if (!h) return h.status();
    dv[size_t(id)] = DeviceValue{*h, t->shape};
    return *h;
}

Status DeviceRun::onHost(int id) {
    if (v[size_t(id)] || !dv[size_t(id)]) return Status::ok();
    Tensor t = Tensor::uninit(dv[size_t(id)]->shape);  // written in full by the download
    if (Status s = dev.download(dv[size_t(id)]->h, t.data(), size_t(t.size())); !s) return s;
    v[size_t(id)] = std::make_shared<Tensor>(std::move(t));
    return Status::ok();
}

void DeviceRun::setOut(const Node& n, NnDevice::Handle h, Shape shape) {
    v[size_t(n.out[0])].reset();
    dv[size_t(n.out[0])] = DeviceValue{std::move(h), std::move(shape)};
}

Result<bool> DeviceRun::tryNode(const Node& n, int k) {
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

const Tensor* DeviceRun::hostIn(const Node& n, size_t k) const {
    return k < n.in.size() && n.in[k] >= 0 ? v[size_t(n.in[k])].get() : nullptr;
}

std::vector<int64_t> DeviceRun::stridesOf(const Shape& s) {
    std::vector<int64_t> st(s.size(), 1);
    for (int d = int(s.size()) - 2; d >= 0; --d) st[size_t(d)] = st[size_t(d + 1)] * s[size_t(d + 1)];
    return st;
}

Result<NnDevice::Handle> DeviceRun::ownCopy(const Node& n, int k, int xi, size_t count) {
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

Result<bool> DeviceRun::mean(const Node& n) {
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

Result<bool> DeviceRun::softmax(const Node& n, int k) {
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

Result<bool> DeviceRun::resize(const Node& n) {
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

Result<bool> DeviceRun::matmul(const Node& n) {
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

Result<bool> DeviceRun::concat(const Node& n) {
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

Result<bool> DeviceRun::gather(const Node& n) {
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

Result<bool> DeviceRun::shape(const Node& n) {
    const int xi = n.in[0];
    if (!deviceOnly(xi)) return false;
    const Shape& s = dv[size_t(xi)]->shape;
    v[size_t(n.out[0])] = std::make_shared<Tensor>(Tensor::ints({int64_t(s.size())}, std::vector<int64_t>(s.begin(), s.end())));
    return true;
}

Result<bool> DeviceRun::reshape(const Node& n, int k) {
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

auto DeviceRun::convIo(int xi, int wi, int bi, const Shape& out) -> Result<ConvIo> {
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

Result<bool> DeviceRun::conv(const Node& n) {
    if (n.in.size() < 2 || n.in[1] < 0) return false;
    const bool transposed = n.op == Op::ConvTranspose;
    const int xi = n.in[0], wi = n.in[1], bi = n.in.size() > 2 ? n.in[2] : -1;
    const Shape* xs = shapeOf(xi);
    const Tensor* w = g.constants[size_t(wi)].get();
    const Tensor* b = bi >= 0 ? g.constants[size_t(bi)].get() : nullptr;
    if (!xs || xs->size() != 4 || !isFloat(xi) || !w || w->isInt || w->rank() != 4) return false;
    if (!n.micro.empty() && !dev.canChain(n.micro)) return false;
    ConvShape s = n.conv;
    if (!n.kernelGiven) s.kh = int(w->shape[2]), s.kw = int(w->shape[3]);
    const int64_t C = (*xs)[1], M = w->shape[transposed ? 1 : 0];
    if (bi >= 0 && (!b || b->isInt || b->size() != M)) return false;
    if (w->shape[2] != s.kh || w->shape[3] != s.kw) return false;
    if (transposed) {
        if (s.group != 1 || w->shape[0] != C) return false;
    } else {
        const bool dw = s.group > 1 && s.group == C && w->shape[0] == C && w->shape[1] == 1;
        if (!(s.group == 1 && w->shape[1] == C) && !dw) return false;
    }
    s.n = int((*xs)[0]), s.c = int(C), s.h = int((*xs)[2]), s.w = int((*xs)[3]), s.m = int(M);
    const int64_t Ho = transposed ? cpu::transposedOutSize(s.h, s.kh, s.strideH, s.dilH, s.padT, s.padB) : s.outH();
    const int64_t Wo = transposed ? cpu::transposedOutSize(s.w, s.kw, s.strideW, s.dilW, s.padL, s.padR) : s.outW();
    const Shape out{s.n, s.m, Ho, Wo};
    const int64_t scratch = transposed ? M * s.kh * s.kw * int64_t(s.h) * s.w : int64_t(s.kh) * s.kw * C * Ho * Wo;
    if (Ho <= 0 || Wo <= 0 || numel(out) > kMaxElements || scratch > kMaxElements) return false;
    auto io = convIo(xi, wi, b ? bi : -1, out);
    if (!io) return io.status();
    const Status st = transposed ? dev.convTranspose2d(io->x, io->w, io->b, s, int(Ho), int(Wo), io->y)
                                 : dev.conv2d(io->x, io->w, io->b, s, io->y, n.micro);
    if (!st) return st;
    setOut(n, io->y, out);
    return true;
}

Result<bool> DeviceRun::batchNorm(const Node& n) {
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

Result<bool> DeviceRun::pool(const Node& n) {
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

Result<bool> DeviceRun::chain(const Node& n, int k) {
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

Result<bool> DeviceRun::binary(const Node& n) {
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

}  // namespace quire::nn
