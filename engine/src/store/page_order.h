// The book's page order in SQL, shared by the project store and the page arrangement: pages sort
// by book_order (halves of a spread share their source page's, and part breaks the tie); pages the
// user removed are kept but out of the book.
#pragma once

#include "sqlite_util.h"

namespace quire::sql {

inline constexpr const char* kBookOrder = "p.book_order, p.part, p.id";

// Numbers every page 1, 2, ... in its present order, so that a place can be given between two pages.
inline Status renumberPages(sqlite3* db) {
    Stmt q(db, "UPDATE pages SET book_order = r.n FROM (SELECT p.id, row_number() OVER (ORDER BY p.book_order, "
               "p.part, p.id) AS n FROM pages p) AS r WHERE r.id=pages.id");
    return q.run();
}

}  // namespace quire::sql
