// The memory quire-server's guard watches: the first GPU's, or this process's resident memory.
#include "memory_guard.h"

#include "quire/core/backend.h"
#include "quire/core/process_memory.h"

namespace quire::server {

GuardedMemory guardedMemory(const std::string& device) {
    if (device == "cuda") {
        const auto gpus = gpuDevices();
        if (!gpus.empty() && gpus.front().totalBytes > 0)
            return {int64_t(gpus.front().totalBytes - gpus.front().freeBytes), int64_t(gpus.front().totalBytes), true};
    }
    return {residentBytes(), memoryLimitBytes(), false};
}

}  // namespace quire::server
