// The Settings dialog: engine, languages, threads, device, flagging, preprocessing, theme, language.
#include "settings_dialog.h"

#include "engine_box.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "language_picker.h"
#include "quire/core/backend.h"
#include "quire/recognizers/recognizer.h"
#include "quire/reader/reader.h"
#include "settings.h"

namespace quire::ui {

SettingsDialog::SettingsDialog(Settings& settings, QWidget* parent) : QDialog(parent), m_settings(settings) {
    setWindowTitle(tr("Settings"));
    auto* form = new QFormLayout;
    m_engine = new EngineBox(settings.engine());
    form->addRow(tr("Recognition engine:"), m_engine);
    // The reader's model folder: empty means the model installed with Quire.
    m_readerModel = new QLineEdit(settings.readerModel());
    const auto installedModel = findReaderModel(qEnvironmentVariable("QUIRE_READER_MODEL").toStdString());
    m_readerModel->setPlaceholderText(installedModel ? tr("Installed model: %1").arg(QString::fromStdString(*installedModel))
                                                : tr("No installed model found"));
    if (!installedModel) m_readerModel->setToolTip(QString::fromStdString(installedModel.status().message()));
    auto* browse = new QPushButton(tr("Browse…"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Reader model folder (config.json and model.safetensors)"),
                                                              m_readerModel->text());
        if (!dir.isEmpty()) m_readerModel->setText(dir);
    });
    auto* modelRow = new QHBoxLayout;
    modelRow->addWidget(m_readerModel, 1);
    modelRow->addWidget(browse);
    form->addRow(tr("Reader model:"), modelRow);
    auto enableModel = [this, browse] {
        const bool reader = m_engine->currentData().toString() == "reader";
        m_readerModel->setEnabled(reader);
        browse->setEnabled(reader);
    };
    connect(m_engine, &QComboBox::currentIndexChanged, this, enableModel);
    enableModel();
    QStringList installed;
    for (const auto& l : availableTesseractLanguages()) installed << QString::fromStdString(l);
    m_languages = new LanguagePicker(installed);
    m_languages->setLanguages(settings.languages());
    m_languages->setToolTip(tr("Tick the book's languages, the main one first; greyed ones need their package installed"));
    m_languages->setMaximumHeight(150);
    form->addRow(tr("Languages:"), m_languages);
    m_threads = new QSpinBox;
    m_threads->setRange(0, 64);
    m_threads->setSpecialValueText(tr("one per core"));
    m_threads->setValue(settings.threads());
    form->addRow(tr("CPU threads:"), m_threads);
    m_device = new QComboBox;
    m_device->addItem(tr("CPU"), "cpu");
    std::string why;
    const auto gpus = gpuDevices(&why);
    for (const auto& g : gpus) m_device->addItem(tr("GPU: %1").arg(QString::fromStdString(g.name)), "gpu");
    m_device->setCurrentIndex(std::max(0, m_device->findData(settings.device())));
    m_device->setToolTip(gpus.empty() ? QString::fromStdString(why) : QString());
    form->addRow(tr("Device (PP-OCR and reader engines):"), m_device);
    m_flag = new QDoubleSpinBox;
    m_flag->setRange(0, 100);
    m_flag->setDecimals(0);
    m_flag->setValue(settings.flagBelow());
    m_flag->setToolTip(tr("Pages whose mean word confidence is below this are flagged for proofreading"));
    form->addRow(tr("Flag pages below confidence:"), m_flag);
    m_dpi = new QSpinBox;
    m_dpi->setRange(72, 1200);
    m_dpi->setValue(settings.pdfDpi());
    form->addRow(tr("PDF rendering (dpi):"), m_dpi);
    m_deskew = new QCheckBox(tr("Straighten skewed pages"));
    m_deskew->setChecked(settings.deskew());
    m_normalize = new QCheckBox(tr("Even out uneven lighting"));
    m_normalize->setChecked(settings.normalizeBackground());
    m_binarize = new QCheckBox(tr("Binarise before recognition"));
    m_binarize->setChecked(settings.binarize());
    m_split = new QCheckBox(tr("Split two-page spreads"));
    m_split->setChecked(settings.splitSpreads());
    form->addRow(tr("Preprocessing:"), m_deskew);
    form->addRow(QString(), m_normalize);
    form->addRow(QString(), m_binarize);
    form->addRow(QString(), m_split);
    m_theme = new QComboBox;
    m_theme->addItem(tr("Follow the system"), "system");
    m_theme->addItem(tr("Light"), "light");
    m_theme->addItem(tr("Dark"), "dark");
    m_theme->setCurrentIndex(std::max(0, m_theme->findData(settings.theme())));
    form->addRow(tr("Theme:"), m_theme);
    m_uiLanguage = new QComboBox;
    m_uiLanguage->addItem(tr("Follow the system"), "system");
    m_uiLanguage->addItem(QStringLiteral("English"), "en");
    m_uiLanguage->addItem(QStringLiteral("简体中文"), "zh_CN");
    m_uiLanguage->setCurrentIndex(std::max(0, m_uiLanguage->findData(settings.uiLanguage())));
    form->addRow(tr("Interface language:"), m_uiLanguage);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(new QLabel(tr("Theme and interface language apply the next time Quire starts.")));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

void SettingsDialog::accept() {
    m_settings.setEngine(m_engine->currentData().toString());
    m_settings.setReaderModel(m_readerModel->text().trimmed());
    m_settings.setLanguages(m_languages->languages().isEmpty() ? "eng" : m_languages->languages());
    m_settings.setThreads(m_threads->value());
    m_settings.setDevice(m_device->currentData().toString());
    m_settings.setFlagBelow(m_flag->value());
    m_settings.setPdfDpi(m_dpi->value());
    m_settings.setDeskew(m_deskew->isChecked());
    m_settings.setNormalizeBackground(m_normalize->isChecked());
    m_settings.setBinarize(m_binarize->isChecked());
    m_settings.setSplitSpreads(m_split->isChecked());
    m_settings.setTheme(m_theme->currentData().toString());
    m_settings.setUiLanguage(m_uiLanguage->currentData().toString());
    QDialog::accept();
}

}  // namespace quire::ui
