// The Engine panel's chart: throughput and memory over the run.
#include "run_chart.h"

#include <QPainter>
#include <QPainterPath>

namespace quire::ui {

RunChart::RunChart(QWidget* parent) : QWidget(parent) { setMinimumHeight(120); }

void RunChart::clear() {
    m_samples.clear();
    update();
}

void RunChart::addSample(int pagesDone, double pagesPerMinute, double memoryMiB) {
    if (!m_samples.empty() && m_samples.back().pages == pagesDone) m_samples.back() = {pagesDone, pagesPerMinute, memoryMiB};
    else m_samples.push_back({pagesDone, pagesPerMinute, memoryMiB});
    update();
}

void RunChart::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette pal = palette();
    p.fillRect(rect(), pal.color(QPalette::Base));
    const QRectF area = QRectF(rect()).adjusted(44, 10, -44, -22);
    p.setPen(pal.color(QPalette::Mid));
    p.drawRect(area);
    p.setPen(pal.color(QPalette::Text));
    if (m_samples.size() < 2) {
        p.drawText(rect(), Qt::AlignCenter, tr("Throughput and memory appear here during a run"));
        return;
    }
    double maxRate = 1, maxMib = 1;
    const int maxPages = std::max(1, m_samples.back().pages);
    for (const auto& s : m_samples) maxRate = std::max(maxRate, s.rate), maxMib = std::max(maxMib, s.mib);
    maxRate *= 1.15, maxMib *= 1.15;
    auto plot = [&](auto value, double maxV, const QColor& color) {
        QPainterPath path;
        for (size_t i = 0; i < m_samples.size(); ++i) {
            const QPointF pt(area.left() + area.width() * m_samples[i].pages / maxPages,
                             area.bottom() - area.height() * value(m_samples[i]) / maxV);
            if (i == 0) path.moveTo(pt);
            else path.lineTo(pt);
        }
        p.setPen(QPen(color, 2));
        p.drawPath(path);
    };
    const QColor rateColor = pal.color(QPalette::Highlight);
    const QColor memColor = pal.color(QPalette::Link).lightnessF() > 0.3 ? QColor(220, 120, 30) : QColor(180, 90, 10);
    plot([](const Sample& s) { return s.rate; }, maxRate, rateColor);
    plot([](const Sample& s) { return s.mib; }, maxMib, memColor);
    p.setPen(rateColor);
    p.drawText(QRectF(0, area.top(), 42, 16), Qt::AlignRight, QString::number(int(maxRate)));
    p.drawText(QRectF(0, area.bottom() - 16, 42, 16), Qt::AlignRight, tr("p/min"));
    p.setPen(memColor);
    p.drawText(QRectF(area.right() + 2, area.top(), 42, 16), Qt::AlignLeft, QString::number(int(maxMib)));
    p.drawText(QRectF(area.right() + 2, area.bottom() - 16, 42, 16), Qt::AlignLeft, tr("MiB"));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(area.left(), area.bottom() + 2, area.width(), 18), Qt::AlignCenter,
               tr("%n page(s)", nullptr, m_samples.back().pages));
}

}  // namespace quire::ui
