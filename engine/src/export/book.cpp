// The book from its pages: running heads, folios and footers found across pages, chapters,
// paragraphs joined across page breaks, line-end hyphens; corrections aligned to the layout.
#include "quire/export/book.h"
#include "quire/store/page_regions.h"

#include <QRegularExpression>
#include <QString>

#include <algorithm>
#include <sstream>

namespace quire {

namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

std::vector<std::vector<std::string>> splitParagraphs(const std::string& text) {
    std::vector<std::vector<std::string>> paras(1);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
        const size_t first = line.find_first_not_of(" \t");
        if (first == std::string::npos) {
            if (!paras.back().empty()) paras.emplace_back();
            continue;
        }
        paras.back().push_back(line.substr(first));
    }
    if (paras.back().empty()) paras.pop_back();
    return paras;
}

bool startsLower(const std::string& s) {
    const QString t = q(s).trimmed();
    for (const QChar c : t) {
        if (c.isLetter()) return c.isLower();
        if (c.isDigit()) return false;
    }
    return false;
}

bool endsSentence(const std::string& s) {
    const QString t = q(s).trimmed();
    if (t.isEmpty()) return true;
    static const QString enders = QStringLiteral(".!?:;\"”’')]»。！？」』");
    return enders.contains(t.back());
}

int wordCountOf(const std::string& s) {
    std::istringstream in(s);
    std::string w;
    int n = 0;
    while (in >> w) ++n;
    return n;
}

// Letters only, lower case: "CHAPTER II. 23" and "CHAPTER II 24" compare equal.
QString furnitureKey(const std::string& s) {
    QString out;
    for (const QChar c : q(s))
        if (c.isLetter()) out += c.toLower();
    return out;
}

