// Word diff by dynamic programming over tokens (words and whitespace runs).
#include "quire/text/word_diff.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace quire {

namespace {

std::vector<std::string> tokens(const std::string& s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        const bool space = std::isspace(static_cast<unsigned char>(s[i]));
        size_t j = i;
        while (j < s.size() && bool(std::isspace(static_cast<unsigned char>(s[j]))) == space) ++j;
        out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

void append(std::vector<DiffPiece>& out, DiffPiece::Kind kind, const std::string& text) {
    if (text.empty()) return;
    if (!out.empty() && out.back().kind == kind) out.back().text += text;
    else out.push_back({kind, text});
}

}  // namespace

std::vector<DiffPiece> wordDiff(const std::string& before, const std::string& after) {
    const auto a = tokens(before), b = tokens(after);
    // The common beginning and end need no table.
    size_t head = 0;
    while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
    size_t tail = 0;
    while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
    std::vector<DiffPiece> out;
    for (size_t i = 0; i < head; ++i) append(out, DiffPiece::Same, a[i]);
    const size_t n = a.size() - head - tail, m = b.size() - head - tail;
    constexpr size_t kMaxCells = size_t(4) << 20;  // 16 MB of table
    if (n * m > kMaxCells) {
        for (size_t i = 0; i < n; ++i) append(out, DiffPiece::Removed, a[head + i]);
        for (size_t j = 0; j < m; ++j) append(out, DiffPiece::Added, b[head + j]);
    } else {
        // lcs[i][j]: the longest common subsequence of a's middle from i and b's middle from j.
        std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
        auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
        for (size_t i = n; i-- > 0;)
            for (size_t j = m; j-- > 0;)
                at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
        size_t i = 0, j = 0;
        while (i < n || j < m) {
            if (i < n && j < m && a[head + i] == b[head + j]) {
                append(out, DiffPiece::Same, a[head + i]);
                ++i, ++j;
            } else if (j < m && (i == n || at(i, j + 1) > at(i + 1, j))) {  // removals first, as diff shows them
                append(out, DiffPiece::Added, b[head + j++]);
            } else {
                append(out, DiffPiece::Removed, a[head + i++]);
            }
        }
    }
    for (size_t k = a.size() - tail; k < a.size(); ++k) append(out, DiffPiece::Same, a[k]);
    return out;
}

}  // namespace quire
