// OomKills: "oom_kill N" from the cgroup's memory.events or the machine's /proc/vmstat.
#include "core/oom_kills.h"

#include <fstream>
#include <sstream>

namespace quire {

std::optional<int64_t> oomKillsIn(const std::string& source) {
    std::ifstream in(source);
    for (std::string key; in >> key;) {
        int64_t value = 0;
        if (!(in >> value)) return std::nullopt;
        if (key == "oom_kill") return value;
    }
    return std::nullopt;
}

std::optional<OomKills> oomKillsSoFar() {
    // cgroup v2: the line "0::/path" of /proc/self/cgroup names this process's group.
    std::ifstream cg("/proc/self/cgroup");
    for (std::string line; std::getline(cg, line);)
        if (line.rfind("0::", 0) == 0) {
            const std::string events = "/sys/fs/cgroup" + line.substr(3) + "/memory.events";
            if (auto n = oomKillsIn(events)) return OomKills{events, *n};
        }
    if (auto n = oomKillsIn("/proc/vmstat")) return OomKills{"/proc/vmstat", *n};
    return std::nullopt;
}

}  // namespace quire
