// The CUDA NnDevice: the front-end's heavy nodes on a GPU through cuda/'s nn ops (im2col +
// cuBLAS or depthwise convolutions, fused chains, elementwise and per-channel arithmetic), each
// of which cuda/tests/nn_ops_check compares with the CPU kernels on a GPU.
#include "nn/device.h"

#ifdef QUIRE_HAVE_CUDA
#include "quire_cuda/device.h"
#include "quire_cuda/nn_ops.h"
#include "quire_cuda/ops.h"
#endif

namespace quire::nn {

#ifdef QUIRE_HAVE_CUDA
namespace {

Status fromCuda(const std::string& e) { return e.empty() ? Status::ok() : Status(ErrorCode::Engine, "CUDA front-end: " + e); }

// A chain as the kernel's flat program: a SelfGate step followed by its gate's steps (no nesting).
bool flatten(const std::vector<Micro>& micro, std::vector<cuda::nn::ChainStep>& out) {
    for (const Micro& m : micro) {
        cuda::nn::ChainStep s;
        s.kind = int(m.kind), s.a = m.a, s.b = m.b;
        if (m.kind == Micro::SelfGate) {
            s.gateSteps = int(m.gate.size());
            out.push_back(s);
            for (const Micro& g : m.gate) {
                if (g.kind == Micro::SelfGate) return false;
                out.push_back({int(g.kind), g.a, g.b, 0});
            }
        } else {
            out.push_back(s);
        }
    }
    return int(out.size()) <= cuda::nn::kMaxChainSteps;
}

class CudaNnDevice final : public NnDevice {
public:
    struct Buf final : Buffer {
        cuda::DeviceBuffer b;
    };
    const char* name() const override { return "cuda"; }
    static float* of(const Handle& h) { return static_cast<Buf&>(*h).b.as<float>(); }

    Result<Handle> alloc(size_t n) override {
        auto b = std::make_shared<Buf>();
        b->b = cuda::DeviceBuffer(n * sizeof(float));
        if (!b->b.ok()) return Status(ErrorCode::Engine, "CUDA front-end: out of GPU memory (" + std::to_string(n >> 18) + " MiB more)");
        return Handle(b);
    }
    Result<Handle> upload(const float* data, size_t n) override {
        auto h = alloc(n);
        if (!h) return h;
        if (Status s = fromCuda(static_cast<Buf&>(**h).b.upload(data, n * sizeof(float))); !s) return s;
        return h;
    }
    Status download(const Handle& h, float* out, size_t n) override {
        return fromCuda(static_cast<Buf&>(*h).b.download(out, n * sizeof(float)));
    }
    Status copy(const Handle& from, const Handle& to, size_t n) override {
        return fromCuda(cuda::copyDevice(of(to), of(from), n * sizeof(float)));
    }
    Status reserveWorkspace(size_t need) {
        if (need > m_workspace.bytes()) {
            m_workspace = cuda::DeviceBuffer(need);
            if (!m_workspace.ok()) return Status(ErrorCode::Engine, "CUDA front-end: out of GPU memory for a convolution");
        }
        return Status::ok();
    }
    Status conv2d(const Handle& x, const Handle& w, const Handle& bias, const ConvShape& s, const Handle& y,
                  const std::vector<Micro>& epilogue) override {
        if (Status st = reserveWorkspace(cuda::nn::conv2dWorkspaceBytes(s)); !st) return st;
        if (Status st = fromCuda(cuda::nn::conv2d(of(x), of(w), bias ? of(bias) : nullptr, s, m_workspace.get(), of(y))); !st)
            return st;
        if (epilogue.empty()) return Status::ok();
        return chain(y, size_t(s.n) * size_t(s.m) * size_t(s.outH()) * size_t(s.outW()), epilogue);
    }
    Status convTranspose2d(const Handle& x, const Handle& w, const Handle& bias, const ConvShape& s, int oh, int ow,
                           const Handle& y) override {
        if (Status st = reserveWorkspace(cuda::nn::convTranspose2dWorkspaceBytes(s)); !st) return st;
        return fromCuda(cuda::nn::convTranspose2d(of(x), of(w), bias ? of(bias) : nullptr, s, oh, ow, m_workspace.get(), of(y)));
    }
    Status pool2d(const Handle& x, const Handle& y, int nc, int h, int w, int kh, int kw, int sh, int sw, const int pads[4], int oh,
                  int ow, bool max, bool countIncludePad) override {
        return fromCuda(cuda::nn::pool2d(of(x), of(y), nc, h, w, kh, kw, sh, sw, pads[0], pads[1], oh, ow, max, countIncludePad));
    }
    bool canChain(const std::vector<Micro>& micro) const override {
        std::vector<cuda::nn::ChainStep> steps;
        return flatten(micro, steps);
    }
    Status chain(const Handle& x, size_t n, const std::vector<Micro>& micro) override {
        std::vector<cuda::nn::ChainStep> steps;
        if (!flatten(micro, steps)) return Status(ErrorCode::Internal, "CUDA front-end: a chain beyond the device");
        return fromCuda(cuda::nn::chain(of(x), n, steps.data(), int(steps.size())));
    }
    Status binary(const Handle& a, const Handle& b, const Handle& y, size_t outer, size_t inner, int channels, int op) override {
        if (channels == 0) return fromCuda(cuda::nn::elementwise(of(a), of(b), of(y), outer * inner, op));
        if (Status s = copy(a, y, outer * inner); !s) return s;
        return fromCuda(cuda::nn::channelBinary(of(y), of(b), outer, inner, channels, op));
    }

