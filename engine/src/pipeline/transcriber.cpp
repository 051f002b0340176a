// runTranscription: inputs registered, queued pages decoded by a loader thread, prepared and
// recognised by workers, and committed one page per transaction, with progress and cancel.
#include "quire/pipeline/transcriber.h"

#include <QCryptographicHash>

#include <opencv2/imgproc.hpp>

#include <cblas.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "pipeline/bounded_queue.h"
#include "pipeline/crash_marker.h"
#include "pipeline/pixel_budget.h"
#include "quire/pipeline/region_layout.h"
#include "quire/preprocess/orientation.h"
#include "quire/store/attempt_log.h"
#include "quire/store/page_history.h"
#include "quire/store/page_regions.h"
#include "quire/text/ligature_repair.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace fs = std::filesystem;

namespace quire {

namespace {

std::string pixelHash(const cv::Mat& m) {
    QCryptographicHash h(QCryptographicHash::Sha256);
    for (int y = 0; y < m.rows; ++y)
        h.addData(QByteArrayView(reinterpret_cast<const char*>(m.ptr(y)), qsizetype(m.cols * m.elemSize())));
    return h.result().toHex().toStdString();
}

double inkShare(const cv::Mat& gray) {
    cv::Mat mask;
    const cv::Mat small = downscale(gray, std::min(1.0, 800.0 / std::max(gray.cols, gray.rows)));
    cv::threshold(small, mask, 128, 255, cv::THRESH_BINARY_INV);
    return double(cv::countNonZero(mask)) / double(mask.total());
}

std::string pageName(const PageRecord& p) {
    return p.sourceFile + " page " + std::to_string(p.filePage + 1);
}

// An exception thrown while a page was decoded or read, as that page's failure: nothing a page
// does may end the run.
Status pageException(const PageRecord& p, const std::exception& e) {
    if (dynamic_cast<const std::bad_alloc*>(&e))
        return Status(ErrorCode::TooLarge, pageName(p) + ": ran out of memory on this page; skipped");
    std::string what = e.what();
    if (const size_t nl = what.find('\n', 1); nl != std::string::npos) what.resize(nl);
    return Status(ErrorCode::Engine, pageName(p) + ": failed on this page (" + what + "); skipped");
}

PageText textFromLayer(const std::string& text, int w, int h, int dpi) {
    PageText page;
    page.width = w, page.height = h, page.dpi = dpi;
    page.engine = "pdf-text-layer";
    page.engineVersion = "1";
    int para = 0;
    std::string line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
            ++para;
            continue;
        }
        Line l;
        l.paragraph = para;
        std::istringstream ws(line);
        std::string word;
        while (ws >> word) l.words.push_back({word, {}, 100.0f, {}});
        page.lines.push_back(std::move(l));
    }
    return page;
}

void lowerThisThreadsPriority() {
#ifdef __linux__
    // On Linux a nice value belongs to the thread (task) it is set on.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
#endif
}

struct Job {
    PageRecord page;
    PageImage image;
    Status loadError;
    std::optional<std::string> textLayer;
    // With a split recognizer (Recognizer::splitsPages): the page's regions and each region's
    // prepared work, done by the prepare stage ahead of the worker.
    std::optional<PreprocessResult> pre;
    std::vector<std::unique_ptr<PreparedPage>> prepared;
    int64_t heldPixels = 0;  // taken from the run's PixelBudget, given back when the page is read
};

struct Done {
    PageRecord page;
    std::vector<PageOutcome> outcomes;
    Status error;
    std::optional<DecoderCheckpoint> checkpoint;  // the reader's context after this page
    bool orientationChecked = false;  // OSD looked at the page (not read upright first)
};

// Takes up the context the last reader run saved with its last committed page, when the pages now
// queued all come after that page; otherwise the reader starts a fresh context and says why.
Status resumeContext(ProjectStore& store, Recognizer& engine, const std::vector<PageRecord>& queued,
                     const std::function<void(const std::string&)>& log) {
    auto saved = store.decoderState();
    if (!saved) return saved.status();
    if (!saved->has_value() || queued.empty()) return Status::ok();
    auto last = store.page((*saved)->lastPageId);
    if (!last) {
        log("the reader starts a fresh context: the page its saved context ended with is gone");
        return Status::ok();
    }
    if (queued.front().sequence <= last->sequence) {
        log("the reader starts a fresh context: pages at or before " + pageName(*last) +
            ", where its saved context ends, are queued again");
        return Status::ok();
    }
    if (Status s = engine.restoreContext((*saved)->state, [&](int i) { return store.contextPage(i); }); !s) {
        log("the reader starts a fresh context: its saved context cannot be used (" + s.message() + ")");
        return Status::ok();
    }
    log("the reader continues with the context it had after " + pageName(*last));
    return Status::ok();
}

