// The GPUs this process can use (name, memory), for `quire-cli devices` and the settings.
#include <cuda_runtime.h>

#include "quire_cuda/device.h"

namespace quire::cuda {

std::vector<DeviceInfo> listDevices(std::string* whyNone) {
    std::vector<DeviceInfo> out;
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        if (whyNone) *whyNone = cudaGetErrorString(err);
        return out;
    }
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
        DeviceInfo d;
        d.index = i;
        d.name = prop.name;
        d.computeMajor = prop.major;
        d.computeMinor = prop.minor;
        if (cudaSetDevice(i) == cudaSuccess) cudaMemGetInfo(&d.freeBytes, &d.totalBytes);
        out.push_back(d);
    }
    if (out.empty() && whyNone) *whyNone = "no CUDA device";
    return out;
}

}  // namespace quire::cuda
