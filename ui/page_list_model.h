// The pages of the open project for the page browser: status badges, lazily rendered thumbnails.
#pragma once

#include <QAbstractListModel>
#include <QCache>
#include <QImage>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QThreadPool>

#include <vector>

#include "quire/store/project_store.h"

namespace quire::ui {

class PageListModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Roles {
        PageIdRole = Qt::UserRole + 1,
        StatusRole,  // "queued", "running", "done", "flagged", "failed", "proofread"
        FlaggedRole,
        ProofreadRole,
        FailedRole,
        SequenceRole,
    };
    static constexpr int kThumbWidth = 96;

    explicit PageListModel(QObject* parent = nullptr);
    ~PageListModel() override;

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QHash<int, QByteArray> roleNames() const override;

    // Pages are dragged within the list to move them: the drop asks for the move (pagesDropped),
    // which the page arranger makes in the project.
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    Qt::DropActions supportedDropActions() const override { return Qt::MoveAction; }
    QStringList mimeTypes() const override;
    QMimeData* mimeData(const QModelIndexList& indexes) const override;
    bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column, const QModelIndex& parent) override;

    void setPages(std::vector<PageRecord> pages);
    void updatePage(const PageRecord& page);  // refresh one row (or add it, e.g. a split half)
    void setRunning(qint64 pageId);
    const PageRecord* page(int row) const;
    int rowOf(qint64 pageId) const;

signals:
    void thumbnailReady(int row);
    // Pages dropped before book position `before` (the page count + 1: after the last page).
    void pagesDropped(const std::vector<int64_t>& pageIds, int before);

private:
    void requestThumbnail(int row) const;
    std::vector<PageRecord> m_pages;
    qint64 m_running = -1;
    mutable QCache<qint64, QImage> m_thumbs{400};
    mutable QSet<qint64> m_pending;
    mutable QThreadPool m_pool;
};

class PageFilterProxy : public QSortFilterProxyModel {
    Q_OBJECT
public:
    enum class Filter { All, Flagged, Failed, NotProofread };
    explicit PageFilterProxy(QObject* parent = nullptr) : QSortFilterProxyModel(parent) {}
    void setFilter(Filter f);
    Filter filter() const { return m_filter; }

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

private:
    Filter m_filter = Filter::All;
};

// Decodes a page for display (region of a split spread cropped), as a QImage.
QImage loadPageImage(const PageRecord& page, int dpiOverride = 0);

}  // namespace quire::ui
