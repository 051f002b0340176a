// Line-end hyphens judged by the book's vocabulary and the dictionary (see the header).
#include "quire/export/hyphen_judge.h"

#include <QRegularExpression>
#include <QStringList>

#include "quire/text/dictionary.h"

namespace quire {

namespace {

// Words as the vocabulary counts them: letters and apostrophes, with inner hyphens for compounds.
const QRegularExpression& wordPattern() {
    static const QRegularExpression re(QStringLiteral("[\\p{L}']+(?:-[\\p{L}']+)*"));
    return re;
}

}  // namespace

HyphenJudge::HyphenJudge(const std::vector<std::string>& texts, const Dictionary* dictionary)
    : m_dictionary(dictionary) {
    for (const std::string& t : texts)
        for (const QString& line : QString::fromStdString(t).split('\n')) {
            const QString trimmed = line.trimmed();
            // A line that ends in a hyphen: its last word is half a word, not vocabulary.
            const bool brokenEnd = trimmed.endsWith('-') || trimmed.endsWith(QChar(0x00AD)) ||
                                   trimmed.endsWith(QChar(0x2010)) || trimmed.endsWith(QChar(0x00AC));
            auto it = wordPattern().globalMatch(trimmed);
            QStringList words;
            while (it.hasNext()) words << it.next().captured(0).toLower();
            if (brokenEnd && !words.isEmpty()) words.removeLast();
            for (const QString& w : words) (w.contains('-') ? m_compounds : m_words).insert(w);
        }
}

bool HyphenJudge::isOneWord(const QString& first, const QString& second) const {
    const QString joined = (first + second).toLower();
    const QString compound = first.toLower() + '-' + second.toLower();
    if (m_words.contains(joined)) return true;       // the book writes it as one word elsewhere
    if (m_compounds.contains(compound)) return false;  // ... or with its hyphen
    if (m_dictionary && m_dictionary->available()) {
        if (m_dictionary->knows((first + second).toStdString())) return true;
        // Two words the dictionary knows, joined into none: a compound ("rudely-constructed").
        return !(first.size() > 1 && second.size() > 1 && m_dictionary->knows(first.toStdString()) &&
                 m_dictionary->knows(second.toStdString()));
    }
    return true;  // no dictionary: a broken word, the common case in print
}

}  // namespace quire
