// The side-by-side editor: the current page's text, low-confidence words highlighted, spelling
// underlined (hunspell, in the project's language), every edit handed on for saving within a
// second. Words map to their boxes on the scan in both directions.
#pragma once

#include <QHash>
#include <QPlainTextEdit>
#include <QSyntaxHighlighter>
#include <QTimer>

#include <memory>

#include "quire/core/geometry.h"
#include "quire/text/dictionary.h"

class QAction;

namespace quire::ui {

class PageHighlighter;

class PageEditor : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit PageEditor(QWidget* parent = nullptr);
    ~PageEditor() override;

    // Loads a page: `text` is the effective text, `layout` the engine's words with boxes.
    void setPage(qint64 pageId, const QString& text, const PageText& layout, float lowConfidence);
    void clearPage();
    qint64 pageId() const { return m_pageId; }
    // Streamed text of a page still being written: pieces (token by token from the reader) are
    // appended; `pageComplete` brings the page's final text, which replaces them. Never over typing.
    void appendStreamed(qint64 pageId, const QString& chunk, bool pageComplete);
    // Every installed dictionary of the languages (English: American and British spellings both).
    void setSpellLanguage(const QString& tesseractLanguages);
    const QString& spellLanguage() const { return m_spellLanguages; }
    bool spellCheckAvailable() const { return m_dictionary.available(); }
    QStringList dictionaryNames() const;  // e.g. en_US, en_GB
    // The project's own words (names, old spellings), known to the spelling from now on.
    void setProjectWords(const std::vector<std::string>& words);
    // No dictionary knows the word, nor the project.
    bool isMisspelled(const QString& word) const;
    // The spelling entries of the context menu for the word at `position`: hunspell's suggestions
    // (each replaces the word) and "Add to Project Dictionary"; empty when the word is spelled right.
    QList<QAction*> spellingActions(int position, QObject* parent);

    // Saves now what is pending (page change, focus loss, close).
    void flush();
    // Typing not yet saved as a correction (flush saves it).
    bool hasUnsavedTyping() const { return m_pageId >= 0 && toPlainText() != m_savedText; }
    void selectWordWithBox(const quire::Box& box);
    // Selects the next word after the cursor that the engine was unsure of (below the
    // low-confidence mark) or that no dictionary knows, wrapping round; false if there is none.
    bool selectNextDoubtfulWord(bool wrap = true);
    // Whether a page's text has a word the engine was unsure of or no dictionary knows (for the
    // walk across the book, without loading the page).
    bool hasDoubtfulWord(const QString& text, const PageText& layout) const;
    // The aligned word under the cursor (box and confidence), if any.
    const Word* wordAtCursor() const;
    const PageText& alignedWords() const { return m_aligned; }

    static constexpr int kSaveDelayMs = 700;

signals:
    void correctionReady(qint64 pageId, const QString& text);
    void wordAddedToDictionary(const QString& word);
    void wordActivated(const quire::Box& box);

protected:
    void focusOutEvent(QFocusEvent* e) override;
    void contextMenuEvent(QContextMenuEvent* e) override;

private:
    void realign();
    int tokenIndexAt(int position) const;
    qint64 m_pageId = -1;
    QString m_savedText, m_lastText;
    PageText m_layout, m_aligned;
    float m_lowConfidence = 60;
    QTimer m_saveTimer, m_alignTimer;
    bool m_loading = false;
    QHash<qint64, QTextDocument*> m_documents;  // one per page visited, owned here
    QTextDocument* m_blank = nullptr;           // shown when no page is
    Dictionary m_dictionary;
    std::vector<std::string> m_projectWords;
    QString m_spellLanguages;
    void rebuildDictionary();
    PageHighlighter* m_highlighter = nullptr;
    friend class PageHighlighter;
};

class PageHighlighter : public QSyntaxHighlighter {
    Q_OBJECT
public:
    PageHighlighter(PageEditor* editor);

protected:
    void highlightBlock(const QString& text) override;

private:
    PageEditor* m_editor;
};

}  // namespace quire::ui