// The run's preprocessing, with the languages that confirm a proposed turn by reading: the run's
// where Tesseract has them, else English.
PreprocessParams preprocessOfRun(const TranscribeParams& params) {
    PreprocessParams p = params.preprocess;
    if (p.orient && p.orientLanguages.empty())
        p.orientLanguages = orientationCheckLanguages(params.recognizer.languages, params.recognizer.tessdataDir);
    return p;
}

// One run's threads and what they share. The loader decodes the queued pages in book order, one
// source open at a time; for a recognizer that splits its work (Recognizer::splitsPages) the
// prepare stage runs the page-only part ahead on `preparers` threads, handing pages on in the
// volume's order; `threads` workers recognise; the calling thread commits each finished page in
// its own transaction.
class Run {
public:
    Run(ProjectStore& store, const TranscribeParams& params, Recognizer& first, AttemptLog* attempts,
        std::vector<PageRecord> queued, std::map<int64_t, std::string> docPath,
        const std::map<int64_t, std::vector<PageRegion>>& regions, const std::map<int64_t, PageText>& readBefore,
        const LigatureRepair* ligatures, int threads, int preparers)
        : store(store), params(params), first(&first), attempts(attempts), queued(std::move(queued)),
          docPath(std::move(docPath)), regions(regions), readBefore(readBefore), ligatures(ligatures),
          threads(threads), preparers(preparers),
          splitter(preparers > 0 ? &first : nullptr), jobs(size_t(threads) + 1), done(size_t(threads) + 1),
          activeWorkers(threads), preparersLeft(preparers), pixels(params.pixelBudget),
          preprocess(preprocessOfRun(params)) {}

    // Runs every page; the summary's counts are this run's (the caller adds the project's).
    RunSummary execute() {
        RunSummary summary;
        std::thread loader([this] { loadPages(); });
        std::vector<std::thread> preparerThreads, workers;
        for (int t = 0; t < preparers; ++t) preparerThreads.emplace_back([this] { preparePages(); });
        for (int t = 0; t < threads; ++t) workers.emplace_back([this] { recognizePages(); });
        commitPages(summary);
        stop = stop || cancelled();
        jobs.close();
        preparedJobs.close();
        done.close();
        pixels.close();
        loader.join();
        for (auto& p : preparerThreads) p.join();
        for (auto& w : workers) w.join();
        summary.cancelled = params.cancel && params.cancel->load();
        return summary;
    }

    Status workerInitError;  // a worker could not make its recognizer
    Status writeError;       // a page could not be committed (the disk is full, say)

private:
    void log(const std::string& m) const {
        if (params.onLog) params.onLog(m);
    }
    bool cancelled() const { return stop.load() || (params.cancel && params.cancel->load()); }
    BoundedQueue<Job>& work() { return splitter ? preparedJobs : jobs; }

    void loadPages();
    void preparePages();
    void prepareJob(Job& job) const;
    bool readsFirst(const Recognizer& rec, const PageRecord& page) const;
    void recognizePages();
    // `after`: the prepared regions of the pages held after it (Recognizer::pagesAhead).
    std::optional<Done> recognizePage(Recognizer& rec, Job& job, const std::vector<PreparedPage*>& after);
    Result<std::vector<PageOutcome>> readRegions(Recognizer& rec, const Job& job, const PreprocessResult& pre,
                                                 const std::vector<PreparedPage*>& after,
                                                 const std::string& contentHash, bool* upright);
    void logPreparation(const PageRecord& page, const PreprocessResult& pre, const std::string& typeDoubt) const;
    // The page's regions drawn by hand (null: none) and the one of them read again (-1: all).
    std::pair<const std::vector<PageRegion>*, int> handRegionsOf(int64_t pageId) const {
        const auto hand = regions.find(pageId);
        const std::vector<PageRegion>* drawn = hand != regions.end() ? &hand->second : nullptr;
        const auto one = params.rereadRegion.find(pageId);
        return {drawn, drawn && one != params.rereadRegion.end() ? one->second : -1};
    }
    void commitPages(RunSummary& summary);

    ProjectStore& store;
    const TranscribeParams& params;
    // The recognizer made before the run (the check of its languages and models): the first
    // worker's, and the prepare stage's when it splits pages. Owned by runTranscription, so it
    // outlives every thread of the run.
    Recognizer* const first;
    AttemptLog* const attempts;  // null: pages are not noted (the .inflight file cannot be written)
    const std::vector<PageRecord> queued;
    const std::map<int64_t, std::string> docPath;
    const std::map<int64_t, std::vector<PageRegion>>& regions;  // hand-drawn, by page id
    const std::map<int64_t, PageText>& readBefore;  // pages of which one region is read again: as they were
    const LigatureRepair* const ligatures;  // null: words stay as the engine read them
    const int threads, preparers;
    const Recognizer* const splitter;
    BoundedQueue<Job> jobs;
    BoundedQueue<Done> done;
    BoundedQueue<Job> preparedJobs{1};
    std::atomic<bool> stop{false};
    // The prepare stage: each thread takes the next page with a sequence number and hands it on in
    // that order.
    std::mutex takeMutex, orderMutex;
    std::condition_variable orderTurn;
    int64_t taken = 0, handedOn = 0;
    std::atomic<int> activeWorkers, preparersLeft;
    PixelBudget pixels;
    const PreprocessParams preprocess;  // params.preprocess and the languages that confirm a turn
    const PreprocessParams unturned = [p = preprocess]() mutable { p.orient = false; return p; }();  // read first
    std::mutex initMutex;
    bool firstTaken = false;
};

