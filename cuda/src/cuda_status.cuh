// CUDA errors as the strings the ops return (empty: success), shared by the .cu files.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace quire::cuda::detail {

inline std::string check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return {};
    return std::string(what) + ": " + cudaGetErrorString(e);
}
// The launch error of the last kernel, if any.
inline std::string launched(const char* what) { return check(cudaGetLastError(), what); }
inline cudaStream_t S(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace quire::cuda::detail
