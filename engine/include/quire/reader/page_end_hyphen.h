// keepPageEndHyphen: the hyphen of a word broken over the page break, written back where the
// reader dropped it (ReaderOptions::pageEndHyphen).
#pragma once

#include <functional>
#include <vector>

namespace quire {

// Writes back the hyphen the front-end read at the end of the line where the page's written text
// ends, when the model wrote that line's last word without it. A model trained on targets that
// write such a word whole on the page where it starts does not see the next page, so it writes the
// first half alone ("format" for "format-" / "ters"); with the hyphen kept, the book's assembly
// joins the halves across the break (joinLines). `visualIds`: the front-end's ids of the page's
// visual tokens (reader_vocab::kLineBreak at each line's end); `hyphen`, `wordChar`, `digit`: per
// visual token, the front-end's hyphens, letters and digits (a last written line that the
// front-end read as a bare number of up to four digits is a folio under the text: the line
// written before it is the one that counts); `charProb(v)`: its probability of visual token v's
// character; per written token its id, probability and the visual token it attended to (-1: none),
// all three extended in place.
void keepPageEndHyphen(const std::vector<int>& visualIds, const std::vector<bool>& wordChar, const std::vector<bool>& hyphen,
                       const std::vector<bool>& digit, const std::function<float(size_t)>& charProb, std::vector<int>& tokens,
                       std::vector<float>& probs, std::vector<int>& attended);

}  // namespace quire
