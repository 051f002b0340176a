// The SR-SWA reader as a Recognizer: one decoder session across a transcription's pages, with the
// front-end's part of a page split off so that it can run ahead on other threads.
#include <algorithm>
#include <cstdio>
#include <thread>

#include "quire/reader/reader.h"
#include "quire/recognizers/line_evidence.h"
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
    // `evidence`: Tesseract (from `tessdata`) reads each page too, for a model that reads its
    // evidence (visual_evidence_ids) or the evidence prior.
    ReaderRecognizer(std::unique_ptr<ReaderEngine> engine, std::string langs, bool printStats, bool evidence,
                     std::string tessdata)
        : m_engine(std::move(engine)), m_langs(std::move(langs)), m_printStats(printStats), m_evidence(evidence),
          m_tessdata(std::move(tessdata)) {}
    std::string name() const override { return "reader"; }
    std::string version() const override { return "SR-SWA reader"; }
    Result<PageText> recognize(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel,
                               const std::function<void(const std::string&)>& onText) override {
        return finish(m_engine->readEncoded(encode(gray, dpi, cancel), dpi, cancel, onText));
    }
    // The front-end's reading of a page, ahead of the decoder.
    struct Encoded : PreparedPage {
        Encoded(Result<PpocrPage> p, int d) : page(std::move(p)), dpi(d) {}
        Result<PpocrPage> page;
        int dpi;
    };
    bool splitsPages() const override { return true; }
    bool judgesUpright() const override { return true; }
    bool preparedUpright(const PreparedPage& page) const override {
        const auto* encoded = dynamic_cast<const Encoded*>(&page);
        return encoded && encoded->page && readsUprightByWords(m_engine->frontEnd().toPageText(*encoded->page, encoded->dpi));
    }
    std::unique_ptr<PreparedPage> prepare(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel) const override {
        return std::make_unique<Encoded>(encode(gray, dpi, cancel), dpi);
    }
    Result<PageText> recognizePrepared(PreparedPage& page, const std::vector<PreparedPage*>& ahead,
                                       const std::atomic<bool>* cancel,
                                       const std::function<void(const std::string&)>& onText) override {
        auto* encoded = dynamic_cast<Encoded*>(&page);
        if (!encoded) return Status(ErrorCode::Internal, "reader: a page prepared by another engine");
        std::vector<const Result<PpocrPage>*> next;
        for (PreparedPage* p : ahead) {
            auto* e = dynamic_cast<Encoded*>(p);
            if (!e) break;
            next.push_back(&e->page);
        }
        return finish(m_engine->readEncoded(encoded->page, encoded->dpi, cancel, onText, next));
    }
    int pagesAhead() const override { return m_engine->pagesAhead(); }
    bool carriesContext() const override { return true; }
    std::string takeNotice() override { return m_notice.take(m_engine->deviceNotice(), "reader"); }
    std::string charsetNotice() const override { return frontEndCharsetNotice(m_engine->characters(), m_langs, "the reader"); }
    DecoderCheckpoint checkpoint() override { return m_engine->checkpoint(); }
    Status restoreContext(const std::string& state,
                          const std::function<Result<std::vector<float>>(int)>& pages) override {
        return m_engine->restore(state, pages);
    }

