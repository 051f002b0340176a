// How many processes the kernel's out-of-memory killer has ended: in this process's cgroup
// (cgroup v2 memory.events, "oom_kill"), else on the whole machine (/proc/vmstat). A run that
// vanished without a crash marker while the count grew was, most likely, one of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace quire {

struct OomKills {
    std::string source;  // the file the count was read from
    int64_t count = 0;
};

// The count now; nullopt where neither file can be read.
std::optional<OomKills> oomKillsSoFar();
// The count in `source` now (a count recorded earlier is compared with the same file's).
std::optional<int64_t> oomKillsIn(const std::string& source);

}  // namespace quire
