// How much memory the server holds and may hold: resident memory of this process against the
// machine's (or its cgroup's limit, in a container), for the guard that refuses new work.
#pragma once

#include <cstdint>
#include <string>

namespace quire::server {

int64_t residentBytes();
// The smaller of physical memory and the cgroup v2/v1 limit; 0 when unknown.
int64_t memoryLimitBytes();

// Memory in use and in all, of the memory the guard watches: the first GPU's with `device`
// "cuda" where there is one, else this process's resident memory against the machine's.
struct GuardedMemory {
    int64_t usedBytes = 0, totalBytes = 0;
    bool gpu = false;
};
GuardedMemory guardedMemory(const std::string& device);

}  // namespace quire::server
