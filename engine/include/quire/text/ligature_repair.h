// Words a recognizer read without a ligature's second letter — the fi, fl and ff ligatures (and
// ffi, ffl) read as a bare f or ff, "frst", "fower", "efect" — written back as printed, where the
// book's dictionary knows exactly one such word and not the word as read (docs/ACCURACY.md
// 2026-12-07, found on generated pages set in ligature faces).
#pragma once

#include <mutex>
#include <string>

#include "quire/core/geometry.h"
#include "quire/text/dictionary.h"

namespace quire {

class LigatureRepair {
public:
    explicit LigatureRepair(Dictionary dictionary);

    // Whether a dictionary was found for the languages (without one nothing is repaired).
    bool available() const { return m_dictionary.available(); }
    // `word` (UTF-8, with any punctuation around it) as printed, or empty where it is known, is no
    // word of letters, or no single lost ligature letter makes it one. Thread-safe.
    std::string repaired(const std::string& word) const;
    // Every word of the page but a line end's hyphenated part and the part after it on the next
    // line (halves of a word a dictionary does not know). Returns the number of words changed.
    int repairPage(PageText& page) const;

private:
    Dictionary m_dictionary;
    mutable std::mutex m_mutex;  // hunspell is not thread-safe; a page's workers share one
};

}  // namespace quire
