// The book's languages chosen from a named list (several at once, in order of weight), each with
// whether its Tesseract model is installed and, where not, the Debian package that brings it.
#pragma once

#include <QListWidget>
#include <QStringList>

namespace quire::ui {

class LanguagePicker : public QListWidget {
    Q_OBJECT
public:
    // `installed`: the Tesseract language codes found on this machine.
    explicit LanguagePicker(const QStringList& installed, QWidget* parent = nullptr);

    // "eng+deu": the checked languages, in the order checked.
    QString languages() const;
    void setLanguages(const QString& plusSeparated);
    // The Debian package with a language's Tesseract model ("chi_sim" -> "tesseract-ocr-chi-sim").
    static QString packageOf(const QString& code);

private:
    QStringList m_order;  // checked codes, in the order checked
};

}  // namespace quire::ui
