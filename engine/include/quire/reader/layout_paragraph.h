// layoutParagraph: a line the layout sets apart ends its paragraph in the reader's text
// (ReaderOptions::layoutParagraphs).
#pragma once

#include "quire/reader/reader.h"

#include <vector>

namespace quire {

// Text the layout sets apart from the next line (a wide white band follows it: wideWhiteBands; a
// running head, a title) ends its paragraph, however the model ended the line, so that the book's
// assembly can tell it from the body. `picked`: the model's token; `lineEnd`: whether it ends a
// line; `textSinceBreak`: text written since the last line end that was not a join; `laidApart`:
// per line with visual tokens, whether a wide white band follows; `line`: the line being written.
inline int layoutParagraph(int picked, bool lineEnd, bool textSinceBreak, const std::vector<bool>& laidApart, size_t line) {
    return lineEnd && textSinceBreak && line < laidApart.size() && laidApart[line] ? reader_vocab::kParagraph : picked;
}

}  // namespace quire
