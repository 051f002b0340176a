// Layout menu actions over the page view's region layer, and the layer's changes stored.
#include "region_tools.h"

#include <QAction>
#include <QActionGroup>
#include <QMenu>

#include "page_view.h"
#include "quire/store/page_regions.h"
#include "region_layer.h"

namespace quire::ui {

RegionTools::RegionTools(Context context, PageView* view, QWidget* parent)
    : QObject(parent), m_ctx(std::move(context)), m_view(view) {
    connect(m_view->regionLayer(), &RegionLayer::regionsChanged, this, &RegionTools::store);
    connect(m_view->regionLayer(), &RegionLayer::message, this, [this](const QString& m) { m_ctx.log(m); });
    connect(m_view->regionLayer(), &RegionLayer::readAgainAsked, this, [this](int index) {
        if (const int64_t id = m_ctx.shownPage(); id >= 0 && !m_ctx.running()) m_ctx.reread({id}, index);
    });
}

void RegionTools::addTo(QMenu* menu) {
    m_mode = menu->addAction(tr("Draw &Regions"));
    m_mode->setObjectName("regionModeAction");
    m_mode->setCheckable(true);
    m_mode->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    m_mode->setToolTip(tr("Drag on the scan to draw a region; drag a region to move it, its edge to resize it; right-click it to change its "
                          "kind or place in the reading order; Delete removes it, Ctrl+Z undoes"));
    connect(m_mode, &QAction::toggled, this, [this](bool on) {
        m_view->setRegionMode(on);
        refresh();
    });
    QMenu* kinds = menu->addMenu(tr("New Region &Kind"));
    m_kinds = new QActionGroup(this);
    for (const RegionKind kind : allRegionKinds()) {
        QAction* a = kinds->addAction(regionKindLabel(kind));
        a->setCheckable(true);
        a->setChecked(kind == RegionKind::Text);
        a->setObjectName(QString("regionKind-") + regionKindName(kind));
        m_kinds->addAction(a);
        connect(a, &QAction::triggered, this, [this, kind] { m_view->regionLayer()->setNewKind(kind); });
    }
    m_order = menu->addAction(tr("Set Reading &Order by Clicking"), this, [this] {
        if (!m_mode->isChecked()) m_mode->setChecked(true);
        m_view->regionLayer()->startOrdering();
    });
    m_order->setObjectName("regionOrderAction");
    m_clear = menu->addAction(tr("Remove the Page's Re&gions"), m_view->regionLayer(), &RegionLayer::clear);
    m_readIn = menu->addAction(tr("Read the Page in Its Regions…"), this, [this] {
        if (const int64_t id = m_ctx.shownPage(); id >= 0) m_ctx.reread({id}, -1);
    });
    m_readIn->setObjectName("regionReadAction");
    refresh();
}

void RegionTools::loadShownPage(QPoint origin) {
    std::vector<PageRegion> regions;
    ProjectStore* s = m_ctx.store();
    if (s && m_ctx.shownPage() >= 0) {
        auto r = pageRegions(*s, m_ctx.shownPage());
        if (r) regions = std::move(*r);
        else m_ctx.showError(tr("The page's regions cannot be read: %1").arg(QString::fromStdString(r.status().message())));
    }
    m_view->regionLayer()->setRegions(regions, origin);
    refresh();
}

void RegionTools::refresh() {
    if (!m_mode) return;
    ProjectStore* s = m_ctx.store();
    const bool editable = s && !s->readOnly() && m_ctx.shownPage() >= 0;
    if (!editable && m_mode->isChecked()) m_mode->setChecked(false);
    m_mode->setEnabled(editable);
    m_order->setEnabled(editable && m_view->regionLayer()->regions().size() >= 2);
    m_clear->setEnabled(editable && !m_view->regionLayer()->regions().empty());
    m_readIn->setEnabled(editable && !m_ctx.running());
}

void RegionTools::store(const std::vector<PageRegion>& regions) {
    ProjectStore* s = m_ctx.store();
    const int64_t id = m_ctx.shownPage();
    if (!s || id < 0) return;
    if (Status st = setPageRegions(*s, id, regions); !st) {
        m_ctx.showError(tr("The regions could not be saved: %1").arg(QString::fromStdString(st.message())));
        return;
    }
    m_ctx.log(regions.empty()
                  ? tr("Page %1: no regions; the engine finds its layout at the next reading.").arg(m_ctx.shownSequence())
                  : tr("Page %1: %n region(s) saved; Layout ▸ Read the Page in Its Regions reads it in them.", nullptr,
                       int(regions.size()))
                        .arg(m_ctx.shownSequence()));
    refresh();
}

}  // namespace quire::ui
