// Word-level difference between two versions of a page's text, for comparing versions.
#pragma once

#include <string>
#include <vector>

namespace quire {

struct DiffPiece {
    enum Kind { Same, Removed, Added };
    Kind kind = Same;
    std::string text;  // words with the spaces between them (UTF-8)
};

// The pieces that turn `before` into `after`, in order: a longest common subsequence of words
// (whitespace runs count as words, so line breaks show). Very long pages fall back to one removed
// and one added piece between their common beginning and end.
std::vector<DiffPiece> wordDiff(const std::string& before, const std::string& after);

}  // namespace quire
