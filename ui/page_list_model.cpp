// The page browser's model: the project's pages, their status and thumbnails (rendered lazily).
#include "page_list_model.h"

#include <QCoreApplication>
#include <algorithm>
#include <QDataStream>
#include <QIODevice>
#include <QMimeData>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

#include <opencv2/imgproc.hpp>

#include "quire/source/document_source.h"

namespace quire::ui {

QImage loadPageImage(const PageRecord& page, int dpiOverride) {
    SourceOptions opt;
    opt.pdfDpi = dpiOverride > 0 ? dpiOverride : (page.dpi > 0 ? page.dpi : 300);
    opt.pdfHelper = pdfHelperIn(QCoreApplication::applicationDirPath().toStdString());
    auto src = openSource(page.sourceFile, opt);
    if (!src) return {};
    auto img = (*src)->loadPage(page.filePage);
    if (!img) return {};
    // Only a half of a split spread is cut out; a whole page is shown as decoded.
    const cv::Mat m = cropToRegion(turnedClockwise(img->image, page.rotation), page.part > 0 ? page.region : Box{},
                                   page.dpi, opt.pdfDpi);
    if (m.channels() == 3) {
        cv::Mat rgb;
        cv::cvtColor(m, rgb, cv::COLOR_BGR2RGB);
        return QImage(rgb.data, rgb.cols, rgb.rows, int(rgb.step), QImage::Format_RGB888).copy();
    }
    return QImage(m.data, m.cols, m.rows, int(m.step), QImage::Format_Grayscale8).copy();
}

PageListModel::PageListModel(QObject* parent) : QAbstractListModel(parent) {
    m_pool.setMaxThreadCount(1);
    m_pool.setThreadPriority(QThread::LowPriority);
}

PageListModel::~PageListModel() {
    m_pool.clear();
    m_pool.waitForDone();
}

int PageListModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(m_pages.size()); }

QHash<int, QByteArray> PageListModel::roleNames() const {
    auto r = QAbstractListModel::roleNames();
    r[PageIdRole] = "pageId";
    r[StatusRole] = "status";
    r[FlaggedRole] = "flagged";
    r[ProofreadRole] = "proofread";
    r[FailedRole] = "failed";
    r[SequenceRole] = "sequence";
    return r;
}

QVariant PageListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= int(m_pages.size())) return {};
    const PageRecord& p = m_pages[size_t(index.row())];
    auto status = [&]() -> QString {
        if (p.id == m_running) return QStringLiteral("running");
        if (p.status == PageStatus::Failed) return QStringLiteral("failed");
        if (p.status == PageStatus::Queued) return QStringLiteral("queued");
        if (p.proofread) return QStringLiteral("proofread");
        if (p.flagged) return QStringLiteral("flagged");
        return QStringLiteral("done");
    };
    switch (role) {
        case Qt::DisplayRole: return tr("Page %1").arg(p.sequence);
        case Qt::ToolTipRole: {
            QString tip = QString::fromStdString(p.sourceFile) + tr(", page %1").arg(p.filePage + 1);
            if (p.rotation) tip += tr(", turned %1° clockwise").arg(p.rotation);
            if (p.status == PageStatus::Failed) tip += "\n" + QString::fromStdString(p.failure);
            else if (p.status == PageStatus::Done) tip += "\n" + tr("confidence %1").arg(p.meanConfidence, 0, 'f', 1);
            if (p.status == PageStatus::Done && p.flagged && !p.flagReason.empty())
                tip += "\n" + tr("Flagged: %1").arg(QString::fromStdString(p.flagReason));
            return tip;
        }
        case Qt::DecorationRole: {
            if (QImage* img = m_thumbs.object(p.id)) return *img;
            requestThumbnail(index.row());
            return {};
        }
        case PageIdRole: return qint64(p.id);
        case StatusRole: return status();
        case FlaggedRole: return p.flagged;
        case ProofreadRole: return p.proofread;
        case FailedRole: return p.status == PageStatus::Failed;
        case SequenceRole: return p.sequence;
        default: return {};
    }
}

void PageListModel::requestThumbnail(int row) const {
    const PageRecord p = m_pages[size_t(row)];
    if (m_pending.contains(p.id)) return;
    m_pending.insert(p.id);
    QPointer<const PageListModel> self(this);
    // Rendered off the GUI thread at a low resolution, then handed back with a queued call.
    m_pool.start([self, p] {
        QImage img = loadPageImage(p, 30);
        if (!img.isNull()) img = img.scaledToWidth(kThumbWidth, Qt::SmoothTransformation);
        if (!self) return;
        QMetaObject::invokeMethod(const_cast<PageListModel*>(self.data()), [self, id = p.id, img] {
            if (!self) return;
            auto* model = const_cast<PageListModel*>(self.data());
            model->m_pending.remove(id);
            if (img.isNull()) return;
            model->m_thumbs.insert(id, new QImage(img));
            const int r = model->rowOf(id);
            if (r >= 0) {
                emit model->dataChanged(model->index(r), model->index(r), {Qt::DecorationRole});
                emit model->thumbnailReady(r);
            }
        }, Qt::QueuedConnection);
    });
}

