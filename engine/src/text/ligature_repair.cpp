// A lost ligature letter: for a word the dictionary does not know, every lower-case f of it is
// tried with "i", "l", "f", "fi" or "fl" after it; exactly one known result is taken, two or more
// leave the word as read (which ligature was printed is then a guess). Words under four letters
// and words read beginning "ff" are left: on generated pages they were mostly pieces of a word
// the recognizer had lost letters of ("ffer" for "offer", "frm" for "form"), not lost ligatures.
#include "quire/text/ligature_repair.h"
#include "quire/text/line_end_hyphen.h"

#include <QString>

#include <set>

namespace quire {

namespace {

// The word's letters without the punctuation around it; apostrophes may join letters ("o'er").
bool splitWord(const QString& w, QString& lead, QString& core, QString& tail) {
    int a = 0, b = int(w.size());
    while (a < b && !w[a].isLetter()) ++a;
    while (b > a && !w[b - 1].isLetter()) --b;
    if (b - a < 4) return false;
    for (int i = 0; i < a; ++i)
        if (w[i].isLetterOrNumber()) return false;
    for (int i = a; i < b; ++i)
        if (!w[i].isLetter() && w[i] != u'\'' && w[i] != u'\u2019') return false;
    for (int i = b; i < int(w.size()); ++i)
        if (w[i].isLetterOrNumber()) return false;
    lead = w.left(a), core = w.mid(a, b - a), tail = w.mid(b);
    return true;
}

}  // namespace

LigatureRepair::LigatureRepair(Dictionary dictionary) : m_dictionary(std::move(dictionary)) {}

std::string LigatureRepair::repaired(const std::string& word) const {
    if (!m_dictionary.available() || word.find('f') == std::string::npos) return {};
    QString lead, core, tail;
    if (!splitWord(QString::fromStdString(word), lead, core, tail) || core.startsWith(QLatin1String("ff"))) return {};
    static const char* const kLost[] = {"i", "l", "f", "fi", "fl"};
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_dictionary.knows(core.toStdString())) return {};
    std::set<QString> known;
    for (int i = 0; i < int(core.size()); ++i) {
        if (core[i] != u'f') continue;
        for (const char* lost : kLost) {
            const QString c = core.left(i + 1) + QLatin1String(lost) + core.mid(i + 1);
            if (m_dictionary.knows(c.toStdString())) known.insert(c);
        }
    }
    if (known.size() != 1) return {};
    return (lead + *known.begin() + tail).toStdString();
}

int LigatureRepair::repairPage(PageText& page) const {
    if (!m_dictionary.available()) return 0;
    int changed = 0;
    bool afterHyphen = false;  // the previous line ended on a hyphenated part
    for (Line& line : page.lines) {
        for (size_t i = 0; i < line.words.size(); ++i) {
            Word& w = line.words[i];
            if ((i == 0 && afterHyphen) || endsWithHyphen(w.text)) continue;
            if (std::string r = repaired(w.text); !r.empty()) {
                w.text = std::move(r);
                ++changed;
            }
        }
        if (!line.words.empty()) afterHyphen = endsWithHyphen(line.words.back().text);
    }
    return changed;
}

}  // namespace quire
