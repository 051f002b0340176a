// What quire-cli's commands share: the exit codes, failing with a message, opening the project,
// and reading page numbers as the book numbers them.
#pragma once

#include <QJsonObject>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli_args.h"
#include "quire/core/status.h"
#include "quire/store/project_store.h"

namespace quire::cli {

enum Exit { kOk = 0, kInternal = 1, kUsage = 2, kFailedPages = 3 };

// Logs `message` as an error and returns `code`.
int fail(int code, const std::string& message);
// kUsage for bad input (the user's to fix), kInternal otherwise.
int exitFor(const Status& s);
void printJson(const QJsonObject& o);
// The project named by --project.
Result<std::unique_ptr<ProjectStore>> openProject(const Args& args, ProjectStore::Mode mode);

// "3-17" or "5": a range of the book's pages (1-based); nullopt when malformed.
std::optional<std::pair<int, int>> pageRange(const std::string& s);
// "3,17,20-25": page numbers (1-based) in the order given, ranges expanded; nullopt when malformed.
std::optional<std::vector<int>> pageNumbers(const std::string& list);
// An option that takes a range of the book's pages (--pages 3-17): the range, nothing when the
// option is not given, or a message naming the option and what it takes.
Result<std::optional<std::pair<int, int>>> pageRangeOption(const Args& args, const std::string& option);
// The ids of the book's pages numbered `numbers` (1-based), or the number the book lacks.
Result<std::vector<int64_t>> idsOfPages(const std::vector<PageRecord>& book, const std::vector<int>& numbers);

}  // namespace quire::cli
