// ProjectStore: the SQLite project (opening and creating it, documents, pages, results,
// corrections, runs), every page committed in one transaction. The reader's saved context is in
// decoder_state.cpp, the one-writer lock in project_lock.cpp.
#include "quire/store/project_store.h"

#include <fstream>
#include <set>
#include <fcntl.h>
#include <unistd.h>

#include "quire/store/project_backups.h"
#include "store/page_order.h"
#include "store/project_lock.h"
#include "store/project_schema.h"
#include "store/sqlite_util.h"

namespace fs = std::filesystem;

namespace quire {

using sql::Stmt;
using sql::Transaction;
using sql::kBookOrder;
using sql::renumberPages;

const char* pageStatusName(PageStatus s) {
    switch (s) {
        case PageStatus::Queued: return "queued";
        case PageStatus::Done: return "done";
        case PageStatus::Failed: return "failed";
    }
    return "queued";
}

namespace {

constexpr int kApplicationId = 0x51554952;  // "QUIR"
static_assert(sql::kMigrationCount == ProjectStore::kSchemaVersion, "a schema version is a migration");

PageStatus parseStatus(const std::string& s) {
    if (s == "done") return PageStatus::Done;
    if (s == "failed") return PageStatus::Failed;
    return PageStatus::Queued;
}

bool looksLikeSqlite(const fs::path& path, std::string* why) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        *why = "cannot read it";
        return false;
    }
    char head[16] = {};
    in.read(head, 16);
    if (in.gcount() == 0) return true;  // empty file: becomes a new project
    if (in.gcount() < 16 || std::string(head, 16) != std::string("SQLite format 3\0", 16)) {
        *why = "it is not a Quire project (not an SQLite database)";
        return false;
    }
    return true;
}