private:
    // The front-end's reading of a page and, for the evidence prior, Tesseract's glyphs laid on its
    // characters (one Tesseract per thread: pages are prepared on several).
    Result<PpocrPage> encode(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel) const {
        auto page = m_engine->encode(gray, cancel);
        if (!page || !m_evidence) return page;
        thread_local std::unique_ptr<Recognizer> tesseract;
        thread_local std::string tesseractFor;
        const std::string key = m_langs + "|" + m_tessdata;
        if (!tesseract || tesseractFor != key) {
            RecognizerOptions o;
            o.engine = "tesseract";
            o.languages = m_langs;
            o.tessdataDir = m_tessdata;
            o.glyphChoices = true;
            auto made = createTesseractRecognizer(o);
            if (!made) return Status(made.status().code(), "reader's evidence: " + made.status().message());
            tesseract = std::move(*made);
            tesseractFor = key;
        }
        auto other = tesseract->recognize(gray, dpi, cancel);
        if (!other) return other.status();
        for (auto& line : page->lines) {
            const LineEvidence ev = alignLineEvidence(line, m_engine->frontEnd(), *other);
            line.evidence.assign(ev.chars.size(), {});
            line.evidenceConf.assign(ev.chars.size(), 0.f);
            line.evidenceBreak.assign(ev.chars.size(), 0);
            line.evidenceBefore.assign(ev.chars.size(), {});
            line.evidenceTrailing = ev.trailing;
            for (size_t c = 0; c < ev.chars.size(); ++c) {
                if (const int g = ev.chars[c].glyph; g >= 0) {
                    line.evidence[c] = ev.glyphs[size_t(g)].text;
                    line.evidenceConf[c] = ev.glyphs[size_t(g)].confidence / 100.f;
                }
                line.evidenceBreak[c] = ev.chars[c].breakBefore ? 1 : 0;
                line.evidenceBefore[c] = ev.chars[c].before;
            }
        }
        return page;
    }

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
    bool m_evidence = false;
    std::string m_tessdata;
    NoticeOnce m_notice;
};

}  // namespace

Result<std::unique_ptr<Recognizer>> createReaderRecognizer(const RecognizerOptions& options, decoder::StepDevice device) {
    const ReaderTuning& t = options.readerTuning;
    ReaderOptions o;
    o.modelDir = options.readerModel;
    o.ppocr = ppocrOptionsFor(options);
    o.frontEndLineBatch = options.ppocrRecBatch;  // a measurement's; else the model's
    o.closeUpSpacing = t.spacingRule && !hasLanguage(options.languages, "fra");  // French spaces ; : ? ! by rule
    o.attention.threads = options.decoderThreads > 0 ? std::min(options.decoderThreads, 2)
                                                     : std::thread::hardware_concurrency() >= 3 ? 2 : 1;
    o.attention.device = device;
    o.attention.deviceMemoryLimit = options.deviceMemoryMiB << 20;
    o.draft = t.draft;
    if (t.prior >= 0.f) o.draftPrior = t.prior;
    o.windowBefore = t.windowBefore, o.windowAfter = t.windowAfter, o.gatedPages = t.gatedPages;
    if (t.rareBelow >= 0) o.rareBelow = t.rareBelow;
    if (t.rarePrior >= 0.f) o.rarePrior = t.rarePrior;
    o.joinDashes = o.joinDashes && t.dashRule;
    o.sharing = options.readerSharing;
    o.contextPerPage = t.contextPerPage;
    o.lineEndRule = t.lineEndRule, o.hyphenRule = t.hyphenRule, o.joinRule = t.joinRule;
    o.layoutParagraphs = t.layoutParagraphs;
    o.pageEndHyphen = t.pageEndHyphen;
    o.skipRule = t.skipRule;
    o.wholePageRule = t.wholePageRule;
    if (t.languageLetters && onlyLanguage(options.languages, "eng"))
        o.unwritten.assign(std::begin(reader_vocab::kNotEnglish), std::end(reader_vocab::kNotEnglish));
    o.typesetParagraphs = t.typesetParagraphs;
    o.evidencePrior = t.evidencePrior;
    auto e = ReaderEngine::load(o);
    if (!e) return e.status();
    // A model that reads evidence gets none for Chinese (tools/train/data.py NO_EVIDENCE_LANGUAGES:
    // chi_sim's glyphs are mostly wrong where the front-end is right; docs/RUNS.md, run 16).
    const bool evidence = o.evidencePrior > 0 || ((*e)->readsEvidence() && !hasLanguage(options.languages, "chi"));
    if (evidence)
        if (Status s = checkTesseractLanguages(options.languages, options.tessdataDir); !s)
            return Status(s.code(), "the reader model reads Tesseract's evidence: " + s.message());
    return std::unique_ptr<Recognizer>(new ReaderRecognizer(std::move(e).value(), options.languages, t.printStats,
                                                            evidence, options.tessdataDir));
}

}  // namespace quire
