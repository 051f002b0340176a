// One writer process per project (project_lock.cpp): a store open for writing holds the lock on
// "<project>.lock" until it closes; a second process is refused with who holds it.
#pragma once

#include <filesystem>

#include "quire/core/status.h"

namespace quire {

// Takes (or, for a further store of this process, shares) the project's lock. Ok too where no
// lock file can be made (a read-only folder): SQLite's own locking still applies.
Status lockProject(const std::filesystem::path& project);
// Gives up this store's share; the last one removes the lock file.
void unlockProject(const std::filesystem::path& project);

}  // namespace quire