double similarity(const QString& a, const QString& b) {
    if (a.isEmpty() || b.isEmpty()) return 0;
    const int n = int(a.size()), m = int(b.size());
    std::vector<int> prev(size_t(m) + 1), cur(size_t(m) + 1);
    for (int j = 0; j <= m; ++j) prev[size_t(j)] = j;
    for (int i = 1; i <= n; ++i) {
        cur[0] = i;
        for (int j = 1; j <= m; ++j)
            cur[size_t(j)] = std::min({prev[size_t(j)] + 1, cur[size_t(j - 1)] + 1,
                                       prev[size_t(j - 1)] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
    }
    return 1.0 - double(prev[size_t(m)]) / std::max(n, m);
}

const QRegularExpression& pageNumberRe() {
    static const QRegularExpression re(
        QStringLiteral(R"(^[\s\-–—\[\(]*(\d{1,4}|[ivxlcdmIVXLCDM]{1,7})[\s\-–—\]\)\.]*$)"));
    return re;
}
const QRegularExpression& edgeNumberRe() {
    static const QRegularExpression re(QStringLiteral(R"(^\s*(\d{1,4})\b|\b(\d{1,4})\s*$)"));
    return re;
}

// "12 NOTES ON RECORDS" or "CHAPTER TITLE 13": a running head even when it does not repeat.
bool capsWithNumber(const std::string& s) {
    if (!edgeNumberRe().match(q(s)).hasMatch()) return false;
    int letters = 0, upper = 0;
    for (const QChar c : q(s))
        if (c.isLetter()) ++letters, upper += c.isUpper();
    return letters >= 4 && upper >= letters * 0.9;
}

bool isShortLine(const std::string& s) { return wordCountOf(s) <= 10 && q(s).size() <= 80; }

const QRegularExpression& chapterRe() {
    static const QRegularExpression re(
        QStringLiteral(R"(^(chapter|book|part|section|canto|act|letter|kapitel|buch|teil)\b|^第.{1,6}[章节回卷部])"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}

struct Candidate {
    std::string line;
    QString key;
    bool isNumber = false;
};

Candidate candidateOf(const std::string& line) {
    Candidate c;
    // "CHAPTER II" repeats in form from chapter to chapter but is a heading, not furniture.
    if (chapterRe().match(q(line).trimmed()).hasMatch()) return c;
    c.line = line;
    c.key = furnitureKey(line);
    c.isNumber = pageNumberRe().match(q(line)).hasMatch();
    return c;
}

std::string extractNumber(const std::string& line) {
    auto m = pageNumberRe().match(q(line));
    if (m.hasMatch()) return m.captured(1).toStdString();
    auto e = edgeNumberRe().match(q(line));
    if (e.hasMatch()) return (e.captured(1).isEmpty() ? e.captured(2) : e.captured(1)).toStdString();
    return {};
}

bool looksLikeHeading(const std::vector<std::string>& para, double heightRatio, int* level) {
    const QRegularExpression& chapter = chapterRe();
    // "CHAPTER II" with its title on the next line or two is one heading.
    if (para.size() > 1 && para.size() <= 3 && wordCountOf(para[0]) <= 4 &&
        chapter.match(q(para[0]).trimmed()).hasMatch()) {
        bool shortLines = true;
        for (const auto& l : para) shortLines = shortLines && wordCountOf(l) <= 9 && !endsSentence(l + "x");
        if (shortLines) {
            *level = 1;
            return true;
        }
    }
    if (para.size() != 1) return false;
    const std::string& s = para[0];
    if (wordCountOf(s) > 9 || q(s).size() > 70) return false;
    const QString t = q(s).trimmed();
    if (t.isEmpty() || QStringLiteral(",;-").contains(t.back())) return false;
    int letters = 0, upper = 0;
    for (const QChar c : t)
        if (c.isLetter()) ++letters, upper += c.isUpper();
    const bool caps = letters >= 3 && upper == letters;
    if (chapter.match(t).hasMatch() || heightRatio >= 1.5) {
        *level = 1;
        return true;
    }
    if (caps && !t.endsWith('.')) {
        *level = 2;
        return true;
    }
    return false;
}

}  // namespace

std::string joinLines(const std::vector<std::string>& lines, const HyphenJudge* hyphens, std::vector<size_t>* starts) {
    static const QRegularExpression lastWord(QStringLiteral("([\\p{L}']+)\\W$")), firstWord(QStringLiteral("^([\\p{L}']+)"));
    QString out;
    for (size_t i = 0; i < lines.size(); ++i) {
        QString line = q(lines[i]).trimmed();
        if (i == 0) {
            out = line;
            if (starts) starts->push_back(0);
            continue;
        }
        if (endsWithHyphen(out.toStdString())) {
            // "hyphen-" + "ated": a broken word, the hyphen goes; "Anglo-" + "Saxon" and
            // "rudely-" + "constructed": compounds, the hyphen stays; either way no space.
            bool oneWord = startsLower(lines[i]);
            if (out.back() == QChar(0x00AD)) oneWord = true;  // a soft hyphen only ever breaks a word
            else if (oneWord && hyphens) {
                const auto a = lastWord.match(out), b = firstWord.match(line);
                if (a.hasMatch() && b.hasMatch()) oneWord = hyphens->isOneWord(a.captured(1), b.captured(1));
            }
            if (oneWord) out.chop(1);
            // The line starts inside a word: its place is after that word.
            const qsizetype wordEnd = line.indexOf(' ');
            if (starts) starts->push_back(size_t((out + line.left(wordEnd < 0 ? line.size() : wordEnd)).toUtf8().size()));
            out += line;
        } else {
            out += ' ';
            if (starts) starts->push_back(size_t(out.toUtf8().size()));
            out += line;
        }
    }
    return out.toStdString();
}

std::string pageCitation(const Book& book, int page) {
    if (page >= 0 && size_t(page) < book.furniture.size() && !book.furniture[size_t(page)].pageNumber.empty())
        return "p. " + book.furniture[size_t(page)].pageNumber;
    return "scan " + std::to_string(size_t(page) < book.sequences.size() ? book.sequences[size_t(page)] : page + 1);
}

std::string withPageMarks(const Book& book, const BookParagraph& p, const std::function<std::string(const std::string&)>& mark) {
    std::string out;
    size_t done = 0;
    for (const auto& s : p.pageStarts) {
        const size_t at = std::min(s.offset, p.text.size());
        out += p.text.substr(done, at - done);
        // A mark inside the text stands apart from the words: "… the [p. 12] hyphenated word".
        const std::string m = mark(pageCitation(book, s.page));
        if (at > 0 && out.back() != ' ') out += ' ';
        out += m;
        if (at < p.text.size() && p.text[at] != ' ') out += ' ';
        done = at;
    }
    return out + p.text.substr(done);
}

namespace {

// Running heads, footers and folios found across the pages' paragraphs (`paras`, one entry a
// page) and taken out of them, into `furniture` (one a page).
void takeFurniture(std::vector<std::vector<std::vector<std::string>>>& paras, std::vector<PageFurniture>& furniture) {
    const size_t n = paras.size();
    std::vector<Candidate> heads(n), foots(n);
    // Per page, the keys a running head (footer) elsewhere is compared with: the first (last) line,
    // and the line after (before) it where that one is a bare number.
    std::vector<std::vector<QString>> headKeys(n), footKeys(n);
    for (size_t i = 0; i < n; ++i) {
        if (paras[i].empty()) continue;
        std::vector<std::string> lines;
        for (const auto& p : paras[i]) lines.insert(lines.end(), p.begin(), p.end());
        const std::string& first = lines.front();
        const std::string& last = lines.back();
        if (isShortLine(first)) heads[i] = candidateOf(first);
        if (isShortLine(last) && lines.size() > 1) foots[i] = candidateOf(last);
        headKeys[i] = {heads[i].key};
        footKeys[i] = {foots[i].key};
        if (heads[i].isNumber && lines.size() > 1) headKeys[i].push_back(candidateOf(lines[1]).key);
        if (foots[i].isNumber && lines.size() > 1) footKeys[i].push_back(candidateOf(lines[lines.size() - 2]).key);
    }
    // A candidate is furniture when it is a bare page number, or when a similar line stands at the
    // same edge within two pages (running heads alternate between verso and recto).
    // Four pages either side: chapter openings without a running head interrupt the pattern.
    auto repeated = [&](const std::vector<std::vector<QString>>& keys, const Candidate& x, size_t i) {
        if (x.key.size() < 2) return false;
        for (size_t j = (i >= 4 ? i - 4 : 0); j <= std::min(n - 1, i + 4); ++j)
            for (const QString& k : keys[j])
                if (j != i && similarity(x.key, k) >= 0.7) return true;
        return false;
    };
    // A running head and its folio read as two lines ("COLLECTED LICENCES" over "212", or the folio
    // first): the line after the first piece of furniture is furniture too when it is the other kind.
    auto otherPiece = [&](const std::vector<std::vector<QString>>& keys, const Candidate& first, const std::string& line, size_t i) {
        if (!isShortLine(line)) return Candidate{};
        Candidate next = candidateOf(line);
        const bool piece = first.isNumber ? !next.isNumber && !next.line.empty() && repeated(keys, next, i)
                                          : next.isNumber;
        return piece ? next : Candidate{};
    };
    // A page's first (last) line taken out of its paragraphs, with the paragraph if it empties.
    auto dropFirstLine = [&](size_t i) {
        paras[i].front().erase(paras[i].front().begin());
        if (paras[i].front().empty()) paras[i].erase(paras[i].begin());
    };
    auto dropLastLine = [&](size_t i) {
        paras[i].back().pop_back();
        if (paras[i].back().empty()) paras[i].pop_back();
    };
    for (size_t i = 0; i < n; ++i) {
        if (paras[i].empty()) continue;
        const bool head = !heads[i].line.empty() &&
                          (heads[i].isNumber || repeated(headKeys, heads[i], i) || capsWithNumber(heads[i].line));
        if (head) {
            furniture[i].header = heads[i].line;
            furniture[i].pageNumber = extractNumber(heads[i].line);
            dropFirstLine(i);
            const Candidate more = paras[i].empty() ? Candidate{} : otherPiece(headKeys, heads[i], paras[i].front().front(), i);
            if (!more.line.empty()) {
                furniture[i].header += " " + more.line;
                furniture[i].pageNumber = extractNumber(more.isNumber ? more.line : heads[i].line);
                dropFirstLine(i);
            }
        }
        if (paras[i].empty()) continue;
        const std::string& last = paras[i].back().back();
        const bool foot = !foots[i].line.empty() && last == foots[i].line &&
                          (foots[i].isNumber || repeated(footKeys, foots[i], i));
        if (foot) {
            furniture[i].footer = foots[i].line;
            if (furniture[i].pageNumber.empty()) furniture[i].pageNumber = extractNumber(foots[i].line);
            dropLastLine(i);
            const Candidate more = paras[i].empty() ? Candidate{} : otherPiece(footKeys, foots[i], paras[i].back().back(), i);
            if (!more.line.empty()) {
                furniture[i].footer = more.line + " " + furniture[i].footer;
                if (more.isNumber) furniture[i].pageNumber = extractNumber(more.line);
                dropLastLine(i);
            }
        }
    }
}

}  // namespace

Book assembleBook(const std::vector<BookPageInput>& pages, const Dictionary* dictionary) {
    Book book;
    std::vector<std::string> texts;
    for (const auto& p : pages) texts.push_back(p.text);
    const HyphenJudge hyphens(texts, dictionary);
    const size_t n = pages.size();
    book.furniture.resize(n);
    for (size_t i = 0; i < n; ++i) book.sequences.push_back(pages[i].page.sequence > 0 ? pages[i].page.sequence : int(i) + 1);
    std::vector<std::vector<std::vector<std::string>>> paras(n);
    for (size_t i = 0; i < n; ++i) paras[i] = splitParagraphs(pages[i].text);
    takeFurniture(paras, book.furniture);
    // Median line height per page, for headings set in larger type.
    auto heightRatio = [&](size_t page, const std::string& line) {
        std::vector<int> hs;
        int mine = 0;
        for (const auto& l : pages[page].layout.lines) {
            hs.push_back(l.box.h);
            if (l.text() == line) mine = l.box.h;
        }
        if (hs.empty() || mine == 0) return 1.0;
        std::nth_element(hs.begin(), hs.begin() + long(hs.size() / 2), hs.end());
        return hs[hs.size() / 2] > 0 ? double(mine) / hs[hs.size() / 2] : 1.0;
    };
    // The kind of the hand-drawn region holding the page's layout line that reads `line` (text when none).
    auto drawnKind = [&](size_t page, const std::string& line) {
        if (pages[page].regions.empty()) return RegionKind::Text;
        for (const auto& l : pages[page].layout.lines)
            if (l.text() == line) {
                const int r = readRegionAt(l.box, pages[page].regions);
                return r >= 0 ? pages[page].regions[size_t(r)].kind : RegionKind::Text;
            }
        return RegionKind::Text;
    };
    std::vector<std::string> pendingLines;  // paragraph under construction (may span pages)
    std::vector<std::vector<int>> pendingStarts;  // per pending line: the pages whose body it begins
    int pendingFirst = 0;
    // A paragraph from `lines`; `marks[k]` lists the pages whose body begins with line k. Pages with
    // no body text (blank, furniture only) are marked with the next page that has some.
    std::vector<int> unmarked;
    auto paragraph = [&](const std::vector<std::string>& lines, const std::vector<std::vector<int>>& marks, int level,
                         int first, int last) {
        BookParagraph bp{{}, level, first, last, {}};
        std::vector<size_t> starts;
        bp.text = joinLines(lines, &hyphens, &starts);
        for (size_t k = 0; k < marks.size() && k < starts.size(); ++k)
            for (int page : marks[k]) bp.pageStarts.push_back({starts[k], page});
        book.paragraphs.push_back(std::move(bp));
    };
    auto flush = [&](int lastPage) {
        if (pendingLines.empty()) return;
        paragraph(pendingLines, pendingStarts, 0, pendingFirst, lastPage);
        pendingLines.clear();
        pendingStarts.clear();
    };
    int lastPage = 0;
    for (size_t i = 0; i < n; ++i) {
        if (paras[i].empty()) unmarked.push_back(int(i));
        for (size_t p = 0; p < paras[i].size(); ++p) {
            const auto& para = paras[i][p];
            std::vector<std::vector<int>> marks(para.size());
            if (p == 0) {
                marks[0] = std::move(unmarked);
                unmarked.clear();
                marks[0].push_back(int(i));
            }
            int level = 0;
            // A paragraph in a region drawn as a heading or a marginal note is one, whatever it looks like.
            const RegionKind drawn = drawnKind(i, para[0]);
            if (drawn == RegionKind::MarginalNote) {
                flush(lastPage);
                paragraph(para, marks, 0, int(i), int(i));
                book.paragraphs.back().marginalNote = true;
                lastPage = int(i);
                continue;
            }
            if (drawn == RegionKind::Heading && !looksLikeHeading(para, heightRatio(i, para[0]), &level)) level = 2;
            if (drawn == RegionKind::Heading || looksLikeHeading(para, heightRatio(i, para[0]), &level)) {
                flush(lastPage);
                paragraph(para, marks, level, int(i), int(i));
                lastPage = int(i);
                continue;
            }
            // Across a page break a paragraph continues unless the last one clearly ended; inside a
            // page, only an unfinished sentence running into a lower-case start is joined (a
            // recognizer sometimes splits a paragraph's last line off).
            const std::string& prev = pendingLines.empty() ? std::string() : pendingLines.back();
            const bool continues =
                !pendingLines.empty() &&
                (p == 0 ? (endsWithHyphen(prev) || !endsSentence(prev) || startsLower(para[0]))
                        : ((endsWithHyphen(prev) || !endsSentence(prev)) && startsLower(para[0])));
            if (!continues) {
                flush(lastPage);
                pendingFirst = int(i);
            }
            pendingLines.insert(pendingLines.end(), para.begin(), para.end());
            pendingStarts.insert(pendingStarts.end(), marks.begin(), marks.end());
            lastPage = int(i);
        }
    }
    flush(lastPage);
    return book;
}

PageText alignCorrection(const PageText& layout, const std::string& corrected) {
    struct Ref {
        const Word* word;
    };
    std::vector<const Word*> ocr;
    for (const auto& l : layout.lines)
        for (const auto& w : l.words) ocr.push_back(&w);
    struct Tok {
        std::string text;
        int line, para;
    };
    std::vector<Tok> toks;
    const auto paras = splitParagraphs(corrected);
    int lineNo = 0;
    for (size_t p = 0; p < paras.size(); ++p)
        for (const auto& line : paras[p]) {
            std::istringstream in(line);
            std::string w;
            while (in >> w) toks.push_back({w, lineNo, int(p)});
            ++lineNo;
        }
    // Word-level edit-distance alignment.
    const size_t n = toks.size(), m = ocr.size();
    std::vector<std::vector<int>> dp(n + 1, std::vector<int>(m + 1));
    for (size_t i = 0; i <= n; ++i) dp[i][0] = int(i);
    for (size_t j = 0; j <= m; ++j) dp[0][j] = int(j);
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j)
            dp[i][j] = std::min({dp[i - 1][j] + 1, dp[i][j - 1] + 1,
                                 dp[i - 1][j - 1] + (toks[i - 1].text == ocr[j - 1]->text ? 0 : 1)});
    std::vector<const Word*> match(n, nullptr);
    for (size_t i = n, j = m; i > 0 || j > 0;) {
        if (i > 0 && j > 0 && dp[i][j] == dp[i - 1][j - 1] + (toks[i - 1].text == ocr[j - 1]->text ? 0 : 1)) {
            match[i - 1] = ocr[j - 1];
            --i, --j;
        } else if (i > 0 && dp[i][j] == dp[i - 1][j] + 1) {
            --i;
        } else {
            --j;
        }
    }
    PageText out;
    out.width = layout.width, out.height = layout.height, out.dpi = layout.dpi;
    out.engine = layout.engine, out.engineVersion = layout.engineVersion, out.language = layout.language;
    for (size_t i = 0; i < n; ++i) {
        if (out.lines.empty() || i == 0 || toks[i].line != toks[i - 1].line) {
            Line l;
            l.paragraph = toks[i].para;
            out.lines.push_back(l);
        }
        Word w;
        w.text = toks[i].text;
        if (match[i]) {
            w.box = match[i]->box;
            w.confidence = match[i]->text == w.text ? match[i]->confidence : 100.0f;
        } else {
            w.confidence = 100.0f;  // typed by the user
            // An inserted word sits just after its predecessor on the line.
            if (!out.lines.back().words.empty()) {
                const Box& prev = out.lines.back().words.back().box;
                w.box = {prev.right() + 1, prev.y, std::max(1, prev.h / 2 * int(q(w.text).size())), prev.h};
            }
        }
        out.lines.back().words.push_back(std::move(w));
    }
    for (auto& l : out.lines)
        for (const auto& w : l.words) l.box = l.box.united(w.box);
    return out;
}

bool isSpeck(const Word& w) {
    if (w.confidence >= kSpeckConfidence) return false;
    for (const QChar c : q(w.text))
        if (c.isLetterOrNumber()) return false;
    return true;
}

bool dropSpecks(PageText& layout) {
    bool dropped = false;
    for (auto& line : layout.lines) {
        const size_t before = line.words.size();
        std::erase_if(line.words, isSpeck);
        dropped |= line.words.size() != before;
    }
    std::erase_if(layout.lines, [](const Line& l) { return l.words.empty(); });
    return dropped;
}

Result<std::vector<BookPageInput>> loadBookPages(ProjectStore& store) {
    auto pages = store.pages();
    if (!pages) return pages.status();
    auto regions = allPageRegions(store);
    if (!regions) return regions.status();
    std::vector<BookPageInput> out;
    out.reserve(pages->size());
    for (auto& p : *pages) {
        BookPageInput in;
        auto text = store.effectiveText(p.id);
        if (!text) return text.status();
        auto layout = store.layout(p.id);
        if (!layout) return layout.status();
        in.text = std::move(*text);
        in.layout = std::move(*layout);
        if (p.corrected) in.layout = alignCorrection(in.layout, in.text);
        // The engine's specks leave the body; a page the user corrected is theirs, as typed.
        else if (dropSpecks(in.layout)) in.text = in.layout.plainText();
        if (const auto r = regions->find(p.id); r != regions->end()) in.regions = r->second;
        in.page = std::move(p);
        out.push_back(std::move(in));
    }
    return out;
}

}  // namespace quire
