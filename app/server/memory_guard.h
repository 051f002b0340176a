// How much memory the server holds and may hold: resident memory of this process against the
// machine's (or its cgroup's limit, in a container), for the guard that refuses new work.
#pragma once

#include <cstdint>

namespace quire::server {

int64_t residentBytes();
// The smaller of physical memory and the cgroup v2/v1 limit; 0 when unknown.
int64_t memoryLimitBytes();

}  // namespace quire::server
