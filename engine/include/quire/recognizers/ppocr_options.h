// The PP-OCR front-end's options from a recognizer's, as the PP-OCR engine and the reader set it
// up (and `quire-cli features`, so that training sees the reader's front-end).
#pragma once

#include "quire/ppocr/ppocr.h"
#include "quire/recognizers/recognizer.h"

namespace quire {

// Model folder, device, detector size and score, recogniser batch, layout (by language).
PpocrOptions ppocrOptionsFor(const RecognizerOptions& options);

}  // namespace quire
