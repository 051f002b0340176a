// The page browser's arrangement actions: turn, remove, move (also by dragging in the list), add
// scans after the current page, put back any removed page, and undo the last such change. Each change is stored in the
// project (page_arrangement.h), so Undo works after reopening it too.
#pragma once

#include <QObject>
#include <QStringList>

#include <functional>
#include <vector>

#include "quire/pipeline/transcriber.h"
#include "quire/store/page_arrangement.h"
#include "quire/store/project_store.h"

class QAction;
class QMenu;
class QWidget;

namespace quire::ui {

class PageArranger : public QObject {
    Q_OBJECT
public:
    // What the arranger asks of its window: the open project (or null), the chosen pages (ids in
    // book order) and the current page's place, whether a run is reading, the run's settings (for
    // opening added scans), and where to say what went wrong.
    struct Context {
        std::function<ProjectStore*()> store;
        std::function<std::vector<int64_t>()> chosenPages;
        std::function<int()> currentSequence;
        std::function<bool()> running;
        std::function<TranscribeParams()> params;
        std::function<void(const QString&)> showError;
        std::function<void()> flushEdits;  // the editor's text saved before pages change
    };
    PageArranger(Context context, QWidget* parent);

    // The actions, in a menu of their own; `list` also gets the ones that act on its selection
    // with the keyboard (Delete, moving) so they do not take the editor's keys.
    void addTo(QMenu* menu, QWidget* list);
    // Enables the actions for the project's state and names the change Undo would undo.
    void refresh();

    bool rotate(int clockwiseDegrees);
    bool removeChosen();
    // Before the page at book position `before` (the page count + 1: to the end).
    bool moveChosen(int before);
    bool move(const std::vector<int64_t>& pageIds, int before);  // pages dragged in the list
    bool moveChosenBy(int step);  // -1: up one page, +1: down one
    bool addScans(const QStringList& files);  // after the current page; the run that reads them follows
    bool undo();
    bool restore(int64_t pageId);  // a removed page, back where it stood

signals:
    // The book's pages changed; `chosen` are the pages the change was about (reselect them).
    void arranged(const QString& summary, const std::vector<int64_t>& chosen);
    void scansAdded();  // new pages are queued: a run should read them

private:
    bool ready();  // a writable project and no run reading
    // Says what changed (`note` added to the change's words) or what went wrong.
    bool done(const Result<ArrangementEdit>& edit, const std::vector<int64_t>& chosen, const QString& note = {});

    Context m_context;
    QWidget* m_parent;
    QMenu* m_restore = nullptr;  // the removed pages, filled when it opens
    QAction *m_clockwise = nullptr, *m_counter = nullptr, *m_half = nullptr, *m_remove = nullptr, *m_up = nullptr,
            *m_down = nullptr, *m_add = nullptr, *m_undo = nullptr;
};

}  // namespace quire::ui
