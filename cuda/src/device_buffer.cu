// Device memory owned by the host (DeviceBuffer), copies, and synchronisation.
#include <cuda_runtime.h>

#include "cuda_status.cuh"
#include "quire_cuda/ops.h"

namespace quire::cuda {

using detail::check;
using detail::S;

DeviceBuffer::DeviceBuffer(size_t bytes) : m_bytes(bytes) {
    if (bytes && cudaMalloc(&m_ptr, bytes) != cudaSuccess) m_ptr = nullptr;
}
DeviceBuffer::~DeviceBuffer() {
    if (m_ptr) cudaFree(m_ptr);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : m_ptr(o.m_ptr), m_bytes(o.m_bytes) { o.m_ptr = nullptr, o.m_bytes = 0; }
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
        if (m_ptr) cudaFree(m_ptr);
        m_ptr = o.m_ptr, m_bytes = o.m_bytes;
        o.m_ptr = nullptr, o.m_bytes = 0;
    }
    return *this;
}
std::string DeviceBuffer::upload(const void* host, size_t bytes) {
    return check(cudaMemcpy(m_ptr, host, bytes, cudaMemcpyHostToDevice), "upload");
}
std::string DeviceBuffer::download(void* host, size_t bytes) const {
    return check(cudaMemcpy(host, m_ptr, bytes, cudaMemcpyDeviceToHost), "download");
}

std::string synchronize() { return check(cudaDeviceSynchronize(), "synchronize"); }

std::string copyDevice(void* dst, const void* src, size_t bytes, void* stream) {
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S(stream)), "device copy");
}

}  // namespace quire::cuda
