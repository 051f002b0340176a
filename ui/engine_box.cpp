// The engine choice.
#include "engine_box.h"

#include "quire/ppocr/ppocr.h"

namespace quire::ui {

EngineBox::EngineBox(const QString& engine, QWidget* parent) : QComboBox(parent) {
    addItem(tr("Automatic"), "auto");
    addItem(tr("Tesseract"), "tesseract");
    addItem(tr("PP-OCRv4 (neural; Chinese and mixed text)"), "ppocr");
    if (auto models = findPpocrModels(qEnvironmentVariable("QUIRE_PPOCR_DIR").toStdString()); !models)
        setItemData(2, QString::fromStdString(models.status().message()), Qt::ToolTipRole);
    addItem(tr("Quire reader (whole-volume decoder over PP-OCRv4)"), "reader");
    setCurrentIndex(std::max(0, findData(engine)));
}

}  // namespace quire::ui
