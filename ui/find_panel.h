// Find and replace across the book: the query (plain, whole word, regular expression, case), a
// result list that jumps to the page and the words, replace one, replace all, and the undo of the
// last replace all (its corrections removed). The main window provides the store and the editor.
#pragma once

#include <QWidget>

#include <vector>

#include "quire/store/book_search.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace quire::ui {

class FindPanel : public QWidget {
    Q_OBJECT
public:
    explicit FindPanel(QWidget* parent = nullptr);

    void setStore(ProjectStore* store);  // nullptr when no project is open
    void focusQuery();

    // The programmatic surface the buttons use (and the tests).
    void setQuery(const QString& text, SearchMode mode, bool matchCase);
    void setReplacement(const QString& text);
    bool findAll();          // false with the reason shown when the query cannot run
    void activateHit(int i);  // jumps to hit i (emits hitActivated)
    bool replaceCurrent();   // the current hit, in the editor (its own undo); then the next hit
    bool replaceAll();       // every hit, stored as corrections; undoable with undoReplaceAll
    bool undoReplaceAll();
    const std::vector<SearchHit>& hits() const { return m_hits; }
    int currentHit() const { return m_current; }
    QString message() const;

signals:
    // Before a query reads the store: the editor saves what is pending.
    void aboutToSearch();
    void hitActivated(const quire::SearchHit& hit);
    // Replaces the hit shown in the editor with `text` (false when the editor no longer holds it).
    void replaceInEditor(const quire::SearchHit& hit, const QString& text, bool* done);
    // Pages changed in the store behind the editor's back (replace all, its undo).
    void pagesChanged(const std::vector<int64_t>& pageIds);

private:
    SearchQuery query() const;
    void showHits();
    void updateButtons();

    ProjectStore* m_store = nullptr;
    QLineEdit *m_find = nullptr, *m_replace = nullptr;
    QComboBox* m_mode = nullptr;
    QCheckBox* m_case = nullptr;
    QListWidget* m_list = nullptr;
    QLabel* m_status = nullptr;
    QPushButton *m_findAll = nullptr, *m_replaceOne = nullptr, *m_replaceAll = nullptr, *m_undo = nullptr;
    std::vector<SearchHit> m_hits;
    int m_current = -1;
    std::vector<int64_t> m_lastReplaceIds, m_lastReplacePages;
};

}  // namespace quire::ui
