// Whether a line's last word (or a whole line) ends on a hyphen that breaks a word: a hyphen,
// soft hyphen, U+2010/U+2011 or the old "¬", after a letter. Used by the exports to join a word
// broken at a line end and by the ligature rule to leave its halves alone.
#pragma once

#include <string>

namespace quire {

bool endsWithHyphen(const std::string& s);

}  // namespace quire
