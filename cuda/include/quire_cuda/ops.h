// The decoder's device memory and row-wise operations (device_buffer.cu, layer_ops.cu), as plain
// functions over device pointers (no CUDA types in this header); the whole step is DecoderStep
// (decoder_step.h). Every tensor parameter carries its shape; `stream` is a cudaStream_t (nullptr: default).
// Each returns an empty string on success, else what failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace quire::cuda {

// Device memory, owned.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    explicit DeviceBuffer(size_t bytes);
    ~DeviceBuffer();
    DeviceBuffer(DeviceBuffer&& o) noexcept;
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    void* get() const { return m_ptr; }
    template <typename T>
    T* as() const { return static_cast<T*>(m_ptr); }
    size_t bytes() const { return m_bytes; }
    bool ok() const { return m_ptr != nullptr || m_bytes == 0; }
    std::string upload(const void* host, size_t bytes);
    std::string download(void* host, size_t bytes) const;

private:
    void* m_ptr = nullptr;
    size_t m_bytes = 0;
};

std::string synchronize();
// dst[bytes] = src[bytes], both device memory, in stream order.
std::string copyDevice(void* dst, const void* src, size_t bytes, void* stream = nullptr);

// out[rows, n] = x[rows, n] / rms(x) * w[n]
std::string rmsNorm(const float* x, const float* w, float* out, int rows, int n, float eps, void* stream = nullptr);

// out[n] = silu(gate[n]) * up[n]
std::string swiglu(const float* gate, const float* up, float* out, int n, void* stream = nullptr);

// out[count, hidden] = table[tokens[count], hidden]
std::string embedding(const int32_t* tokens, const float* table, float* out, int count, int hidden,
                      void* stream = nullptr);

// One span of attended tokens: `count` tokens of pool block `block` starting at `first`, with the
// query rotated to `queryPos` for it (the position frame).
struct AttentionSpan {
    int32_t block, first, count;
    int64_t queryPos;
    // Attention tracking (DecoderStep): where the span's first token sits among the tracked page's
    // visual tokens, -1 for a span not tracked.
    int32_t track = -1;
};

}  // namespace quire::cuda
