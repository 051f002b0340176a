// Edit > Page History: the page's versions (the engine's readings, each correction), what changed
// from a version to the current text, and reverting to one (saved as a new correction).
#pragma once

#include <QDialog>

#include <vector>

#include "quire/store/page_history.h"

class QListWidget;
class QPushButton;
class QTextBrowser;

namespace quire::ui {

class PageHistoryDialog : public QDialog {
    Q_OBJECT
public:
    PageHistoryDialog(std::vector<PageVersion> versions, int pageNumber, QWidget* parent = nullptr);
    void selectVersion(int number);
    int chosenVersion() const { return m_chosen; }  // the version to revert to once accepted
    QString comparison() const;                     // the comparison shown (HTML)

private:
    void showComparison(int row);
    int currentIndex() const;  // the version that is the page's text now
    std::vector<PageVersion> m_versions;
    QListWidget* m_list;
    QTextBrowser* m_diff;
    QPushButton* m_revert;
    int m_chosen = -1;
};

// `before` → `after` word by word, as HTML: removed words struck through, added ones underlined.
QString diffHtml(const std::string& before, const std::string& after, const QPalette& palette);

}  // namespace quire::ui
