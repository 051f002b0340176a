// The QUIRE_* variables, mapped onto the engine's options here (the engine itself reads none):
// where the models are, and what tunes a measurement run (docs/BENCHMARKS.md, docs/ACCURACY.md).
// `quire-cli --help` lists them.
#pragma once

#include "quire/core/status.h"
#include "quire/pipeline/transcriber.h"
#include "quire/recognizers/recognizer.h"

namespace quire::cli {

// QUIRE_PPOCR_DIR and QUIRE_READER_MODEL: the model folders, where no option named one.
void applyModelLocations(RecognizerOptions& options);
// QUIRE_PPOCR_DET_MAX_SIDE=N (320-4096), QUIRE_PPOCR_REC_BATCH=N (1-64), QUIRE_PPOCR_LAYOUT=
// tesseract|rows, QUIRE_PPOCR_SCORE=contour|box and the reader's QUIRE_READER_DRAFT=0, _PRIOR=NATS, _WINDOW=B,G, _RARE=BELOW,NATS,
// _PRINTED=S,D, _LINES=E,H,J, _CONTEXT=volume|page, _STATS=1.
// A malformed value is an error naming the variable and what it takes.
Status applyMeasurementEnvironment(RecognizerOptions& options);
// The same, and QUIRE_READER_PIPELINE=0 (one thread reads and decodes) or
// QUIRE_READER_PREPARERS=1|2 (prepare threads of the reader's front-end), and
// QUIRE_REPAIR_LIGATURES=0 (words as the engine read them, TranscribeParams::repairLigatures).
Status applyMeasurementEnvironment(TranscribeParams& params);
// QUIRE_UNEVEN_LIGHT=SHARE (0-1): the brightness spread above which a page is flattened
// (PreprocessParams::unevenLight), applied after the run's own preprocessing options.
Status applyPreprocessEnvironment(PreprocessParams& params);
// QUIRE_NN_PROFILE=1: seconds per ONNX operator kind on stderr at exit.
void applyProfilingEnvironment();

}  // namespace quire::cli
