// Reading a page in its hand-drawn regions (page_region.h): the engine sees only the regions whose
// text is read, and its words are sorted into them, in the regions' order.
#pragma once

#include <opencv2/core.hpp>
#include <vector>

#include "quire/core/geometry.h"
#include "quire/core/page_region.h"

namespace quire {

// The page with everything outside the regions that are read painted over in the paper's tone
// (its median), so no engine reads marginal junk, pictures or what the user marked to ignore.
cv::Mat maskOutsideRegions(const cv::Mat& page, const std::vector<PageRegion>& regions);

// Sorts the page's words into the regions holding their centres and drops the rest; the lines
// come region by region in the regions' order, each region its own block (Line::block is the
// region's index), paragraphs renumbered so none spans two regions. A line the engine ran across
// two regions (two columns read as one) is cut between them.
void arrangeByRegions(PageText& text, const std::vector<PageRegion>& regions);

// The page as it was read (`before`) with the text of region `region` (an index into `regions`)
// replaced by `reread`, a reading of that region alone; then sorted into the regions as above.
PageText replaceRegionText(const PageText& before, const PageText& reread, const std::vector<PageRegion>& regions,
                           int region);

}  // namespace quire
