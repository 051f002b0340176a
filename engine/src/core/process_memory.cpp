// Resident memory and the machine's or container's memory limit, read from /proc and /sys.
#include "quire/core/process_memory.h"

#include <fstream>
#include <string>
#include <unistd.h>

namespace quire {

int64_t residentBytes() {
    std::ifstream in("/proc/self/statm");
    int64_t size = 0, resident = 0;
    if (!(in >> size >> resident)) return 0;
    return resident * sysconf(_SC_PAGESIZE);
}

int64_t memoryLimitBytes() {
    int64_t limit = int64_t(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    for (const char* file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
        std::ifstream in(file);
        std::string v;
        if (!(in >> v) || v == "max") continue;
        try {
            const int64_t c = std::stoll(v);
            if (c > 0 && (limit <= 0 || c < limit)) limit = c;
        } catch (...) {
        }
    }
    return limit > 0 ? limit : 0;
}

}  // namespace quire