// The loader: decodes queued pages in book order, one source open at a time.
void Run::loadPages() {
    if (params.backgroundPriority) lowerThisThreadsPriority();
    std::unique_ptr<DocumentSource> src;
    Status openError;
    int64_t srcDoc = -1;
    std::map<int64_t, int> textLayerPages;
    for (const auto& page : queued) {
        while (params.pause && params.pause->load() && !cancelled())
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (cancelled()) break;
        Job job;
        job.page = page;
        if (srcDoc != page.documentId) {
            src.reset();
            srcDoc = page.documentId;
            SourceOptions so = params.source;
            if (!so.cancel) so.cancel = params.cancel;
            auto s = openSource(docPath.at(page.documentId), so);
            openError = s ? Status::ok() : s.status();
            if (s) src = std::move(*s);
            if (src && !src->openNote().empty()) log(docPath.at(page.documentId) + ": " + src->openNote());
        }
        if (!src) job.loadError = openError;
        // Noted before any work on it, so that a crash while it is read is pinned on it.
        if (attempts)
            if (Status s = attempts->mark(page.id); !s) log(pageName(page) + ": could not note the page as begun: " + s.message());
        if (src && job.loadError) {
            try {
                auto img = src->loadPage(page.sourceIndex);
                if (img) job.image = std::move(*img);
                else job.loadError = img.status();
                // The user's turn comes first; a PDF's text layer is in the unturned page's terms.
                if (img && page.rotation != 0) job.image.image = turnedClockwise(job.image.image, page.rotation);
                if (const auto r = regions.find(page.id); img && r != regions.end()) {
                    // Re-reading one region: the engine sees that region only (less what is
                    // marked image or ignore inside it).
                    std::vector<PageRegion> shown = r->second;
                    if (const auto one = params.rereadRegion.find(page.id); one != params.rereadRegion.end()) {
                        shown = {r->second[size_t(one->second)]};
                        for (const auto& other : r->second)
                            if (!regionIsRead(other.kind)) shown.push_back(other);
                    }
                    job.image.image = maskOutsideRegions(job.image.image, shown);
                }
                if (img && src->kind() == SourceKind::Pdf && page.rotation == 0) {
                    job.textLayer = src->textLayer(page.sourceIndex);
                    if (job.textLayer) ++textLayerPages[page.documentId];
                }
            } catch (const std::exception& e) {
                job.image = {};
                job.loadError = pageException(page, e);
            }
        }
        job.heldPixels = int64_t(job.image.image.total());
        if (!pixels.acquire(job.heldPixels, [this] { return cancelled(); })) break;
        if (!jobs.push(std::move(job))) break;
    }
    for (const auto& [doc, n] : textLayerPages)
        log(docPath.at(doc) + ": " + std::to_string(n) + " page(s) already carry a text layer; " +
            (params.pdfText == PdfTextPolicy::Keep ? "kept their text (--pdf-text keep)"
                                                   : "recognised the scans anyway (--pdf-text keep keeps the text)"));
    jobs.close();
}

// A prepare thread: preprocessing and the recognizer's first part, ahead of the worker.
void Run::preparePages() {
    if (params.backgroundPriority) lowerThisThreadsPriority();
    for (;;) {
        std::optional<Job> job;
        int64_t seq = 0;
        {
            std::lock_guard lock(takeMutex);
            job = jobs.pop();
            if (job) seq = taken++;
        }
        if (!job) break;
        if (!cancelled() && job->loadError && !(job->textLayer && params.pdfText == PdfTextPolicy::Keep)) {
            try {
                prepareJob(*job);
            } catch (const std::exception& e) {
                job->pre.reset();
                job->prepared.clear();
                job->loadError = pageException(job->page, e);
            }
        }
        {
            std::unique_lock lock(orderMutex);
            orderTurn.wait(lock, [&] { return handedOn == seq; });
        }
        // Cancelled: the page is not handed on, but its turn passes (the other thread waits on it).
        const bool pushed = !cancelled() && preparedJobs.push(std::move(*job));
        {
            std::lock_guard lock(orderMutex);
            ++handedOn;
        }
        orderTurn.notify_all();
        if (!pushed) break;
    }
    if (--preparersLeft == 0) preparedJobs.close();
}

