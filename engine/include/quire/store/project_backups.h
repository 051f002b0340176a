// Rolling online backups of a project: copies taken with SQLite's backup API while the project
// is open, into "<project>.backups/", checked sound before the oldest is dropped (the newest three
// are kept). A project that fails its integrity check is restored from the newest sound one.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "quire/core/status.h"

struct sqlite3;

namespace quire {

struct BackupInfo {
    std::filesystem::path path;
    std::string takenAt;  // UTC, ISO 8601, from the file name
};

constexpr int kBackupsKept = 3;
constexpr std::chrono::minutes kBackupInterval{10};

std::filesystem::path backupFolder(const std::filesystem::path& project);
// Newest first.
std::vector<BackupInfo> listBackups(const std::filesystem::path& project);
// The newest backup that passes SQLite's quick_check.
std::optional<BackupInfo> newestSoundBackup(const std::filesystem::path& project);

// Copies the open database `db` of `project` into a new backup (written under a temporary name,
// checked, then renamed), and drops all but the newest kBackupsKept.
Result<BackupInfo> writeBackup(sqlite3* db, const std::filesystem::path& project);

// Puts `backup` in place of `project`; the damaged file (with its -wal and -shm) is kept beside it
// under a ".damaged-<time>" name, which is returned.
Result<std::filesystem::path> restoreBackup(const std::filesystem::path& project, const std::filesystem::path& backup);

}  // namespace quire
