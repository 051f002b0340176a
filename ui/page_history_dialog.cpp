// The page's versions side by side with what changed.
#include "page_history_dialog.h"

#include <QDateTime>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "palette_colors.h"
#include "quire/text/word_diff.h"

namespace quire::ui {

QString diffHtml(const std::string& before, const std::string& after, const QPalette& palette) {
    const QString removed = mix(palette.color(QPalette::Base), QColor(200, 30, 30), 0.35).name();
    const QString added = mix(palette.color(QPalette::Base), QColor(30, 150, 60), 0.35).name();
    QString html = "<div style=\"white-space: pre-wrap\">";
    for (const auto& p : wordDiff(before, after)) {
        const QString t = QString::fromStdString(p.text).toHtmlEscaped();
        if (p.kind == DiffPiece::Same) html += t;
        else if (p.kind == DiffPiece::Removed) html += "<s style=\"background:" + removed + "\">" + t + "</s>";
        else html += "<u style=\"background:" + added + "\">" + t + "</u>";
    }
    return html + "</div>";
}

PageHistoryDialog::PageHistoryDialog(std::vector<PageVersion> versions, int pageNumber, QWidget* parent)
    : QDialog(parent), m_versions(std::move(versions)) {
    setWindowTitle(tr("Page %1: History").arg(pageNumber));
    resize(900, 560);
    m_list = new QListWidget;
    m_list->setObjectName("versions");
    int corrections = 0;
    for (const auto& v : m_versions) {
        using Kind = PageVersion::Kind;
        QString label = v.kind == Kind::Reading          ? tr("Engine reading")
                        : v.kind == Kind::EarlierReading ? tr("Earlier reading")
                        : v.kind == Kind::Correction     ? tr("Correction %1").arg(++corrections)
                                                         : tr("Correction %1 (set aside for a new reading)").arg(++corrections);
        if (v.kind == Kind::Reading || v.kind == Kind::EarlierReading) {
            // The engine that made it: "(tesseract 5.3.0)" at the end of the store's label.
            const QString l = QString::fromStdString(v.label);
            if (const int at = l.indexOf(" ("); at >= 0) label += l.mid(at);
        }
        if (!v.createdAt.empty())
            label += " · " + QDateTime::fromString(QString::fromStdString(v.createdAt), Qt::ISODateWithMs)
                                 .toLocalTime()
                                 .toString("yyyy-MM-dd HH:mm:ss");
        if (v.current) label += " · " + tr("current");
        m_list->addItem(label);
    }
    m_diff = new QTextBrowser;
    m_diff->setObjectName("comparison");
    auto* right = new QWidget;
    auto* rl = new QVBoxLayout(right);
    rl->setContentsMargins(0, 0, 0, 0);
    rl->addWidget(new QLabel(tr("From this version to the current text (struck: removed since; underlined: added since):")));
    rl->addWidget(m_diff, 1);
    auto* split = new QSplitter;
    split->addWidget(m_list);
    split->addWidget(right);
    split->setStretchFactor(1, 3);
    split->setSizes({380, 520});  // room for "Earlier reading (ppocr PP-OCRv4) · date · current"
    m_revert = new QPushButton(tr("&Revert to This Version"));
    m_revert->setObjectName("revert");
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    buttons->addButton(m_revert, QDialogButtonBox::AcceptRole);
    connect(m_revert, &QPushButton::clicked, this, [this] {
        m_chosen = m_list->currentRow();
        accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(split, 1);
    layout->addWidget(buttons);
    connect(m_list, &QListWidget::currentRowChanged, this, &PageHistoryDialog::showComparison);
    selectVersion(currentIndex());
}

void PageHistoryDialog::selectVersion(int number) { m_list->setCurrentRow(number); }

QString PageHistoryDialog::comparison() const { return m_diff->toHtml(); }

void PageHistoryDialog::showComparison(int row) {
    if (row < 0 || row >= int(m_versions.size())) return;
    m_diff->setHtml(diffHtml(m_versions[size_t(row)].text, m_versions[size_t(currentIndex())].text, palette()));
    m_revert->setEnabled(!m_versions[size_t(row)].current);  // the current text is already current
}

int PageHistoryDialog::currentIndex() const {
    for (size_t i = 0; i < m_versions.size(); ++i)
        if (m_versions[i].current) return int(i);
    return int(m_versions.size()) - 1;
}

}  // namespace quire::ui
