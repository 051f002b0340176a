// keepPageEndHyphen: the hyphen of a word broken over the page break, written back.
#include "quire/reader/page_end_hyphen.h"

#include "quire/reader/reader.h"

namespace quire {

using namespace reader_vocab;

namespace {

// The first visual token of the line holding visual token v.
size_t lineStart(const std::vector<int>& visualIds, size_t v) {
    while (v > 0 && visualIds[v - 1] != kLineBreak) --v;
    return v;
}

// Whether the line from visual token `from` is a bare number of one to four digits (a folio).
bool bareNumberLine(const std::vector<int>& visualIds, const std::vector<bool>& digit, size_t from) {
    size_t n = 0;
    for (size_t t = from; t < visualIds.size() && visualIds[t] != kLineBreak; ++t, ++n)
        if (!digit[t]) return false;
    return n >= 1 && n <= 4;
}

}  // namespace

void keepPageEndHyphen(const std::vector<int>& visualIds, const std::vector<bool>& wordChar, const std::vector<bool>& hyphen,
                       const std::vector<bool>& digit, const std::function<float(size_t)>& charProb, std::vector<int>& tokens,
                       std::vector<float>& probs, std::vector<int>& attended) {
    size_t k = tokens.size();
    while (k > 0 && tokens[k - 1] < kFirstChar) --k;  // line ends after the last character
    if (k == 0 || attended[k - 1] < 0 || size_t(attended[k - 1]) >= visualIds.size()) return;
    // A folio written under the text: the text's last line is the one written before it.
    if (const size_t folio = lineStart(visualIds, size_t(attended[k - 1])); bareNumberLine(visualIds, digit, folio)) {
        while (k > 0 && (tokens[k - 1] < kFirstChar || (attended[k - 1] >= 0 && size_t(attended[k - 1]) >= folio))) --k;
        if (k == 0 || attended[k - 1] < 0) return;
    }
    const size_t v = size_t(attended[k - 1]);
    size_t end = v;
    while (end < visualIds.size() && visualIds[end] != kLineBreak) ++end;
    if (end == visualIds.size() || end < 2) return;
    const size_t h = end - 1;  // the line's last visual token
    // The last character written read one of the two letters before the hyphen.
    if (!hyphen[h] || !wordChar[h - 1] || v >= h || v + 2 < h) return;
    tokens.insert(tokens.begin() + long(k), visualIds[h]);
    probs.insert(probs.begin() + long(k), charProb(h));
    attended.insert(attended.begin() + long(k), int(h));
}

}  // namespace quire
