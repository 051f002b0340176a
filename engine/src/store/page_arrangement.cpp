// Page arrangement on the pages table: book_order, removed, rotation; arrangement_edits keeps, for
// each change, the rows' earlier values ("id value value" lines) that undo it.
#include "quire/store/page_arrangement.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "store/page_order.h"
#include "store/sqlite_util.h"

namespace quire {

using sql::Stmt;
using sql::Transaction;

namespace {

// At least one page chosen, none twice.
Status checkChoice(const std::vector<int64_t>& ids) {
    if (ids.empty()) return Status(ErrorCode::InvalidArgument, "no page chosen");
    if (std::set<int64_t>(ids.begin(), ids.end()).size() != ids.size())
        return Status(ErrorCode::InvalidArgument, "a page is chosen twice");
    return Status::ok();
}

// The chosen pages in words, "page 3", "pages 3 and 4", "pages 3, 4 and 9" (their places in the
// book), once each id is found to be a page in the book, chosen once.
Result<std::string> chosenPages(ProjectStore& store, const std::vector<int64_t>& ids) {
    if (Status s = checkChoice(ids); !s) return s;
    std::vector<int> seq;
    for (const int64_t id : ids) {
        auto p = store.page(id);
        if (!p) return p.status();
        if (p->sequence == 0) return Status(ErrorCode::InvalidArgument, "a chosen page was removed from the book");
        seq.push_back(p->sequence);
    }
    std::sort(seq.begin(), seq.end());
    std::string out = seq.size() == 1 ? "page " : "pages ";
    for (size_t i = 0; i < seq.size(); ++i)
        out += (i == 0 ? "" : i + 1 == seq.size() ? " and " : ", ") + std::to_string(seq[i]);
    return out;
}

Result<ArrangementEdit> record(sqlite3* db, const std::string& action, const std::string& summary, const std::string& undo) {
    Stmt q(db, "INSERT INTO arrangement_edits(action, summary, undo) VALUES(?,?,?) RETURNING id, created_at");
    q.bind(1, action).bind(2, summary).bind(3, undo);
    if (!q.step()) return q.status() ? Status(ErrorCode::Database, "arrangement not recorded") : q.status();
    return ArrangementEdit{q.i64(0), action, summary, q.text(1)};
}

// Takes pages out of the book or puts them back; the ids, one a line, undo it.
Result<std::string> setRemoved(sqlite3* db, const std::vector<int64_t>& pageIds, bool removed) {
    std::string undo;
    Stmt q(db, "UPDATE pages SET removed=? WHERE id=?");
    for (const int64_t id : pageIds) {
        q.reset();
        q.bind(1, removed ? 1 : 0).bind(2, id);
        if (Status s = q.run(); !s) return s;
        undo += std::to_string(id) + "\n";
    }
    return undo;
}

}  // namespace

Result<ArrangementEdit> removePages(ProjectStore& store, const std::vector<int64_t>& pageIds) {
    const auto chosen = chosenPages(store, pageIds);
    if (!chosen) return chosen.status();
    const std::string summary = "removed " + *chosen;
    sqlite3* db = store.handle();
    Transaction tx(db);
    if (!tx.status()) return tx.status();
    const auto undo = setRemoved(db, pageIds, true);
    if (!undo) return undo.status();
    auto edit = record(db, "remove", summary, *undo);
    if (!edit) return edit.status();
    if (Status s = tx.commit(); !s) return s;
    return edit;
}

Result<ArrangementEdit> movePages(ProjectStore& store, const std::vector<int64_t>& pageIds, int before) {
    const auto chosen = chosenPages(store, pageIds);
    if (!chosen) return chosen.status();
    auto book = store.pages();
    if (!book) return book.status();
    if (before < 1 || before > int(book->size()) + 1)
        return Status(ErrorCode::InvalidArgument, "the book has pages 1 to " + std::to_string(book->size()) +
                                                      "; pages can go before page 1 to " + std::to_string(book->size() + 1));
    const int64_t target = before <= int(book->size()) ? (*book)[size_t(before - 1)].id : 0;
    std::string summary = "moved " + *chosen +
                          (target ? " before page " + std::to_string(before) : std::string(" to the end"));
    sqlite3* db = store.handle();
    Transaction tx(db);
    if (!tx.status()) return tx.status();
    // Every row, removed ones too, in the present order; the moved pages keep theirs among themselves.
    std::vector<std::pair<int64_t, double>> rows;
    {
        const std::string sqlText = std::string("SELECT p.id, p.book_order FROM pages p ORDER BY ") + sql::kBookOrder;
        Stmt q(db, sqlText.c_str());
        while (q.step()) rows.push_back({q.i64(0), q.f64(1)});
        if (!q.status()) return q.status();
    }
    const std::set<int64_t> moving(pageIds.begin(), pageIds.end());
    std::vector<int64_t> moved, order;
    for (const auto& [id, o] : rows) (moving.count(id) ? moved : order).push_back(id);
    // Before the target, or before the first page after it that stays, when the target moves too.
    size_t at = order.size();
    if (target) {
        bool seen = false;
        for (size_t i = 0, k = 0; i < rows.size(); ++i) {
            if (rows[i].first == target) seen = true;
            if (!moving.count(rows[i].first)) {
                if (seen) { at = k; break; }
                ++k;
            }
        }
    }
    order.insert(order.begin() + long(at), moved.begin(), moved.end());
    // Already in place (a page dropped where it was): nothing to do, nothing to undo.
    if (std::equal(order.begin(), order.end(), rows.begin(), rows.end(),
                   [](int64_t id, const std::pair<int64_t, double>& row) { return id == row.first; }))
        return ArrangementEdit{0, "move", "the pages are there already", ""};
    std::ostringstream undo;
    undo.precision(17);
    for (const auto& [id, o] : rows) undo << id << ' ' << o << '\n';
    Stmt up(db, "UPDATE pages SET book_order=? WHERE id=?");
    for (size_t i = 0; i < order.size(); ++i) {
        up.reset();
        up.bind(1, double(i + 1)).bind(2, order[i]);
        if (Status s = up.run(); !s) return s;
    }
    auto edit = record(db, "move", summary, undo.str());
    if (!edit) return edit.status();
    if (Status s = tx.commit(); !s) return s;
    return edit;
}

Result<ArrangementEdit> rotatePages(ProjectStore& store, const std::vector<int64_t>& pageIds, int clockwiseDegrees) {
    if (clockwiseDegrees != 90 && clockwiseDegrees != 180 && clockwiseDegrees != 270)
        return Status(ErrorCode::InvalidArgument, "a page turns by 90, 180 or 270 degrees clockwise, not " +
                                                      std::to_string(clockwiseDegrees));
    const auto chosen = chosenPages(store, pageIds);
    if (!chosen) return chosen.status();
    const std::string summary = "turned " + *chosen + " " + std::to_string(clockwiseDegrees) + "° clockwise";
    sqlite3* db = store.handle();
    Transaction tx(db);
    if (!tx.status()) return tx.status();
    // The rows of the chosen pages' source pages (both halves of a spread), each once.
    std::vector<int64_t> rows;
    {
        Stmt q(db, "SELECT id FROM pages WHERE (document_id, source_index) = (SELECT document_id, source_index FROM pages "
                   "WHERE id=?)");
        for (const int64_t id : pageIds) {
            q.reset();
            q.bind(1, id);
            while (q.step()) rows.push_back(q.i64(0));
            if (!q.status()) return q.status();
        }
        std::sort(rows.begin(), rows.end());
        rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    }
    std::string undo;
    Stmt was(db, "SELECT rotation, status FROM pages WHERE id=?");
    Stmt up(db, "UPDATE pages SET rotation=(rotation+?1)%360, status='queued', failure=NULL, failure_kind=NULL, "
                "crashes=0 WHERE id=?2");
    for (const int64_t id : rows) {
        was.reset();
        was.bind(1, id);
        if (!was.step()) return was.status() ? Status(ErrorCode::NotFound, "page vanished") : was.status();
        undo += std::to_string(id) + " " + std::to_string(was.i32(0)) + " " + was.text(1) + "\n";
        up.reset();
        up.bind(1, clockwiseDegrees).bind(2, id);
        if (Status s = up.run(); !s) return s;
    }
    auto edit = record(db, "rotate", summary, undo);
    if (!edit) return edit.status();
    if (Status s = tx.commit(); !s) return s;
    return edit;
}

Result<std::vector<PageRecord>> removedPages(ProjectStore& store) {
    std::vector<int64_t> ids;
    {
        const std::string sqlText = std::string("SELECT p.id FROM pages p WHERE p.removed=1 ORDER BY ") + sql::kBookOrder;
        Stmt q(store.handle(), sqlText.c_str());
        while (q.step()) ids.push_back(q.i64(0));
        if (!q.status()) return q.status();
    }
    std::vector<PageRecord> out;
    for (const int64_t id : ids) {
        auto p = store.page(id);
        if (!p) return p.status();
        out.push_back(std::move(*p));
    }
    return out;
}

Result<int> removedPageCount(ProjectStore& store) {
    Stmt q(store.handle(), "SELECT count(*) FROM pages WHERE removed=1");
    if (!q.step()) return q.status() ? Status(ErrorCode::Database, "removed pages not counted") : q.status();
    return q.i32(0);
}

Result<ArrangementEdit> restorePages(ProjectStore& store, const std::vector<int64_t>& pageIds) {
    if (Status s = checkChoice(pageIds); !s) return s;
    for (const int64_t id : pageIds) {
        auto p = store.page(id);
        if (!p) return p.status();
        if (p->sequence != 0) return Status(ErrorCode::InvalidArgument, "a chosen page is in the book already");
    }
    sqlite3* db = store.handle();
    Transaction tx(db);
    if (!tx.status()) return tx.status();
    const auto undo = setRemoved(db, pageIds, false);
    if (!undo) return undo.status();
    const auto places = chosenPages(store, pageIds);  // their places now that they are back
    if (!places) return places.status();
    auto edit = record(db, "restore", "put back " + *places, *undo);
    if (!edit) return edit.status();
    if (Status s = tx.commit(); !s) return s;
    return edit;
}

Result<std::optional<ArrangementEdit>> lastArrangement(ProjectStore& store) {
    Stmt q(store.handle(), "SELECT id, action, summary, created_at FROM arrangement_edits ORDER BY id DESC LIMIT 1");
    if (!q.step()) {
        if (!q.status()) return q.status();
        return std::optional<ArrangementEdit>();
    }
    return std::optional<ArrangementEdit>(ArrangementEdit{q.i64(0), q.text(1), q.text(2), q.text(3)});
}

Result<std::optional<ArrangementEdit>> undoArrangement(ProjectStore& store) {
    sqlite3* db = store.handle();
    Transaction tx(db);
    if (!tx.status()) return tx.status();
    Stmt q(db, "SELECT id, action, summary, created_at, undo FROM arrangement_edits ORDER BY id DESC LIMIT 1");
    if (!q.step()) {
        if (!q.status()) return q.status();
        return std::optional<ArrangementEdit>();
    }
    const ArrangementEdit edit{q.i64(0), q.text(1), q.text(2), q.text(3)};
    std::istringstream undo(q.text(4));
    for (std::string line; std::getline(undo, line);) {
        std::istringstream f(line);
        int64_t id = 0;
        if (!(f >> id)) continue;
        if (edit.action == "remove" || edit.action == "restore") {
            if (auto s = setRemoved(db, {id}, edit.action == "restore"); !s) return s.status();
        } else if (edit.action == "move") {
            double order = 0;
            f >> order;
            Stmt up(db, "UPDATE pages SET book_order=? WHERE id=?");
            up.bind(1, order).bind(2, id);
            if (Status s = up.run(); !s) return s;
        } else if (edit.action == "rotate") {
            int rotation = 0;
            std::string status;
            f >> rotation >> status;
            // Still waiting with its earlier reading: that reading stands again. Read since (with
            // the turn being undone): it is read again.
            Stmt up(db, "UPDATE pages SET rotation=?1, status=CASE WHEN status='queued' AND ?2='done' THEN 'done' "
                        "ELSE 'queued' END WHERE id=?3");
            up.bind(1, rotation).bind(2, status).bind(3, id);
            if (Status s = up.run(); !s) return s;
        }
    }
    // Pages added since a move have no earlier place: they follow, in their order.
    if (edit.action == "move")
        if (Status s = sql::renumberPages(db); !s) return s;
    Stmt rm(db, "DELETE FROM arrangement_edits WHERE id=?");
    rm.bind(1, edit.id);
    if (Status s = rm.run(); !s) return s;
    if (Status s = tx.commit(); !s) return s;
    return std::optional<ArrangementEdit>(edit);
}

}  // namespace quire
