// File > Project Properties: the book's title, author and language, kept in the project and
// written into every export's metadata.
#pragma once

#include <QDialog>

#include "quire/store/project_properties.h"

class QLineEdit;

namespace quire::ui {

class PropertiesDialog : public QDialog {
    Q_OBJECT
public:
    // `fileName`: the project's name, shown as the title used when none is set.
    PropertiesDialog(const ProjectProperties& properties, const QString& fileName, const QString& readLanguages,
                     QWidget* parent = nullptr);
    ProjectProperties properties() const;

private:
    QLineEdit *m_title, *m_author, *m_language;
};

}  // namespace quire::ui
