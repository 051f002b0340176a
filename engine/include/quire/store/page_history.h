// A page's versions: each reading an engine made of it (a page read again keeps the earlier ones)
// and every correction saved, in the order they were made. Reverting saves a version as a new
// correction, so no version is ever lost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "quire/core/status.h"
#include "quire/store/project_store.h"

namespace quire {

struct PageVersion {
    enum class Kind { Reading, EarlierReading, Correction, SetAsideCorrection };
    int number = 0;            // 0, 1, ... in the order the versions were made
    Kind kind = Kind::Reading;
    int64_t correctionId = 0;  // for corrections
    std::string label;         // "engine reading (tesseract 5.3.0)", "earlier reading (ppocr 4)", "correction"
    std::string createdAt;     // ISO 8601, UTC
    std::string text;
    bool current = false;      // the page's text now: the newest correction in force, else the reading
};

Result<std::vector<PageVersion>> pageVersions(ProjectStore& store, int64_t pageId);
// Makes version `number` the page's text again; returns the new correction's id.
Result<int64_t> revertPage(ProjectStore& store, int64_t pageId, int number);

// Queues pages (both halves of a spread) to be read again by the next run, with whatever settings it
// has; the reading they have now stays a version. Their corrections stay the text, unless
// `replaceCorrections`: then the new reading becomes the text and the corrections stay in the
// history. Returns how many of the pages have corrections in force (the choice concerned them).
Result<int> queueReread(ProjectStore& store, const std::vector<int64_t>& pageIds, bool replaceCorrections);

}  // namespace quire
