// A region drawn on a page by hand: where text (or a picture, or nothing to read) is, what kind,
// and its place in the reading order. With regions, only they are read, in their order.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quire/core/geometry.h"

namespace quire {

enum class RegionKind { Text, Heading, MarginalNote, Table, Image, Ignore };

struct PageRegion {
    Box box;  // page coordinates, as the lines' boxes
    RegionKind kind = RegionKind::Text;
};

const char* regionKindName(RegionKind kind);  // "text", "heading", "marginal-note", "table", "image", "ignore"
std::optional<RegionKind> parseRegionKind(std::string_view name);
const std::vector<RegionKind>& allRegionKinds();
// Regions whose text is read: text, heading, marginal note, table.
bool regionIsRead(RegionKind kind);

// The region (index into `regions`, in reading order) holding the centre of `box`, among those
// whose text is read; -1 when none does. Overlapping regions: the smallest wins (a note drawn
// inside a text region).
int readRegionAt(const Box& box, const std::vector<PageRegion>& regions);

}  // namespace quire
