// The Layout menu: regions drawn by hand on the current page (region_layer.h) — the drawing mode,
// the kind of the next region, reading order by clicking, removing them all, and reading the page
// again in them (or one region alone, from its menu). Each change is stored in the project at
// once (page_regions.h).
#pragma once

#include <QObject>
#include <QPoint>

#include <functional>
#include <vector>

#include "quire/core/page_region.h"
#include "quire/store/project_store.h"

class QAction;
class QActionGroup;
class QMenu;

namespace quire::ui {

class PageView;

class RegionTools : public QObject {
    Q_OBJECT
public:
    // What the tools ask of their window: the open project (or null), the page shown (id -1: none)
    // and its place in the book, whether a run is reading, reading pages again, and where to say
    // what happened.
    struct Context {
        std::function<ProjectStore*()> store;
        std::function<int64_t()> shownPage;
        std::function<int()> shownSequence;
        std::function<bool()> running;
        std::function<void(const std::vector<int64_t>&, int region)> reread;  // region -1: the whole page
        std::function<void(const QString&)> showError;
        std::function<void(const QString&)> log;
    };
    RegionTools(Context context, PageView* view, QWidget* parent);

    void addTo(QMenu* menu);
    // The shown page's regions from the project, over its scan (`origin`: split spreads).
    void loadShownPage(QPoint origin);
    void refresh();

    QAction* modeAction() const { return m_mode; }

private:
    void store(const std::vector<PageRegion>& regions);

    Context m_ctx;
    PageView* m_view;
    QAction* m_mode = nullptr;
    QAction* m_order = nullptr;
    QAction* m_clear = nullptr;
    QAction* m_readIn = nullptr;
    QActionGroup* m_kinds = nullptr;
};

}  // namespace quire::ui
