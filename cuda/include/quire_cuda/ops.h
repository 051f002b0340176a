// The decoder's device operations, as plain functions over device pointers (no CUDA types in this
// header). Every tensor parameter carries its shape; `stream` is a cudaStream_t (nullptr: default).
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

// x[rows, heads, headDim] rotated in place at positions[rows] ("rotate half" pairs i, i + headDim/2).
std::string rope(float* x, const int64_t* positions, int rows, int heads, int headDim, double theta,
                 void* stream = nullptr);

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
    // visual tokens, -1 for a span not tracked. The op pagedDecodeAttention ignores it.
    int32_t track = -1;
};

// Paged decode attention, split over the KV: q[heads, headDim] pre-rotary, pool blocks laid out
// [block][K|V][layer][kvHead][16][headDim], spans[numSpans]; out[heads, headDim].
// `workspace` must hold attentionWorkspaceBytes(heads, headDim, splits) bytes.
size_t attentionWorkspaceBytes(int heads, int headDim, int splits);
std::string pagedDecodeAttention(const float* q, const float* pool, const AttentionSpan* spans, int numSpans,
                                 int layer, int numLayers, int heads, int kvHeads, int headDim, double theta,
                                 int splits, void* workspace, float* out, void* stream = nullptr);

// Greedy pick: index of the largest logits[vocab] whose banned[vocab] byte is 0 (-1 if all banned).
std::string argmaxUnbanned(const float* logits, const uint8_t* banned, int vocab, int32_t* result,
                           void* stream = nullptr);

// Quest scores: for each block b, Σ_heads Σ_c max(q·min, q·max) with q[heads, headDim] (already
// rotated), bounds kMin/kMax[numBlocks, kvHeads, headDim] of one layer; scores[numBlocks].
std::string questScores(const float* q, const float* kMin, const float* kMax, int numBlocks, int heads, int kvHeads,
                        int headDim, float* scores, void* stream = nullptr);

// Indices of the k largest scores[n] (k <= 64), in descending order of score.
std::string topK(const float* scores, int n, int k, int32_t* indices, void* stream = nullptr);

// C[m, n] = A[m, k] · B[n, k]^T with bf16 inputs and fp32 accumulation and output (cuBLAS).
// A and B are given in fp32 and converted on the device into the workspace buffers by the caller's
// choice of `bf16`: false runs the plain fp32 GEMM.
std::string gemmRowMajor(const float* A, const float* B, float* C, int m, int n, int k, bool bf16,
                         void* stream = nullptr);

}  // namespace quire::cuda