    Status rowMean(const Handle& x, const Handle& y, size_t rows, size_t n) override {
        return fromCuda(cuda::nn::rowMean(of(x), of(y), int(rows), int(n)));
    }
    Status softmaxRows(const Handle& x, size_t rows, size_t n) override {
        return fromCuda(cuda::nn::softmaxRows(of(x), int(rows), int(n)));
    }
    Status resizeNearest(const Handle& x, const Handle& y, int nc, int h, int w, int oh, int ow) override {
        return fromCuda(cuda::nn::resizeNearest(of(x), of(y), nc, h, w, oh, ow));
    }
    Status gather(const Handle& x, const Handle& y, const Shape& shape, const std::vector<int64_t>& strides,
                  int64_t offset) override {
        if (shape.size() > size_t(cuda::nn::kMaxGatherRank) || strides.size() != shape.size())
            return Status(ErrorCode::Internal, "CUDA front-end: a gather beyond the device");
        const std::vector<long long> s(shape.begin(), shape.end()), st(strides.begin(), strides.end());
        return fromCuda(cuda::nn::gather(of(x), of(y), int(s.size()), s.data(), st.data(), offset));
    }
    Status copyRows(const Handle& from, const Handle& to, size_t rows, size_t width, size_t srcPitch, size_t dstPitch,
                    size_t dstOffset) override {
        return fromCuda(cuda::nn::copyRows(of(from), of(to), rows, width, srcPitch, dstPitch, dstOffset));
    }
    Status matmul(const Handle& a, const Shape& as, const Handle& b, const Shape& bs, const Handle& y) override {
        MatmulLayout l;
        if (!matmulLayout(as, bs, l)) return Status(ErrorCode::Internal, "CUDA front-end: a MatMul beyond the device");
        return fromCuda(cuda::nn::matmulBatched(of(a), of(b), of(y), l.batch, l.m, l.n, l.k, l.strideA, l.strideB));
    }

private:
    cuda::DeviceBuffer m_workspace;
};

}  // namespace

Result<std::unique_ptr<NnDevice>> makeCudaNnDevice() {
    std::string why;
    if (cuda::listDevices(&why).empty()) return Status(ErrorCode::Engine, "CUDA front-end: " + (why.empty() ? std::string("no CUDA device") : why));
    return std::unique_ptr<NnDevice>(std::make_unique<CudaNnDevice>());
}
#else
Result<std::unique_ptr<NnDevice>> makeCudaNnDevice() {
    return Status(ErrorCode::InvalidArgument, "this build has no CUDA backend (configure with -DQUIRE_CUDA=ON where nvcc exists)");
}
#endif

}  // namespace quire::nn
