// Hand-drawn regions in the regions table, by page, in reading order.
#include "quire/store/page_regions.h"

#include <algorithm>

#include "store/sqlite_util.h"

namespace quire {

using sql::Stmt;

namespace {

constexpr const char* kApplying =
    "SELECT r.page_id, r.kind, r.x, r.y, r.w, r.h FROM regions r JOIN pages p ON p.id=r.page_id "
    "WHERE r.rotation=p.rotation";

PageRegion rowRegion(Stmt& q) {
    PageRegion r;
    r.kind = parseRegionKind(q.text(1)).value_or(RegionKind::Text);
    r.box = {q.i32(2), q.i32(3), q.i32(4), q.i32(5)};
    return r;
}

}  // namespace

Result<std::vector<PageRegion>> pageRegions(ProjectStore& store, int64_t pageId) {
    static const std::string sql = std::string(kApplying) + " AND r.page_id=? ORDER BY r.position";
    Stmt q(store.handle(), sql.c_str());
    q.bind(1, pageId);
    std::vector<PageRegion> out;
    while (q.step()) out.push_back(rowRegion(q));
    if (!q.status()) return q.status();
    return out;
}

Result<std::map<int64_t, std::vector<PageRegion>>> allPageRegions(ProjectStore& store) {
    static const std::string sql = std::string(kApplying) + " ORDER BY r.page_id, r.position";
    Stmt q(store.handle(), sql.c_str());
    std::map<int64_t, std::vector<PageRegion>> out;
    while (q.step()) out[q.i64(0)].push_back(rowRegion(q));
    if (!q.status()) return q.status();
    return out;
}

Status setPageRegions(ProjectStore& store, int64_t pageId, const std::vector<PageRegion>& regions) {
    sqlite3* db = store.handle();
    sql::Transaction tx(db);
    if (!tx.status()) return tx.status();
    int rotation = 0, width = 0, height = 0;
    {
        Stmt q(db, "SELECT rotation, coalesce(width, 0), coalesce(height, 0) FROM pages WHERE id=?");
        q.bind(1, pageId);
        if (!q.step()) return q.status() ? Status(ErrorCode::NotFound, "no page with id " + std::to_string(pageId)) : q.status();
        rotation = q.i32(0), width = q.i32(1), height = q.i32(2);
    }
    {
        Stmt del(db, "DELETE FROM regions WHERE page_id=?");
        del.bind(1, pageId);
        if (Status s = del.run(); !s) return s;
    }
    Stmt add(db, "INSERT INTO regions(page_id, position, kind, rotation, x, y, w, h) VALUES(?,?,?,?,?,?,?,?)");
    for (size_t i = 0; i < regions.size(); ++i) {
        Box b = regions[i].box;
        if (width > 0 && height > 0) {
            const int l = std::max(0, b.x), t = std::max(0, b.y);
            const int r = std::min(width, b.right()), btm = std::min(height, b.bottom());
            b = {l, t, r - l, btm - t};
        }
        if (b.empty())
            return Status(ErrorCode::InvalidArgument,
                          "region " + std::to_string(i + 1) + " (" + std::to_string(regions[i].box.x) + "," +
                              std::to_string(regions[i].box.y) + " " + std::to_string(regions[i].box.w) + "×" +
                              std::to_string(regions[i].box.h) + ") has no area on the page");
        add.reset();
        add.bind(1, pageId).bind(2, int(i)).bind(3, std::string(regionKindName(regions[i].kind))).bind(4, rotation);
        add.bind(5, b.x).bind(6, b.y).bind(7, b.w).bind(8, b.h);
        if (Status s = add.run(); !s) return s;
    }
    return tx.commit();
}

}  // namespace quire