namespace {
constexpr const char* kPagesMime = "application/x-quire-page-ids";
}

Qt::ItemFlags PageListModel::flags(const QModelIndex& index) const {
    // Items take drops as "before this page"; the empty space below the last, "at the end".
    const Qt::ItemFlags f = QAbstractListModel::flags(index);
    return index.isValid() ? f | Qt::ItemIsDragEnabled | Qt::ItemIsDropEnabled : f | Qt::ItemIsDropEnabled;
}

QStringList PageListModel::mimeTypes() const { return {kPagesMime}; }

QMimeData* PageListModel::mimeData(const QModelIndexList& indexes) const {
    QList<qint64> ids;
    QModelIndexList sorted = indexes;
    std::sort(sorted.begin(), sorted.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
    for (const QModelIndex& i : sorted)
        if (i.isValid() && i.row() < int(m_pages.size())) ids << qint64(m_pages[size_t(i.row())].id);
    QByteArray bytes;
    QDataStream out(&bytes, QIODevice::WriteOnly);
    out << ids;
    auto* data = new QMimeData;
    data->setData(kPagesMime, bytes);
    return data;
}

bool PageListModel::dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int, const QModelIndex& parent) {
    if (action != Qt::MoveAction || !data || !data->hasFormat(kPagesMime)) return false;
    QList<qint64> ids;
    QDataStream in(data->data(kPagesMime));
    in >> ids;
    if (ids.isEmpty()) return false;
    // Between rows: before `row`; on an item: before it; elsewhere: at the end.
    const int target = row >= 0 ? row : parent.isValid() ? parent.row() : int(m_pages.size());
    const int before = target < int(m_pages.size()) ? m_pages[size_t(target)].sequence : rowCount() + 1;
    std::vector<int64_t> pageIds(ids.begin(), ids.end());
    // After the drop has ended: the move reloads this model.
    QMetaObject::invokeMethod(this, [this, pageIds, before] { emit pagesDropped(pageIds, before); }, Qt::QueuedConnection);
    return true;
}

void PageListModel::setPages(std::vector<PageRecord> pages) {
    beginResetModel();
    m_pages = std::move(pages);
    m_thumbs.clear();
    m_pending.clear();
    endResetModel();
}

void PageListModel::updatePage(const PageRecord& page) {
    const int r = rowOf(page.id);
    if (r >= 0) {
        m_pages[size_t(r)] = page;
        if (m_running == page.id) m_running = -1;
        emit dataChanged(index(r), index(r));
        return;
    }
    // A new page (half of a split spread): insert in book order.
    size_t at = 0;
    while (at < m_pages.size() && m_pages[at].sequence < page.sequence) ++at;
    beginInsertRows({}, int(at), int(at));
    m_pages.insert(m_pages.begin() + long(at), page);
    endInsertRows();
}

void PageListModel::setRunning(qint64 pageId) {
    const int old = rowOf(m_running);
    m_running = pageId;
    if (old >= 0) emit dataChanged(index(old), index(old), {StatusRole});
    const int r = rowOf(pageId);
    if (r >= 0) emit dataChanged(index(r), index(r), {StatusRole});
}

const PageRecord* PageListModel::page(int row) const {
    return row >= 0 && row < int(m_pages.size()) ? &m_pages[size_t(row)] : nullptr;
}

int PageListModel::rowOf(qint64 pageId) const {
    for (size_t i = 0; i < m_pages.size(); ++i)
        if (m_pages[i].id == pageId) return int(i);
    return -1;
}

void PageFilterProxy::setFilter(Filter f) {
    m_filter = f;
    invalidateFilter();
}

bool PageFilterProxy::filterAcceptsRow(int row, const QModelIndex& parent) const {
    const QModelIndex i = sourceModel()->index(row, 0, parent);
    switch (m_filter) {
        case Filter::All: return true;
        case Filter::Flagged: return i.data(PageListModel::FlaggedRole).toBool() && !i.data(PageListModel::ProofreadRole).toBool();
        case Filter::Failed: return i.data(PageListModel::FailedRole).toBool();
        case Filter::NotProofread: return !i.data(PageListModel::ProofreadRole).toBool();
    }
    return true;
}

}  // namespace quire::ui
