#include "quire/text/line_end_hyphen.h"

#include <QString>

namespace quire {

bool endsWithHyphen(const std::string& s) {
    const QString t = QString::fromStdString(s).trimmed();
    if (t.size() < 2) return false;
    const QChar last = t.back();
    const bool hyphen = last == '-' || last == QChar(0x00AD) || last == QChar(0x2010) || last == QChar(0x2011) ||
                        last == QChar(0x00AC);
    return hyphen && t[t.size() - 2].isLetter();
}

}  // namespace quire