// The page's regions and the split engine's first part of each. An engine that judges a page
// upright from that part prepares it without the orientation check and checks only where it
// doubts, or on a page that samples the book's script (as recognizePage does for the others).
void Run::prepareJob(Job& job) const {
    const auto prepareRegions = [&] {
        job.prepared.clear();
        for (const auto& region : job.pre->regions)
            job.prepared.push_back(splitter->prepare(region.image, job.image.dpi, params.cancel));
    };
    const bool readFirst = readsFirst(*splitter, job.page);
    job.pre = preprocessPage(job.image.image, readFirst ? unturned : preprocess, params.cancel);
    if (job.pre->cancelled) return;
    prepareRegions();
    if (!readFirst || std::all_of(job.prepared.begin(), job.prepared.end(),
                                  [&](const auto& p) { return p && splitter->preparedUpright(*p); }))
        return;
    job.pre = orientPreparedPage(job.image.image, std::move(*job.pre), preprocess, params.cancel);
    if (!job.pre->cancelled && job.pre->quarterTurns != 0) prepareRegions();
}

// Whether `rec` reads `page` before the orientation check: an engine that judgesUpright, where
// the check is on, except on the pages that sample the book's script (kScriptCheckEvery). A split
// engine judges in the prepare stage (preparedUpright), the others from their reading.
bool Run::readsFirst(const Recognizer& rec, const PageRecord& page) const {
    return preprocess.orient && rec.judgesUpright() && (page.sequence - 1) % kScriptCheckEvery != 0;
}

// A worker: recognises prepared or loaded pages and hands them to the committer.
void Run::recognizePages() {
    if (params.backgroundPriority) lowerThisThreadsPriority();
    // The first recognizer is borrowed: it stays owned by runTranscription until every thread
    // has been joined, since the prepare threads call into it (splitter) and may still be
    // inside a page when a cancelled worker ends (moved into the worker, it was freed under
    // them). Other workers of an engine without context make their own.
    Recognizer* borrowed = nullptr;
    {
        std::lock_guard lock(initMutex);
        if (!firstTaken) borrowed = first, firstTaken = true;
    }
    Result<std::unique_ptr<Recognizer>> own = borrowed ? Result<std::unique_ptr<Recognizer>>(nullptr)
                                                       : createRecognizer(params.recognizer);
    Recognizer* const rec = borrowed ? borrowed : own ? own->get() : nullptr;
    if (!own) {
        std::lock_guard lock(initMutex);
        workerInitError = own.status();
        stop = true;
        jobs.close();
        preparedJobs.close();
    }
    // A reader that reads ahead gets the prepared pages after the one it reads: the worker holds
    // pages until it has that many prepared regions after the first page held, or the queue ends.
    const int ahead = rec && splitter ? rec->pagesAhead() : 0;
    std::deque<Job> held;
    bool ended = rec == nullptr;
    const auto regionsAfterFirst = [&] {
        size_t n = 0;
        for (size_t i = 1; i < held.size(); ++i) n += held[i].prepared.size();
        return n;
    };
    for (;;) {
        while (!ended && (held.empty() || regionsAfterFirst() < size_t(ahead))) {
            // A page held for the look-ahead no longer counts against the pixel budget, so that the
            // loader can bring the next one whatever the budget (memory: the budget and `ahead` pages).
            if (!held.empty())
                for (Job& j : held) pixels.release(std::exchange(j.heldPixels, 0));
            auto next = work().pop();
            if (next) held.push_back(std::move(*next));
            else ended = true;
        }
        if (held.empty()) break;
        Job job = std::move(held.front());
        held.pop_front();
        std::vector<PreparedPage*> after;
        for (const Job& j : held)
            for (const auto& p : j.prepared)
                if (p) after.push_back(p.get());
        std::optional<Done> d = recognizePage(*rec, job, after);
        job.image = {};
        job.pre.reset();
        job.prepared.clear();
        pixels.release(job.heldPixels);
        if (!d) break;
        if (d->error.code() == ErrorCode::Cancelled) break;
        if (rec->carriesContext()) d->checkpoint = rec->checkpoint();
        if (!done.push(std::move(*d))) break;
    }
    for (Job& j : held) pixels.release(j.heldPixels);
    if (--activeWorkers == 0) done.close();
}

