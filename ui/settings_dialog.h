// The Settings dialog.
#pragma once

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;

namespace quire::ui {

class EngineBox;
class LanguagePicker;

class Settings;

class SettingsDialog : public QDialog {
    Q_OBJECT
public:
    SettingsDialog(Settings& settings, QWidget* parent = nullptr);
    void accept() override;

private:
    Settings& m_settings;
    QComboBox *m_device, *m_theme, *m_uiLanguage;
    EngineBox* m_engine;
    LanguagePicker* m_languages;
    QLineEdit* m_readerModel;
    QSpinBox *m_threads, *m_dpi;
    QDoubleSpinBox* m_flag;
    QCheckBox *m_deskew, *m_normalize, *m_binarize, *m_split;
};

}  // namespace quire::ui
