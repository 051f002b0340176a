// Pages > Read Again: the engine and languages to read the chosen pages with, and, where some of
// them have corrections, whether those stay the text or the new reading replaces them (kept in the
// page history either way).
#pragma once

#include <QDialog>
#include <QString>

class QRadioButton;

namespace quire::ui {

class EngineBox;
class LanguagePicker;

class RereadDialog : public QDialog {
    Q_OBJECT
public:
    RereadDialog(int pages, int correctedPages, const QString& engine, const QString& languages, QWidget* parent = nullptr);

    QString engine() const;
    QString languages() const;
    bool replaceCorrections() const;

private:
    EngineBox* m_engine;
    LanguagePicker* m_languages;
    QRadioButton* m_replace = nullptr;
};

}  // namespace quire::ui
