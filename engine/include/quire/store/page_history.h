// A page's versions: the engine's reading, then every correction saved, oldest first. Reverting
// saves an earlier version as a new correction, so no version is ever lost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quire/core/status.h"
#include "quire/store/project_store.h"

namespace quire {

struct PageVersion {
    int number = 0;            // 0: the engine's reading; 1..: corrections in the order saved
    int64_t correctionId = 0;  // 0 for the engine's reading
    std::string label;         // "engine reading (tesseract 5.3.0)", "correction"
    std::string createdAt;     // ISO 8601, UTC; empty for the engine's reading
    std::string text;
};

Result<std::vector<PageVersion>> pageVersions(ProjectStore& store, int64_t pageId);
// Makes version `number` the page's text again; returns the new correction's id.
Result<int64_t> revertPage(ProjectStore& store, int64_t pageId, int number);

}  // namespace quire
