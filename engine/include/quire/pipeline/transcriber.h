// A transcription run: registers the inputs in the project, then loads, preprocesses and
// recognizes every queued page with one recognizer per worker thread, committing each finished
// page as it comes. Pages stream: at most a few decoded pages exist at any moment.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "quire/source/document_source.h"
#include "quire/preprocess/preprocess.h"
#include "quire/store/project_store.h"
#include "quire/recognizers/recognizer.h"

namespace quire {

enum class PdfTextPolicy { Recognize, Keep };

// A page is flagged for proofreading when its mean word confidence is below `meanBelow`, or when
// more than `lowShareAbove` of its words are below `lowWordConfidence`, or when it has visible
// ink but no recognised words.
struct FlagPolicy {
    double meanBelow = 80.0;
    double lowShareAbove = 0.10;
    float lowWordConfidence = 60.0f;
    bool shouldFlag(const PageText& text, double inkShare) const { return !reason(text, inkShare).empty(); }
    // Why the page is flagged, in words ("mean word confidence 71 is below 80"); empty when not.
    std::string reason(const PageText& text, double inkShare) const;
};

// A doubt about the type: the page looks like Fraktur (Tesseract's OSD, at kScriptConfidence or
// more) but is read by an engine or with languages that have no Fraktur model (Tesseract's frk,
// deu_latf or script/Fraktur). In words, with what would read it; empty when there is none.
std::string scriptDoubt(const std::string& script, double confidence, const std::string& engine,
                        const std::string& languages);

struct RunProgress {
    int total = 0, done = 0, failed = 0, flagged = 0;
    int processedThisRun = 0;
    double pagesPerMinute = 0;
    double etaSeconds = -1;  // unknown until a page is done
};

struct PageEvent {
    PageRecord page;       // after the update
    std::string text;      // recognised text (empty on failure)
    std::string failure;   // reason, on failure
};

struct TranscribeParams {
    std::vector<std::filesystem::path> inputs;  // empty: resume what is queued
    RecognizerOptions recognizer;
    PreprocessParams preprocess;
    SourceOptions source;
    FlagPolicy flag;
    PdfTextPolicy pdfText = PdfTextPolicy::Recognize;
    int threads = 0;  // 0: one per core
    // Threads that prepare the next pages of an engine whose work on a page splits (the reader's
    // front-end) while the worker finishes this one: 1 or 2; 0 prepares on the worker itself;
    // -1 picks two on a machine with two cores or more, else one.
    int preparers = -1;
    // Words read without a ligature's second letter ("frst" for "first") written as printed, where
    // the languages' dictionary (hunspell, in dictionaryDir) and the project's words allow exactly
    // one such word (quire/text/ligature_repair.h); false: as the engine read them (measurement).
    bool repairLigatures = true;
    std::filesystem::path dictionaryDir = "/usr/share/hunspell";
    bool retryFailed = false;
    // Only the book's pages firstPage..lastPage (1-based, as the page list numbers them) are read
    // (and retried); 0: every page.
    int firstPage = 0, lastPage = 0;
    // Pages read again by this run (done or failed ones too), once its engine is ready; their
    // readings now stay versions (page_history.h, queueReread). Their corrections stay the text
    // unless rereadReplacesCorrections.
    std::vector<int64_t> rereadPages;
    bool rereadReplacesCorrections = false;
    // Of a page read again, only its hand-drawn region with this index (0-based, in reading order)
    // is read; the page's other text stays as it was read (region_layout.h, replaceRegionText).
    std::map<int64_t, int> rereadRegion;
    // Decoded pixels the pages in flight may hold together: a page waits in the loader while
    // larger ones are read (one page is always admitted). 250 MP: any number of ordinary pages
    // (an A4 page at 300 dpi is 8.7 MP), never two near the 200 MP page limit.
    int64_t pixelBudget = 250'000'000;
    std::function<void(const RunProgress&)> onProgress;
    std::function<void(const PageEvent&)> onPage;
    std::function<void(const std::string&)> onLog;  // warnings and notes, in words
    // Text of a page as an engine generates it (the reader, token by token; called from a worker
    // thread). The page's final text still comes with onPage.
    std::function<void(int64_t pageId, const std::string& piece)> onText;
    // A worker begins reading a page (called from that thread; onPage follows when it is done).
    std::function<void(int64_t pageId)> onPageStarted;
    const std::atomic<bool>* cancel = nullptr;
    // While set, no new page is started (pages in flight finish and are committed).
    const std::atomic<bool>* pause = nullptr;
    // Run the loader and recognizer threads at a lower scheduling priority, so an interactive
    // process (the GUI thread) stays responsive while every core recognises.
    bool backgroundPriority = false;

    std::string toJson() const;  // stored with the run, for resume
};

struct RunSummary {
    int total = 0, done = 0, failed = 0, flagged = 0;
    int processed = 0;     // pages processed in this run
    int inputFailures = 0; // failed because the source could not be decoded
    int engineFailures = 0;
    int orientationChecks = 0;  // pages the orientation check looked at (the rest were read upright first)
    bool cancelled = false;
};

// Adds the inputs to the project (or re-queues those whose content changed on disk). Any input
// that cannot be opened fails the whole call before anything is written.
Status registerInputs(ProjectStore& store, const TranscribeParams& params);

Result<RunSummary> runTranscription(ProjectStore& store, const TranscribeParams& params);

}  // namespace quire
