// Compute backends: the CPU path always exists; the CUDA backend when built and a GPU is present.
#pragma once

#include <string>
#include <vector>

namespace quire {

struct GpuDevice {
    int index = 0;
    std::string name;
    size_t totalBytes = 0, freeBytes = 0;
    int computeMajor = 0, computeMinor = 0;
};

bool cudaBackendBuilt();
// Empty when the backend is not built or no GPU is usable; `why` says which.
std::vector<GpuDevice> gpuDevices(std::string* why = nullptr);

}  // namespace quire
