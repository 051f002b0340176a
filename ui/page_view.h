// The scan of the current page, zoomable and pannable, with line and word boxes drawn on top and
// low-confidence words tinted, and the regions drawn by hand (region_layer.h). Clicking a word box
// reports the word.
#pragma once

#include <QGraphicsView>
#include <QImage>

#include "quire/core/geometry.h"

class QGraphicsPixmapItem;
class QGraphicsRectItem;

namespace quire::ui {

class RegionLayer;

class PageView : public QGraphicsView {
    Q_OBJECT
public:
    enum class ZoomMode { FitWidth, FitPage, Custom };
    explicit PageView(QWidget* parent = nullptr);

    // `origin`: where the scan's (0,0) lies in the page's coordinate system (split spreads).
    void setPage(const QImage& scan, const PageText& words, QPoint origin, float lowConfidence);
    void clearPage(const QString& message = {});
    void highlightWord(int index);  // -1 clears
    int highlightedWord() const { return m_highlighted; }
    QGraphicsRectItem* wordItem(int i) const { return i >= 0 && i < int(m_wordItems.size()) ? m_wordItems[size_t(i)] : nullptr; }

    // The hand-drawn regions over the scan; in region mode the mouse edits them instead of panning.
    RegionLayer* regionLayer() const { return m_regionLayer; }
    void setRegionMode(bool on);
    bool regionMode() const { return m_regionMode; }

    void fitWidth();
    void fitPage();
    void actualSize();
    void zoomBy(double factor);
    double zoom() const;
    void setZoom(double zoom);
    ZoomMode zoomMode() const { return m_mode; }
    QPoint scrollPosition() const;
    void setScrollPosition(QPoint p);

signals:
    void wordClicked(int index);
    void zoomChanged(double zoom);

protected:
    void wheelEvent(QWheelEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    void keyPressEvent(QKeyEvent* e) override;
    bool event(QEvent* e) override;
    void contextMenuEvent(QContextMenuEvent* e) override;
    void resizeEvent(QResizeEvent* e) override;
    void changeEvent(QEvent* e) override;

private:
    void rebuildBoxes();
    void applyMode();
    QGraphicsPixmapItem* m_pixmap = nullptr;
    QGraphicsRectItem* m_highlight = nullptr;
    std::vector<QGraphicsRectItem*> m_wordItems;
    std::vector<quire::Box> m_wordBoxes;
    std::vector<float> m_wordConf;
    std::vector<quire::Box> m_lineBoxes;
    QPoint m_origin;
    RegionLayer* m_regionLayer = nullptr;
    bool m_regionMode = false;
    float m_lowConfidence = 60;
    int m_highlighted = -1;
    ZoomMode m_mode = ZoomMode::FitWidth;
};

}  // namespace quire::ui
