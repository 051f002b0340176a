// The Export dialog: which formats, to which folder.
#pragma once

#include <QDialog>
#include <QMap>

class QCheckBox;
class QLineEdit;

namespace quire::ui {

class Settings;

class ExportDialog : public QDialog {
    Q_OBJECT
public:
    // `folder`: where the export goes unless the user chooses another.
    ExportDialog(Settings& settings, const QString& folder, QWidget* parent = nullptr);
    QString folder() const;
    QStringList formats() const;
    bool pageMarkers() const;
    bool pdfA() const;  // the searchable PDF as PDF/A-2b

private:
    QLineEdit* m_folder;
    QCheckBox *m_pageMarkers, *m_pdfA;
    QMap<QString, QCheckBox*> m_boxes;
};

}  // namespace quire::ui
