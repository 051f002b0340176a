// The regions drawn by hand on the scan (page_region.h): shown over the page with their kind and
// place in the reading order, and, while the view is in region mode, drawn (drag on the page),
// moved (drag a region), resized (drag an edge or a corner), retyped and deleted (context menu,
// Delete), renumbered by clicking them in reading order, and undone (Ctrl+Z) — each change
// reported for the project to store.
#pragma once

#include <QObject>
#include <QPointF>
#include <QRectF>

#include <vector>

#include "quire/core/page_region.h"

class QGraphicsRectItem;
class QGraphicsScene;
class QGraphicsItem;
class QKeyEvent;
class QWidget;

namespace quire::ui {

class RegionLayer : public QObject {
    Q_OBJECT
public:
    RegionLayer(QGraphicsScene* scene, QWidget* menuParent);

    // A page's regions (page coordinates) with where the scan's (0,0) lies; the undo list restarts.
    void setRegions(const std::vector<PageRegion>& regions, QPoint origin);
    const std::vector<PageRegion>& regions() const { return m_regions; }
    // The scene was cleared (its items are gone): draw the regions again.
    void sceneCleared();
    void redraw();

    RegionKind newKind() const { return m_newKind; }
    void setNewKind(RegionKind kind) { m_newKind = kind; }
    // The next clicks on regions number them 1, 2, … in reading order (the rest follow in theirs).
    void startOrdering();
    bool ordering() const { return m_ordering; }
    int selected() const { return m_selected; }
    bool undo();

    // Mouse and keys in region mode, in scene coordinates; true when used. `grip`: how near (scene
    // units) an edge a press takes it to resize the region.
    bool press(QPointF at, double grip = 8);
    bool move(QPointF at);
    bool release(QPointF at);
    bool key(QKeyEvent* e);
    void contextMenu(QPointF at, QPoint globalPos);

    // One change, for a test or a menu: the region's kind; a region moved in the reading order.
    void setKind(int index, RegionKind kind);
    void moveInOrder(int index, int to);
    void remove(int index);
    void clear();  // every region (undoable)

signals:
    void regionsChanged(const std::vector<quire::PageRegion>& regions);
    void readAgainAsked(int index);  // "Read This Region Again…" in a region's menu
    void message(const QString& text);

private:
    int regionAt(QPointF at) const;
    // The region whose edges (a bit set of kLeft, kRight, kTop, kBottom) lie within `grip` of `at`.
    int edgeAt(QPointF at, double grip, int* edges) const;
    QRectF sceneRect(const PageRegion& r) const;
    void change(std::vector<PageRegion> regions);

    QGraphicsScene* m_scene;
    QWidget* m_menuParent;
    std::vector<PageRegion> m_regions;
    std::vector<std::vector<PageRegion>> m_undo;
    std::vector<QGraphicsItem*> m_items;
    QGraphicsRectItem* m_rubber = nullptr;
    QPoint m_origin;
    RegionKind m_newKind = RegionKind::Text;
    int m_selected = -1;
    enum class Drag { None, Draw, Move, Resize } m_drag = Drag::None;
    int m_edges = 0;
    QPointF m_dragStart;
    bool m_ordering = false;
    int m_nextOrder = 0;
};

// A kind's name for people, translated ("Marginal note").
QString regionKindLabel(RegionKind kind);

}  // namespace quire::ui
