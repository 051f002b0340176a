// The page's text editor: word ↔ box links, low-confidence tint, spelling, corrections saved as typed.
#include "page_editor.h"

#include <QAction>
#include <QContextMenuEvent>
#include <QMenu>
#include <QRegularExpression>
#include <QTextBlock>

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
    m_blank = new QTextDocument(this);
    m_blank->setDocumentLayout(new QPlainTextDocumentLayout(m_blank));
    setDocument(m_blank);
    m_highlighter = new PageHighlighter(this);
}

PageEditor::~PageEditor() = default;

void PageEditor::setSpellLanguage(const QString& tesseractLanguages) {
    m_spellLanguages = tesseractLanguages;
    rebuildDictionary();
}

void PageEditor::rebuildDictionary() {
    m_dictionary = Dictionary::forLanguages(m_spellLanguages.toStdString());
    for (const auto& w : m_projectWords) m_dictionary.addWord(w);
    m_highlighter->rehighlight();
}

QStringList PageEditor::dictionaryNames() const {
    QStringList out;
    for (const auto& n : m_dictionary.loaded()) out << QString::fromStdString(n);
    return out;
}

void PageEditor::setProjectWords(const std::vector<std::string>& words) {
    m_projectWords = words;
    rebuildDictionary();  // the last project's words go
}

bool PageEditor::isMisspelled(const QString& word) const {
    if (!m_dictionary.available() || word.isEmpty()) return false;
    return !m_dictionary.knows(word.toStdString());
}

void PageEditor::setPage(qint64 pageId, const QString& text, const PageText& layout, float lowConfidence) {
    flush();
    m_loading = true;
    m_pageId = pageId;
    m_layout = layout;
    m_lowConfidence = lowConfidence;
    m_savedText = text;
    m_lastText = text;
    // Each page keeps its own document while the project is open, so its undo history survives
    // visits to other pages; a page whose text changed elsewhere (replace, revert) starts afresh.
    QTextDocument* doc = m_documents.value(pageId);
    if (!doc || doc->toPlainText() != text) {
        if (doc && document() == doc) {
            setDocument(m_blank);
            m_highlighter->setDocument(m_blank);
        }
        delete doc;
        doc = new QTextDocument(this);
        doc->setDocumentLayout(new QPlainTextDocumentLayout(doc));
        doc->setDefaultFont(font());
        doc->setPlainText(text);
        doc->clearUndoRedoStacks();
        m_documents.insert(pageId, doc);
    }
    if (document() != doc) {
        setDocument(doc);
        m_highlighter->setDocument(doc);
    }
    moveCursor(QTextCursor::Start);
    m_loading = false;
    realign();
}

void PageEditor::clearPage() {
    flush();
    m_loading = true;
    // No page: the pages' documents (and their undo) go with the project.
    setDocument(m_blank);
    m_highlighter->setDocument(m_blank);
    qDeleteAll(m_documents);
    m_documents.clear();
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

QList<QAction*> PageEditor::spellingActions(int position, QObject* parent) {
    QList<QAction*> out;
    const QString text = toPlainText();
    const int t = tokenIndexAt(position);
    if (t < 0 || isReadOnly()) return out;
    const Token tok = tokens(text)[size_t(t)];
    // The word inside the token: from its first letter to its last (quotes, commas left alone).
    const QString token = text.mid(tok.start, tok.length);
    static const QRegularExpression letters(QStringLiteral("\\p{L}[\\p{L}'’-]*\\p{L}|\\p{L}"));
    const auto m = letters.match(token);
    if (!m.hasMatch() || m.captured(0).endsWith('-')) return out;  // a word broken at the line end: checked whole
    const QString word = m.captured(0);
    if (!isMisspelled(word)) return out;
    const int start = tok.start + int(m.capturedStart()), length = int(m.capturedLength());
    for (const auto& s : m_dictionary.suggestions(word.toStdString(), 6)) {
        const QString suggestion = QString::fromStdString(s);
        auto* a = new QAction(suggestion, parent);
        connect(a, &QAction::triggered, this, [this, start, length, word, suggestion] {
            if (toPlainText().mid(start, length) != word) return;  // the text moved since the menu opened
            QTextCursor c(document());
            c.setPosition(start);
            c.setPosition(start + length, QTextCursor::KeepAnchor);
            c.insertText(suggestion);
        });
        out << a;
    }
    if (out.isEmpty()) {
        auto* none = new QAction(tr("No suggestions"), parent);
        none->setEnabled(false);
        out << none;
    }
    auto* add = new QAction(tr("Add “%1” to the Project Dictionary").arg(word), parent);
    add->setObjectName("addToDictionary");
    connect(add, &QAction::triggered, this, [this, word] {
        m_projectWords.push_back(word.toStdString());
        m_dictionary.addWord(word.toStdString());
        m_highlighter->rehighlight();
        emit wordAddedToDictionary(word);
    });
    out << add;
    return out;
}

void PageEditor::contextMenuEvent(QContextMenuEvent* e) {
    std::unique_ptr<QMenu> menu(createStandardContextMenu(e->pos()));
    const QList<QAction*> spelling = spellingActions(cursorForPosition(e->pos()).position(), menu.get());
    if (!spelling.isEmpty()) {
        QAction* first = menu->actions().value(0);
        menu->insertActions(first, spelling);
        menu->insertSeparator(first);
    }
    menu->exec(e->globalPos());
}

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

bool PageEditor::hasDoubtfulWord(const QString& text, const PageText& layout) const {
    const PageText aligned = alignCorrection(layout, text.toStdString());
    for (const auto& l : aligned.lines)
        for (const auto& w : l.words)
            if (w.confidence < m_lowConfidence) return true;
    for (const auto& t : tokens(text))
        if (isMisspelled(bareWord(text.mid(t.start, t.length)))) return true;
    return false;
}

bool PageEditor::selectNextDoubtfulWord(bool wrap) {
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
        if (!wrap && start + k >= toks.size()) break;
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
