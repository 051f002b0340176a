// The choice between recognizers: which engines there are, which "auto" picks for a language, and
// the factory that makes the chosen one.
#include <sstream>

#include "quire/decoder/session.h"
#include "quire/ppocr/ppocr.h"
#include "quire/reader/reader.h"
#include "quire/recognizers/recognizer.h"
#include "recognizers/engines.h"

namespace quire {

bool hasLanguage(const std::string& languages, const std::string& prefix) {
    std::stringstream ss(languages);
    std::string item;
    while (std::getline(ss, item, '+'))
        if (item.rfind(prefix, 0) == 0) return true;
    return false;
}

std::string ppocrLayoutFor(const std::string& languages) { return hasLanguage(languages, "chi") ? "rows" : "tesseract"; }

std::vector<std::string> availableEngines() { return {"tesseract", "ppocr", "reader"}; }

std::string chooseEngine(const std::string& engine, const std::string& languages, std::string* why,
                         const std::string& readerModel) {
    if (engine != "auto") return engine;
    // From the accuracies in docs/ACCURACY.md: the reader for Chinese (PP-OCR without a reader
    // model), Tesseract for English (the reader's gain there is within noise, at a fifth of the
    // speed) and for German print (its Fraktur data; the others are far below it).
    if (hasLanguage(languages, "chi")) {
        if (auto model = findReaderModel(readerModel)) {
            if (why)
                *why = "reader (Chinese in --lang: the reader measured the lowest CER on Chinese pages, 11.2 % against "
                       "PP-OCR's 11.5 % and Tesseract's 34.7 %; it reads about a quarter as fast as PP-OCR)";
            return "reader";
        }
        if (why)
            *why = "ppocr (Chinese in --lang, and no reader model is installed: PP-OCR's measured CER on Chinese pages "
                   "is a third of Tesseract's)";
        return "ppocr";
    }
    if (why)
        *why = "tesseract (no Chinese in --lang: on English print the reader's measured CER is only a hair lower, "
               "2.39 % against 2.42 %, at a fifth of the speed; on German print Tesseract is far better than the "
               "reader and PP-OCR)";
    return "tesseract";
}

Result<std::unique_ptr<Recognizer>> createRecognizer(const RecognizerOptions& options) {
    const std::string engine = chooseEngine(options.engine, options.languages, nullptr, options.readerModel);
    auto device = decoder::parseStepDevice(options.device);
    if (!device || *device == decoder::StepDevice::Mirror)
        return Status(ErrorCode::InvalidArgument, "unknown device '" + options.device + "' (cpu, cuda)");
    // "auto" takes the device when it chooses a neural engine, and the CPU otherwise.
    if (*device != decoder::StepDevice::Cpu && engine == "tesseract" && options.engine != "auto")
        return Status(ErrorCode::InvalidArgument, "Tesseract runs on the CPU only; PP-OCR and the reader run on a GPU "
                                                  "(--engine ppocr or reader)");
    if (engine == "tesseract") {
        RecognizerOptions o = options;
        o.engine = engine;
        return createTesseractRecognizer(o);
    }
    if (engine == "ppocr") return createPpocrRecognizer(options);
    if (engine == "reader") return createReaderRecognizer(options, *device);
    return Status(ErrorCode::InvalidArgument, "unknown recognition engine '" + options.engine + "' (choose tesseract, ppocr, reader or auto)");
}

}  // namespace quire
