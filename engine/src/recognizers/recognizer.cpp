// The choice between recognizers: which engines there are, which "auto" picks for a language,
// which letters of a language an engine's character set lacks, and the factory that makes the
// chosen one.
#include <algorithm>
#include <set>
#include <sstream>

#include "quire/decoder/session.h"
#include "quire/ppocr/ppocr.h"
#include "quire/preprocess/orientation.h"
#include "quire/reader/reader.h"
#include "quire/recognizers/recognizer.h"
#include "recognizers/engines.h"

namespace quire {

namespace {

// The '+'-separated languages of `languages`, each as written.
std::vector<std::string> languageItems(const std::string& languages) {
    std::vector<std::string> items;
    std::stringstream ss(languages);
    for (std::string item; std::getline(ss, item, '+');) items.push_back(item);
    return items;
}

}  // namespace

// Generated pages (docs/BENCHMARKS.md, 2026-12-07 thirteenth session): English 91–100, upside down
// 20–35, Chinese 65–87 and Fraktur 66–76 (both still checked); on its side a page reads at up to 99
// with its word boxes tall (its lines, as the layout joins them, need not be).
bool readsUprightByWords(const PageText& page) {
    long wide = 0, tall = 0;
    for (const Line& l : page.lines)
        for (const Word& w : l.words) wide += w.box.w, tall += w.box.h;
    return wide > tall && page.meanConfidence() >= kUprightReadingConfidence;
}

bool hasLanguage(const std::string& languages, const std::string& prefix) {
    const auto items = languageItems(languages);
    return std::any_of(items.begin(), items.end(), [&](const std::string& i) { return i.rfind(prefix, 0) == 0; });
}

bool onlyLanguage(const std::string& languages, const std::string& prefix) {
    const auto items = languageItems(languages);
    return !items.empty() && std::all_of(items.begin(), items.end(), [&](const std::string& i) { return i.rfind(prefix, 0) == 0; });
}

namespace {

// The letters beyond a-z of Latin-script languages Tesseract reads, by its language names (the
// alphabets' letters with diacritics and their own letters, lower and upper case).
struct LanguageLetters {
    const char* language;
    const char* letters;  // space-separated UTF-8
};
constexpr LanguageLetters kLanguageLetters[] = {
    {"deu", "ä ö ü ß Ä Ö Ü"},
    {"frk", "ä ö ü ß ſ Ä Ö Ü"},
    {"fra", "à â æ ç é è ê ë î ï ô œ ù û ü ÿ À Â Æ Ç É È Ê Ë Î Ï Ô Œ Ù Û Ü Ÿ « »"},
    {"spa", "á é í ñ ó ú ü ¿ ¡ Á É Í Ñ Ó Ú Ü"},
    {"ita", "à è é ì ò ó ù À È É Ì Ò Ù"},
    {"por", "á â ã à ç é ê í ó ô õ ú Á Â Ã À Ç É Ê Í Ó Ô Õ Ú"},
    {"nld", "é ë ï ó Ë Ï"},
    {"dan", "æ ø å Æ Ø Å"},
    {"nor", "æ ø å Æ Ø Å"},
    {"swe", "å ä ö Å Ä Ö"},
    {"fin", "ä ö Ä Ö"},
    {"pol", "ą ć ę ł ń ó ś ź ż Ą Ć Ę Ł Ń Ó Ś Ź Ż"},
    {"ces", "á č ď é ě í ň ó ř š ť ú ů ý ž Á Č Ď É Ě Í Ň Ó Ř Š Ť Ú Ů Ý Ž"},
};

}  // namespace

std::string lettersNotWritten(const std::string& languages, const std::function<bool(const std::string&)>& writes) {
    std::vector<std::string> missing, from;
    for (const auto& entry : kLanguageLetters) {
        if (!hasLanguage(languages, entry.language)) continue;
        std::stringstream letters(entry.letters);
        bool lacks = false;
        for (std::string letter; letters >> letter;)
            if (!writes(letter)) {
                lacks = true;
                if (std::find(missing.begin(), missing.end(), letter) == missing.end()) missing.push_back(letter);
            }
        if (lacks) from.push_back(entry.language);
    }
    if (missing.empty()) return {};
    auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
        return s;
    };
    return join(missing) + " (" + join(from) + ")";
}

std::string frontEndCharsetNotice(const std::vector<std::string>& characters, const std::string& languages,
                                  const std::string& engineName) {
    const std::set<std::string> charset(characters.begin(), characters.end());
    const std::string missing = lettersNotWritten(languages, [&](const std::string& c) { return charset.count(c) > 0; });
    if (missing.empty()) return {};
    return engineName + " cannot write " + missing + ": its character set (PP-OCR's) has no such letters, so they come out as "
           "other letters or not at all; Tesseract reads them (--engine tesseract)";
}

std::string ppocrLayoutFor(const std::string& languages) { return hasLanguage(languages, "chi") ? "rows" : "tesseract"; }

std::vector<std::string> availableEngines() { return {"tesseract", "ppocr", "reader"}; }

std::string chooseEngine(const std::string& engine, const std::string& languages, std::string* why,
                         const std::string& readerModel) {
    if (engine != "auto") return engine;
    // From the accuracies in docs/ACCURACY.md: the reader for Chinese (PP-OCR without a reader
    // model), Tesseract for German print (its Fraktur data; the others are far below it) and for
    // English (PP-OCR and the reader are 8 % fewer errors each there since 2026-12-07, at half
    // its speed or less: issue #29 item 9 decides when the reader takes over).
    if (hasLanguage(languages, "chi")) {
        if (auto model = findReaderModel(readerModel)) {
            if (why)
                *why = "reader (Chinese in --lang: the reader measured the lowest CER on Chinese pages, by a hair: 11.03 % "
                       "against PP-OCR's 11.24 % and Tesseract's 34.7 %; on three single pages it took 1.6 times "
                       "PP-OCR's time, less on a volume, where its decoder overlaps the front-end)";
            return "reader";
        }
        if (why)
            *why = "ppocr (Chinese in --lang, and no reader model is installed: PP-OCR's measured CER on Chinese pages "
                   "is a third of Tesseract's)";
        return "ppocr";
    }
    if (why)
        *why = "tesseract (no Chinese in --lang: Tesseract is the fastest engine and on German print far better than "
               "the others; on English print PP-OCR and the reader now measure lower CER, 1.95 % each against "
               "its 2.12 %, at a fraction of its speed: --engine ppocr or reader for the last errors)";
    return "tesseract";
}

Result<std::unique_ptr<Recognizer>> createRecognizer(const RecognizerOptions& options) {
    const std::string engine = chooseEngine(options.engine, options.languages, nullptr, options.readerModel);
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
    if (engine == "ppocr") return createPpocrRecognizer(options);
    if (engine == "reader") return createReaderRecognizer(options, *device);
    return Status(ErrorCode::InvalidArgument, "unknown recognition engine '" + options.engine + "' (choose tesseract, ppocr, reader or auto)");
}

}  // namespace quire
