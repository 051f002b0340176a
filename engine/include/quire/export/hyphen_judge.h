// A word hyphenated at a line end: one word the typesetter broke ("narra-/tor": the hyphen goes)
// or a hyphenated compound ("rudely-/constructed": it stays). The book's own vocabulary decides
// first (how the word is written where no line breaks it), then the dictionary.
#pragma once

#include <QSet>
#include <QString>

#include <string>
#include <vector>

namespace quire {

class Dictionary;

class HyphenJudge {
public:
    HyphenJudge() = default;
    // The words of `texts` (page texts, lines by '\n') not at a line end, and their compounds.
    HyphenJudge(const std::vector<std::string>& texts, const Dictionary* dictionary);

    // `first` is the word before the hyphen, `second` the word that starts the next line (letters only).
    bool isOneWord(const QString& first, const QString& second) const;

private:
    QSet<QString> m_words, m_compounds;  // lower case
    const Dictionary* m_dictionary = nullptr;
};

}  // namespace quire