// Recognises one loaded (and maybe prepared) page with `rec`; nothing when the run was cancelled
// before it began.
std::optional<Done> Run::recognizePage(Recognizer& rec, Job& job, const std::vector<PreparedPage*>& after) {
    Done d;
    d.page = job.page;
    if (!job.loadError) {
        d.error = job.loadError;
    } else if (cancelled()) {
        return std::nullopt;
    } else try {
        if (params.onPageStarted) params.onPageStarted(job.page.id);
        const PageImage& img = job.image;
        const std::string contentHash = pixelHash(img.image);
        if (job.textLayer && params.pdfText == PdfTextPolicy::Keep) {
            PageOutcome o;
            o.text = textFromLayer(*job.textLayer, img.image.cols, img.image.rows, img.dpi);
            o.region = {0, 0, img.image.cols, img.image.rows};
            o.contentSha256 = contentHash;
            o.textLayer = job.textLayer;
            o.keptTextLayer = true;
            if (const auto r = regions.find(job.page.id); r != regions.end()) arrangeByRegions(o.text, r->second);
            d.outcomes.push_back(std::move(o));
        } else {
            // An engine that tells from its own reading whether a page was upright reads it first;
            // the orientation check (OSD, a third of a second a page) runs only where it doubts.
            // A split engine without a prepare stage checks first: its decoder must see a page once.
            const bool prepared = job.pre.has_value();  // by the prepare stage, checked there
            const bool readFirst = !prepared && !rec.splitsPages() && readsFirst(rec, job.page);
            PreprocessResult pre = job.pre ? std::move(*job.pre)
                                           : preprocessPage(img.image, readFirst ? unturned : preprocess, params.cancel);
            if (pre.cancelled) return std::nullopt;  // its regions are incomplete: the page stays queued
            bool upright = true;
            auto outcomes = readRegions(rec, job, pre, after, contentHash, readFirst ? &upright : nullptr);
            if (outcomes && !upright) {
                // Not turned, the regions are the first pass's: the reading stands, the log tells the check.
                pre = orientPreparedPage(img.image, std::move(pre), preprocess, params.cancel);
                if (pre.cancelled) return std::nullopt;
                if (pre.quarterTurns != 0) outcomes = readRegions(rec, job, pre, after, contentHash, nullptr);
            }
            d.orientationChecked = pre.orientationChecked;
            const std::string typeDoubt =
                scriptDoubt(pre.script, pre.scriptConfidence, params.recognizer.engine, params.recognizer.languages);
            logPreparation(job.page, pre, typeDoubt);
            if (!outcomes) {
                d.error = outcomes.status();
            } else {
                for (PageOutcome& o : *outcomes) {
                    if (!typeDoubt.empty()) o.flagReason += (o.flagReason.empty() ? "" : "; ") + typeDoubt;
                    o.flagged = !o.flagReason.empty();
                }
                d.outcomes = std::move(*outcomes);
            }
        }
        if (!img.note.empty()) log(pageName(job.page) + ": " + img.note);
        if (!img.doubt.empty()) log(pageName(job.page) + ": flagged: " + img.doubt);
        if (const std::string n = rec.takeNotice(); !n.empty()) log(pageName(job.page) + ": " + n);
    } catch (const std::exception& e) {
        d.outcomes.clear();
        d.error = pageException(job.page, e);
    }
    return d;
}

// The run's log of what preparing the page did: inverted, the script doubted, turned or not.
void Run::logPreparation(const PageRecord& page, const PreprocessResult& pre, const std::string& typeDoubt) const {
    const std::string name = pageName(page);
    if (pre.inverted) log(name + ": white text on black; inverted before reading");
    if (!typeDoubt.empty()) log(name + ": " + typeDoubt);
    if (pre.turnDeclined())
        log(name + ": left as it is: it reads better upright than turned (mean word confidence " +
            std::to_string(int(pre.uprightReading)) + " against " + std::to_string(int(pre.turnedReading)) + ")");
    if (pre.quarterTurns != 0)
        log(name + ": turned " + std::to_string(pre.quarterTurns * 90) + "° clockwise before reading (it was scanned " +
            (pre.quarterTurns == 2 ? "upside down" : "on its side") + "; orientation confidence " +
            std::to_string(int(pre.orientationConfidence)) +
            (pre.turnedReading >= 0 ? "; it reads at " + std::to_string(int(pre.turnedReading)) + " turned against " +
                                          std::to_string(int(pre.uprightReading))
                                    : std::string()) +
            ")");
    const auto [handRegions, onlyRegion] = handRegionsOf(page.id);
    if (onlyRegion >= 0)
        log(name + ": its region " + std::to_string(onlyRegion + 1) + " (" +
            regionKindName((*handRegions)[size_t(onlyRegion)].kind) + ") read again; the rest of its text kept");
    else if (handRegions)
        log(name + ": read in its " + std::to_string(handRegions->size()) + " region(s) drawn by hand");
}

