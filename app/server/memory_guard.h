// What quire-server's memory guard watches: the GPU's memory with --device cuda where there is a
// GPU, else this process's resident memory against the machine's (or its container's limit).
#pragma once

#include <cstdint>
#include <string>

namespace quire::server {

struct GuardedMemory {
    int64_t usedBytes = 0, totalBytes = 0;
    bool gpu = false;
    // Memory in use above which new work is refused: `share` of the whole (0 when unknown).
    int64_t guardBytes(double share) const { return int64_t(share * double(totalBytes)); }
    bool over(double share) const { return totalBytes > 0 && usedBytes > guardBytes(share); }
};
GuardedMemory guardedMemory(const std::string& device);

}  // namespace quire::server
