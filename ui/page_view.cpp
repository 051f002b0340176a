// The scan view: zoom, pan, and the line and word boxes drawn over the page.
#include "page_view.h"

#include <QContextMenuEvent>
#include <QEvent>
#include <QKeyEvent>
#include <QGraphicsPixmapItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QMouseEvent>
#include <QScrollBar>
#include <QWheelEvent>

#include "palette_colors.h"
#include "region_layer.h"

namespace quire::ui {

PageView::PageView(QWidget* parent) : QGraphicsView(parent) {
    setScene(new QGraphicsScene(this));
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setRenderHints(QPainter::SmoothPixmapTransform | QPainter::Antialiasing);
    setBackgroundRole(QPalette::Dark);
    m_regionLayer = new RegionLayer(scene(), this);
}

void PageView::setRegionMode(bool on) {
    m_regionMode = on;
    setDragMode(on ? QGraphicsView::NoDrag : QGraphicsView::ScrollHandDrag);
    viewport()->setCursor(on ? Qt::CrossCursor : Qt::OpenHandCursor);
    if (on) setFocus();
}

void PageView::setPage(const QImage& scan, const PageText& words, QPoint origin, float lowConfidence) {
    scene()->clear();
    m_regionLayer->sceneCleared();
    m_wordItems.clear();
    m_highlight = nullptr;
    m_highlighted = -1;
    m_origin = origin;
    m_lowConfidence = lowConfidence;
    m_wordBoxes.clear();
    m_wordConf.clear();
    m_lineBoxes.clear();
    for (const auto& l : words.lines) {
        m_lineBoxes.push_back(l.box);
        for (const auto& w : l.words) {
            m_wordBoxes.push_back(w.box);
            m_wordConf.push_back(w.confidence);
        }
    }
    QPixmap pm = QPixmap::fromImage(scan);
    m_pixmap = scene()->addPixmap(pm);
    m_pixmap->setTransformationMode(Qt::SmoothTransformation);
    scene()->setSceneRect(pm.rect());
    rebuildBoxes();
    m_regionLayer->redraw();
    applyMode();
}

void PageView::clearPage(const QString& message) {
    scene()->clear();
    m_regionLayer->sceneCleared();
    m_pixmap = nullptr;
    m_highlight = nullptr;
    m_wordItems.clear();
    if (!message.isEmpty()) scene()->addText(message);
}

void PageView::rebuildBoxes() {
    const QColor line = boxColor(palette(), false);
    for (const quire::Box& b : m_lineBoxes) {
        if (b.empty()) continue;
        auto* r = scene()->addRect(QRectF(b.x - m_origin.x(), b.y - m_origin.y(), b.w, b.h), QPen(line, 0));
        r->setZValue(1);
    }
    const QColor low = lowConfidenceColor(palette());
    for (size_t i = 0; i < m_wordBoxes.size(); ++i) {
        const quire::Box& b = m_wordBoxes[i];
        const bool isLow = m_wordConf[i] < m_lowConfidence;
        QColor fill = low;
        fill.setAlpha(isLow ? 70 : 0);
        // A low word: a 2-pixel outline that shows on any paper at any zoom, over the tint.
        QPen pen = isLow ? QPen(lowConfidenceOutline(), 2) : QPen(boxColor(palette(), true), 0);
        pen.setCosmetic(true);
        auto* r = scene()->addRect(QRectF(b.x - m_origin.x(), b.y - m_origin.y(), b.w, b.h), pen, QBrush(fill));
        r->setZValue(2);
        r->setData(0, int(i));
        m_wordItems.push_back(r);
    }
}

void PageView::highlightWord(int index) {
    m_highlighted = index;
    if (m_highlight) {
        scene()->removeItem(m_highlight);
        delete m_highlight;
        m_highlight = nullptr;
    }
    if (index < 0 || index >= int(m_wordBoxes.size()) || m_wordBoxes[size_t(index)].empty()) return;
    const quire::Box& b = m_wordBoxes[size_t(index)];
    QColor c = palette().color(QPalette::Highlight);
    QColor fill = c;
    fill.setAlpha(90);
    m_highlight = scene()->addRect(QRectF(b.x - m_origin.x() - 3, b.y - m_origin.y() - 3, b.w + 6, b.h + 6),
                                   QPen(c, 3), QBrush(fill));
    m_highlight->setZValue(3);
    ensureVisible(m_highlight, 60, 60);
}

void PageView::fitWidth() {
    m_mode = ZoomMode::FitWidth;
    applyMode();
}
void PageView::fitPage() {
    m_mode = ZoomMode::FitPage;
    applyMode();
}
void PageView::actualSize() { setZoom(1.0); }

void PageView::applyMode() {
    if (!m_pixmap) return;
    const QRectF r = scene()->sceneRect();
    if (r.isEmpty()) return;
    const QSizeF vp = viewport()->size();
    double z = zoom();
    if (m_mode == ZoomMode::FitWidth) z = (vp.width() - 4) / r.width();
    else if (m_mode == ZoomMode::FitPage) z = std::min((vp.width() - 4) / r.width(), (vp.height() - 4) / r.height());
    else return;
    setTransform(QTransform::fromScale(z, z));
    emit zoomChanged(z);
}

double PageView::zoom() const { return transform().m11(); }

void PageView::setZoom(double z) {
    m_mode = ZoomMode::Custom;
    z = std::clamp(z, 0.05, 8.0);
    setTransform(QTransform::fromScale(z, z));
    emit zoomChanged(z);
}

void PageView::zoomBy(double factor) { setZoom(zoom() * factor); }

QPoint PageView::scrollPosition() const { return {horizontalScrollBar()->value(), verticalScrollBar()->value()}; }

void PageView::setScrollPosition(QPoint p) {
    horizontalScrollBar()->setValue(p.x());
    verticalScrollBar()->setValue(p.y());
}

void PageView::wheelEvent(QWheelEvent* e) {
    if (e->modifiers() & Qt::ControlModifier) {
        zoomBy(e->angleDelta().y() > 0 ? 1.15 : 1 / 1.15);
        e->accept();
        return;
    }
    QGraphicsView::wheelEvent(e);
}

void PageView::mousePressEvent(QMouseEvent* e) {
    if (m_regionMode && m_pixmap) {
        // An edge within 6 screen pixels is taken to resize, at any zoom.
        if (e->button() == Qt::LeftButton) m_regionLayer->press(mapToScene(e->position().toPoint()), 6.0 / std::max(0.01, zoom()));
        e->accept();
        return;
    }
    if (e->button() == Qt::LeftButton) {
        for (QGraphicsItem* item : items(e->position().toPoint())) {
            const QVariant idx = item->data(0);
            if (idx.isValid()) {
                highlightWord(idx.toInt());
                emit wordClicked(idx.toInt());
                break;
            }
        }
    }
    QGraphicsView::mousePressEvent(e);
}

void PageView::mouseMoveEvent(QMouseEvent* e) {
    if (m_regionMode && m_regionLayer->move(mapToScene(e->position().toPoint()))) return e->accept();
    QGraphicsView::mouseMoveEvent(e);
}

void PageView::mouseReleaseEvent(QMouseEvent* e) {
    if (m_regionMode && e->button() == Qt::LeftButton && m_regionLayer->release(mapToScene(e->position().toPoint())))
        return e->accept();
    QGraphicsView::mouseReleaseEvent(e);
}

void PageView::keyPressEvent(QKeyEvent* e) {
    if (m_regionMode && m_regionLayer->key(e)) return e->accept();
    QGraphicsView::keyPressEvent(e);
}

// In region mode Ctrl+Z, Delete and Escape are the regions' while the view has focus, not the
// window's (Edit ▸ Undo is the text editor's).
bool PageView::event(QEvent* e) {
    if (m_regionMode && e->type() == QEvent::ShortcutOverride) {
        auto* k = static_cast<QKeyEvent*>(e);
        if (k->matches(QKeySequence::Undo) || k->key() == Qt::Key_Delete || k->key() == Qt::Key_Backspace ||
            k->key() == Qt::Key_Escape) {
            e->accept();
            return true;
        }
    }
    return QGraphicsView::event(e);
}

void PageView::contextMenuEvent(QContextMenuEvent* e) {
    if (m_regionMode && m_pixmap) {
        m_regionLayer->contextMenu(mapToScene(e->pos()), e->globalPos());
        return e->accept();
    }
    QGraphicsView::contextMenuEvent(e);
}

void PageView::resizeEvent(QResizeEvent* e) {
    QGraphicsView::resizeEvent(e);
    applyMode();
}

void PageView::changeEvent(QEvent* e) {
    QGraphicsView::changeEvent(e);
    if (e->type() == QEvent::PaletteChange && m_pixmap) {
        const int h = m_highlighted;
        const QPixmap pm = m_pixmap->pixmap();
        scene()->clear();
        m_regionLayer->sceneCleared();
        m_wordItems.clear();
        m_highlight = nullptr;
        m_pixmap = scene()->addPixmap(pm);
        rebuildBoxes();
        m_regionLayer->redraw();
        highlightWord(h);
    }
}

}  // namespace quire::ui
