// AttemptLog: a file beside the project ("<project>.inflight") to which a run appends the id of
// each page before any work on it. A write survives the process crashing (it is in the kernel's
// page cache), so at the start of the next run the pages listed and still queued are those the
// last run had begun and not committed; ProjectStore::countCrashes counts a crash on them when
// that run crashed (CrashMarker). A file, not the database: the loader marks without waiting for
// the committer's write lock.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "quire/core/status.h"

namespace quire {

class AttemptLog {
public:
    // Starts an empty log for this run (what a previous run left has been read before). Its first
    // line records the out-of-memory killer's count at the start ("# oom-kills N SOURCE") where
    // the system tells it (oomKillsSoFar), so the next run can tell such a kill from another.
    static Result<AttemptLog> start(const std::filesystem::path& file);
    // The page ids a run listed (empty when there is no file).
    static std::vector<int64_t> read(const std::filesystem::path& file);
    // Whether the kernel's out-of-memory killer has ended a process (in this process's cgroup, or
    // on the machine) since the run that left `file` started: the count its first line recorded
    // against the same source's count now. False when either is unknown.
    static bool oomKillsSince(const std::filesystem::path& file);

    AttemptLog(AttemptLog&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
    AttemptLog& operator=(AttemptLog&&) = delete;
    AttemptLog(const AttemptLog&) = delete;
    ~AttemptLog();

    Status mark(int64_t pageId);

private:
    explicit AttemptLog(int fd) : m_fd(fd) {}
    int m_fd = -1;
};

}  // namespace quire
