// Whole-book assembly: running headers, footers and page numbers are found and kept out of the
// body, words hyphenated across line and page ends are joined, and paragraphs continue across
// page breaks. Works on the effective text (corrections win over engine text).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "quire/core/geometry.h"
#include "quire/core/page_region.h"
#include "quire/export/hyphen_judge.h"
#include "quire/store/project_store.h"
#include "quire/text/line_end_hyphen.h"

namespace quire {

struct BookPageInput {
    PageRecord page;
    std::string text;  // effective text: lines by '\n', paragraphs by an empty line
    PageText layout;   // engine layout (may be empty); used for line heights
    std::vector<PageRegion> regions;  // drawn by hand, in reading order (none: the engine's layout)
};

// Where a page's body text begins inside a paragraph (a page break; after the word when a word
// runs across it), for page markers.
struct PageStart {
    size_t offset = 0;  // byte offset into the paragraph's text
    int page = 0;       // index into the input pages
};

struct BookParagraph {
    std::string text;
    int headingLevel = 0;  // 0 body, 1 chapter-like, 2 minor heading
    int firstPage = 0;     // index into the input pages
    int lastPage = 0;
    std::vector<PageStart> pageStarts;  // pages whose body begins in this paragraph, in order
    bool marginalNote = false;  // from a region drawn as a marginal note: set apart, never joined
};

struct PageFurniture {
    std::string header, footer, pageNumber;
};

struct Book {
    std::vector<BookParagraph> paragraphs;
    std::vector<PageFurniture> furniture;  // one per input page
    std::vector<int> sequences;            // each input page's place in the volume (1-based)
};

// Lines joined by spaces; a word hyphenated at a line end is joined without the hyphen when
// `hyphens` judges it one word (without a judge: when the next line starts in lower case); a soft
// hyphen always goes; before a capital the hyphen stays ("Anglo-/Saxon").
// `starts`, when given, receives where each line begins in the result (for a word joined across
// the break: after that word).
std::string joinLines(const std::vector<std::string>& lines, const HyphenJudge* hyphens = nullptr,
                      std::vector<size_t>* starts = nullptr);

// How a page is cited: "p. 12" with the number printed on it (running head or folio), else
// "scan 13", its place in the volume.
std::string pageCitation(const Book& book, int page);
// The paragraph's text with `mark(citation)` inserted where each of its pages begins.
std::string withPageMarks(const Book& book, const BookParagraph& p, const std::function<std::string(const std::string&)>& mark);

// `dictionary` (optional) helps judge line-end hyphens, with the book's own vocabulary.
Book assembleBook(const std::vector<BookPageInput>& pages, const Dictionary* dictionary = nullptr);

// Aligns a corrected page text to the engine's words so word boxes survive a correction:
// unchanged words keep box and confidence, changed words take the aligned box with confidence 100.
PageText alignCorrection(const PageText& layout, const std::string& corrected);

// Specks: a word the engine read from dirt on the scan, nothing but punctuation or symbols ("__",
// "-", ".") at a confidence below kSpeckConfidence (the flag policy's low-word line); a spaced dash
// read with confidence stays.
constexpr float kSpeckConfidence = 60.0f;
bool isSpeck(const Word& w);
// Removes a page's specks (and lines left empty); true when there were any.
bool dropSpecks(PageText& layout);

// Loads every page of the project with its effective text and layout, in book order; pages without
// corrections lose their specks.
Result<std::vector<BookPageInput>> loadBookPages(ProjectStore& store);

}  // namespace quire
