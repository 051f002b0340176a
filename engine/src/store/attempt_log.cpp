// AttemptLog: one UPDATE per page on a connection of its own, committed (and synced) before the
// page is decoded.
#include "quire/store/attempt_log.h"

#include <sqlite3.h>

#include "sqlite_util.h"

namespace quire {

Result<std::unique_ptr<AttemptLog>> AttemptLog::open(const std::filesystem::path& project) {
    auto log = std::unique_ptr<AttemptLog>(new AttemptLog);
    if (sqlite3_open_v2(project.c_str(), &log->m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK)
        return Status(ErrorCode::Database, project.string() + ": cannot open a second connection: " +
                                               (log->m_db ? sqlite3_errmsg(log->m_db) : "out of memory"));
    sqlite3_busy_timeout(log->m_db, 10000);
    sqlite3_exec(log->m_db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
    return log;
}

AttemptLog::~AttemptLog() {
    if (m_db) sqlite3_close(m_db);
}

Status AttemptLog::mark(int64_t pageId) {
    sql::Stmt q(m_db, "UPDATE pages SET attempts=attempts+1 WHERE (document_id, source_index) = "
                      "(SELECT document_id, source_index FROM pages WHERE id=?) AND status='queued'");
    q.bind(1, pageId);
    return q.run();
}

}  // namespace quire