// The regions of `pre` read by `rec`, one outcome each, boxes in the source page. With `upright`,
// set false when a region's reading did not show the page upright (Recognizer::lastReadUpright).
Result<std::vector<PageOutcome>> Run::readRegions(Recognizer& rec, const Job& job, const PreprocessResult& pre,
                                                  const std::vector<PreparedPage*>& after,
                                                  const std::string& contentHash, bool* upright) {
    const PageImage& img = job.image;
    const auto [handRegions, onlyRegion] = handRegionsOf(job.page.id);
    std::vector<PageOutcome> outcomes;
    for (size_t r = 0; r < pre.regions.size(); ++r) {
        const auto& region = pre.regions[r];
        std::function<void(const std::string&)> stream;
        if (params.onText) stream = [&, id = job.page.id](const std::string& piece) { params.onText(id, piece); };
        std::vector<PreparedPage*> ahead;  // this page's later regions, then the pages after it
        for (size_t n = r + 1; n < job.prepared.size(); ++n)
            if (job.prepared[n]) ahead.push_back(job.prepared[n].get());
        ahead.insert(ahead.end(), after.begin(), after.end());
        auto text = r < job.prepared.size() && job.prepared[r]
                        ? rec.recognizePrepared(*job.prepared[r], ahead, params.cancel, stream)
                        : rec.recognize(region.image, img.dpi, params.cancel, stream);
        if (!text) return text.status();
        if (upright && !rec.lastReadUpright()) *upright = false;
        PageOutcome o;
        o.text = std::move(*text);
        if (ligatures) ligatures->repairPage(o.text);  // before any kept text is merged in
        for (auto& line : o.text.lines) {
            line.box = region.toSource(line.box);
            for (auto& w : line.words) w.box = region.toSource(w.box);
        }
        if (handRegions && onlyRegion >= 0)
            o.text = replaceRegionText(readBefore.at(job.page.id), o.text, *handRegions, onlyRegion);
        else if (handRegions)
            arrangeByRegions(o.text, *handRegions);
        o.text.width = img.image.cols;
        o.text.height = img.image.rows;
        o.region = {region.sourceRect.x, region.sourceRect.y, region.sourceRect.width, region.sourceRect.height};
        o.skewDegrees = region.skewDegrees;
        o.preprocess = params.preprocess.toJson();
        o.contentSha256 = contentHash;
        o.textLayer = job.textLayer;
        o.flagReason = params.flag.reason(o.text, inkShare(region.image));
        if (!img.doubt.empty()) o.flagReason += (o.flagReason.empty() ? "" : "; ") + img.doubt;
        outcomes.push_back(std::move(o));
    }
    return outcomes;
}

// The committer (the calling thread): each finished page in its own transaction, with progress.
void Run::commitPages(RunSummary& summary) {
    auto counts = store.counts();
    RunProgress progress;
    if (counts) progress.total = counts->pages, progress.done = counts->done, progress.failed = counts->failed,
                progress.flagged = counts->flagged;
    if (params.onProgress) params.onProgress(progress);
    const auto start = std::chrono::steady_clock::now();
    bool backupWarned = false;
    while (auto d = done.pop()) {
        PageEvent ev;
        const DecoderCheckpoint* checkpoint = d->checkpoint ? &*d->checkpoint : nullptr;
        if (d->error.isOk()) {
            writeError = store.saveResult(d->page.id, d->outcomes, checkpoint);
        } else {
            const bool input = isInputError(d->error.code());
            (input ? summary.inputFailures : summary.engineFailures)++;
            ev.failure = d->error.message();
            writeError = store.saveFailure(d->page.id, input ? "input" : "engine", d->error.message(), checkpoint);
            // Most reasons already name the file and page; the others get them.
            const std::string& why = d->error.message();
            log("failed: " + (why.rfind(pageName(d->page), 0) == 0 ? why : pageName(d->page) + ": " + why));
        }
        if (!writeError) {
            stop = true;  // e.g. the disk is full: stop cleanly, every committed page stays
            break;
        }
        ++summary.processed;
        if (d->orientationChecked) ++summary.orientationChecks;
        if (Status b = store.backupIfDue(); !b && !backupWarned) {
            log("the project's rolling backup failed (it is tried again later): " + b.message());
            backupWarned = true;
        }
        if (auto c = store.counts()) {
            progress.total = c->pages, progress.done = c->done, progress.failed = c->failed, progress.flagged = c->flagged;
        }
        progress.processedThisRun = summary.processed;
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        progress.pagesPerMinute = secs > 0 ? summary.processed * 60.0 / secs : 0;
        const int remaining = progress.total - progress.done - progress.failed;
        progress.etaSeconds = progress.pagesPerMinute > 0 ? remaining * 60.0 / progress.pagesPerMinute : -1;
        if (params.onPage) {
            if (auto rec = store.page(d->page.id)) ev.page = *rec;
            for (const auto& o : d->outcomes) ev.text += (ev.text.empty() ? "" : "\n\n") + o.text.plainText();
            params.onPage(ev);
        }
        if (params.onProgress) params.onProgress(progress);
    }
}

}  // namespace

