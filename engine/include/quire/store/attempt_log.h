// AttemptLog: marks in the project, durably and before any work on it, that a run has begun
// reading a page. The mark is cleared when the page is committed, so a page whose mark survives
// was being read when the process ended abnormally. Its own SQLite connection: the loader thread
// marks while the committer thread writes pages.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "quire/core/status.h"

struct sqlite3;

namespace quire {

class AttemptLog {
public:
    static Result<std::unique_ptr<AttemptLog>> open(const std::filesystem::path& project);
    ~AttemptLog();
    AttemptLog(const AttemptLog&) = delete;
    AttemptLog& operator=(const AttemptLog&) = delete;

    // Adds one to the attempts of the page and of the other parts of its source page.
    Status mark(int64_t pageId);

private:
    AttemptLog() = default;
    sqlite3* m_db = nullptr;
};

}  // namespace quire
