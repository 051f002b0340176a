// The recognizers' factories, one per engine (recognizers/*_recognizer.cpp), and the language
// tests they share (a language asked for; its letters an engine cannot write); createRecognizer()
// (recognizer.cpp) chooses among them.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "quire/decoder/session.h"
#include "quire/ppocr/ppocr.h"
#include "quire/recognizers/ppocr_options.h"
#include "quire/recognizers/recognizer.h"

namespace quire {

Result<std::unique_ptr<Recognizer>> createTesseractRecognizer(const RecognizerOptions& options);
Result<std::unique_ptr<Recognizer>> createPpocrRecognizer(const RecognizerOptions& options);
// `device`: options.device as createRecognizer parsed and checked it.
Result<std::unique_ptr<Recognizer>> createReaderRecognizer(const RecognizerOptions& options, decoder::StepDevice device);

// PP-OCR's reading of a page shows it upright (Recognizer::judgesUpright): its mean word confidence
// at least kUprightReadingConfidence and its words wider than tall, all told.
bool readsUprightByWords(const PageText& page);

// Whether one of the '+'-separated Tesseract language names in `languages` starts with `prefix`.
bool hasLanguage(const std::string& languages, const std::string& prefix);
// Whether every one of the '+'-separated languages starts with `prefix` (and there is one).
bool onlyLanguage(const std::string& languages, const std::string& prefix);

// The letters of the Latin-script languages in `languages` (Tesseract names: deu, frk, fra, ...)
// that `writes` says an engine cannot write, each once, with the languages they belong to
// ("ö, ß, ſ (deu, frk)"); empty when it writes them all or no language of the table is asked for.
std::string lettersNotWritten(const std::string& languages, const std::function<bool(const std::string&)>& writes);
// Recognizer::charsetNotice for an engine that writes `characters` (PP-OCR's, and the reader's extra
// ones where its model has them; `engineName`: "ppocr" or "the reader").
std::string frontEndCharsetNotice(const std::vector<std::string>& characters, const std::string& languages,
                                  const std::string& engineName);

}  // namespace quire
