// The Read Again dialog.
#include "reread_dialog.h"

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QVBoxLayout>

#include "engine_box.h"
#include "language_picker.h"
#include "quire/recognizers/recognizer.h"

namespace quire::ui {

RereadDialog::RereadDialog(int pages, int correctedPages, const QString& engine, const QString& languages, QWidget* parent)
    : QDialog(parent) {
    setWindowTitle(tr("Read Pages Again"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(new QLabel(tr("Read %n page(s) again with these settings. What the pages read now is kept "
                                    "in their history.", nullptr, pages)));
    auto* form = new QFormLayout;
    m_engine = new EngineBox(engine);
    m_engine->setObjectName("rereadEngine");
    form->addRow(tr("Recognition engine:"), m_engine);
    QStringList installed;
    for (const auto& l : availableTesseractLanguages()) installed << QString::fromStdString(l);
    m_languages = new LanguagePicker(installed);
    m_languages->setObjectName("rereadLanguages");
    m_languages->setLanguages(languages);
    m_languages->setMaximumHeight(150);
    form->addRow(tr("Languages:"), m_languages);
    layout->addLayout(form);
    if (correctedPages > 0) {
        auto* box = new QGroupBox(tr("%n of these pages have your corrections", nullptr, correctedPages));
        auto* bl = new QVBoxLayout(box);
        auto* keep = new QRadioButton(tr("Keep my corrections as their text (the new reading is kept as a version)"));
        m_replace = new QRadioButton(tr("Use the new reading as their text (my corrections stay in the page history)"));
        m_replace->setObjectName("rereadReplaceCorrections");
        keep->setChecked(true);
        bl->addWidget(keep);
        bl->addWidget(m_replace);
        layout->addWidget(box);
    }
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("&Read Again"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

QString RereadDialog::engine() const { return m_engine->engine(); }
QString RereadDialog::languages() const { return m_languages->languages(); }
bool RereadDialog::replaceCorrections() const { return m_replace && m_replace->isChecked(); }

}  // namespace quire::ui