// A page is quarantined once the engine has crashed this many times while reading it.
constexpr int kCrashesToQuarantine = 2;

Result<RunSummary> runTranscription(ProjectStore& store, const TranscribeParams& params) {
    auto log = [&](const std::string& m) {
        if (params.onLog) params.onLog(m);
    };
    if (store.readOnly()) return Status(ErrorCode::Io, store.path().string() + ": the project is read-only");
    // The recognizer is made before any page is touched, so a missing language or model is one
    // clear message, not a failure per page. An engine that carries context from page to page reads
    // the whole volume with this one instance, in page order (and takes up the context a killed or
    // cancelled run left in the project); other engines get one instance per worker, this the first.
    auto made = createRecognizer(params.recognizer);
    if (!made) return made.status();
    std::unique_ptr<Recognizer> first = std::move(made).value();
    const bool inOrder = first->carriesContext();
    if (const std::string n = first->charsetNotice(); !n.empty()) log(n);
    if (Status s = registerInputs(store, params); !s) return s;
    auto inRange = [&](const PageRecord& p) {
        return params.firstPage <= 0 || (p.sequence >= params.firstPage && p.sequence <= params.lastPage);
    };
    // A region read again alone: the page's reading as it is now, into which the region's goes.
    std::map<int64_t, PageText> readBefore;
    for (const auto& [pageId, region] : params.rereadRegion) {
        auto drawn = pageRegions(store, pageId);
        if (!drawn) return drawn.status();
        auto page = store.page(pageId);
        if (!page) return page.status();
        if (region < 0 || region >= int(drawn->size()) || !regionIsRead((*drawn)[size_t(region)].kind))
            return Status(ErrorCode::InvalidArgument,
                          pageName(*page) + " has " + std::to_string(drawn->size()) + " region(s) drawn; region " +
                              std::to_string(region + 1) + (region >= 0 && region < int(drawn->size()) ? " is not one that is read"
                                                                                                       : " is not one of them"));
        if (std::find(params.rereadPages.begin(), params.rereadPages.end(), pageId) == params.rereadPages.end())
            return Status(ErrorCode::InvalidArgument, pageName(*page) + ": a region is read again only with its page");
        auto layout = store.layout(pageId);
        if (!layout) return layout.status();
        readBefore[pageId] = std::move(*layout);
    }
    if (!params.rereadPages.empty()) {
        auto corrected = queueReread(store, params.rereadPages, params.rereadReplacesCorrections);
        if (!corrected) return corrected.status();
        if (*corrected > 0)
            log(std::to_string(*corrected) + " of the pages read again have corrections: " +
                (params.rereadReplacesCorrections
                     ? "the new readings become their text; the corrections stay in their history"
                     : "they stay the pages' text; the new readings are kept as versions"));
    }
    if (params.retryFailed && params.firstPage > 0) {
        auto pages = store.pages();
        if (!pages) return pages.status();
        for (const auto& p : *pages)
            if (inRange(p) && p.status == PageStatus::Failed)
                if (Status s = store.retryPage(p.id); !s) return s;
    } else if (params.retryFailed) {
        if (Status s = store.requeueFailed(); !s) return s;
    }
    // The pages the last run began and did not commit: a crash is counted on them when that run
    // crashed (its marker is there), not when it was killed or cancelled. A page that crashed the
    // engine twice is failed, not read again: it would end every later run of the project.
    const fs::path crashMarker = store.path().string() + ".crashed", inflight = store.path().string() + ".inflight";
    // A run ended by the kernel's out-of-memory killer (SIGKILL: no marker) is told from a kill by
    // hand by the killer's count, which grew since that run started; it counts as a crash too.
    std::error_code markerError;
    const bool crashedBefore = fs::exists(crashMarker, markerError);
    const bool oomKilled = !crashedBefore && fs::exists(inflight, markerError) && AttemptLog::oomKillsSince(inflight);
    if (crashedBefore || oomKilled) {
        const std::vector<int64_t> inFlight = AttemptLog::read(inflight);
        if (oomKilled && !inFlight.empty())
            log("the last run was most likely ended by the system's out-of-memory killer while it read " +
                std::to_string(inFlight.size()) + " page(s); counted as a crash on them");
        if (Status s = store.countCrashes(inFlight); !s) return s;
        fs::remove(crashMarker, markerError);
        fs::remove(inflight, markerError);  // counted once (the pages' crash counts are in the project now)
    }
    auto crashed = store.quarantineCrashedPages(kCrashesToQuarantine);
    if (!crashed) return crashed.status();
    for (const auto& p : *crashed)
        log(pageName(p) + ": the engine crashed " + std::to_string(p.crashes) + " times while reading it; marked failed and "
            "skipped (quire-cli pages --retry " + std::to_string(p.sequence) + " reads it again)");
    auto queued = store.queuedPages();
    if (!queued) return queued.status();
    std::erase_if(*queued, [&](const PageRecord& p) { return !inRange(p); });
    auto docs = store.documents();
    if (!docs) return docs.status();
    std::map<int64_t, std::string> docPath;
    for (const auto& d : *docs) docPath[d.id] = d.path;

    auto regions = allPageRegions(store);
    if (!regions) return regions.status();
    auto runId = store.beginRun(params.toJson());
    if (!runId) return runId.status();

    // A context-carrying engine reads the volume as one sequence: one worker, pages in order. When its
    // work on a page splits (the reader: the front-end, then the decoder), a prepare stage runs the
    // first part for the next pages on threads of their own while the worker finishes this one.
    const int threads = inOrder ? 1
                                : std::max(1, params.threads > 0 ? params.threads
                                                                 : int(std::thread::hardware_concurrency()));
    const bool splits = inOrder && first->splitsPages() && params.preparers != 0;
    // Two prepare threads where the machine has two cores or more: the front-end takes two to three
    // times the decoder's time a page, so with one the decoder waited for it most of the time.
    const int preparers = !splits ? 0
                          : params.preparers > 0 ? std::min(params.preparers, 2)
                          : std::thread::hardware_concurrency() >= 2 ? 2 : 1;
    // Page-level parallelism: each worker's (and the prepare stage's) GEMMs get their share of the
    // cores, so they do not fight over OpenBLAS's thread pool.
    openblas_set_num_threads(std::max(1, int(std::thread::hardware_concurrency()) / (threads + preparers)));
    if (inOrder)  // after the thread count is set: the context is rebuilt as it was first computed
        if (Status s = resumeContext(store, *first, *queued, log); !s) {
            (void)store.finishRun(*runId, "failed");
            return s;
        }
    auto attempts = AttemptLog::start(inflight);
    if (!attempts) log("pages will not be noted as begun, so a page that crashes the engine cannot be found: " +
                       attempts.status().message());
    AttemptLog* const marks = attempts ? &*attempts : nullptr;
    // Pages that were being read when an earlier run crashed are read first, each alone in a run
    // of its own, so that another crash is pinned on the page that caused it and not on its
    // neighbours in the queues. For an engine reading in order, only those at the head.
    std::vector<PageRecord> suspects, rest;
    for (auto& p : *queued) {
        const bool atHead = suspects.size() == size_t(&p - queued->data());
        (p.crashes > 0 && (!inOrder || atHead) ? suspects : rest).push_back(std::move(p));
    }
    const CrashMarker crashGuard(crashMarker);
    std::optional<LigatureRepair> ligatures;
    if (params.repairLigatures) {
        Dictionary dictionary = Dictionary::forLanguages(params.recognizer.languages, params.dictionaryDir);
        if (auto words = store.projectWords())
            for (const auto& w : *words) dictionary.addWord(w);
        if (dictionary.available()) ligatures.emplace(std::move(dictionary));
    }
    RunSummary summary;
    Status runError;
    auto runPages = [&](std::vector<PageRecord> pages, int t, int prep) {
        Run run(store, params, *first, marks, std::move(pages), docPath, *regions, readBefore,
                ligatures ? &*ligatures : nullptr, t, prep);
        const RunSummary part = run.execute();
        summary.processed += part.processed;
        summary.inputFailures += part.inputFailures;
        summary.engineFailures += part.engineFailures;
        summary.orientationChecks += part.orientationChecks;
        summary.cancelled = part.cancelled;
        if (!run.workerInitError.isOk()) runError = run.workerInitError;
        else if (!run.writeError) runError = run.writeError;
    };
    auto goOn = [&] { return runError.isOk() && !(params.cancel && params.cancel->load()); };
    for (auto& p : suspects) {
        if (!goOn()) break;
        log(pageName(p) + ": it was being read when an earlier run crashed; reading it alone");
        runPages({std::move(p)}, 1, 0);
    }
    if (goOn() && !rest.empty()) runPages(std::move(rest), threads, preparers);
    if (!crashed->empty()) summary.engineFailures += int(crashed->size());
    (void)store.finishRun(*runId, !runError.isOk() ? "failed" : summary.cancelled ? "cancelled" : "finished");
    fs::remove(inflight, markerError);  // the run ended without crashing: nothing of it is in flight
    if (!runError.isOk()) return runError;
    if (auto c = store.counts()) {
        summary.total = c->pages, summary.done = c->done, summary.failed = c->failed, summary.flagged = c->flagged;
        // Nothing left to read: the context is no longer needed, and its pages take room.
        if (inOrder && c->queued == 0 && !summary.cancelled)
            if (Status s = store.clearDecoderState(); !s) log("could not drop the reader's saved context: " + s.message());
    }
    return summary;
}

}  // namespace quire
