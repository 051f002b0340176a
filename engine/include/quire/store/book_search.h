// Find and replace across the book: plain text, whole words or a regular expression, in each
// page's effective text (corrections win). A replacement is stored as one correction per page it
// changes, all in one transaction, so it can be undone by removing those corrections.
#pragma once

#include <QRegularExpression>
#include <QString>

#include <atomic>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "quire/core/status.h"
#include "quire/store/project_store.h"

namespace quire {

enum class SearchMode { Plain, WholeWord, Regex };

struct SearchQuery {
    std::string pattern;
    SearchMode mode = SearchMode::Plain;
    bool matchCase = false;
};

struct SearchHit {
    int64_t pageId = 0;
    int sequence = 0;  // the page's 1-based place in the book
    int line = 0;      // 1-based line of the page text
    int start = 0, length = 0;  // in UTF-16 code units of the page text (QString, QTextDocument positions)
    std::string context;  // the hit's line, at most ~80 characters around it
};

struct Replacement {
    std::vector<int64_t> correctionIds;  // one per changed page; removeCorrections undoes them
    std::vector<int64_t> pageIds;        // the changed pages, in book order
    int hits = 0;
    int pages = 0;
};

class BookSearch {
public:
    // Refuses an empty pattern or a regular expression that does not compile (the message says
    // where it fails).
    static Result<BookSearch> compile(const SearchQuery& query);

    std::vector<SearchHit> findInText(const QString& text) const;
    // `text` with every hit replaced; in regex mode \1..\9 in `replacement` stand for the
    // captured groups and \\ for a backslash. `count` receives the number of hits replaced.
    QString replaceInText(const QString& text, const QString& replacement, int* count = nullptr) const;
    // The replacement text for the hit that starts at `start` (as replaceInText would write it);
    // empty optional when no hit starts there.
    std::optional<QString> replacementAt(const QString& text, int start, const QString& replacement) const;

private:
    explicit BookSearch(QRegularExpression re) : m_re(std::move(re)) {}
    QString expand(const QRegularExpressionMatch& m, const QString& replacement) const;
    QRegularExpression m_re;
    bool m_expandGroups = false;
};

// Every hit in the book, in book order; stops at `limit` hits (0: no limit) or on `cancel`.
Result<std::vector<SearchHit>> findInBook(ProjectStore& store, const SearchQuery& query, int limit = 0,
                                          const std::atomic<bool>* cancel = nullptr);
// Replaces every hit in the book (only on the pages listed in `onlyPages`, when not empty).
Result<Replacement> replaceInBook(ProjectStore& store, const SearchQuery& query, const std::string& replacement,
                                  const std::vector<int64_t>& onlyPages = {});

}  // namespace quire
