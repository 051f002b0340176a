// Thin RAII helpers over the sqlite3 C API: statements are always finalized, transactions always
// end (rolled back unless committed).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

#include "quire/core/status.h"

namespace quire::sql {

inline Status dbError(sqlite3* db, const std::string& what) {
    const int code = sqlite3_extended_errcode(db);
    std::string msg = what + ": " + sqlite3_errmsg(db);
    if ((code & 0xff) == SQLITE_FULL) msg += " (the disk is full; free some space and run again to resume)";
    if ((code & 0xff) == SQLITE_READONLY) msg += " (the project is read-only here)";
    return Status(ErrorCode::Database, msg);
}

class Stmt {
public:
    Stmt(sqlite3* db, const char* sqlText) : m_db(db) {
        if (sqlite3_prepare_v2(db, sqlText, -1, &m_stmt, nullptr) != SQLITE_OK)
            m_status = dbError(db, std::string("prepare '") + sqlText + "'");
    }
    ~Stmt() { sqlite3_finalize(m_stmt); }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    const Status& status() const { return m_status; }
    Stmt& bind(int i, int64_t v) { sqlite3_bind_int64(m_stmt, i, v); return *this; }
    Stmt& bind(int i, int v) { sqlite3_bind_int64(m_stmt, i, v); return *this; }
    Stmt& bind(int i, double v) { sqlite3_bind_double(m_stmt, i, v); return *this; }
    Stmt& bind(int i, const std::string& v) {
        sqlite3_bind_text(m_stmt, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt& bind(int i, const char* v) { return bind(i, std::string(v)); }
    Stmt& bindBlob(int i, const std::string& v) {
        sqlite3_bind_blob(m_stmt, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt& bind(int i, const std::optional<std::string>& v) {
        if (v) return bind(i, *v);
        sqlite3_bind_null(m_stmt, i);
        return *this;
    }
    // SQLITE_ROW: true; SQLITE_DONE: false; errors land in status().
    bool step() {
        if (!m_status) return false;
        const int rc = sqlite3_step(m_stmt);
        if (rc == SQLITE_ROW) return true;
        if (rc != SQLITE_DONE) m_status = dbError(m_db, "query");
        return false;
    }
    Status run() {
        step();
        return m_status;
    }
    void reset() { sqlite3_reset(m_stmt); sqlite3_clear_bindings(m_stmt); }
    int64_t i64(int c) const { return sqlite3_column_int64(m_stmt, c); }
    int i32(int c) const { return sqlite3_column_int(m_stmt, c); }
    double f64(int c) const { return sqlite3_column_double(m_stmt, c); }
    bool isNull(int c) const { return sqlite3_column_type(m_stmt, c) == SQLITE_NULL; }
    std::string blob(int c) const {
        const auto* p = static_cast<const char*>(sqlite3_column_blob(m_stmt, c));
        return p ? std::string(p, size_t(sqlite3_column_bytes(m_stmt, c))) : std::string();
    }
    std::string text(int c) const {
        const auto* p = sqlite3_column_text(m_stmt, c);
        return p ? std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(m_stmt, c))) : std::string();
    }

private:
    sqlite3* m_db;
    sqlite3_stmt* m_stmt = nullptr;
    Status m_status;
};

class Transaction {
public:
    explicit Transaction(sqlite3* db) : m_db(db) {
        if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
            m_status = dbError(db, "begin transaction");
    }
    ~Transaction() {
        if (m_status && !m_done) sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    const Status& status() const { return m_status; }
    Status commit() {
        if (!m_status) return m_status;
        if (sqlite3_exec(m_db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
            Status s = dbError(m_db, "commit");
            sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
            m_done = true;
            return s;
        }
        m_done = true;
        return Status::ok();
    }

private:
    sqlite3* m_db;
    Status m_status;
    bool m_done = false;
};

}  // namespace quire::sql
