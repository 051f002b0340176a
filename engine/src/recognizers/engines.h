// The recognizers' factories, one per engine (recognizers/*_recognizer.cpp), and the language
// test they share; createRecognizer() (recognizer.cpp) chooses among them.
#pragma once

#include <memory>
#include <string>

#include "quire/decoder/session.h"
#include "quire/ppocr/ppocr.h"
#include "quire/recognizers/recognizer.h"

namespace quire {

Result<std::unique_ptr<Recognizer>> createTesseractRecognizer(const RecognizerOptions& options);
Result<std::unique_ptr<Recognizer>> createPpocrRecognizer(const RecognizerOptions& options);
// `device`: options.device as createRecognizer parsed and checked it.
Result<std::unique_ptr<Recognizer>> createReaderRecognizer(const RecognizerOptions& options, decoder::StepDevice device);

// The PP-OCR front-end's options from a recognizer's: model folder, device, detector size, layout.
PpocrOptions ppocrOptionsFor(const RecognizerOptions& options);

// Whether one of the '+'-separated Tesseract language names in `languages` starts with `prefix`.
bool hasLanguage(const std::string& languages, const std::string& prefix);

}  // namespace quire
