// NnDevice's shared part and the mirror device (nn/device.h).
#include "nn/device.h"

#include <algorithm>
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
    Status conv2d(const Handle& x, const Handle& w, const Handle& bias, const DeviceConv& s, const Handle& y) override {
        Tensor xt, wt;
        xt.shape = {s.n, s.c, s.h, s.w};
        xt.f.assign(of(x).begin(), of(x).end());
        wt.shape = {s.m, s.group == 1 ? s.c : 1, s.kh, s.kw};
        wt.f.assign(of(w).begin(), of(w).end());
        cpu::Conv2dParams p;
        p.kh = s.kh, p.kw = s.kw, p.strideH = s.strideH, p.strideW = s.strideW, p.dilH = s.dilH, p.dilW = s.dilW;
        p.padT = s.padT, p.padL = s.padL, p.padB = s.padB, p.padR = s.padR, p.group = s.group;
        const Tensor out = cpu::conv2d(xt, wt, bias ? of(bias).data() : nullptr, p);
        if (of(y).size() != size_t(out.size())) return Status(ErrorCode::Internal, "mirror device: convolution output size");
        std::copy_n(out.data(), out.size(), of(y).data());
        return Status::ok();
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
                const float x = pa[at], c = channels == 0 ? pb[at] : pb[o % size_t(channels)];
                py[at] = op == 0 ? x + c : op == 1 ? x - c : op == 2 ? x * c : x / c;
            }
        return Status::ok();
    }
};

}  // namespace

std::unique_ptr<NnDevice> makeMirrorNnDevice() { return std::make_unique<MirrorNnDevice>(); }

}  // namespace quire::nn
