// Plain C++ view of the CUDA devices; no CUDA headers leak to the engine.
#pragma once

#include <string>
#include <vector>

namespace quire::cuda {

struct DeviceInfo {
    int index = 0;
    std::string name;
    size_t totalBytes = 0, freeBytes = 0;
    int computeMajor = 0, computeMinor = 0;
};

// Empty when no device or no driver is present (never an error: the CPU path is the fallback).
std::vector<DeviceInfo> listDevices(std::string* whyNone = nullptr);

}  // namespace quire::cuda
