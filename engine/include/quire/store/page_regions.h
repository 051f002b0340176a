// The regions drawn by hand on the pages of a project (page_region.h), stored with the page's turn
// at the time: a page turned since keeps them, unused, until it is turned back.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "quire/core/page_region.h"
#include "quire/core/status.h"
#include "quire/store/project_store.h"

namespace quire {

// The page's regions in reading order (none: the engine finds the layout itself).
Result<std::vector<PageRegion>> pageRegions(ProjectStore& store, int64_t pageId);
// Every page's regions that apply (pages without any are left out).
Result<std::map<int64_t, std::vector<PageRegion>>> allPageRegions(ProjectStore& store);
// Replaces the page's regions (an empty list removes them). Boxes are clipped to the page when its
// size is known; a region with no area left is refused, naming it.
Status setPageRegions(ProjectStore& store, int64_t pageId, const std::vector<PageRegion>& regions);

}  // namespace quire