// Brings the schema from user_version `from` to the newest in one transaction: a process killed
// midway leaves the version it had (and a new file, version 0, no tables).
Status applyMigrations(sqlite3* db, int from, const std::string& context) {
    Transaction tx(db);
    if (!tx.status()) return tx.status();
    std::string script;
    for (int v = from; v < ProjectStore::kSchemaVersion; ++v) script += sql::kMigrations[size_t(v)];
    script += "PRAGMA user_version=" + std::to_string(ProjectStore::kSchemaVersion) +
              "; PRAGMA application_id=" + std::to_string(kApplicationId) + ";";
    if (sqlite3_exec(db, script.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) return sql::dbError(db, context);
    return tx.commit();
}

// fsync of a file or a folder (its entries: a rename into it), for what must survive a power cut.
void syncToDisk(const fs::path& path, int flags) {
    if (const int fd = ::open(path.c_str(), flags); fd >= 0) {
        (void)::fsync(fd);
        ::close(fd);
    }
}

// A new project appears whole or not at all: its schema is written to "<project>.creating" in one
// transaction, synced, and renamed into place, so a process killed while creating it leaves no
// half-made project behind (a leftover ".creating" file is replaced by the next attempt).
Status createProjectFile(const fs::path& path) {
    const fs::path tmp = fs::path(path.string() + ".creating");
    const fs::path tmpJournal = fs::path(tmp.string() + "-journal");
    std::error_code ec;
    fs::remove(tmp, ec);
    fs::remove(tmpJournal, ec);  // a stale journal would otherwise be "rolled back" into the new file
    sqlite3* db = nullptr;
    auto discard = [&](Status s) {
        sqlite3_close(db);
        fs::remove(tmp, ec);
        return s;
    };
    auto fail = [&](const std::string& what) { return discard(sql::dbError(db, path.string() + ": cannot create the project (" + what + ")")); };
    if (sqlite3_open_v2(tmp.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK)
        return fail("open");
    if (sqlite3_exec(db, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("synchronous");
    if (Status s = applyMigrations(db, 0, path.string() + ": cannot create the project (schema)"); !s) return discard(s);
    if (sqlite3_close(db) != SQLITE_OK) return fail("close");
    db = nullptr;
    syncToDisk(tmp, O_RDONLY);
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        return Status(ErrorCode::Io, path.string() + ": cannot create the project (" + ec.message() + ")");
    }
    syncToDisk(path.parent_path().empty() ? fs::path(".") : path.parent_path(), O_RDONLY | O_DIRECTORY);
    return Status::ok();
}

}  // namespace

Result<std::unique_ptr<ProjectStore>> ProjectStore::open(const fs::path& path, Mode mode) {
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    if (!exists && mode != Mode::OpenOrCreate)
        return Status(ErrorCode::NotFound, path.string() + ": no such project file");
    if (exists) {
        if (fs::is_directory(path, ec))
            return Status(ErrorCode::InvalidArgument, path.string() + ": is a folder, not a project file");
        std::string why;
        if (!looksLikeSqlite(path, &why)) return Status(ErrorCode::Corrupt, path.string() + ": " + why);
    }
    std::unique_ptr<ProjectStore> store(new ProjectStore());
    store->m_path = path;
    bool readOnly = mode == Mode::ReadOnly;
    // A project on a read-only medium opens read-only instead of failing.
    if (exists && !readOnly && access(path.c_str(), W_OK) != 0) readOnly = true;
    if (!exists && !readOnly) {
        const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
        if (!fs::is_directory(dir, ec))
            return Status(ErrorCode::NotFound, path.string() + ": folder " + dir.string() + " does not exist");
    }
    store->m_readOnly = readOnly;
    if (!readOnly) {
        if (Status s = lockProject(path); !s) return s;
        store->m_locked = true;
        if (!exists || fs::file_size(path, ec) == 0) {
            if (Status s = createProjectFile(path); !s) return s;
        }
    }
    int flags = readOnly ? SQLITE_OPEN_READONLY
                         : SQLITE_OPEN_READWRITE | (mode == Mode::OpenOrCreate ? SQLITE_OPEN_CREATE : 0);
    std::string target = path.string();
    // On a read-only medium (the folder cannot take the -shm/-wal files), open the file as
    // immutable: SQLite then reads it without locking or writing anything beside it.
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (readOnly && access(dir.c_str(), W_OK) != 0) {
        std::string uri = "file:";
        for (const char ch : fs::absolute(path).string()) {
            if (ch == '?' || ch == '#' || ch == '%') {
                char buf[4];
                std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(ch));
                uri += buf;
            } else {
                uri += ch;
            }
        }
        target = uri + "?immutable=1";
        flags |= SQLITE_OPEN_URI;
    }
    if (sqlite3_open_v2(target.c_str(), &store->m_db, flags | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
        Status s = sql::dbError(store->m_db, path.string() + ": cannot open project");
        return s;
    }
    sqlite3_busy_timeout(store->m_db, 5000);
    sqlite3_extended_result_codes(store->m_db, 1);
    // Validate before writing anything: a newer or foreign database must stay untouched.
    int userVersion = 0, appId = 0, tables = 0;
    {
        int code = SQLITE_OK;
        auto readVersion = [&]() -> Status {
            Stmt v(store->m_db, "PRAGMA user_version");
            if (v.step()) {
                userVersion = v.i32(0);
                return Status::ok();
            }
            code = sqlite3_extended_errcode(store->m_db);
            return v.status().isOk() ? Status(ErrorCode::Database, "no user_version") : v.status();
        };
        Status read = readVersion();
        if (!read && code == SQLITE_READONLY_ROLLBACK && readOnly && access(path.c_str(), W_OK) == 0) {
            // A hot journal left by a process killed mid-transaction: only a writer may roll it back.
            // A second, writable connection does so on its first read; then this one reads again.
            sqlite3* rw = nullptr;
            if (sqlite3_open_v2(path.c_str(), &rw, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
                sqlite3_busy_timeout(rw, 5000);
                sqlite3_exec(rw, "PRAGMA user_version", nullptr, nullptr, nullptr);
            }
            sqlite3_close(rw);
            read = readVersion();
            if (read) store->m_openNote = "rolled back an unfinished transaction left by a process that was killed";
        }
        if (!read) {
            if ((code & 0xff) == SQLITE_CORRUPT || (code & 0xff) == SQLITE_NOTADB) return damagedProject(path, read.message());
            return Status(ErrorCode::Unreadable, path.string() + ": cannot read the project (" + read.message() + ")");
        }
        Stmt a(store->m_db, "PRAGMA application_id");
        if (a.step()) appId = a.i32(0);
        Stmt t(store->m_db, "SELECT count(*) FROM sqlite_master");
        if (t.step()) tables = t.i32(0);
    }
    if (tables > 0 && appId != kApplicationId)
        return Status(ErrorCode::Corrupt, path.string() + ": it is an SQLite database, but not a Quire project");
    if (userVersion > kSchemaVersion)
        return Status(ErrorCode::NewerSchema,
                      path.string() + ": the project was written by a newer version of Quire (schema " +
                          std::to_string(userVersion) + "; this version reads up to " +
                          std::to_string(kSchemaVersion) + "); update Quire to open it");
    // From here a damaged file can fail any statement, depending on which of its pages are hit: it
    // is reported as damaged, with the newest sound backup, whichever statement found it.
    auto damaged = [&](const Status& s) {
        const int code = sqlite3_extended_errcode(store->m_db) & 0xff;
        return code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? damagedProject(path, s.message()) : s;
    };
    if (!readOnly) {
        if (Status s = store->exec("PRAGMA journal_mode=WAL"); !s) return damaged(s);
        if (Status s = store->exec("PRAGMA synchronous=FULL"); !s) return damaged(s);
    }
    if (Status s = store->exec("PRAGMA foreign_keys=ON"); !s) return damaged(s);
    if (userVersion < kSchemaVersion) {
        if (readOnly && userVersion == 0)
            return Status(ErrorCode::Corrupt, path.string() + ": the project was never initialised (was the disk full "
                                                              "when it was created?)");
        if (readOnly)
            return Status(ErrorCode::Unreadable, path.string() + ": the project needs an upgrade but is read-only");
        if (Status s = applyMigrations(store->m_db, userVersion, path.string()); !s) return damaged(s);
    }
    if (!readOnly) {
        // A damaged file is found before anything is written to it, and the newest sound backup is
        // offered (PRAGMA quick_check: the page structure, without the slower index comparison).
        Stmt q(store->m_db, "PRAGMA quick_check");
        const std::string verdict = q.step() ? q.text(0) : q.status().message();
        if (verdict != "ok") return damagedProject(path, verdict);
    }
    store->m_changesAtBackup = sqlite3_total_changes(store->m_db);
    store->m_lastBackup = std::chrono::steady_clock::now();
    return store;
}

Result<fs::path> ProjectStore::restore(const fs::path& path, const fs::path& backup) {
    if (Status s = lockProject(path); !s) return s;
    auto moved = restoreBackup(path, backup);
    unlockProject(path);
    return moved;
}

Status damagedProject(const fs::path& path, const std::string& detail) {
    const auto backup = newestSoundBackup(path);
    return Status(ErrorCode::Corrupt,
                  path.string() + ": the project file is damaged (" + detail.substr(0, 200) + "); " +
                      (backup ? "the newest sound backup was taken at " + backup->takenAt + " (" + backup->path.string() +
                                    "); restore it with: quire-cli restore --project " + path.string() +
                                    " (the damaged file is kept beside it; corrections made after the backup are in it)"
                              : std::string("there is no sound backup of it in ") + backupFolder(path).string()));
}

ProjectStore::~ProjectStore() {
    // A clean close keeps a backup of whatever changed since the last one.
    if (!m_readOnly && m_db && sqlite3_total_changes(m_db) != m_changesAtBackup) (void)writeBackup(m_db, m_path);
    sqlite3_close_v2(m_db);
    if (m_locked) unlockProject(m_path);
}

Status ProjectStore::exec(const char* sqlText) {
    char* err = nullptr;
    if (sqlite3_exec(m_db, sqlText, nullptr, nullptr, &err) != SQLITE_OK) {
        Status s = sql::dbError(m_db, m_path.string());
        sqlite3_free(err);
        return s;
    }
    return Status::ok();
}

Result<std::optional<DocumentRecord>> ProjectStore::findDocument(const std::string& absPath) {
    Stmt q(m_db, "SELECT id, path, kind, sha256, size_bytes, page_count, position FROM documents WHERE path=?");
    q.bind(1, absPath);
    if (!q.step()) {
        if (!q.status()) return q.status();
        return std::optional<DocumentRecord>();
    }
    return std::optional<DocumentRecord>(
        DocumentRecord{q.i64(0), q.text(1), q.text(2), q.text(3), q.i64(4), q.i32(5), q.i32(6)});
}

Result<std::vector<DocumentRecord>> ProjectStore::documents() {
    Stmt q(m_db, "SELECT id, path, kind, sha256, size_bytes, page_count, position FROM documents ORDER BY position");
    std::vector<DocumentRecord> out;
    while (q.step()) out.push_back({q.i64(0), q.text(1), q.text(2), q.text(3), q.i64(4), q.i32(5), q.i32(6)});
    if (!q.status()) return q.status();
    return out;
}

Result<int64_t> ProjectStore::addDocument(const DocumentRecord& doc,
                                          const std::vector<std::pair<std::string, int>>& pageFiles) {
    Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    Stmt pos(m_db, "SELECT coalesce(max(position), 0) + 1 FROM documents");
    pos.step();
    Stmt ins(m_db, "INSERT INTO documents(path, kind, sha256, size_bytes, page_count, position) VALUES(?,?,?,?,?,?)");
    ins.bind(1, doc.path).bind(2, doc.kind).bind(3, doc.sha256).bind(4, doc.sizeBytes)
        .bind(5, int(pageFiles.size())).bind(6, pos.i32(0));
    if (Status s = ins.run(); !s) return s;
    const int64_t id = sqlite3_last_insert_rowid(m_db);
    // The new pages follow the book's last page.
    Stmt last(m_db, "SELECT coalesce(max(book_order), 0) FROM pages");
    last.step();
    const double after = last.f64(0);
    Stmt page(m_db, "INSERT INTO pages(document_id, source_index, source_file, file_page, book_order) VALUES(?,?,?,?,?)");
    for (size_t i = 0; i < pageFiles.size(); ++i) {
        page.reset();
        page.bind(1, id).bind(2, int(i)).bind(3, pageFiles[i].first).bind(4, pageFiles[i].second).bind(5, after + double(i) + 1);
        if (Status s = page.run(); !s) return s;
    }
    if (Status s = tx.commit(); !s) return s;
    return id;
}

Status ProjectStore::requeueDocument(int64_t documentId, const std::string& sha256, int64_t sizeBytes,
                                     const std::vector<std::pair<std::string, int>>& pageFiles) {
    Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    Stmt upd(m_db, "UPDATE documents SET sha256=?, size_bytes=?, page_count=? WHERE id=?");
    upd.bind(1, sha256).bind(2, sizeBytes).bind(3, int(pageFiles.size())).bind(4, documentId);
    if (Status s = upd.run(); !s) return s;
    // Pages beyond the new end: dropped unless the user corrected them (their work is kept).
    Stmt gone(m_db,
              "DELETE FROM pages WHERE document_id=?1 AND source_index>=?2 AND "
              "NOT EXISTS(SELECT 1 FROM corrections c WHERE c.page_id=pages.id)");
    gone.bind(1, documentId).bind(2, int(pageFiles.size()));
    if (Status s = gone.run(); !s) return s;
    Stmt keep(m_db,
              "UPDATE pages SET status='failed', failure_kind='input', failure='the page is no longer in the "
              "source file; its corrections are kept' WHERE document_id=?1 AND source_index>=?2");
    keep.bind(1, documentId).bind(2, int(pageFiles.size()));
    if (Status s = keep.run(); !s) return s;
    Stmt q(m_db,
           "INSERT INTO pages(document_id, source_index, source_file, file_page) VALUES(?1,?2,?3,?4) "
           "ON CONFLICT(document_id, source_index, part) DO UPDATE SET status='queued', flagged=0, "
           "failure=NULL, failure_kind=NULL, source_file=?3, file_page=?4");
    for (size_t i = 0; i < pageFiles.size(); ++i) {
        q.reset();
        q.bind(1, documentId).bind(2, int(i)).bind(3, pageFiles[i].first).bind(4, pageFiles[i].second);
        if (Status s = q.run(); !s) return s;
    }
    // Halves of formerly split spreads are re-queued too; the worker re-splits them.
    Stmt parts(m_db, "UPDATE pages SET status='queued' WHERE document_id=? AND part>0");
    parts.bind(1, documentId);
    if (Status s = parts.run(); !s) return s;
    // Pages the file did not have before go after the document's last page, in their order.
    Stmt place(m_db, "UPDATE pages SET book_order = coalesce((SELECT max(p2.book_order) FROM pages p2 WHERE "
                     "p2.document_id=pages.document_id), (SELECT coalesce(max(book_order), 0) FROM pages)) + "
                     "(source_index + 1) * 1e-6 WHERE document_id=? AND book_order IS NULL");
    place.bind(1, documentId);
    if (Status s = place.run(); !s) return s;
    if (Status s = renumberPages(m_db); !s) return s;
    return tx.commit();
}

namespace {
constexpr const char* kPageColumns =
    "p.id, p.document_id, p.source_index, p.part, p.source_file, p.file_page, p.status, p.flagged, "
    "p.proofread, EXISTS(SELECT 1 FROM corrections c WHERE c.page_id=p.id AND NOT c.set_aside), coalesce(p.failure,''), "
    "coalesce(p.failure_kind,''), coalesce(p.width,0), coalesce(p.height,0), coalesce(p.dpi,0), "
    "coalesce(p.region_x,0), coalesce(p.region_y,0), coalesce(p.region_w,0), coalesce(p.region_h,0), "
    "coalesce(p.skew_degrees,0), coalesce(p.preprocess,''), coalesce(p.content_sha256,''), p.text_layer, "
    "coalesce(p.header,''), coalesce(p.footer,''), coalesce(p.page_number,''), "
    "coalesce((SELECT mean_confidence FROM results r WHERE r.page_id=p.id), 0), p.crashes, coalesce(p.flag_reason,''), "
    "p.rotation";

PageRecord readPage(const Stmt& q) {
    PageRecord p;
    p.id = q.i64(0);
    p.documentId = q.i64(1);
    p.sourceIndex = q.i32(2);
    p.part = q.i32(3);
    p.sourceFile = q.text(4);
    p.filePage = q.i32(5);
    p.status = parseStatus(q.text(6));
    p.flagged = q.i32(7) != 0;
    p.proofread = q.i32(8) != 0;
    p.corrected = q.i32(9) != 0;
    p.failure = q.text(10);
    p.failureKind = q.text(11);
    p.width = q.i32(12);
    p.height = q.i32(13);
    p.dpi = q.i32(14);
    p.region = {q.i32(15), q.i32(16), q.i32(17), q.i32(18)};
    p.skewDegrees = q.f64(19);
    p.preprocess = q.text(20);
    p.contentSha256 = q.text(21);
    if (!q.isNull(22)) p.textLayer = q.text(22);
    p.header = q.text(23);
    p.footer = q.text(24);
    p.pageNumber = q.text(25);
    p.meanConfidence = q.f64(26);
    p.crashes = q.i32(27);
    p.flagReason = q.text(28);
    p.rotation = q.i32(29);
    return p;
}
}  // namespace

Result<std::vector<PageRecord>> ProjectStore::pages() {
    const std::string sqlText = std::string("SELECT ") + kPageColumns +
                                " FROM pages p WHERE p.removed=0 ORDER BY " + kBookOrder;
    Stmt q(m_db, sqlText.c_str());
    std::vector<PageRecord> out;
    while (q.step()) {
        out.push_back(readPage(q));
        out.back().sequence = int(out.size());
    }
    if (!q.status()) return q.status();
    return out;
}

Result<PageRecord> ProjectStore::page(int64_t pageId) {
    const std::string sqlText = std::string("SELECT ") + kPageColumns + " FROM pages p WHERE p.id=?";
    Stmt q(m_db, sqlText.c_str());
    q.bind(1, pageId);
    if (!q.step()) {
        if (!q.status()) return q.status();
        return Status(ErrorCode::NotFound, "no page with id " + std::to_string(pageId));
    }
    PageRecord rec = readPage(q);
    // Its 1-based place in the book: the pages in the book up to it (0: removed from the book).
    Stmt seq(m_db,
             "SELECT CASE WHEN me.removed THEN 0 ELSE (SELECT count(*) FROM pages p WHERE p.removed=0 AND "
             "(p.book_order, p.part, p.id) <= (me.book_order, me.part, me.id)) END FROM pages me WHERE me.id=?");
    seq.bind(1, pageId);
    if (seq.step()) rec.sequence = seq.i32(0);
    return rec;
}

Result<std::vector<PageRecord>> ProjectStore::queuedPages() {
    auto all = pages();
    if (!all) return all.status();
    std::vector<PageRecord> out;
    std::set<std::pair<int64_t, int>> sourcePages;
    for (auto& p : *all) {
        // A split spread is one unit of work: its first queued half stands for the source page
        // (its halves need not be neighbours: the user may have moved one).
        if (p.status != PageStatus::Queued) continue;
        if (!sourcePages.insert({p.documentId, p.sourceIndex}).second) continue;
        out.push_back(std::move(p));
    }
    return out;
}

Status ProjectStore::saveResult(int64_t pageId, const std::vector<PageOutcome>& outcomes,
                                const DecoderCheckpoint* checkpoint) {
    if (outcomes.empty()) return Status(ErrorCode::Internal, "saveResult: no outcome");
    Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    Stmt who(m_db, "SELECT document_id, source_index, source_file, file_page FROM pages WHERE id=?");
    who.bind(1, pageId);
    if (!who.step()) return who.status() ? Status(ErrorCode::NotFound, "page vanished") : who.status();
    const int64_t doc = who.i64(0);
    const int srcIndex = who.i32(1);
    const std::string srcFile = who.text(2);
    const int filePage = who.i32(3);
    // Rows of this source page, in part order; create or retire halves as the split demands.
    std::vector<int64_t> rows;
    {
        Stmt r(m_db, "SELECT id FROM pages WHERE document_id=? AND source_index=? ORDER BY part");
        r.bind(1, doc).bind(2, srcIndex);
        while (r.step()) rows.push_back(r.i64(0));
        if (!r.status()) return r.status();
    }
    const bool split = outcomes.size() > 1;
    for (size_t i = 0; i < rows.size(); ++i) {
        const int part = split ? int(i) + 1 : int(i);
        Stmt up(m_db, "UPDATE pages SET part=? WHERE id=?");
        up.bind(1, part + 100).bind(2, rows[i]);  // temporary, avoids UNIQUE clashes while renumbering
        if (Status s = up.run(); !s) return s;
    }
    for (size_t i = 0; i < rows.size(); ++i) {
        Stmt up(m_db, "UPDATE pages SET part=part-100 WHERE id=?");
        up.bind(1, rows[i]);
        if (Status s = up.run(); !s) return s;
    }
    while (rows.size() < outcomes.size()) {
        // A new half takes the source page's place and turn (its part puts it after the first half).
        Stmt ins(m_db, "INSERT INTO pages(document_id, source_index, part, source_file, file_page, book_order, rotation, "
                       "removed) SELECT ?1, ?2, ?3, ?4, ?5, book_order, rotation, removed FROM pages WHERE id=?6");
        ins.bind(1, doc).bind(2, srcIndex).bind(3, int(rows.size()) + 1).bind(4, srcFile).bind(5, filePage).bind(6, rows[0]);
        if (Status s = ins.run(); !s) return s;
        rows.push_back(sqlite3_last_insert_rowid(m_db));
    }
    for (size_t i = outcomes.size(); i < rows.size(); ++i) {  // no longer split
        Stmt rm(m_db, "DELETE FROM pages WHERE id=?1 AND NOT EXISTS(SELECT 1 FROM corrections WHERE page_id=?1)");
        rm.bind(1, rows[i]);
        if (Status s = rm.run(); !s) return s;
        Stmt keep(m_db, "UPDATE pages SET status='failed', failure_kind='input', failure='this half of a spread "
                        "is no longer split; its corrections are kept' WHERE id=?");
        keep.bind(1, rows[i]);
        if (Status s = keep.run(); !s) return s;
    }
    for (size_t i = 0; i < outcomes.size(); ++i) {
        const PageOutcome& o = outcomes[i];
        const int64_t id = rows[i];
        Stmt del(m_db, "DELETE FROM lines WHERE page_id=?");
        del.bind(1, id);
        if (Status s = del.run(); !s) return s;
        // A page read again: its earlier reading stays a version (unless the new one says the same).
        Stmt keep(m_db,
                  "INSERT INTO readings(page_id, engine, engine_version, language, text, mean_confidence, read_at) "
                  "SELECT page_id, engine, engine_version, language, text, mean_confidence, created_at FROM results "
                  "WHERE page_id=?1 AND (text IS NOT ?2 OR engine IS NOT ?3 OR language IS NOT ?4)");
        keep.bind(1, id).bind(2, o.text.plainText()).bind(3, o.text.engine).bind(4, o.text.language);
        if (Status s = keep.run(); !s) return s;
        // Asked for (page_history.h, queueReread): the new reading becomes the text; the corrections
        // stay in the history.
        Stmt aside(m_db, "UPDATE corrections SET set_aside=1 WHERE page_id=?1 AND "
                         "(SELECT reading_replaces_corrections FROM pages WHERE id=?1)");
        aside.bind(1, id);
        if (Status s = aside.run(); !s) return s;
        Stmt res(m_db,
                 "INSERT OR REPLACE INTO results(page_id, engine, engine_version, language, text, mean_confidence, "
                 "low_confidence_share) VALUES(?,?,?,?,?,?,?)");
        res.bind(1, id).bind(2, o.text.engine).bind(3, o.text.engineVersion).bind(4, o.text.language)
            .bind(5, o.text.plainText()).bind(6, o.text.meanConfidence()).bind(7, o.text.lowConfidenceShare(60));
        if (Status s = res.run(); !s) return s;
        Stmt line(m_db, "INSERT INTO lines(page_id, line_index, block, paragraph, x, y, w, h) VALUES(?,?,?,?,?,?,?,?)");
        Stmt word(m_db, "INSERT INTO words(line_id, word_index, text, x, y, w, h, confidence) VALUES(?,?,?,?,?,?,?,?)");
        for (size_t li = 0; li < o.text.lines.size(); ++li) {
            const Line& l = o.text.lines[li];
            line.reset();
            line.bind(1, id).bind(2, int(li)).bind(3, l.block).bind(4, l.paragraph)
                .bind(5, l.box.x).bind(6, l.box.y).bind(7, l.box.w).bind(8, l.box.h);
            if (Status s = line.run(); !s) return s;
            const int64_t lineId = sqlite3_last_insert_rowid(m_db);
            for (size_t wi = 0; wi < l.words.size(); ++wi) {
                const Word& w = l.words[wi];
                word.reset();
                word.bind(1, lineId).bind(2, int(wi)).bind(3, w.text).bind(4, w.box.x).bind(5, w.box.y)
                    .bind(6, w.box.w).bind(7, w.box.h).bind(8, double(w.confidence));
                if (Status s = word.run(); !s) return s;
            }
        }
        Stmt up(m_db,
                "UPDATE pages SET status='done', crashes=0, reading_replaces_corrections=0, flagged=?, flag_reason=?, failure=NULL, failure_kind=NULL, width=?, height=?, "
                "dpi=?, region_x=?, region_y=?, region_w=?, region_h=?, skew_degrees=?, preprocess=?, "
                "content_sha256=?, text_layer=?, updated_at=strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id=?");
        up.bind(1, int(o.flagged)).bind(2, o.flagged ? o.flagReason : std::string()).bind(3, o.text.width)
            .bind(4, o.text.height).bind(5, o.text.dpi).bind(6, o.region.x).bind(7, o.region.y).bind(8, o.region.w)
            .bind(9, o.region.h).bind(10, o.skewDegrees).bind(11, o.preprocess).bind(12, o.contentSha256)
            .bind(13, o.textLayer).bind(14, id);
        if (Status s = up.run(); !s) return s;
    }
    if (checkpoint)
        if (Status s = writeCheckpoint(*checkpoint, pageId); !s) return s;
    return tx.commit();
}

Status ProjectStore::saveFailure(int64_t pageId, const std::string& kind, const std::string& reason,
                                 const DecoderCheckpoint* checkpoint) {
    Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    Stmt q(m_db, "UPDATE pages SET status='failed', crashes=0, failure=?, failure_kind=?, "
                 "updated_at=strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id=?");
    q.bind(1, reason).bind(2, kind).bind(3, pageId);
    if (Status s = q.run(); !s) return s;
    if (checkpoint)
        if (Status s = writeCheckpoint(*checkpoint, pageId); !s) return s;
    return tx.commit();
}

Status ProjectStore::requeueFailed() {
    return exec("UPDATE pages SET status='queued', failure=NULL, failure_kind=NULL WHERE status='failed' "
                "AND coalesce(failure,'') NOT LIKE '%corrections are kept%'");
}

Result<std::vector<PageRecord>> ProjectStore::quarantineCrashedPages(int crashes) {
    auto queued = queuedPages();
    if (!queued) return queued.status();
    std::vector<PageRecord> out;
    for (const auto& p : *queued) {
        if (p.crashes < crashes) continue;
        if (Status s = failQueuedSourcePage(p, "the engine crashed " + std::to_string(p.crashes) +
                                                   " times while reading this page; skipped so the rest of the book can be read "
                                                   "(quire-cli pages --retry " + std::to_string(p.sequence) + " reads it again)");
            !s)
            return s;
        out.push_back(p);
    }
    return out;
}

Status ProjectStore::countCrashes(const std::vector<int64_t>& pageIds) {
    Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    // Every part of the source page a listed page belongs to, while still queued.
    Stmt q(m_db, "UPDATE pages SET crashes=crashes+1 WHERE status='queued' AND (document_id, source_index) = "
                 "(SELECT document_id, source_index FROM pages WHERE id=?)");
    for (const int64_t id : std::set<int64_t>(pageIds.begin(), pageIds.end())) {
        q.reset();
        q.bind(1, id);
        if (Status s = q.run(); !s) return s;
    }
    return tx.commit();
}

Status ProjectStore::retryPage(int64_t pageId) {
    auto p = page(pageId);
    if (!p) return p.status();
    if (p->status != PageStatus::Failed)
        return Status(ErrorCode::InvalidArgument, "page " + std::to_string(p->sequence) + " has not failed (it is " +
                                                      pageStatusName(p->status) + ")");
    Stmt q(m_db, "UPDATE pages SET status='queued', crashes=0, failure=NULL, failure_kind=NULL WHERE document_id=? "
                 "AND source_index=? AND status='failed'");
    q.bind(1, p->documentId).bind(2, p->sourceIndex);
    return q.run();
}

Status ProjectStore::skipPage(int64_t pageId) {
    auto p = page(pageId);
    if (!p) return p.status();
    if (p->status != PageStatus::Queued)
        return Status(ErrorCode::InvalidArgument, "page " + std::to_string(p->sequence) + " is not waiting to be read (it is " +
                                                      pageStatusName(p->status) + ")");
    return failQueuedSourcePage(*p, "skipped on request (quire-cli pages --retry " + std::to_string(p->sequence) +
                                        " reads it again)");
}

Status ProjectStore::failQueuedSourcePage(const PageRecord& p, const std::string& reason) {
    // Every part of a split source page goes with it: they are read as one.
    Stmt q(m_db, "UPDATE pages SET status='failed', failure_kind='engine', failure=?, "
                 "updated_at=strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE document_id=? AND source_index=? AND status='queued'");
    q.bind(1, reason).bind(2, p.documentId).bind(3, p.sourceIndex);
    return q.run();
}

Result<PageText> ProjectStore::layout(int64_t pageId) {
    PageText page;
    {
        Stmt p(m_db, "SELECT coalesce(width,0), coalesce(height,0), coalesce(dpi,300) FROM pages WHERE id=?");
        p.bind(1, pageId);
        if (!p.step()) return Status(ErrorCode::NotFound, "no page with id " + std::to_string(pageId));
        page.width = p.i32(0), page.height = p.i32(1), page.dpi = p.i32(2);
        Stmt r(m_db, "SELECT engine, engine_version, language FROM results WHERE page_id=?");
        r.bind(1, pageId);
        if (r.step()) page.engine = r.text(0), page.engineVersion = r.text(1), page.language = r.text(2);
    }
    Stmt q(m_db,
           "SELECT l.id, l.block, l.paragraph, l.x, l.y, l.w, l.h, w.text, w.x, w.y, w.w, w.h, w.confidence "
           "FROM lines l JOIN words w ON w.line_id=l.id WHERE l.page_id=? ORDER BY l.line_index, w.word_index");
    q.bind(1, pageId);
    int64_t current = -1;
    while (q.step()) {
        if (q.i64(0) != current) {
            current = q.i64(0);
            Line l;
            l.block = q.i32(1), l.paragraph = q.i32(2);
            l.box = {q.i32(3), q.i32(4), q.i32(5), q.i32(6)};
            page.lines.push_back(std::move(l));
        }
        page.lines.back().words.push_back({q.text(7), {q.i32(8), q.i32(9), q.i32(10), q.i32(11)}, float(q.f64(12)), {}});
    }
    if (!q.status()) return q.status();
    return page;
}

Result<std::string> ProjectStore::engineText(int64_t pageId) {
    Stmt q(m_db, "SELECT text FROM results WHERE page_id=?");
    q.bind(1, pageId);
    if (q.step()) return q.text(0);
    if (!q.status()) return q.status();
    return std::string();
}

Result<std::string> ProjectStore::effectiveText(int64_t pageId) {
    auto c = latestCorrection(pageId);
    if (!c) return c.status();
    if (c->has_value()) return (*c)->text;
    return engineText(pageId);
}

Result<int64_t> ProjectStore::addCorrection(int64_t pageId, const std::string& text) {
    Stmt q(m_db, "INSERT INTO corrections(page_id, text) VALUES(?,?)");
    q.bind(1, pageId).bind(2, text);
    if (Status s = q.run(); !s) return s;
    const auto id = int64_t(sqlite3_last_insert_rowid(m_db));
    (void)backupIfDue();  // the correction is committed; a failed backup is retried next time
    return id;
}

Result<std::vector<int64_t>> ProjectStore::addCorrections(const std::vector<std::pair<int64_t, std::string>>& edits) {
    std::vector<int64_t> ids;
    if (edits.empty()) return ids;
    sql::Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    for (const auto& [pageId, text] : edits) {
        Stmt q(m_db, "INSERT INTO corrections(page_id, text) VALUES(?,?)");
        q.bind(1, pageId).bind(2, text);
        if (Status s = q.run(); !s) return s;
        ids.push_back(int64_t(sqlite3_last_insert_rowid(m_db)));
    }
    if (Status s = tx.commit(); !s) return s;
    (void)backupIfDue();
    return ids;
}

Status ProjectStore::removeCorrections(const std::vector<int64_t>& ids) {
    sql::Transaction tx(m_db);
    if (!tx.status()) return tx.status();
    for (int64_t id : ids) {
        Stmt q(m_db, "DELETE FROM corrections WHERE id=?");
        q.bind(1, id);
        if (Status s = q.run(); !s) return s;
    }
    if (Status s = tx.commit(); !s) return s;
    (void)backupIfDue();
    return Status::ok();
}

Result<std::vector<PageTextRecord>> ProjectStore::effectiveTexts() {
    // The newest correction of each page, else the engine's text; pages without either are empty.
    const std::string sqlText =
        std::string("SELECT p.id, coalesce((SELECT c.text FROM corrections c WHERE c.page_id=p.id AND NOT c.set_aside ORDER BY c.id DESC "
                    "LIMIT 1), r.text, '') FROM pages p LEFT JOIN results r ON r.page_id=p.id WHERE p.removed=0 ORDER BY ") +
        kBookOrder;
    Stmt q(m_db, sqlText.c_str());
    std::vector<PageTextRecord> out;
    while (q.step()) out.push_back({q.i64(0), int(out.size()) + 1, q.text(1)});
    if (!q.status()) return q.status();
    return out;
}

Result<std::vector<std::string>> ProjectStore::projectWords() {
    Stmt q(m_db, "SELECT word FROM dictionary ORDER BY word");
    std::vector<std::string> out;
    while (q.step()) out.push_back(q.text(0));
    if (!q.status()) return q.status();
    return out;
}

Status ProjectStore::addProjectWord(const std::string& word) {
    if (word.empty()) return Status(ErrorCode::InvalidArgument, "an empty word cannot go into the dictionary");
    Stmt q(m_db, "INSERT OR IGNORE INTO dictionary(word) VALUES(?)");
    q.bind(1, word);
    return q.run();
}

Status ProjectStore::backupIfDue() {
    if (m_readOnly || sqlite3_total_changes(m_db) == m_changesAtBackup) return Status::ok();
    if (std::chrono::steady_clock::now() - m_lastBackup < kBackupInterval) return Status::ok();
    const int64_t changes = sqlite3_total_changes(m_db);
    auto b = writeBackup(m_db, m_path);
    m_lastBackup = std::chrono::steady_clock::now();  // a failure is tried again an interval later
    if (!b) return b.status();
    m_changesAtBackup = changes;
    return Status::ok();
}

Result<std::optional<CorrectionRecord>> ProjectStore::latestCorrection(int64_t pageId) {
    Stmt q(m_db, "SELECT id, page_id, text, created_at, set_aside FROM corrections WHERE page_id=? AND NOT set_aside ORDER BY id DESC LIMIT 1");
    q.bind(1, pageId);
    if (q.step()) return std::optional<CorrectionRecord>(CorrectionRecord{q.i64(0), q.i64(1), q.text(2), q.text(3), q.i32(4) != 0});
    if (!q.status()) return q.status();
    return std::optional<CorrectionRecord>();
}

Result<std::vector<CorrectionRecord>> ProjectStore::corrections(int64_t pageId) {
    Stmt q(m_db, "SELECT id, page_id, text, created_at, set_aside FROM corrections WHERE page_id=? ORDER BY id");
    q.bind(1, pageId);
    std::vector<CorrectionRecord> out;
    while (q.step()) out.push_back({q.i64(0), q.i64(1), q.text(2), q.text(3), q.i32(4) != 0});
    if (!q.status()) return q.status();
    return out;
}

Status ProjectStore::setProofread(int64_t pageId, bool proofread) {
    Stmt q(m_db, "UPDATE pages SET proofread=? WHERE id=?");
    q.bind(1, int(proofread)).bind(2, pageId);
    return q.run();
}

Result<ProjectCounts> ProjectStore::counts() {
    Stmt q(m_db,
           "SELECT count(*), sum(status='done'), sum(status='queued'), sum(status='failed'), sum(flagged AND "
           "status='done'), sum(EXISTS(SELECT 1 FROM corrections c WHERE c.page_id=pages.id AND NOT c.set_aside)), sum(proofread) "
           "FROM pages WHERE removed=0");
    if (!q.step()) return q.status();
    return ProjectCounts{q.i32(0), q.i32(1), q.i32(2), q.i32(3), q.i32(4), q.i32(5), q.i32(6)};
}

Result<int64_t> ProjectStore::beginRun(const std::string& paramsJson) {
    // A run that was still 'running' was interrupted (killed); say so in its record.
    if (Status s = exec("UPDATE runs SET state='interrupted' WHERE state='running'"); !s) return s;
    Stmt q(m_db, "INSERT INTO runs(state, params) VALUES('running', ?)");
    q.bind(1, paramsJson);
    if (Status s = q.run(); !s) return s;
    return int64_t(sqlite3_last_insert_rowid(m_db));
}

Status ProjectStore::finishRun(int64_t runId, const std::string& state) {
    Stmt q(m_db, "UPDATE runs SET state=?, finished_at=strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id=?");
    q.bind(1, state).bind(2, runId);
    return q.run();
}

Result<std::optional<RunRecord>> ProjectStore::lastRun() {
    Stmt q(m_db, "SELECT id, state, params, started_at, coalesce(finished_at,'') FROM runs ORDER BY id DESC LIMIT 1");
    if (q.step()) return std::optional<RunRecord>(RunRecord{q.i64(0), q.text(1), q.text(2), q.text(3), q.text(4)});
    if (!q.status()) return q.status();
    return std::optional<RunRecord>();
}

Result<std::string> ProjectStore::meta(const std::string& key) {
    Stmt q(m_db, "SELECT value FROM meta WHERE key=?");
    q.bind(1, key);
    if (q.step()) return q.text(0);
    if (!q.status()) return q.status();
    return std::string();
}

Status ProjectStore::setMeta(const std::string& key, const std::string& value) {
    Stmt q(m_db, "INSERT INTO meta(key, value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value");
    q.bind(1, key).bind(2, value);
    return q.run();
}

Result<std::string> ProjectStore::integrityCheck() {
    Stmt q(m_db, "PRAGMA integrity_check");
    std::string out;
    while (q.step()) out += (out.empty() ? "" : "; ") + q.text(0);
    if (!q.status()) return q.status();
    return out;
}

}  // namespace quire
