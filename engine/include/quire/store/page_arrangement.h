// The user's arrangement of the book: pages taken out, moved and turned. Each change is stored in
// the project with what undoes it, so it can be undone later, after reopening too (quire-cli pages
// --undo, the GUI's Undo). No page is deleted: a removed page keeps its reading and corrections.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "quire/core/status.h"
#include "quire/store/project_store.h"

namespace quire {

struct ArrangementEdit {
    int64_t id = 0;
    std::string action;   // "remove", "move", "rotate", "restore"
    std::string summary;  // in words: "removed pages 3 and 4"
    std::string createdAt;
};

// Takes pages out of the book; the pages after them move up.
Result<ArrangementEdit> removePages(ProjectStore& store, const std::vector<int64_t>& pageIds);
// Moves pages, kept in their present order, to stand before the page now at book position `before`
// (1-based; the page count + 1 moves them to the end). Pages already there: an edit with id 0,
// nothing recorded.
Result<ArrangementEdit> movePages(ProjectStore& store, const std::vector<int64_t>& pageIds, int before);
// Turns pages clockwise by 90, 180 or 270 degrees more (both halves of a split spread: the turn is
// the scan's). A turned page is queued to be read again; its corrections are kept and stay its text.
Result<ArrangementEdit> rotatePages(ProjectStore& store, const std::vector<int64_t>& pageIds, int clockwiseDegrees);
// The pages taken out of the book, in the order they stood in it (each with sequence 0).
Result<std::vector<PageRecord>> removedPages(ProjectStore& store);
// How many pages are out of the book (one query: for enabling a menu as the window changes).
Result<int> removedPageCount(ProjectStore& store);
// Puts removed pages back where they stood among the pages now in the book, in any order, not only
// the last removed (that is Undo's).
Result<ArrangementEdit> restorePages(ProjectStore& store, const std::vector<int64_t>& pageIds);
// Undoes the newest change not yet undone and forgets it; nothing when there is none.
Result<std::optional<ArrangementEdit>> undoArrangement(ProjectStore& store);
// The newest change not yet undone.
Result<std::optional<ArrangementEdit>> lastArrangement(ProjectStore& store);

}  // namespace quire
