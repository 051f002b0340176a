// The Export dialog: formats and folder, remembered in the settings.
#include "export_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "settings.h"

namespace quire::ui {

ExportDialog::ExportDialog(Settings& settings, const QString& folder, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Export Book"));
    auto* layout = new QVBoxLayout(this);
    const QList<QPair<QString, QString>> formats = {
        {"docx", tr("Word document (DOCX)")}, {"md", tr("Markdown")},       {"txt", tr("Plain text")},
        {"pdf", tr("Searchable PDF")},        {"hocr", tr("hOCR")},         {"alto", tr("ALTO XML (one file per page)")},
        {"page", tr("PAGE XML (one file per page)")}};
    const QStringList chosen = settings.exportFormats();
    for (const auto& [key, label] : formats) {
        auto* box = new QCheckBox(label);
        box->setChecked(chosen.contains(key));
        m_boxes[key] = box;
        layout->addWidget(box);
    }
    m_pageMarkers = new QCheckBox(tr("Page markers ([p. 12]) in DOCX, Markdown and text"));
    m_pageMarkers->setObjectName("pageMarkers");
    m_pageMarkers->setToolTip(tr("Where each page begins, with the number printed on it (else its place in the volume), so passages can be cited"));
    m_pageMarkers->setChecked(settings.exportPageMarkers());
    layout->addWidget(m_pageMarkers);
    m_pdfA = new QCheckBox(tr("Searchable PDF as PDF/A-2b (for long-term archiving)"));
    m_pdfA->setObjectName("pdfA");
    m_pdfA->setToolTip(tr("ISO 19005-2: the metadata and colour profile an archive asks for; every page is stored as an image"));
    m_pdfA->setChecked(settings.exportPdfA());
    layout->addWidget(m_pdfA);
    auto* row = new QHBoxLayout;
    m_folder = new QLineEdit(folder);
    auto* browse = new QPushButton(tr("Choose…"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Export to folder"), m_folder->text());
        if (!d.isEmpty()) m_folder->setText(d);
    });
    row->addWidget(m_folder);
    row->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Folder:"), row);
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QString ExportDialog::folder() const { return m_folder->text(); }

bool ExportDialog::pageMarkers() const { return m_pageMarkers->isChecked(); }

bool ExportDialog::pdfA() const { return m_pdfA->isChecked(); }

QStringList ExportDialog::formats() const {
    QStringList out;
    for (auto it = m_boxes.begin(); it != m_boxes.end(); ++it)
        if (it.value()->isChecked()) out << it.key();
    return out;
}

}  // namespace quire::ui
