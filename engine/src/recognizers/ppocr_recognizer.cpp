// The PP-OCR front-end as a Recognizer: detection, reading order and CTC recognition of a page.
#include "quire/ppocr/ppocr.h"
#include "quire/recognizers/recognizer.h"
#include "recognizers/engines.h"
#include "recognizers/notice_once.h"

namespace quire {
namespace {

class PpocrRecognizer : public Recognizer {
public:
    explicit PpocrRecognizer(std::shared_ptr<const PpocrEngine> engine, std::string langs)
        : m_engine(std::move(engine)), m_langs(std::move(langs)) {}
    std::string name() const override { return "ppocr"; }
    std::string version() const override { return "PP-OCRv4"; }
    bool judgesUpright() const override { return true; }
    bool lastReadUpright() const override { return m_upright; }

    Result<PageText> recognize(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel,
                               const std::function<void(const std::string&)>& /*onText: not streamed*/) override {
        m_upright = false;
        auto page = m_engine->read(gray, false, cancel);
        if (!page) return page.status();
        PageText text = m_engine->toPageText(*page, dpi);
        text.language = m_langs;
        m_upright = readsUprightByWords(text);
        return text;
    }
    std::string takeNotice() override { return m_notice.take(m_engine->deviceNotice(), "ppocr"); }
    std::string charsetNotice() const override {
        std::vector<std::string> characters;
        for (int id = 1; id <= m_engine->classCount(); ++id) characters.push_back(m_engine->charOf(id));
        return frontEndCharsetNotice(characters, m_langs, "ppocr");
    }

private:
    std::shared_ptr<const PpocrEngine> m_engine;
    std::string m_langs;
    NoticeOnce m_notice;
    bool m_upright = false;  // the last page read showed itself upright (judgesUpright)
};

}  // namespace

PpocrOptions ppocrOptionsFor(const RecognizerOptions& options) {
    PpocrOptions o;
    o.modelDir = options.ppocrDir;
    o.layout = options.ppocrLayout.empty() ? ppocrLayoutFor(options.languages) : options.ppocrLayout;
    o.device = options.device;
    if (options.ppocrDetMaxSide > 0) o.detMaxSide = options.ppocrDetMaxSide;
    o.detContourScore = options.ppocrContourScore;
    if (options.ppocrRecBatch > 0) o.recBatch = options.ppocrRecBatch;
    o.cutAtRecognizerHeight = !hasLanguage(options.languages, "chi");
    return o;
}

Result<std::unique_ptr<Recognizer>> createPpocrRecognizer(const RecognizerOptions& options) {
    auto e = PpocrEngine::load(ppocrOptionsFor(options));
    if (!e) return e.status();
    return std::unique_ptr<Recognizer>(new PpocrRecognizer(std::move(e).value(), options.languages));
}

}  // namespace quire
