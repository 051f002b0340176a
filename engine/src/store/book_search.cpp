// Find and replace across the book, on QRegularExpression (PCRE2, Unicode-aware): plain and
// whole-word queries are escaped patterns, so all three modes share one matcher.
#include "quire/store/book_search.h"

#include <algorithm>

namespace quire {

Result<BookSearch> BookSearch::compile(const SearchQuery& query) {
    if (query.pattern.empty()) return Status(ErrorCode::InvalidArgument, "the search text is empty");
    const QString p = QString::fromStdString(query.pattern);
    QString expr = query.mode == SearchMode::Regex ? p : QRegularExpression::escape(p);
    // A whole word: no letter, digit or underscore touching either end.
    if (query.mode == SearchMode::WholeWord) expr = "(?<![\\w])" + expr + "(?![\\w])";
    QRegularExpression::PatternOptions opts = QRegularExpression::UseUnicodePropertiesOption;
    if (!query.matchCase) opts |= QRegularExpression::CaseInsensitiveOption;
    QRegularExpression re(expr, opts);
    if (!re.isValid())
        return Status(ErrorCode::InvalidArgument, "the regular expression \"" + query.pattern + "\" is not valid: " +
                                                      re.errorString().toStdString() + " at character " +
                                                      std::to_string(re.patternErrorOffset() + 1));
    re.optimize();
    BookSearch s(std::move(re));
    s.m_expandGroups = query.mode == SearchMode::Regex;
    return s;
}

std::vector<SearchHit> BookSearch::findInText(const QString& text) const {
    std::vector<SearchHit> hits;
    int line = 1, lineStart = 0, counted = 0;  // line of position `counted`
    auto it = m_re.globalMatch(text);
    while (it.hasNext()) {
        const auto m = it.next();
        if (m.capturedLength() == 0) continue;  // an empty match ("a*") finds nothing to show or replace
        for (; counted < m.capturedStart(); ++counted)
            if (text[counted] == '\n') ++line, lineStart = counted + 1;
        SearchHit h;
        h.line = line;
        h.start = int(m.capturedStart());
        h.length = int(m.capturedLength());
        int lineEnd = int(text.indexOf('\n', h.start));
        if (lineEnd < 0) lineEnd = int(text.size());
        const int from = std::max(lineStart, h.start - 40), to = std::min(lineEnd, h.start + h.length + 40);
        h.context = ((from > lineStart ? QStringLiteral("…") : QString()) + text.mid(from, to - from) +
                     (to < lineEnd ? QStringLiteral("…") : QString()))
                        .toStdString();
        hits.push_back(std::move(h));
    }
    return hits;
}

QString BookSearch::expand(const QRegularExpressionMatch& m, const QString& replacement) const {
    if (!m_expandGroups) return replacement;
    QString out;
    for (int i = 0; i < replacement.size(); ++i) {
        const QChar c = replacement[i];
        if (c == '\\' && i + 1 < replacement.size()) {
            const QChar n = replacement[i + 1];
            if (n.isDigit() && n.digitValue() <= m.lastCapturedIndex()) {
                out += m.captured(n.digitValue());
                ++i;
                continue;
            }
            if (n == '\\') {
                out += '\\';
                ++i;
                continue;
            }
        }
        out += c;
    }
    return out;
}

QString BookSearch::replaceInText(const QString& text, const QString& replacement, int* count) const {
    QString out;
    int done = 0, n = 0;
    auto it = m_re.globalMatch(text);
    while (it.hasNext()) {
        const auto m = it.next();
        if (m.capturedLength() == 0) continue;
        out += QStringView(text).mid(done, m.capturedStart() - done);
        out += expand(m, replacement);
        done = int(m.capturedEnd());
        ++n;
    }
    out += QStringView(text).mid(done);
    if (count) *count = n;
    return out;
}

std::optional<QString> BookSearch::replacementAt(const QString& text, int start, const QString& replacement) const {
    auto it = m_re.globalMatch(text);
    while (it.hasNext()) {
        const auto m = it.next();
        if (m.capturedStart() > start) break;
        if (m.capturedStart() == start && m.capturedLength() > 0) return expand(m, replacement);
    }
    return std::nullopt;
}

Result<std::vector<SearchHit>> findInBook(ProjectStore& store, const SearchQuery& query, int limit,
                                          const std::atomic<bool>* cancel) {
    auto search = BookSearch::compile(query);
    if (!search) return search.status();
    auto texts = store.effectiveTexts();
    if (!texts) return texts.status();
    std::vector<SearchHit> out;
    for (const auto& t : *texts) {
        if (cancel && cancel->load()) return Status(ErrorCode::Cancelled, "search cancelled");
        for (auto& h : search->findInText(QString::fromStdString(t.text))) {
            h.pageId = t.pageId;
            h.sequence = t.sequence;
            out.push_back(std::move(h));
            if (limit > 0 && int(out.size()) >= limit) return out;
        }
    }
    return out;
}

Result<Replacement> replaceInBook(ProjectStore& store, const SearchQuery& query, const std::string& replacement,
                                  const std::vector<int64_t>& onlyPages) {
    auto search = BookSearch::compile(query);
    if (!search) return search.status();
    auto texts = store.effectiveTexts();
    if (!texts) return texts.status();
    const QString with = QString::fromStdString(replacement);
    std::vector<std::pair<int64_t, std::string>> edits;
    Replacement r;
    for (const auto& t : *texts) {
        if (!onlyPages.empty() && std::find(onlyPages.begin(), onlyPages.end(), t.pageId) == onlyPages.end()) continue;
        int n = 0;
        const QString changed = search->replaceInText(QString::fromStdString(t.text), with, &n);
        if (n == 0) continue;
        std::string text = changed.toStdString();
        if (text == t.text) continue;  // replaced by itself: nothing to store
        edits.emplace_back(t.pageId, std::move(text));
        r.pageIds.push_back(t.pageId);
        r.hits += n;
    }
    auto ids = store.addCorrections(edits);
    if (!ids) return ids.status();
    r.correctionIds = std::move(*ids);
    r.pages = int(r.correctionIds.size());
    return r;
}

}  // namespace quire
