// The project's catalogue data, edited.
#include "properties_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

namespace quire::ui {

PropertiesDialog::PropertiesDialog(const ProjectProperties& p, const QString& fileName, const QString& readLanguages,
                                   QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("Project Properties"));
    m_title = new QLineEdit(QString::fromStdString(p.title));
    m_title->setObjectName("title");
    m_title->setPlaceholderText(fileName);
    m_author = new QLineEdit(QString::fromStdString(p.author));
    m_author->setObjectName("author");
    m_language = new QLineEdit(QString::fromStdString(p.language));
    m_language->setObjectName("language");
    m_language->setPlaceholderText(QString::fromStdString(languageTagOf(readLanguages.toStdString())));
    m_language->setToolTip(tr("A BCP 47 tag such as en, de or zh-Hans; empty: the language the pages were read in"));
    auto* form = new QFormLayout;
    form->addRow(tr("&Title:"), m_title);
    form->addRow(tr("&Author:"), m_author);
    form->addRow(tr("&Language:"), m_language);
    auto* note = new QLabel(tr("Written into the metadata of every export (DOCX, searchable PDF, hOCR)."));
    note->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(note);
    layout->addWidget(buttons);
}

ProjectProperties PropertiesDialog::properties() const {
    return {m_title->text().trimmed().toStdString(), m_author->text().trimmed().toStdString(),
            m_language->text().trimmed().toStdString()};
}

}  // namespace quire::ui
