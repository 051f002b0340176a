// Page versions from the results, readings and corrections tables.
#include "quire/store/page_history.h"

#include <algorithm>

#include "store/sqlite_util.h"

namespace quire {

using sql::Stmt;

Result<std::vector<PageVersion>> pageVersions(ProjectStore& store, int64_t pageId) {
    using Kind = PageVersion::Kind;
    std::vector<PageVersion> out;
    auto who = [](const std::string& engine, const std::string& version) {
        return engine.empty() ? std::string() : " (" + engine + (version.empty() ? "" : " " + version) + ")";
    };
    {
        Stmt q(store.handle(), "SELECT engine, engine_version, read_at, text FROM readings WHERE page_id=? ORDER BY id");
        q.bind(1, pageId);
        while (q.step()) out.push_back({0, Kind::EarlierReading, 0, "earlier reading" + who(q.text(0), q.text(1)), q.text(2), q.text(3)});
        if (!q.status()) return q.status();
    }
    {
        // The reading now (a page not read yet has an empty one).
        Stmt q(store.handle(), "SELECT engine, engine_version, created_at, text FROM results WHERE page_id=?");
        q.bind(1, pageId);
        if (q.step()) out.push_back({0, Kind::Reading, 0, "engine reading" + who(q.text(0), q.text(1)), q.text(2), q.text(3)});
        else if (!q.status()) return q.status();
        else out.push_back({0, Kind::Reading, 0, "engine reading (not read yet)", "", ""});
    }
    auto corrections = store.corrections(pageId);
    if (!corrections) return corrections.status();
    for (auto& c : *corrections)
        out.push_back({0, c.setAside ? Kind::SetAsideCorrection : Kind::Correction, c.id,
                       c.setAside ? "correction (set aside for a new reading)" : "correction", c.createdAt, std::move(c.text)});
    // In the order they were made (ISO times sort as text; a page never read sorts first).
    std::stable_sort(out.begin(), out.end(), [](const PageVersion& a, const PageVersion& b) { return a.createdAt < b.createdAt; });
    // The text now: the newest correction in force, else the reading.
    PageVersion* current = nullptr;
    for (auto& v : out)
        if (v.kind == Kind::Correction && (!current || v.correctionId > current->correctionId)) current = &v;
    for (auto& v : out)
        if (v.kind == Kind::Reading && !current) current = &v;
    for (size_t i = 0; i < out.size(); ++i) out[i].number = int(i);
    if (current) current->current = true;
    return out;
}

Result<int64_t> revertPage(ProjectStore& store, int64_t pageId, int number) {
    auto versions = pageVersions(store, pageId);
    if (!versions) return versions.status();
    if (number < 0 || number >= int(versions->size()))
        return Status(ErrorCode::InvalidArgument, "the page has versions 0 to " + std::to_string(versions->size() - 1) +
                                                      ", not " + std::to_string(number));
    return store.addCorrection(pageId, (*versions)[size_t(number)].text);
}

Result<int> queueReread(ProjectStore& store, const std::vector<int64_t>& pageIds, bool replaceCorrections) {
    sql::Transaction tx(store.handle());
    if (!tx.status()) return tx.status();
    int corrected = 0;
    Stmt has(store.handle(), "SELECT EXISTS(SELECT 1 FROM corrections WHERE page_id=? AND NOT set_aside)");
    Stmt q(store.handle(),
           "UPDATE pages SET status='queued', failure=NULL, failure_kind=NULL, crashes=0, reading_replaces_corrections=?1 "
           "WHERE (document_id, source_index) = (SELECT document_id, source_index FROM pages WHERE id=?2)");
    for (const int64_t id : pageIds) {
        has.reset();
        has.bind(1, id);
        if (has.step() && has.i32(0)) ++corrected;
        if (!has.status()) return has.status();
        q.reset();
        q.bind(1, int(replaceCorrections)).bind(2, id);
        if (Status s = q.run(); !s) return s;
        if (sqlite3_changes(store.handle()) == 0) return Status(ErrorCode::NotFound, "no page with id " + std::to_string(id));
    }
    if (Status s = tx.commit(); !s) return s;
    return corrected;
}

}  // namespace quire
