// The PP-OCR front-end as a Recognizer, and the choice between recognizers.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "quire/ppocr.h"
#include "quire/reader.h"
#include "quire/recognizer.h"

namespace quire {

Result<std::unique_ptr<Recognizer>> createTesseractRecognizer(const RecognizerOptions& options);

namespace {

// A device notice for the run's log (Recognizer::takeNotice): given once, when it changes.
class NoticeOnce {
public:
    std::string take(const std::string& notice, const char* engine) {
        if (notice.empty() || notice == m_reported) return {};
        m_reported = notice;
        return std::string(engine) + ": " + notice;
    }

private:
    std::string m_reported;
};

class PpocrRecognizer : public Recognizer {
public:
    explicit PpocrRecognizer(std::shared_ptr<const PpocrEngine> engine, std::string langs)
        : m_engine(std::move(engine)), m_langs(std::move(langs)) {}
    std::string name() const override { return "ppocr"; }
    std::string version() const override { return "PP-OCRv4"; }

    Result<PageText> recognize(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel,
                               const std::function<void(const std::string&)>& /*onText: not streamed*/) override {
        auto page = m_engine->read(gray, false, cancel);
        if (!page) return page.status();
        PageText text = m_engine->toPageText(*page, dpi);
        text.language = m_langs;
        return text;
    }
    std::string takeNotice() override { return m_notice.take(m_engine->deviceNotice(), "ppocr"); }

private:
    std::shared_ptr<const PpocrEngine> m_engine;
    std::string m_langs;
    NoticeOnce m_notice;
};

// The reader as a Recognizer: one decoder session across the pages it is given, which must come
// in order (the transcriber runs a single worker for it). A page that loops or reaches the token
// cap is an engine failure with the reason.
class ReaderRecognizer : public Recognizer {
public:
    explicit ReaderRecognizer(std::unique_ptr<ReaderEngine> engine, std::string langs)
        : m_engine(std::move(engine)), m_langs(std::move(langs)) {}
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
        // $QUIRE_READER_STATS=1: a line per page on stderr for benchmarks (tools/bench/reader_volume.py).
        if (const char* stats = std::getenv("QUIRE_READER_STATS"); stats && std::string(stats) == "1")
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
    NoticeOnce m_notice;
};

bool hasLanguage(const std::string& languages, const std::string& prefix) {
    std::stringstream ss(languages);
    std::string item;
    while (std::getline(ss, item, '+'))
        if (item.rfind(prefix, 0) == 0) return true;
    return false;
}

}  // namespace

std::string ppocrLayoutFor(const std::string& languages) { return hasLanguage(languages, "chi") ? "rows" : "tesseract"; }

std::vector<std::string> availableEngines() { return {"tesseract", "ppocr", "reader"}; }

std::string chooseEngine(const std::string& engine, const std::string& languages, std::string* why) {
    if (engine != "auto") return engine;
    // docs/ACCURACY.md: on ../shared/eval the reader reads Chinese best (11.2 % CER against PP-OCR's
    // 11.5 % and Tesseract's 34.7 % in one run; on held-out synthetic Chinese far better than
    // PP-OCR), PP-OCR next. On English the reader's CER is lower by a hair (2.39 % against 2.42 %,
    // 12 characters of 45,852, about what near-ties move between builds) and its WER higher, at a
    // fifth of Tesseract's speed: no measurable gain, so Tesseract stays for English, and for
    // German print (its Fraktur data), where the reader and PP-OCR measured far below it.
    if (hasLanguage(languages, "chi")) {
        if (auto model = findReaderModel()) {
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
    const std::string engine = chooseEngine(options.engine, options.languages);
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
    if (engine == "ppocr") {
        PpocrOptions o;
        o.modelDir = options.ppocrDir;
        o.layout = ppocrLayoutFor(options.languages);
        o.device = options.device;
        auto e = PpocrEngine::load(o);
        if (!e) return e.status();
        return std::unique_ptr<Recognizer>(new PpocrRecognizer(std::move(e).value(), options.languages));
    }
    if (engine == "reader") {
        ReaderOptions o;
        o.modelDir = options.readerModel;
        o.ppocr.modelDir = options.ppocrDir;
        o.ppocr.layout = ppocrLayoutFor(options.languages);
        o.ppocr.device = options.device;
        o.closeUpSpacing = !hasLanguage(options.languages, "fra");  // French spaces ; : ? ! by rule
        o.attention.threads = options.decoderThreads > 0 ? std::min(options.decoderThreads, 2)
                                                         : std::thread::hardware_concurrency() >= 3 ? 2 : 1;
        o.attention.device = *device;
        auto e = ReaderEngine::load(o);
        if (!e) return e.status();
        return std::unique_ptr<Recognizer>(new ReaderRecognizer(std::move(e).value(), options.languages));
    }
    return Status(ErrorCode::InvalidArgument, "unknown recognition engine '" + options.engine + "' (choose tesseract, ppocr, reader or auto)");
}

}  // namespace quire
