// Paints a page in the browser: thumbnail, page number and a status badge.
#pragma once

#include <QStyledItemDelegate>

namespace quire::ui {

class PageListDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;
    static QString statusText(const QString& status);
};

}  // namespace quire::ui
