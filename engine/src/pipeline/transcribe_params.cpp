// A run's parameters as stored with the run (JSON), so that a resumed run reads as the first did.
#include "quire/pipeline/transcriber.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace quire {

std::string TranscribeParams::toJson() const {
    QJsonObject o;
    o["engine"] = QString::fromStdString(recognizer.engine);
    if (!recognizer.readerModel.empty()) o["readerModel"] = QString::fromStdString(recognizer.readerModel);
    o["languages"] = QString::fromStdString(recognizer.languages);
    o["preprocess"] = QJsonDocument::fromJson(QByteArray::fromStdString(preprocess.toJson())).object();
    o["pdfDpi"] = source.pdfDpi;
    o["pdfText"] = pdfText == PdfTextPolicy::Keep ? "keep" : "recognize";
    o["threads"] = threads;
    if (!repairLigatures) o["repairLigatures"] = false;
    o["flagMeanBelow"] = flag.meanBelow;
    o["flagLowShareAbove"] = flag.lowShareAbove;
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

}  // namespace quire
