// The page's text editor: word ↔ box links, low-confidence tint, spelling, corrections saved as typed.
#include "page_editor.h"

#include <QFileInfo>
#include <QRegularExpression>
#include <QTextBlock>

#include <hunspell/hunspell.hxx>

#include "palette_colors.h"
#include "quire/export/book.h"

namespace quire::ui {

PageEditor::PageEditor(QWidget* parent) : QPlainTextEdit(parent) {
    setLineWrapMode(QPlainTextEdit::WidgetWidth);
    m_saveTimer.setSingleShot(true);
    m_saveTimer.setInterval(kSaveDelayMs);
    m_alignTimer.setSingleShot(true);
    m_alignTimer.setInterval(150);
    connect(&m_saveTimer, &QTimer::timeout, this, &PageEditor::flush);
    connect(&m_alignTimer, &QTimer::timeout, this, &PageEditor::realign);
    connect(this, &QPlainTextEdit::textChanged, this, [this] {
        if (m_loading || m_pageId < 0) return;
        // Re-highlighting also signals textChanged; only a change of the text itself counts, else
        // highlighting would keep postponing the save.
        const QString now = toPlainText();
        if (now == m_lastText) return;
        m_lastText = now;
        m_saveTimer.start();
        m_alignTimer.start();
    });
    connect(this, &QPlainTextEdit::cursorPositionChanged, this, [this] {
        if (const Word* w = wordAtCursor(); w && !w->box.empty()) emit wordActivated(w->box);
    });
    m_highlighter = new PageHighlighter(this);
}

PageEditor::~PageEditor() = default;

void PageEditor::setSpellLanguage(const QString& tesseractLanguages) {
    m_dictionaries.clear();
    static const QHash<QString, QStringList> dicts = {
        {"eng", {"en_US", "en_GB"}}, {"deu", {"de_DE"}}, {"frk", {"de_DE"}}, {"fra", {"fr_FR", "fr"}},
        {"spa", {"es_ES", "es"}},    {"ita", {"it_IT"}}};
    for (const QString& lang : tesseractLanguages.split('+', Qt::SkipEmptyParts)) {
        for (const QString& d : dicts.value(lang)) {
            const QString base = "/usr/share/hunspell/" + d;
            if (QFileInfo::exists(base + ".aff") && QFileInfo::exists(base + ".dic"))
                m_dictionaries.push_back(std::make_unique<Hunspell>((base + ".aff").toLocal8Bit().constData(),
                                                                    (base + ".dic").toLocal8Bit().constData()));
        }
    }
    m_highlighter->rehighlight();
}

bool PageEditor::isMisspelled(const QString& word) const {
    if (m_dictionaries.empty() || word.isEmpty()) return false;
    const std::string w = word.toStdString();
    for (const auto& d : m_dictionaries)
        if (d->spell(w)) return false;
    return true;
}

void PageEditor::setPage(qint64 pageId, const QString& text, const PageText& layout, float lowConfidence) {
    flush();
    m_loading = true;
    m_pageId = pageId;
    m_layout = layout;
    m_lowConfidence = lowConfidence;
    m_savedText = text;
    m_lastText = text;
    setPlainText(text);
    document()->clearUndoRedoStacks();
    m_loading = false;
    realign();
}

void PageEditor::clearPage() {
    flush();
    m_loading = true;
    m_pageId = -1;
    m_layout = {};
    m_aligned = {};
    m_savedText.clear();
    m_lastText.clear();
    setPlainText({});
    m_loading = false;
}

void PageEditor::appendStreamed(qint64 pageId, const QString& chunk, bool pageComplete) {
    if (pageId != m_pageId) return;
    // Streaming only fills a page nobody has typed into.
    if (toPlainText() != m_savedText) return;
    m_loading = true;
    if (pageComplete) {
        setPlainText(chunk);  // the page's final text replaces what streamed in token by token
    } else {
        moveCursor(QTextCursor::End);
        insertPlainText(chunk);
    }
    m_savedText = toPlainText();
    m_lastText = m_savedText;
    m_loading = false;
    if (pageComplete) realign();
}

void PageEditor::flush() {
    m_saveTimer.stop();
    if (m_pageId < 0) return;
    const QString text = toPlainText();
    if (text == m_savedText) return;
    m_savedText = text;
    emit correctionReady(m_pageId, text);
}

void PageEditor::focusOutEvent(QFocusEvent* e) {
    flush();
    QPlainTextEdit::focusOutEvent(e);
}

void PageEditor::realign() {
    m_aligned = alignCorrection(m_layout, toPlainText().toStdString());
    m_highlighter->rehighlight();
}

namespace {
struct Token {
    int start, length;
};
std::vector<Token> tokens(const QString& text) {
    std::vector<Token> out;
    static const QRegularExpression re(QStringLiteral("\\S+"));
    for (auto it = re.globalMatch(text); it.hasNext();) {
        const auto m = it.next();
        out.push_back({int(m.capturedStart()), int(m.capturedLength())});
    }
    return out;
}
// A token as the dictionaries see it: letters, apostrophes and hyphens only.
QString bareWord(QString token) {
    static const QRegularExpression notInWords(QStringLiteral("[^\\p{L}'’-]"));
    return token.remove(notInWords);
}
}  // namespace

int PageEditor::tokenIndexAt(int position) const {
    const auto toks = tokens(toPlainText());
    for (size_t i = 0; i < toks.size(); ++i)
        if (position >= toks[i].start && position <= toks[i].start + toks[i].length) return int(i);
    return -1;
}

const Word* PageEditor::wordAtCursor() const {
    const int t = tokenIndexAt(textCursor().position());
    if (t < 0) return nullptr;
    int i = 0;
    for (const auto& l : m_aligned.lines)
        for (const auto& w : l.words)
            if (i++ == t) return &w;
    return nullptr;
}

bool PageEditor::selectNextDoubtfulWord() {
    const QString text = toPlainText();
    const auto toks = tokens(text);
    std::vector<float> confidence;
    for (const auto& l : m_aligned.lines)
        for (const auto& w : l.words) confidence.push_back(w.confidence);
    auto doubtful = [&](size_t i) {
        if (i < confidence.size() && confidence[i] < m_lowConfidence) return true;
        return isMisspelled(bareWord(text.mid(toks[i].start, toks[i].length)));
    };
    const int from = textCursor().selectionEnd();
    size_t start = 0;
    while (start < toks.size() && toks[start].start < from) ++start;
    for (size_t k = 0; k < toks.size(); ++k) {
        const size_t i = (start + k) % toks.size();
        if (!doubtful(i)) continue;
        QTextCursor c = textCursor();
        c.setPosition(toks[i].start);
        c.setPosition(toks[i].start + toks[i].length, QTextCursor::KeepAnchor);
        setTextCursor(c);
        ensureCursorVisible();
        return true;
    }
    return false;
}

void PageEditor::selectWordWithBox(const quire::Box& box) {
    int i = 0;
    const auto toks = tokens(toPlainText());
    for (const auto& l : m_aligned.lines)
        for (const auto& w : l.words) {
            if (w.box.x == box.x && w.box.y == box.y && w.box.w == box.w && w.box.h == box.h && i < int(toks.size())) {
                QTextCursor c = textCursor();
                c.setPosition(toks[size_t(i)].start);
                c.setPosition(toks[size_t(i)].start + toks[size_t(i)].length, QTextCursor::KeepAnchor);
                setTextCursor(c);
                ensureCursorVisible();
                return;
            }
            ++i;
        }
}

PageHighlighter::PageHighlighter(PageEditor* editor) : QSyntaxHighlighter(editor->document()), m_editor(editor) {}

void PageHighlighter::highlightBlock(const QString& text) {
    // Token index of this block's first word: count the tokens of the blocks before it.
    int first = 0;
    for (QTextBlock b = currentBlock().previous(); b.isValid(); b = b.previous()) first += int(tokens(b.text()).size());
    std::vector<const Word*> words;
    for (const auto& l : m_editor->m_aligned.lines)
        for (const auto& w : l.words) words.push_back(&w);
    QTextCharFormat low;
    low.setBackground(lowConfidenceColor(m_editor->palette()));
    QTextCharFormat spell;
    spell.setUnderlineStyle(QTextCharFormat::SpellCheckUnderline);
    spell.setUnderlineColor(QColor(220, 40, 40));
    const auto toks = tokens(text);
    // A word broken at a line end ("possess-" / "ing") is checked whole, on both lines.
    auto brokenAtEnd = [](const QString& w) { return w.size() > 1 && (w.endsWith('-') || w.endsWith(QChar(0x00AD))); };
    const QTextBlock prev = currentBlock().previous(), next = currentBlock().next();
    QString prevLast, nextFirst;
    if (prev.isValid())
        if (const auto t = tokens(prev.text()); !t.empty()) prevLast = bareWord(prev.text().mid(t.back().start, t.back().length));
    if (next.isValid())
        if (const auto t = tokens(next.text()); !t.empty()) nextFirst = bareWord(next.text().mid(t.front().start, t.front().length));
    for (size_t i = 0; i < toks.size(); ++i) {
        const size_t wi = size_t(first) + i;
        if (wi < words.size() && words[wi]->confidence < m_editor->m_lowConfidence)
            setFormat(toks[i].start, toks[i].length, low);
        QString bare = bareWord(text.mid(toks[i].start, toks[i].length));
        if (i == 0 && brokenAtEnd(prevLast)) bare = prevLast.chopped(1) + bare;
        else if (i + 1 == toks.size() && brokenAtEnd(bare) && !nextFirst.isEmpty()) bare = bare.chopped(1) + nextFirst;
        if (m_editor->isMisspelled(bare)) {
            QTextCharFormat f = format(toks[i].start);
            f.setUnderlineStyle(QTextCharFormat::SpellCheckUnderline);
            f.setUnderlineColor(QColor(220, 40, 40));
            setFormat(toks[i].start, toks[i].length, f);
        }
    }
}

}  // namespace quire::ui
