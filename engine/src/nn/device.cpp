// NnDevice's shared part and the mirror device (nn/device.h).
#include "nn/device.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nn/cpu_ops.h"

namespace quire::nn {

Result<NnDevice::Handle> NnDevice::constant(const Tensor* t) {
    std::lock_guard lock(m_constants);
    for (const auto& [key, h] : m_constantCache)
        if (key == t) return h;
    auto h = upload(t->data(), size_t(t->size()));
    if (!h) return h.status();
    m_constantCache.emplace_back(t, *h);
    return *h;
}

bool matmulLayout(const Shape& as, const Shape& bs, MatmulLayout& l) {
    if (as.size() < 2 || bs.size() < 2) return false;
    const int64_t M = as[as.size() - 2], K = as.back(), K2 = bs[bs.size() - 2], N = bs.back();
    if (K != K2 || K < 1 || M < 1 || N < 1) return false;
    const Shape ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    l.k = int(K), l.n = int(N);
    if (numel(bb) == 1) {  // one matrix b: every row of a against it (cpu::matmul's single product)
        l.batch = 1, l.m = int(numel(as) / K), l.strideA = 0, l.strideB = 0;
        l.out = as;
        l.out.back() = N;
        if (bs.size() > as.size()) l.out.insert(l.out.begin(), bs.size() - as.size(), 1);
        return true;
    }
    Shape batch;
    if (!cpu::broadcastShapeOf(ba, bb, batch)) return false;
    auto strip = [](Shape s) {
        while (!s.empty() && s.front() == 1) s.erase(s.begin());
        return s;
    };
    const bool aAll = strip(ba) == strip(batch), bAll = strip(bb) == strip(batch);
    if (!(aAll || numel(ba) == 1) || !bAll) return false;
    l.batch = int(numel(batch)), l.m = int(M);
    l.strideA = aAll ? M * K : 0, l.strideB = K * N;
    l.out = batch;
    l.out.push_back(M), l.out.push_back(N);
    return true;
}

namespace {

// Host memory standing in for a device, computed on with the CPU runtime's own kernels: what
// the CPU computes, bit for bit.
class MirrorNnDevice final : public NnDevice {
public:
    struct Buf final : Buffer {
        std::vector<float> d;
    };
    const char* name() const override { return "mirror"; }
    static std::vector<float>& of(const Handle& h) { return static_cast<Buf&>(*h).d; }
    // The first numel(shape) floats of a buffer as a host tensor, for the CPU kernel ...
    static Tensor tensorOf(const Handle& h, Shape shape) {
        Tensor t;
        t.f.assign(of(h).begin(), of(h).begin() + long(numel(shape)));
        t.shape = std::move(shape);
        return t;
    }
    // ... and the kernel's result into the output buffer, which must be its size.
    static Status put(const Tensor& t, const Handle& y, const char* what) {
        if (of(y).size() != size_t(t.size())) return Status(ErrorCode::Internal, std::string("mirror device: ") + what + " output size");
        std::copy_n(t.data(), t.size(), of(y).data());
        return Status::ok();
    }

