// Recognizers turn a prepared page image into text with lines, words, boxes and confidences: one
// interface for every engine (Tesseract, the PP-OCR front-end, the SR-SWA reader), so the
// transcription pipeline names none of them. The engines' adapters and the choice between them
// live in engine/src/recognizers/.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "quire/core/decoder_checkpoint.h"
#include "quire/core/geometry.h"
#include "quire/core/status.h"

namespace quire {

class ReaderSharing;

// Measurement settings of the reader's decoding (docs/DECODING.md, docs/ACCURACY.md): each unset
// value (negative) keeps the reader's default. quire-cli maps the QUIRE_READER_* variables onto
// them; the engine reads no environment.
struct ReaderTuning {
    bool draft = true;           // check the front-end's characters as a draft, many tokens a pass
    float prior = -1.f;          // nats × the front-end's probability its character gets
    int windowBefore = -1;       // pages before the current one in the decoder's window (0-8)
    int windowAfter = -1;        // pages after it, read ahead (0-8)
    int gatedPages = -1;         // earlier pages the gate may pick (0-16)
    int rareBelow = -1;          // a character seen fewer times in training is rare (0-1,000,000)
    float rarePrior = -1.f;      // nats a rare character of the front-end gets (0-100)
    bool spacingRule = false;    // old books' spaces before ; : ? ! dropped (where the language allows); off by default
    bool dashRule = true;        // a dash and a hyphen read for a long dash written as one "—"
    float evidencePrior = 0.f;   // nats × Tesseract's confidence its glyph gets (ReaderOptions::evidencePrior; 0: off)
    bool printStats = false;     // a line of timings per page on stderr (tools/bench/reader_volume.py)
    bool contextPerPage = false; // every page read with a fresh context (the ablation of the volume's context)
    bool lineEndRule = true, hyphenRule = false, joinRule = false;  // the reader's line rules (ReaderOptions)
    bool layoutParagraphs = true; // a line set apart by a wide white band ends its paragraph (ReaderOptions)
    bool typesetParagraphs = true; // a space at a line end becomes a paragraph where the typesetting ends one (ReaderOptions)
    bool pageEndHyphen = true;    // a word broken over the page break keeps its hyphen (ReaderOptions)
    bool skipRule = true;         // no SKIP past a line's visual tokens (ReaderOptions)
    bool wholePageRule = true;    // no page end while the page has line ends left (ReaderOptions)
    bool languageLetters = true;  // German print's letters not written on English pages (ReaderOptions::unwritten)
};

struct RecognizerOptions {
    std::string engine = "tesseract";  // "tesseract", "ppocr" or "reader" ("auto": chooseEngine)
    std::string languages = "eng";     // '+'-separated, e.g. "eng+chi_sim"
    std::string tessdataDir;           // empty: Tesseract's default (TESSDATA_PREFIX or built-in)
    std::string ppocrDir;              // empty: findPpocrModels()' search order
    std::string readerModel;           // "reader": the model folder (config.json + model.safetensors)
    // "reader": CPU threads its decoder computes with (1 or 2); 0 picks 2 on a machine with three
    // cores or more (the front-end of the next page has one of the others), else 1.
    int decoderThreads = 0;
    // Where the neural engines run, "cpu" or "cuda" (a GPU): PP-OCR's convolutions and elementwise
    // nodes, and the reader's decoder too. Without a GPU, or when it fails, they go on with the
    // CPU and the run's log says why once. Tesseract takes "cpu" only; "auto" uses the device if it
    // chooses PP-OCR or the reader.
    std::string device = "cpu";
    // "reader" on a GPU: the most device memory, in MiB, its decoder may hold (0: all the GPU has).
    // Short of it, the decoder reads with smaller gate and selector budgets, then on the CPU.
    size_t deviceMemoryMiB = 0;
    // PP-OCR (and the reader's front-end): the detector's longest page side in pixels (0: 960,
    // PaddleOCR's default) and the reading order of its lines ("tesseract" or "rows"; empty: by
    // language, ppocrLayoutFor()).
    int ppocrDetMaxSide = 0;
    std::string ppocrLayout;
    bool ppocrContourScore = true;  // PpocrOptions::detContourScore (false: measurement only)
    // Text lines per recognizer call (0: the engine's own, 1 for PP-OCR, 8 for the reader's
    // front-end, whose model was trained on batches of 8; another value: measurement only).
    int ppocrRecBatch = 0;
    // Tesseract: each word's glyphs with boxes, confidences and the LSTM's alternatives
    // (lstm_choice_mode 2; the text is the same), for the reader's evidence (quire-cli features).
    bool glyphChoices = false;
    ReaderTuning readerTuning;
    // "reader": engines given the same sharing decode as one batch (quire-server's jobs;
    // quire/reader/reader_sharing.h). Null: the engine loads and decodes alone.
    std::shared_ptr<ReaderSharing> readerSharing;
};

// Resolves engine "auto" for the given languages from the accuracies measured in
// docs/ACCURACY.md; `why` says what was chosen and why. Other engine names pass through.
// `readerModel`: the reader's model folder (empty: the installed one), which must exist for "auto"
// to choose the reader.
std::string chooseEngine(const std::string& engine, const std::string& languages, std::string* why = nullptr,
                         const std::string& readerModel = {});
// The engines this build offers.
std::vector<std::string> availableEngines();

// A page after the first part of a split recognizer's work (Recognizer::splitsPages()).
struct PreparedPage {
    virtual ~PreparedPage() = default;
};

class Recognizer {
public:
    // An engine whose carriesContext() is true reads a whole transcription with one instance, one
    // page after another in the volume's order; the others get an instance per worker thread.
    virtual ~Recognizer() = default;
    virtual std::string name() const = 0;
    virtual std::string version() const = 0;
    // `gray` is 8-bit; returned boxes are in `gray`'s pixel coordinates. Engines that generate text
    // token by token (the reader) pass each piece to `onText` as it comes; the others do not call it.
    virtual Result<PageText> recognize(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel,
                                       const std::function<void(const std::string&)>& onText) = 0;
    Result<PageText> recognize(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel = nullptr) {
        return recognize(gray, dpi, cancel, {});
    }

