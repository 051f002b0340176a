// This process's memory and the most it may have: what the GUI's run chart shows and what
// quire-server's memory guard compares.
#pragma once

#include <cstdint>

namespace quire {

// Resident memory of this process (from /proc/self/statm); 0 when unknown.
int64_t residentBytes();
// The smaller of physical memory and the cgroup v2/v1 limit (in a container); 0 when unknown.
int64_t memoryLimitBytes();

}  // namespace quire