    Result<Handle> upload(const float* data, size_t n) override {
        auto b = std::make_shared<Buf>();
        b->d.assign(data, data + n);
        return Handle(b);
    }
    Status download(const Handle& h, float* out, size_t n) override {
        if (of(h).size() < n) return Status(ErrorCode::Internal, "mirror device: download beyond a buffer");
        std::copy_n(of(h).data(), n, out);
        return Status::ok();
    }
    Result<Handle> alloc(size_t n) override {
        auto b = std::make_shared<Buf>();
        b->d.assign(n, 0.f);
        return Handle(b);
    }
    Status copy(const Handle& from, const Handle& to, size_t n) override {
        std::copy_n(of(from).data(), n, of(to).data());
        return Status::ok();
    }
    Status conv2d(const Handle& x, const Handle& w, const Handle& bias, const ConvShape& s, const Handle& y,
                  const std::vector<Micro>& epilogue) override {
        const Tensor xt = tensorOf(x, {s.n, s.c, s.h, s.w}), wt = tensorOf(w, {s.m, s.group == 1 ? s.c : 1, s.kh, s.kw});
        return put(conv2dWithChain(xt, wt, bias ? of(bias).data() : nullptr, s, epilogue), y, "convolution");
    }
    Status convTranspose2d(const Handle& x, const Handle& w, const Handle& bias, const ConvShape& s, int oh, int ow,
                           const Handle& y) override {
        const Tensor xt = tensorOf(x, {s.n, s.c, s.h, s.w}), wt = tensorOf(w, {s.c, s.m, s.kh, s.kw});
        const Tensor out = cpu::convTranspose2d(xt, wt, bias ? of(bias).data() : nullptr, s);
        if (out.size() != int64_t(s.n) * s.m * oh * ow) return Status(ErrorCode::Internal, "mirror device: transposed convolution size");
        return put(out, y, "transposed convolution");
    }
    Status pool2d(const Handle& x, const Handle& y, int nc, int h, int w, int kh, int kw, int sh, int sw, const int pads[4], int oh,
                  int ow, bool max, bool countIncludePad) override {
        const Tensor out = cpu::pool2d(tensorOf(x, {1, nc, h, w}), max ? cpu::PoolKind::Max : cpu::PoolKind::Average, kh, kw, sh,
                                       sw, pads, countIncludePad);
        if (out.size() != int64_t(nc) * oh * ow) return Status(ErrorCode::Internal, "mirror device: pool size");
        return put(out, y, "pool");
    }
    bool canChain(const std::vector<Micro>&) const override { return true; }
    Status chain(const Handle& x, size_t n, const std::vector<Micro>& micro) override {
        runChain(micro, of(x).data(), int64_t(n));
        return Status::ok();
    }
    Status binary(const Handle& a, const Handle& b, const Handle& y, size_t outer, size_t inner, int channels, int op) override {
        const float *pa = of(a).data(), *pb = of(b).data();
        float* py = of(y).data();
        for (size_t o = 0; o < outer; ++o)
            for (size_t i = 0; i < inner; ++i) {
                const size_t at = o * inner + i;
                const float x = pa[at], c = channels == 0 ? pb[at] : channels < 0 ? pb[i] : pb[o % size_t(channels)];
                // As cpu::binary computes each (Pow: x · x for an exponent of 2).
                py[at] = op == 0 ? x + c : op == 1 ? x - c : op == 2 ? x * c : op == 3 ? x / c : c == 2.f ? x * x : std::pow(x, c);
            }
        return Status::ok();
    }
    Status rowMean(const Handle& x, const Handle& y, size_t rows, size_t n) override {
        // (cpu::globalAveragePool computes the same mean)
        return put(cpu::reduceMean(tensorOf(x, {1, int64_t(rows), int64_t(n)}), 2, false), y, "mean");
    }
    Status softmaxRows(const Handle& x, size_t rows, size_t n) override {
        Tensor t = tensorOf(x, {int64_t(rows), int64_t(n)});
        cpu::softmaxInPlace(t, 1, false);
        return put(t, x, "softmax");
    }
    Status resizeNearest(const Handle& x, const Handle& y, int nc, int h, int w, int oh, int ow) override {
        return put(cpu::resizeNearest(tensorOf(x, {1, nc, h, w}), {1, nc, oh, ow}), y, "resize");
    }
    Status gather(const Handle& x, const Handle& y, const Shape& shape, const std::vector<int64_t>& strides,
                  int64_t offset) override {
        const int64_t total = numel(shape);
        const float* in = of(x).data();
        float* out = of(y).data();
        for (int64_t o = 0; o < total; ++o) {
            int64_t rem = o, at = offset;
            for (int d = int(shape.size()) - 1; d >= 0; --d) {
                at += (rem % shape[size_t(d)]) * strides[size_t(d)];
                rem /= shape[size_t(d)];
            }
            out[o] = in[at];
        }
        return Status::ok();
    }
    Status copyRows(const Handle& from, const Handle& to, size_t rows, size_t width, size_t srcPitch, size_t dstPitch,
                    size_t dstOffset) override {
        for (size_t r = 0; r < rows; ++r) std::copy_n(of(from).data() + r * srcPitch, width, of(to).data() + dstOffset + r * dstPitch);
        return Status::ok();
    }
    Status matmul(const Handle& a, const Shape& as, const Handle& b, const Shape& bs, const Handle& y) override {
        std::string error;
        const Tensor r = cpu::matmul(tensorOf(a, as), tensorOf(b, bs), &error);
        if (!error.empty()) return Status(ErrorCode::Internal, "mirror device: " + error);
        return put(r, y, "matmul");
    }
};

}  // namespace

std::unique_ptr<NnDevice> makeMirrorNnDevice() { return std::make_unique<MirrorNnDevice>(); }

}  // namespace quire::nn