    // Engines whose work on a page splits into a part that depends on the page alone and a part
    // that must go in page order (the reader: the front-end, then the decoder) say so, and a
    // transcription prepares the next page on another thread while this one is recognised.
    // prepare() is thread-safe and never fails: a failure travels in the prepared page, and
    // recognizePrepared() reports it in page order. recognizePrepared() gives what recognize()
    // would have given for that page.
    virtual bool splitsPages() const { return false; }
    virtual std::unique_ptr<PreparedPage> prepare(const cv::Mat& /*gray*/, int /*dpi*/,
                                                  const std::atomic<bool>* /*cancel*/) const {
        return nullptr;
    }
    // `ahead`: the prepared pages that follow `page` in the volume, in order, for an engine that
    // reads ahead (pagesAhead() > 0): up to pagesAhead() of them, fewer at the volume's end.
    virtual Result<PageText> recognizePrepared(PreparedPage& /*page*/, const std::vector<PreparedPage*>& /*ahead*/,
                                               const std::atomic<bool>* /*cancel*/,
                                               const std::function<void(const std::string&)>& /*onText*/) {
        return Status(ErrorCode::InvalidArgument, name() + " does not split its work on a page");
    }
    // Pages after the one it recognizes that a split engine reads first (the reader of a model
    // trained with look-ahead: a word broken over the page break is joined where it begins).
    virtual int pagesAhead() const { return 0; }

    // Engines that carry context from page to page (the reader) checkpoint it after each page, and
    // a resumed run continues from the last one; `pages(i)` gives back the inputs of the context's
    // page i as the checkpoints listed them. Engines without context have no checkpoint.
    virtual bool carriesContext() const { return false; }
    // Engines that can tell from their own reading of a page that it was upright (Tesseract and
    // PP-OCR: a confidence a turned page or one in another script does not reach, level) say so;
    // a transcription then reads each page first and checks the orientation only where the last
    // recognize() was not lastReadUpright(), reading the page again if it turns it.
    // A split engine (splitsPages) judges from a page's prepared part instead (the reader: its
    // front-end's reading), so its context never sees a page it then turns; without a prepare
    // stage its pages are checked first.
    virtual bool judgesUpright() const { return false; }
    virtual bool lastReadUpright() const { return false; }
    virtual bool preparedUpright(const PreparedPage& /*page*/) const { return false; }
    // A note for the run's log, given once when it is new (the reader's decoder falling back from
    // the GPU to the CPU, and why); empty otherwise.
    virtual std::string takeNotice() { return {}; }
    // A note for the run's log when the engine's character set lacks letters of the run's
    // languages (PP-OCR and the reader have no ö, ß or ſ): which, and that they will be misread.
    virtual std::string charsetNotice() const { return {}; }
    virtual DecoderCheckpoint checkpoint() { return {}; }
    virtual Status restoreContext(const std::string& /*state*/,
                                  const std::function<Result<std::vector<float>>(int)>& /*pages*/) {
        return Status(ErrorCode::InvalidArgument, name() + " carries no context between pages");
    }
};

// The languages installed for Tesseract (names of *.traineddata).
std::vector<std::string> availableTesseractLanguages(const std::string& tessdataDir = {});
// Checks that every requested language is installed; the message lists what is available.
Status checkTesseractLanguages(const std::string& languages, const std::string& tessdataDir = {});
// The Tesseract languages that confirm a proposed page turn by reading it (PreprocessParams::
// orientLanguages): `languages` where Tesseract has them all, else English, else none (OSD alone).
std::string orientationCheckLanguages(const std::string& languages, const std::string& tessdataDir = {});

Result<std::unique_ptr<Recognizer>> createRecognizer(const RecognizerOptions& options);

}  // namespace quire
