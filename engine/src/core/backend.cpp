// Which compute backends this build and machine offer (the CPU always; CUDA when built and a GPU
// is present).
#include "quire/core/backend.h"

#ifdef QUIRE_HAVE_CUDA
#include "quire_cuda/device.h"
#endif

namespace quire {

bool cudaBackendBuilt() {
#ifdef QUIRE_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

std::vector<GpuDevice> gpuDevices(std::string* why) {
    std::vector<GpuDevice> out;
#ifdef QUIRE_HAVE_CUDA
    for (const auto& d : cuda::listDevices(why))
        out.push_back({d.index, d.name, d.totalBytes, d.freeBytes, d.computeMajor, d.computeMinor});
#else
    if (why) *why = "this build has no CUDA backend (configure with -DQUIRE_CUDA=ON)";
#endif
    return out;
}

}  // namespace quire
