// Project backups: sqlite3_backup into a temporary file, quick_check, rename, prune.
#include "quire/store/project_backups.h"

#include <sqlite3.h>

#include <algorithm>
#include <ctime>

namespace fs = std::filesystem;

namespace quire {

namespace {

std::string utcStamp(bool forFileName) {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, forFileName ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// "20261202T043000Z" -> "2026-12-02T04:30:00Z"
std::string readableStamp(const std::string& s) {
    if (s.size() != 16) return s;
    return s.substr(0, 4) + "-" + s.substr(4, 2) + "-" + s.substr(6, 2) + "T" + s.substr(9, 2) + ":" + s.substr(11, 2) + ":" +
           s.substr(13, 2) + "Z";
}

bool quickCheckOk(const fs::path& file) {
    sqlite3* db = nullptr;
    bool ok = false;
    const std::string uri = "file:" + file.string() + "?mode=ro&immutable=1";
    if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) == SQLITE_OK) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
            const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
            ok = text && std::string(text) == "ok";
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return ok;
}

}  // namespace

fs::path backupFolder(const fs::path& project) { return fs::path(project.string() + ".backups"); }

std::vector<BackupInfo> listBackups(const fs::path& project) {
    std::vector<BackupInfo> out;
    std::error_code ec;
    const std::string prefix = project.filename().string() + "-";
    for (fs::directory_iterator it(backupFolder(project), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind(prefix, 0) != 0 || it->path().extension() != ".backup") continue;
        out.push_back({it->path(), readableStamp(name.substr(prefix.size(), name.size() - prefix.size() - 7))});
    }
    std::sort(out.begin(), out.end(), [](const BackupInfo& a, const BackupInfo& b) { return a.path > b.path; });
    return out;
}

std::optional<BackupInfo> newestSoundBackup(const fs::path& project) {
    for (const auto& b : listBackups(project))
        if (quickCheckOk(b.path)) return b;
    return std::nullopt;
}

Result<BackupInfo> writeBackup(sqlite3* db, const fs::path& project) {
    std::error_code ec;
    const fs::path folder = backupFolder(project);
    fs::create_directories(folder, ec);
    if (ec) return Status(ErrorCode::Io, folder.string() + ": cannot create the backup folder: " + ec.message());
    const std::string stamp = utcStamp(true);
    const fs::path target = folder / (project.filename().string() + "-" + stamp + ".backup");
    const fs::path partial = target.string() + ".partial";
    fs::remove(partial, ec);
    sqlite3* out = nullptr;
    if (sqlite3_open_v2(partial.c_str(), &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
        sqlite3_close(out);
        return Status(ErrorCode::Io, partial.string() + ": cannot write a backup");
    }
    sqlite3_backup* b = sqlite3_backup_init(out, "main", db, "main");
    int rc = SQLITE_OK;
    if (b) {
        // In steps, so a writer on the project is never held up for the whole copy.
        while ((rc = sqlite3_backup_step(b, 256)) == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
            if (rc != SQLITE_OK) sqlite3_sleep(20);
        sqlite3_backup_finish(b);
    }
    const std::string err = sqlite3_errmsg(out);
    sqlite3_close(out);
    if (!b || rc != SQLITE_DONE) {
        fs::remove(partial, ec);
        return Status(ErrorCode::Io, partial.string() + ": the backup failed: " + err);
    }
    // A backup of a damaged project is not kept: it would push out a sound one.
    if (!quickCheckOk(partial)) {
        fs::remove(partial, ec);
        return Status(ErrorCode::Corrupt, project.string() + ": not backed up: the copy fails its integrity check");
    }
    fs::rename(partial, target, ec);
    if (ec) return Status(ErrorCode::Io, target.string() + ": " + ec.message());
    // Copies a killed process left half-written are never listed; they are dropped here.
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".partial") fs::remove(it->path(), ec);
    const auto all = listBackups(project);
    for (size_t i = kBackupsKept; i < all.size(); ++i) fs::remove(all[i].path, ec);
    return BackupInfo{target, readableStamp(stamp)};
}

Result<fs::path> restoreBackup(const fs::path& project, const fs::path& backup) {
    if (!quickCheckOk(backup)) return Status(ErrorCode::Corrupt, backup.string() + ": the backup fails its integrity check");
    std::error_code ec;
    const fs::path damaged = project.string() + ".damaged-" + utcStamp(true);
    if (fs::exists(project, ec)) {
        fs::rename(project, damaged, ec);
        if (ec) return Status(ErrorCode::Io, project.string() + ": cannot move the damaged project aside: " + ec.message());
    }
    for (const char* side : {"-wal", "-shm"}) {
        const fs::path p = project.string() + side;
        if (fs::exists(p, ec)) fs::rename(p, damaged.string() + side, ec);
    }
    const fs::path partial = project.string() + ".restoring";
    fs::copy_file(backup, partial, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(partial, project, ec);
    if (ec) return Status(ErrorCode::Io, project.string() + ": cannot put the backup in place: " + ec.message());
    return damaged;
}

}  // namespace quire
