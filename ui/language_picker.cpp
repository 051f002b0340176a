// Named, checkable Tesseract languages; missing models greyed with the package to install.
#include "language_picker.h"

namespace quire::ui {

LanguagePicker::LanguagePicker(const QStringList& installed, QWidget* parent) : QListWidget(parent) {
    setObjectName("languagePicker");
    const QList<QPair<QString, QString>> named = {
        {"eng", tr("English")},           {"deu", tr("German")},   {"frk", tr("German (Fraktur)")},
        {"fra", tr("French")},            {"spa", tr("Spanish")},  {"ita", tr("Italian")},
        {"nld", tr("Dutch")},             {"por", tr("Portuguese")}, {"lat", tr("Latin")},
        {"rus", tr("Russian")},           {"pol", tr("Polish")},   {"swe", tr("Swedish")},
        {"dan", tr("Danish")},            {"chi_sim", tr("Chinese (simplified)")},
        {"chi_tra", tr("Chinese (traditional)")}, {"jpn", tr("Japanese")}, {"kor", tr("Korean")}};
    QStringList listed;
    auto add = [&](const QString& code, const QString& name) {
        auto* item = new QListWidgetItem(QString("%1 (%2)").arg(name, code), this);
        item->setData(Qt::UserRole, code);
        item->setCheckState(Qt::Unchecked);
        if (!installed.contains(code)) {
            // Listed, so the user learns what to install, but not choosable until it is.
            item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
            item->setText(tr("%1 (%2): not installed, package %3").arg(name, code, packageOf(code)));
        }
        listed << code;
    };
    for (const auto& [code, name] : named) add(code, name);
    for (const QString& code : installed)  // other installed models, by code
        if (!listed.contains(code) && code != "osd" && code != "equ") add(code, code);
    connect(this, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
        const QString code = item->data(Qt::UserRole).toString();
        if (item->checkState() == Qt::Checked && !m_order.contains(code)) m_order << code;
        if (item->checkState() != Qt::Checked) m_order.removeAll(code);
    });
}

QString LanguagePicker::packageOf(const QString& code) { return "tesseract-ocr-" + QString(code).replace('_', '-'); }

QString LanguagePicker::languages() const { return m_order.join('+'); }

void LanguagePicker::setLanguages(const QString& plusSeparated) {
    const QStringList wanted = plusSeparated.split('+', Qt::SkipEmptyParts);
    m_order.clear();
    for (const QString& code : wanted)
        for (int i = 0; i < count(); ++i)
            if (item(i)->data(Qt::UserRole).toString() == code && (item(i)->flags() & Qt::ItemIsEnabled)) item(i)->setCheckState(Qt::Checked);
    for (int i = 0; i < count(); ++i)
        if (!wanted.contains(item(i)->data(Qt::UserRole).toString())) item(i)->setCheckState(Qt::Unchecked);
    // The order the setting gave, not the list's.
    QStringList ordered;
    for (const QString& code : wanted)
        if (m_order.contains(code)) ordered << code;
    m_order = ordered;
}

}  // namespace quire::ui
