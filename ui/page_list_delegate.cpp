// How a page is drawn in the page browser: its thumbnail and status badge.
#include "page_list_delegate.h"

#include <QApplication>
#include <QPainter>

#include "page_list_model.h"
#include "palette_colors.h"

namespace quire::ui {

QString PageListDelegate::statusText(const QString& status) {
    if (status == QLatin1String("queued")) return tr("queued");
    if (status == QLatin1String("running")) return tr("running");
    if (status == QLatin1String("done")) return tr("done");
    if (status == QLatin1String("flagged")) return tr("flagged");
    if (status == QLatin1String("failed")) return tr("failed");
    if (status == QLatin1String("proofread")) return tr("proofread");
    return status;
}

QSize PageListDelegate::sizeHint(const QStyleOptionViewItem&, const QModelIndex&) const {
    return {PageListModel::kThumbWidth + 120, int(PageListModel::kThumbWidth * 1.35) + 8};
}

void PageListDelegate::paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const {
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const QWidget* w = opt.widget;
    QStyle* style = w ? w->style() : QApplication::style();
    opt.text.clear();
    opt.icon = {};
    style->drawControl(QStyle::CE_ItemViewItem, &opt, p, w);
    const QRect r = option.rect.adjusted(4, 4, -4, -4);
    const QRect thumb(r.left(), r.top(), PageListModel::kThumbWidth, r.height());
    const QImage img = index.data(Qt::DecorationRole).value<QImage>();
    if (!img.isNull()) {
        const QImage scaled = img.height() > thumb.height() ? img.scaledToHeight(thumb.height(), Qt::SmoothTransformation) : img;
        p->drawImage(thumb.topLeft(), scaled);
    } else {
        p->fillRect(thumb, option.palette.color(QPalette::AlternateBase));
    }
    const QString status = index.data(PageListModel::StatusRole).toString();
    const QRect text(thumb.right() + 8, r.top(), r.right() - thumb.right() - 8, r.height());
    p->setPen(option.state & QStyle::State_Selected ? option.palette.color(QPalette::HighlightedText)
                                                    : option.palette.color(QPalette::Text));
    p->drawText(text.adjusted(0, 0, 0, -r.height() / 2), Qt::AlignLeft | Qt::AlignBottom, index.data().toString());
    const QString badge = statusText(status);
    const QFontMetrics fm(option.font);
    const QRect b(text.left(), text.top() + r.height() / 2 + 4, fm.horizontalAdvance(badge) + 12, fm.height() + 2);
    p->setRenderHint(QPainter::Antialiasing);
    p->setBrush(statusColor(option.palette, status));
    p->setPen(Qt::NoPen);
    p->drawRoundedRect(b, 6, 6);
    p->setPen(option.palette.color(QPalette::Text));
    p->drawText(b, Qt::AlignCenter, badge);
}

}  // namespace quire::ui
