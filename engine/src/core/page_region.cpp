// Region kinds by name, and which region a box belongs to.
#include "quire/core/page_region.h"

namespace quire {

namespace {
struct KindName {
    RegionKind kind;
    const char* name;
};
constexpr KindName kNames[] = {{RegionKind::Text, "text"},   {RegionKind::Heading, "heading"},
                               {RegionKind::MarginalNote, "marginal-note"}, {RegionKind::Table, "table"},
                               {RegionKind::Image, "image"}, {RegionKind::Ignore, "ignore"}};
}  // namespace

const char* regionKindName(RegionKind kind) {
    for (const auto& k : kNames)
        if (k.kind == kind) return k.name;
    return "text";
}

std::optional<RegionKind> parseRegionKind(std::string_view name) {
    for (const auto& k : kNames)
        if (name == k.name) return k.kind;
    return std::nullopt;
}

const std::vector<RegionKind>& allRegionKinds() {
    static const std::vector<RegionKind> all = [] {
        std::vector<RegionKind> v;
        for (const auto& k : kNames) v.push_back(k.kind);
        return v;
    }();
    return all;
}

bool regionIsRead(RegionKind kind) { return kind != RegionKind::Image && kind != RegionKind::Ignore; }

int readRegionAt(const Box& box, const std::vector<PageRegion>& regions) {
    const int cx = box.x + box.w / 2, cy = box.y + box.h / 2;
    int best = -1;
    long long bestArea = 0;
    for (size_t i = 0; i < regions.size(); ++i) {
        const Box& r = regions[i].box;
        if (cx < r.x || cx >= r.right() || cy < r.y || cy >= r.bottom()) continue;
        const long long area = (long long)r.w * r.h;
        if (best < 0 || area < bestArea) best = int(i), bestArea = area;
    }
    // An image or ignore region drawn over text takes its text out.
    return best >= 0 && regionIsRead(regions[size_t(best)].kind) ? best : -1;
}

}  // namespace quire
