// The SR-SWA reader as a Recognizer: one decoder session across a transcription's pages, with the
// front-end's part of a page split off so that it can run ahead on other threads.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "quire/reader/reader.h"
#include "quire/recognizers/recognizer.h"
#include "recognizers/engines.h"
#include "recognizers/notice_once.h"

namespace quire {

namespace {

// The reader as a Recognizer: one decoder session across the pages it is given, which must come
// in order (the transcriber runs a single worker for it). A page that loops or reaches the token
// cap is an engine failure with the reason.
class ReaderRecognizer : public Recognizer {
public:
    ReaderRecognizer(std::unique_ptr<ReaderEngine> engine, std::string langs, bool printStats)
        : m_engine(std::move(engine)), m_langs(std::move(langs)), m_printStats(printStats) {}
    std::string name() const override { return "reader"; }
    std::string version() const override { return "SR-SWA reader"; }
    Result<PageText> recognize(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel,
                               const std::function<void(const std::string&)>& onText) override {
        return finish(m_engine->readPage(gray, dpi, cancel, onText));
    }
    // The front-end's reading of a page, ahead of the decoder.
    struct Encoded : PreparedPage {
        Encoded(Result<PpocrPage> p, int d) : page(std::move(p)), dpi(d) {}
        Result<PpocrPage> page;
        int dpi;
    };
    bool splitsPages() const override { return true; }
    std::unique_ptr<PreparedPage> prepare(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel) const override {
        return std::make_unique<Encoded>(m_engine->encode(gray, cancel), dpi);
    }
    Result<PageText> recognizePrepared(PreparedPage& page, const std::atomic<bool>* cancel,
                                       const std::function<void(const std::string&)>& onText) override {
        auto* encoded = dynamic_cast<Encoded*>(&page);
        if (!encoded) return Status(ErrorCode::Internal, "reader: a page prepared by another engine");
        return finish(m_engine->readEncoded(encoded->page, encoded->dpi, cancel, onText));
    }
    bool carriesContext() const override { return true; }
    std::string takeNotice() override { return m_notice.take(m_engine->deviceNotice(), "reader"); }
    DecoderCheckpoint checkpoint() override { return m_engine->checkpoint(); }
    Status restoreContext(const std::string& state,
                          const std::function<Result<std::vector<float>>(int)>& pages) override {
        return m_engine->restore(state, pages);
    }

private:
    Result<PageText> finish(Result<ReaderPage> page) const {
        if (!page) return page.status();
        // A line per page on stderr for benchmarks (tools/bench/reader_volume.py).
        if (m_printStats)
            std::fprintf(stderr, "reader stats: decoded in %.1f ms, %lld pages computed again so far, %.1f ms on the CPU, %d tokens, "
                         "%d computed\n",
                         page->decodeSeconds * 1000.0, static_cast<long long>(page->pagesComputedAgain),
                         page->decodeCpuSeconds * 1000.0, page->tokens, page->computedTokens);
        if (!page->failure.empty()) return Status(ErrorCode::Engine, "reader: " + page->failure);
        page->text.language = m_langs;
        return std::move(page->text);
    }

    std::unique_ptr<ReaderEngine> m_engine;
    std::string m_langs;
    bool m_printStats = false;
    NoticeOnce m_notice;
};

}  // namespace

Result<std::unique_ptr<Recognizer>> createReaderRecognizer(const RecognizerOptions& options, decoder::StepDevice device) {
    const ReaderTuning& t = options.readerTuning;
    ReaderOptions o;
    o.modelDir = options.readerModel;
    o.ppocr = ppocrOptionsFor(options);
    o.closeUpSpacing = t.spacingRule && !hasLanguage(options.languages, "fra");  // French spaces ; : ? ! by rule
    o.attention.threads = options.decoderThreads > 0 ? std::min(options.decoderThreads, 2)
                                                     : std::thread::hardware_concurrency() >= 3 ? 2 : 1;
    o.attention.device = device;
    o.attention.deviceMemoryLimit = options.deviceMemoryMiB << 20;
    o.draft = t.draft;
    if (t.prior >= 0.f) o.draftPrior = t.prior;
    if (t.windowBefore >= 0) o.attention.windowBefore = t.windowBefore;
    if (t.gatedPages >= 0) o.attention.gatedPages = t.gatedPages;
    if (t.rareBelow >= 0) o.rareBelow = t.rareBelow;
    if (t.rarePrior >= 0.f) o.rarePrior = t.rarePrior;
    o.joinDashes = o.joinDashes && t.dashRule;
    o.sharing = options.readerSharing;
    o.contextPerPage = t.contextPerPage;
    o.lineEndRule = t.lineEndRule, o.hyphenRule = t.hyphenRule, o.joinRule = t.joinRule;
    auto e = ReaderEngine::load(o);
    if (!e) return e.status();
    return std::unique_ptr<Recognizer>(new ReaderRecognizer(std::move(e).value(), options.languages, t.printStats));
}

}  // namespace quire
