// The project file's schema: its numbered migrations. Migration i brings PRAGMA user_version from
// i to i + 1, in one transaction (ProjectStore::migrate); a new schema is a new migration at the end.
#pragma once

#include <array>

namespace quire::sql {

inline constexpr int kMigrationCount = 9;  // ProjectStore::kSchemaVersion
extern const std::array<const char*, kMigrationCount> kMigrations;

}  // namespace quire::sql
