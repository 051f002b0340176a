// Hand-drawn regions over the scan: their items, and the mouse and keys that edit them.
#include "region_layer.h"

#include <QBrush>
#include <QCoreApplication>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QKeyEvent>
#include <QMenu>
#include <QPen>

#include <algorithm>
#include <cmath>

namespace quire::ui {

namespace {

// Each kind its hue, strong enough to show on white, yellowed or grey paper.
QColor kindColor(RegionKind kind) {
    switch (kind) {
        case RegionKind::Text: return QColor(30, 90, 200);
        case RegionKind::Heading: return QColor(140, 40, 170);
        case RegionKind::MarginalNote: return QColor(200, 100, 0);
        case RegionKind::Table: return QColor(0, 130, 120);
        case RegionKind::Image: return QColor(40, 140, 40);
        case RegionKind::Ignore: return QColor(110, 110, 110);
    }
    return Qt::blue;
}

constexpr double kSmallest = 8;  // scene pixels: a smaller drag is a click, not a region
enum Edge { kLeft = 1, kRight = 2, kTop = 4, kBottom = 8 };

// `r` with the chosen edges moved by `d`.
QRectF resized(QRectF r, int edges, QPointF d) {
    if (edges & kLeft) r.setLeft(r.left() + d.x());
    if (edges & kRight) r.setRight(r.right() + d.x());
    if (edges & kTop) r.setTop(r.top() + d.y());
    if (edges & kBottom) r.setBottom(r.bottom() + d.y());
    return r.normalized();
}

}  // namespace

QString regionKindLabel(RegionKind kind) {
    switch (kind) {
        case RegionKind::Text: return QCoreApplication::translate("quire::ui::RegionLayer", "Text");
        case RegionKind::Heading: return QCoreApplication::translate("quire::ui::RegionLayer", "Heading");
        case RegionKind::MarginalNote: return QCoreApplication::translate("quire::ui::RegionLayer", "Marginal note");
        case RegionKind::Table: return QCoreApplication::translate("quire::ui::RegionLayer", "Table");
        case RegionKind::Image: return QCoreApplication::translate("quire::ui::RegionLayer", "Image");
        case RegionKind::Ignore: return QCoreApplication::translate("quire::ui::RegionLayer", "Ignore");
    }
    return {};
}

RegionLayer::RegionLayer(QGraphicsScene* scene, QWidget* menuParent)
    : QObject(menuParent), m_scene(scene), m_menuParent(menuParent) {}

void RegionLayer::setRegions(const std::vector<PageRegion>& regions, QPoint origin) {
    m_regions = regions;
    m_origin = origin;
    m_undo.clear();
    m_selected = -1;
    m_ordering = false;
    m_drag = Drag::None;
    redraw();
}

void RegionLayer::sceneCleared() {
    m_items.clear();
    m_rubber = nullptr;
}

QRectF RegionLayer::sceneRect(const PageRegion& r) const {
    return QRectF(r.box.x - m_origin.x(), r.box.y - m_origin.y(), r.box.w, r.box.h);
}

void RegionLayer::redraw() {
    for (QGraphicsItem* item : m_items) {
        m_scene->removeItem(item);
        delete item;
    }
    m_items.clear();
    for (size_t i = 0; i < m_regions.size(); ++i) {
        const PageRegion& r = m_regions[i];
        const QColor c = kindColor(r.kind);
        QPen pen(c, int(i) == m_selected ? 4 : 2, int(i) == m_selected ? Qt::DashLine : Qt::SolidLine);
        pen.setCosmetic(true);
        QColor fill = c;
        fill.setAlpha(r.kind == RegionKind::Ignore ? 60 : 25);
        QBrush brush(fill, r.kind == RegionKind::Ignore ? Qt::BDiagPattern : Qt::SolidPattern);
        auto* rect = m_scene->addRect(sceneRect(r), pen, brush);
        rect->setZValue(4);
        m_items.push_back(rect);
        // The label keeps its size at any zoom: "2 Heading".
        auto* label = m_scene->addSimpleText(QString("%1 %2").arg(i + 1).arg(regionKindLabel(r.kind)));
        label->setBrush(c);
        QFont f = label->font();
        f.setBold(true);
        f.setPointSize(11);
        label->setFont(f);
        label->setFlag(QGraphicsItem::ItemIgnoresTransformations);
        label->setPos(sceneRect(r).topLeft() + QPointF(4, 4));
        label->setZValue(5);
        m_items.push_back(label);
    }
}

int RegionLayer::regionAt(QPointF at) const {
    int best = -1;
    double bestArea = 0;
    for (size_t i = 0; i < m_regions.size(); ++i) {
        const QRectF r = sceneRect(m_regions[i]);
        if (!r.contains(at)) continue;
        if (best < 0 || r.width() * r.height() < bestArea) best = int(i), bestArea = r.width() * r.height();
    }
    return best;
}

int RegionLayer::edgeAt(QPointF at, double grip, int* edges) const {
    int best = -1;
    double bestDistance = grip;
    for (size_t i = 0; i < m_regions.size(); ++i) {
        const QRectF r = sceneRect(m_regions[i]);
        if (!r.adjusted(-grip, -grip, grip, grip).contains(at)) continue;
        const double dl = std::abs(at.x() - r.left()), dr = std::abs(at.x() - r.right());
        const double dt = std::abs(at.y() - r.top()), db = std::abs(at.y() - r.bottom());
        int e = 0;
        if (dl <= grip) e |= kLeft;
        else if (dr <= grip) e |= kRight;
        if (dt <= grip) e |= kTop;
        else if (db <= grip) e |= kBottom;
        const double d = std::min({dl, dr, dt, db});
        if (e && d <= bestDistance) best = int(i), bestDistance = d, *edges = e;
    }
    return best;
}

void RegionLayer::change(std::vector<PageRegion> regions) {
    m_undo.push_back(m_regions);
    m_regions = std::move(regions);
    if (m_selected >= int(m_regions.size())) m_selected = -1;
    redraw();
    emit regionsChanged(m_regions);
}

bool RegionLayer::undo() {
    if (m_undo.empty()) return false;
    m_regions = std::move(m_undo.back());
    m_undo.pop_back();
    m_selected = -1;
    redraw();
    emit regionsChanged(m_regions);
    return true;
}

void RegionLayer::startOrdering() {
    if (m_regions.size() < 2) {
        emit message(tr("Draw two regions or more to set their reading order."));
        return;
    }
    m_ordering = true;
    m_nextOrder = 0;
    emit message(tr("Click the regions in reading order (%1 to go).").arg(m_regions.size()));
}

void RegionLayer::setKind(int index, RegionKind kind) {
    if (index < 0 || index >= int(m_regions.size()) || m_regions[size_t(index)].kind == kind) return;
    auto next = m_regions;
    next[size_t(index)].kind = kind;
    change(std::move(next));
}

void RegionLayer::moveInOrder(int index, int to) {
    const int n = int(m_regions.size());
    if (index < 0 || index >= n || to < 0 || to >= n || to == index) return;
    auto next = m_regions;
    const PageRegion r = next[size_t(index)];
    next.erase(next.begin() + index);
    next.insert(next.begin() + to, r);
    if (m_selected == index) m_selected = to;
    change(std::move(next));
}

void RegionLayer::remove(int index) {
    if (index < 0 || index >= int(m_regions.size())) return;
    auto next = m_regions;
    next.erase(next.begin() + index);
    m_selected = -1;
    change(std::move(next));
}

void RegionLayer::clear() {
    if (!m_regions.empty()) change({});
}

bool RegionLayer::press(QPointF at, double grip) {
    const int hit = regionAt(at);
    if (m_ordering) {
        if (hit < 0) return true;
        // A region already numbered in this round keeps its number.
        if (hit >= m_nextOrder) {
            moveInOrder(hit, m_nextOrder);
            ++m_nextOrder;
        }
        if (m_nextOrder >= int(m_regions.size()) - 1) {
            m_ordering = false;
            emit message(tr("Reading order set."));
        } else {
            emit message(tr("Click the regions in reading order (%1 to go).").arg(int(m_regions.size()) - m_nextOrder));
        }
        return true;
    }
    m_dragStart = at;
    int edges = 0;
    if (const int edge = edgeAt(at, grip, &edges); edge >= 0) {
        m_selected = edge;
        m_edges = edges;
        m_drag = Drag::Resize;
        redraw();
        return true;
    }
    if (hit >= 0) {
        m_selected = hit;
        m_drag = Drag::Move;
        redraw();
        return true;
    }
    m_selected = -1;
    m_drag = Drag::Draw;
    redraw();
    QPen pen(kindColor(m_newKind), 2, Qt::DashLine);
    pen.setCosmetic(true);
    m_rubber = m_scene->addRect(QRectF(at, at), pen);
    m_rubber->setZValue(6);
    return true;
}

bool RegionLayer::move(QPointF at) {
    // Items 2i and 2i+1 are region i's rectangle and label (none while the scene is cleared).
    if (m_selected >= 0 && size_t(2 * m_selected + 1) >= m_items.size() && m_drag != Drag::Draw) return false;
    if (m_drag == Drag::Draw && m_rubber) {
        m_rubber->setRect(QRectF(m_dragStart, at).normalized());
        return true;
    }
    if (m_drag == Drag::Resize && m_selected >= 0) {
        auto* rect = static_cast<QGraphicsRectItem*>(m_items[size_t(2 * m_selected)]);
        rect->setRect(resized(sceneRect(m_regions[size_t(m_selected)]), m_edges, at - m_dragStart));
        return true;
    }
    if (m_drag == Drag::Move && m_selected >= 0) {
        const QPointF d = at - m_dragStart;
        m_items[size_t(2 * m_selected)]->setPos(d);
        m_items[size_t(2 * m_selected + 1)]->setPos(sceneRect(m_regions[size_t(m_selected)]).topLeft() + QPointF(4, 4) + d);
        return true;
    }
    return false;
}

bool RegionLayer::release(QPointF at) {
    const Drag drag = m_drag;
    m_drag = Drag::None;
    if (drag == Drag::Draw) {
        if (m_rubber) {
            m_scene->removeItem(m_rubber);
            delete m_rubber;
            m_rubber = nullptr;
        }
        const QRectF r = QRectF(m_dragStart, at).normalized();
        if (r.width() < kSmallest || r.height() < kSmallest) return true;
        PageRegion region;
        region.kind = m_newKind;
        region.box = {int(r.x()) + m_origin.x(), int(r.y()) + m_origin.y(), int(r.width()), int(r.height())};
        auto next = m_regions;
        next.push_back(region);
        m_selected = int(next.size()) - 1;
        change(std::move(next));
        return true;
    }
    if (drag == Drag::Resize && m_selected >= 0) {
        const QRectF r = resized(sceneRect(m_regions[size_t(m_selected)]), m_edges, at - m_dragStart);
        if (r.width() < kSmallest || r.height() < kSmallest || r == sceneRect(m_regions[size_t(m_selected)])) {
            redraw();
            return true;
        }
        auto next = m_regions;
        next[size_t(m_selected)].box = {int(r.x()) + m_origin.x(), int(r.y()) + m_origin.y(), int(r.width()), int(r.height())};
        change(std::move(next));
        return true;
    }
    if (drag == Drag::Move && m_selected >= 0) {
        const QPointF d = at - m_dragStart;
        if (std::abs(d.x()) < 2 && std::abs(d.y()) < 2) {
            redraw();
            return true;
        }
        auto next = m_regions;
        next[size_t(m_selected)].box.x += int(d.x());
        next[size_t(m_selected)].box.y += int(d.y());
        change(std::move(next));
        return true;
    }
    return false;
}

bool RegionLayer::key(QKeyEvent* e) {
    if ((e->key() == Qt::Key_Delete || e->key() == Qt::Key_Backspace) && m_selected >= 0) {
        remove(m_selected);
        return true;
    }
    if (e->matches(QKeySequence::Undo)) return undo() || true;
    if (e->key() == Qt::Key_Escape && m_ordering) {
        m_ordering = false;
        emit message(tr("Reading order left as it was clicked so far."));
        return true;
    }
    return false;
}

void RegionLayer::contextMenu(QPointF at, QPoint globalPos) {
    const int hit = regionAt(at);
    if (hit < 0) return;
    m_selected = hit;
    redraw();
    QMenu menu(m_menuParent);
    for (const RegionKind kind : allRegionKinds()) {
        QAction* a = menu.addAction(regionKindLabel(kind), this, [this, hit, kind] { setKind(hit, kind); });
        a->setCheckable(true);
        a->setChecked(m_regions[size_t(hit)].kind == kind);
    }
    menu.addSeparator();
    menu.addAction(tr("Read &Earlier"), this, [this, hit] { moveInOrder(hit, hit - 1); })->setEnabled(hit > 0);
    menu.addAction(tr("Read &Later"), this, [this, hit] { moveInOrder(hit, hit + 1); })
        ->setEnabled(hit + 1 < int(m_regions.size()));
    menu.addSeparator();
    menu.addAction(tr("Read This Region &Again…"), this, [this, hit] { emit readAgainAsked(hit); })
        ->setEnabled(regionIsRead(m_regions[size_t(hit)].kind));
    menu.addAction(tr("&Delete Region"), this, [this, hit] { remove(hit); });
    menu.exec(globalPos);
}

}  // namespace quire::ui
