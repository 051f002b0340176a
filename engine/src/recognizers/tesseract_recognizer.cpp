// Tesseract 5 as a Recognizer (one single-threaded instance per worker) and its installed languages.
#include <tesseract/baseapi.h>
#include <tesseract/resultiterator.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

#include "core/tesseract_cancel.h"
#include "quire/preprocess/orientation.h"
#include "quire/recognizers/line_stitch.h"
#include "quire/recognizers/recognizer.h"

namespace fs = std::filesystem;

namespace quire {
namespace {

std::vector<std::string> splitLanguages(const std::string& langs) {
    std::vector<std::string> out;
    std::stringstream ss(langs);
    std::string item;
    while (std::getline(ss, item, '+'))
        if (!item.empty()) out.push_back(item);
    return out;
}

std::vector<fs::path> tessdataCandidates(const std::string& explicitDir) {
    if (!explicitDir.empty()) return {fs::path(explicitDir)};
    std::vector<fs::path> dirs;
    if (const char* env = std::getenv("TESSDATA_PREFIX"); env && *env) {
        dirs.emplace_back(env);
        dirs.emplace_back(fs::path(env) / "tessdata");
    }
    for (const char* d : {"/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                          "/usr/share/tessdata", "/usr/local/share/tessdata"})
        dirs.emplace_back(d);
    return dirs;
}

fs::path findTessdata(const std::string& explicitDir) {
    for (const auto& d : tessdataCandidates(explicitDir)) {
        std::error_code ec;
        if (fs::is_directory(d, ec)) {
            for (const auto& e : fs::directory_iterator(d, ec))
                if (e.path().extension() == ".traineddata") return d;
        }
    }
    return {};
}

struct TessDeleter {
    void operator()(tesseract::TessBaseAPI* api) const {
        api->End();
        delete api;
    }
};
using TessPtr = std::unique_ptr<tesseract::TessBaseAPI, TessDeleter>;

class TesseractRecognizer : public Recognizer {
public:
    TesseractRecognizer(TessPtr api, std::string langs, bool glyphs)
        : m_api(std::move(api)), m_langs(std::move(langs)), m_glyphs(glyphs) {}
    std::string name() const override { return "tesseract"; }
    std::string version() const override { return tesseract::TessBaseAPI::Version(); }
    bool judgesUpright() const override { return true; }
    bool lastReadUpright() const override { return m_upright; }

    Result<PageText> recognize(const cv::Mat& gray, int dpi, const std::atomic<bool>* cancel,
                               const std::function<void(const std::string&)>& /*onText: not streamed*/) override {
        if (gray.empty() || gray.type() != CV_8UC1)
            return Status(ErrorCode::Internal, "tesseract: expected an 8-bit gray image");
        m_upright = false;
        m_api->SetImage(gray.data, gray.cols, gray.rows, 1, int(gray.step));
        m_api->SetSourceResolution(dpi);
        tesseract::ETEXT_DESC monitor;
        watchCancel(monitor, cancel);
        if (m_api->Recognize(&monitor) != 0) {
            if (cancel && cancel->load()) return Status(ErrorCode::Cancelled, "recognition cancelled");
            return Status(ErrorCode::Engine, "tesseract: recognition failed");
        }
        PageText page;
        page.width = gray.cols;
        page.height = gray.rows;
        page.dpi = dpi;
        page.engine = name();
        page.engineVersion = version();
        page.language = m_langs;
        std::unique_ptr<tesseract::ResultIterator> it(m_api->GetIterator());
        if (!it) return page;  // blank page
        int block = -1, para = -1;
        const auto W = tesseract::RIL_WORD;
        do {
            if (it->Empty(W)) continue;
            if (it->IsAtBeginningOf(tesseract::RIL_BLOCK)) ++block;
            if (it->IsAtBeginningOf(tesseract::RIL_PARA)) ++para;
            if (it->IsAtBeginningOf(tesseract::RIL_TEXTLINE) || page.lines.empty()) {
                Line line;
                line.block = std::max(block, 0);
                line.paragraph = std::max(para, 0);
                int l, t, r, b;
                if (it->BoundingBox(tesseract::RIL_TEXTLINE, &l, &t, &r, &b)) line.box = {l, t, r - l, b - t};
                page.lines.push_back(std::move(line));
            }
            std::unique_ptr<char[]> text(it->GetUTF8Text(W));
            if (!text) continue;
            std::string s(text.get());
            while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
            if (s.empty()) continue;
            Word w;
            w.text = std::move(s);
            w.confidence = it->Confidence(W);
            int l, t, r, b;
            if (it->BoundingBox(W, &l, &t, &r, &b)) w.box = {l, t, r - l, b - t};
            if (m_glyphs) w.glyphs = glyphsOf(*it);
            page.lines.back().words.push_back(std::move(w));
        } while (it->Next(W));
        std::erase_if(page.lines, [](const Line& l) { return l.words.empty(); });
        stitchSplitLines(page);
        m_api->Clear();
        // Level: its lines wider than tall, all told. A page on its side can read well as vertical
        // text (a quarter turn clockwise: 95, every block reported upright), its lines tall.
        long wide = 0, tall = 0;
        for (const Line& l : page.lines) wide += l.box.w, tall += l.box.h;
        m_upright = wide > tall && page.meanConfidence() >= kUprightReadingConfidence;
        return page;
    }

private:
    // The symbols of the word at `word`, each with its box and the LSTM's alternatives.
    static std::vector<Glyph> glyphsOf(const tesseract::ResultIterator& word) {
        std::vector<Glyph> glyphs;
        tesseract::ResultIterator it(word);
        const auto S = tesseract::RIL_SYMBOL;
        do {
            std::unique_ptr<char[]> text(it.GetUTF8Text(S));
            if (!text || !*text.get()) continue;
            Glyph g;
            g.text = text.get();
            g.confidence = it.Confidence(S);
            int l, t, r, b;
            if (it.BoundingBox(S, &l, &t, &r, &b)) g.box = {l, t, r - l, b - t};
            tesseract::ChoiceIterator choice(it);
            do {
                const char* c = choice.GetUTF8Text();
                if (c && *c) g.choices.push_back({c, choice.Confidence()});
            } while (choice.Next());
            glyphs.push_back(std::move(g));
        } while (it.Next(S) && !it.IsAtBeginningOf(tesseract::RIL_WORD));
        return glyphs;
    }

    TessPtr m_api;
    std::string m_langs;
    bool m_glyphs = false;
    bool m_upright = false;  // the last page read showed itself upright (judgesUpright)
};

}  // namespace

std::vector<std::string> availableTesseractLanguages(const std::string& tessdataDir) {
    std::set<std::string> langs;
    const fs::path dir = findTessdata(tessdataDir);
    std::error_code ec;
    if (!dir.empty())
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().extension() == ".traineddata" && e.path().stem() != "osd")
                langs.insert(e.path().stem().string());
    return {langs.begin(), langs.end()};
}

Status checkTesseractLanguages(const std::string& languages, const std::string& tessdataDir) {
    const auto wanted = splitLanguages(languages);
    if (wanted.empty()) return Status(ErrorCode::InvalidArgument, "no recognition language given");
    const auto have = availableTesseractLanguages(tessdataDir);
    for (const auto& lang : wanted) {
        if (std::find(have.begin(), have.end(), lang) == have.end()) {
            std::string list;
            for (const auto& h : have) list += (list.empty() ? "" : ", ") + h;
            return Status(ErrorCode::InvalidArgument,
                          "language '" + lang + "' is not installed for Tesseract (installed: " +
                              (list.empty() ? "none" : list) + "); on Debian install tesseract-ocr-" + lang);
        }
    }
    return Status::ok();
}

std::string orientationCheckLanguages(const std::string& languages, const std::string& tessdataDir) {
    if (checkTesseractLanguages(languages, tessdataDir)) return languages;
    if (checkTesseractLanguages("eng", tessdataDir)) return "eng";
    return {};
}

Result<std::unique_ptr<Recognizer>> createTesseractRecognizer(const RecognizerOptions& options) {
    if (options.engine != "tesseract")
        return Status(ErrorCode::InvalidArgument, "unknown recognition engine '" + options.engine + "'");
    if (Status s = checkTesseractLanguages(options.languages, options.tessdataDir); !s) return s;
    TessPtr api(new tesseract::TessBaseAPI());
    const fs::path dir = findTessdata(options.tessdataDir);
    if (api->Init(dir.empty() ? nullptr : dir.string().c_str(), options.languages.c_str(),
                  tesseract::OEM_DEFAULT) != 0)
        return Status(ErrorCode::Engine, "tesseract: cannot load language data '" + options.languages + "' from " +
                                             dir.string());
    api->SetPageSegMode(tesseract::PSM_AUTO);
    api->SetVariable("debug_file", "/dev/null");  // keep its diagnostics off the user's terminal
    // Mode 2: each symbol's alternatives from the CTC output (the best path, and so the text, unchanged).
    if (options.glyphChoices) api->SetVariable("lstm_choice_mode", "2");
    return std::unique_ptr<Recognizer>(
        new TesseractRecognizer(std::move(api), options.languages, options.glyphChoices));
}

}  // namespace quire
