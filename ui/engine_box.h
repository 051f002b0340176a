// The recognition engines to choose from (Settings, Read Again), each named for the archivist; an
// engine whose models are missing says why in its tooltip.
#pragma once

#include <QComboBox>

namespace quire::ui {

class EngineBox : public QComboBox {
    Q_OBJECT
public:
    explicit EngineBox(const QString& engine, QWidget* parent = nullptr);
    QString engine() const { return currentData().toString(); }  // "auto", "tesseract", "ppocr", "reader"
};

}  // namespace quire::ui
