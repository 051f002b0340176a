// ReaderEngine: the reader model over PP-OCR's visual tokens, page by page in one decoder session,
// its decoding rules, word boxes from attention, and its checkpoint.
#include "quire/reader/reader.h"
#include "quire/reader/reader_sharing.h"

#include "core/byte_stream.h"
#include "decoder/kernels.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <unordered_map>

#include "quire/decoder/model.h"
#include "quire/source/document_source.h"
#include "core/data_dirs.h"
#include "source_paths.h"

namespace fs = std::filesystem;

namespace quire {

using namespace reader_vocab;

Result<std::string> findReaderModel(const std::string& explicitDir) {
    std::string tried;
    for (const auto& d : dataDirCandidates(explicitDir, "models/reader", {fs::path(QUIRE_SOURCE_MODELS_DIR) / "reader"})) {
        std::error_code ec;
        if (fs::is_regular_file(d / "config.json", ec) && fs::is_regular_file(d / "model.safetensors", ec)) return d.string();
        tried += (tried.empty() ? "" : ", ") + d.string();
    }
    return Status(ErrorCode::NotFound, "no reader model (config.json and model.safetensors) in: " + tried);
}

Result<std::vector<bool>> readRareCharacters(const std::string& file, int below, int classes,
                                             const std::function<std::string(int)>& charOf) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Status(ErrorCode::NotFound, file + ": cannot be read");
    std::map<std::string, long long> counts;
    std::string line;
    int number = 0;
    auto bad = [&](const std::string& why) {
        return Status(ErrorCode::Corrupt, file + ":" + std::to_string(number) + ": " + why);
    };
    while (std::getline(in, line)) {
        ++number;
        if (number == 1) {
            if (line != "character\tcount") return bad("expected the header \"character<TAB>count\"");
            continue;
        }
        if (line.empty()) continue;
        const auto tab = line.rfind('\t');
        if (tab == std::string::npos || tab == 0) return bad("expected a character, a tab and a count");
        const std::string digits = line.substr(tab + 1);
        if (digits.empty() || digits.size() > 15 || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
            return bad("the count \"" + digits.substr(0, 20) + "\" is not a whole number");
        if (!counts.emplace(line.substr(0, tab), std::stoll(digits)).second) return bad("the character is listed twice");
    }
    if (number == 0) return bad("the file is empty");
    std::vector<bool> rare(size_t(kVocabSize), false);
    for (int cls = 1; cls <= classes && kFirstChar + cls - 1 < kVocabSize; ++cls) {
        const auto it = counts.find(charOf(cls));
        rare[size_t(kFirstChar + cls - 1)] = it == counts.end() || it->second < below;
    }
    return rare;
}

struct ReaderEngine::Impl {
    ReaderOptions options;
    std::vector<int> dashTokens;  // vocabulary ids of the dash characters (PrintedPunctuation)
    int emDash = -1;              // the id of "—", -1 where the front-end has none
    std::shared_ptr<const decoder::ModelWeights> model;
    std::shared_ptr<const PpocrEngine> ppocr;
    std::unique_ptr<decoder::DecodeSession> session;
    std::unique_ptr<decoder::GreedySampler> sampler;
    int pagesRead = 0;     // pages given to readPage
    int sessionPages = 0;  // pages fed to the current session
    // Checkpoints: whether the context restarted since the last one, and the pages added since.
    bool restartPages = true;
    int firstPending = 0;
    std::vector<std::vector<float>> pending;
    std::string modelIdentity;  // computed at the first checkpoint or restore
    std::vector<bool> rare;     // by vocabulary id: characters the model hardly saw (empty: no counts)
    std::unordered_map<std::string, int> idOf;  // a character's vocabulary id (the evidence's glyphs)

    const std::string& identity() {
        if (modelIdentity.empty()) {
            const fs::path dir(options.modelDir);
            auto weights = fileSha256(dir / "model.safetensors");
            auto config = fileSha256(dir / "config.json");
            modelIdentity = (weights ? *weights : std::string("?")) + "/" + (config ? *config : std::string("?"));
        }
        return modelIdentity;
    }
    std::string lastDeviceNotice;  // of sessions already dropped
    void dropSession() {
        if (session && !session->deviceNotice().empty()) lastDeviceNotice = session->deviceNotice();
        session.reset();
        sampler.reset();
        restartPages = true;
        pending.clear();
        firstPending = 0;
    }
};

ReaderEngine::ReaderEngine() : d(std::make_unique<Impl>()) {}
ReaderEngine::~ReaderEngine() = default;
int ReaderEngine::pagesRead() const { return d->pagesRead; }
const PpocrEngine& ReaderEngine::frontEnd() const { return *d->ppocr; }
std::string ReaderEngine::deviceNotice() const {
    std::string n = d->session && !d->session->deviceNotice().empty() ? d->session->deviceNotice() : d->lastDeviceNotice;
    if (const std::string f = d->ppocr ? d->ppocr->deviceNotice() : std::string(); !f.empty()) n += (n.empty() ? "" : "; ") + f;
    return n;
}

Result<std::unique_ptr<ReaderEngine>> ReaderEngine::load(const ReaderOptions& options) {
    auto dir = findReaderModel(options.modelDir);
    if (!dir) return dir.status();
    auto model = options.sharing ? options.sharing->model(*dir) : decoder::loadModel(*dir);
    if (!model) return model.status();
    auto ppocr = PpocrEngine::load(options.ppocr);
    if (!ppocr) return ppocr.status();
    const auto& c = (*model)->config;
    if ((*ppocr)->classCount() != kKeyCount + 2)
        return Status(ErrorCode::Corrupt, "reader: the front-end has " + std::to_string((*ppocr)->classCount()) +
                                              " classes, the reader's vocabulary is made for " + std::to_string(kKeyCount + 2));
    if (c.visualDim != kVisualDim || c.vocabSize != kVocabSize)
        return Status(ErrorCode::Corrupt, *dir + ": not a reader model for this front-end (visual_dim " +
                                              std::to_string(c.visualDim) + ", vocab_size " + std::to_string(c.vocabSize) +
                                              "; expected " + std::to_string(kVisualDim) + " and " + std::to_string(kVocabSize) + ")");
    if (c.pageBreakTokenId != kPageBreak || c.eosTokenId != kEos || c.bosTokenId != kBos)
        return Status(ErrorCode::Corrupt, *dir + ": special token ids differ from the reader vocabulary");
    std::unique_ptr<ReaderEngine> e(new ReaderEngine);
    e->d->options = options;
    e->d->options.modelDir = *dir;
    e->d->options.attention.maxPageTokens = std::max(options.attention.maxPageTokens, 6144);
    e->d->options.attention.trackAttention = true;  // word boxes from the visual tokens attended to
    e->d->model = std::move(model).value();
    e->d->ppocr = std::move(ppocr).value();
    for (int cls = 1; cls <= kKeyCount; ++cls) {
        const std::string ch = e->d->ppocr->charOf(cls);
        if (PrintedPunctuation::isDash(ch)) e->d->dashTokens.push_back(kFirstChar + cls - 1);
        if (ch == "\u2014" && e->d->options.joinDashes) e->d->emDash = kFirstChar + cls - 1;
        e->d->idOf.emplace(ch, kFirstChar + cls - 1);
    }
    const fs::path counts = fs::path(*dir) / "character_counts.tsv";
    std::error_code ec;
    if (e->d->options.rareBelow > 0 && fs::exists(counts, ec)) {
        const PpocrEngine& front = *e->d->ppocr;
        auto rareIds = readRareCharacters(counts.string(), e->d->options.rareBelow, kKeyCount,
                                          [&front](int cls) { return front.charOf(cls); });
        if (!rareIds) return rareIds.status();
        e->d->rare = std::move(rareIds).value();
    }
    return e;
}

int ReaderEngine::vocabId(int ctcClass) {
    if (ctcClass <= 0 || ctcClass > kKeyCount + 1) return kUnknown;
    return ctcClass == kKeyCount + 1 ? kSpace : kFirstChar + ctcClass - 1;  // the last class is the space
}

namespace {

// CPU time of the calling thread (POSIX): what a page cost the decoder, whatever else ran.
double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// A line the front-end read with features to show: it brings visual tokens (its characters and
// its end); others (no characters or no recognizer output) bring none.
bool bringsVisualTokens(const PpocrLine& line) {
    return !line.charFrames.empty() && line.frames > 0 && !line.features.empty();
}

}  // namespace

std::vector<float> ReaderEngine::visualTokens(const PpocrPage& page, bool withIds) {
    const int stride = kVisualDim + (withIds ? 1 : 0);
    std::vector<float> out;
    const float height = float(std::max(1, page.height));
    for (const auto& line : page.lines) {
        if (!bringsVisualTokens(line)) continue;
        const size_t n = line.charFrames.size();
        const float y = (float(line.box.y) + float(line.box.h) / 2) / height;
        for (size_t c = 0; c < n; ++c) {
            const int f = std::min(line.charFrames[c], line.frames - 1);
            out.insert(out.end(), line.features.begin() + size_t(f) * 120, line.features.begin() + size_t(f + 1) * 120);
            out.push_back(line.charProbs[c]);
            out.push_back(c == 0 ? 1.f : 0.f);
            out.push_back(c + 1 == n ? 1.f : 0.f);
            out.push_back(y);
            if (withIds) out.push_back(float(vocabId(line.charIds[c])));
        }
        // The line's end, where lines join.
        out.insert(out.end(), 120, 0.f);
        out.insert(out.end(), {1.f, 0.f, 1.f, y});
        if (withIds) out.push_back(float(kLineBreak));
    }
    if (out.empty()) out.assign(size_t(stride), 0.f);  // a blank page still brings one (unknown) token
    return out;
}

namespace {

// Where each output character came from: a Levenshtein alignment of the output text with the
// front-end's CTC characters. Returns, per output character, the index of its CTC character or -1.
std::vector<int> alignToCtc(const std::vector<std::string>& out, const std::vector<std::string>& ctc) {
    const size_t n = out.size(), m = ctc.size();
    std::vector<int> aligned(n, -1);
    if (n == 0 || m == 0) return aligned;
    std::vector<uint16_t> cost((n + 1) * (m + 1));
    auto at = [&](size_t i, size_t j) -> uint16_t& { return cost[i * (m + 1) + j]; };
    for (size_t i = 0; i <= n; ++i) at(i, 0) = uint16_t(std::min<size_t>(i, 65535));
    for (size_t j = 0; j <= m; ++j) at(0, j) = uint16_t(std::min<size_t>(j, 65535));
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j)
            at(i, j) = uint16_t(std::min<int>({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (out[i - 1] == ctc[j - 1] ? 0 : 1), 65535}));
    size_t i = n, j = m;
    while (i > 0 && j > 0) {
        const int diag = at(i - 1, j - 1) + (out[i - 1] == ctc[j - 1] ? 0 : 1);
        if (at(i, j) == diag) {
            aligned[i - 1] = int(j - 1);
            --i, --j;
        } else if (at(i, j) == at(i - 1, j) + 1) {
            --i;
        } else {
            --j;
        }
    }
    return aligned;
}

}  // namespace

Result<ReaderPage> ReaderEngine::readPage(const cv::Mat& image, int dpi, const std::atomic<bool>* cancel,
                                          const std::function<void(const std::string&)>& onText) {
    return readEncoded(encode(image, cancel), dpi, cancel, onText);
}

Result<PpocrPage> ReaderEngine::encode(const cv::Mat& image, const std::atomic<bool>* cancel) const {
    return d->ppocr->read(image, true, cancel);
}

Result<ReaderPage> ReaderEngine::readEncoded(const Result<PpocrPage>& encoded, int dpi, const std::atomic<bool>* cancel,
                                             const std::function<void(const std::string&)>& onText) {
    const auto start = std::chrono::steady_clock::now();
    const double cpuStart = threadCpuSeconds();
    auto page = decodePage(encoded, dpi, cancel, onText);
    if (!page) {
        d->dropSession();  // a half-read page is no context to go on from
        return page;
    }
    page->decodeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    page->decodeCpuSeconds = threadCpuSeconds() - cpuStart;
    if (d->session) page->pagesComputedAgain = d->session->stats().recomputedPages;
    return page;
}

namespace {

// Writes back the hyphen the front-end read at the end of the line where the page's written text
// ends, when the model wrote that line's last word without it. The reader is trained to write a
// word broken over a page break whole on the page where it starts, but it does not see the next
// page, so it writes the first half alone ("format" for "format-" / "ters"); with the hyphen kept,
// the book's assembly joins the halves across the break (joinLines). `hyphen`, `wordChar`: per
// visual token, the front-end's hyphens and letters; `charProb(v)`: its probability of visual token
// v's character; per written token its probability and the visual token it attended to.
void keepPageEndHyphen(const std::vector<int>& visualIds, const std::vector<bool>& wordChar, const std::vector<bool>& hyphen,
                       const std::function<float(size_t)>& charProb, std::vector<int>& tokens, std::vector<float>& probs,
                       std::vector<int>& attended) {
    size_t k = tokens.size();
    while (k > 0 && tokens[k - 1] < kFirstChar) --k;  // line ends after the last character
    if (k == 0 || attended[k - 1] < 0) return;
    const size_t v = size_t(attended[k - 1]);
    size_t end = v;
    while (end < visualIds.size() && visualIds[end] != kLineBreak) ++end;
    if (end == visualIds.size() || end < 2) return;
    const size_t h = end - 1;  // the line's last visual token
    // The last character written read one of the two letters before the hyphen.
    if (!hyphen[h] || !wordChar[h - 1] || v >= h || v + 2 < h) return;
    tokens.insert(tokens.begin() + long(k), visualIds[h]);
    probs.insert(probs.begin() + long(k), charProb(h));
    attended.insert(attended.begin() + long(k), int(h));
}

// Per visual token of `page` (`count` of them): Tesseract's glyph where it differs from the
// front-end's character, as a vocabulary id (-1: none, the same, not in `idOf`), and its confidence.
void differingEvidence(const PpocrPage& page, const std::unordered_map<std::string, int>& idOf, size_t count,
                       std::vector<int>& ids, std::vector<float>& conf) {
    for (const auto& line : page.lines) {
        if (!bringsVisualTokens(line)) continue;
        for (size_t c = 0; c < line.charFrames.size(); ++c) {
            const auto it = c < line.evidence.size() ? idOf.find(line.evidence[c]) : idOf.end();
            const int id = it == idOf.end() || it->second == ReaderEngine::vocabId(line.charIds[c]) ? -1 : it->second;
            ids.push_back(id);
            conf.push_back(id >= 0 ? line.evidenceConf[c] : 0.f);
        }
        ids.push_back(-1);  // the line's end
        conf.push_back(0.f);
    }
    ids.resize(count, -1);
    conf.resize(count, 0.f);
}

// The page's text as lines and words with boxes: each written character placed at the visual token
// it attended to most where that is a character of the front-end, else by aligning the text with the
// front-end's characters; a word's confidence is its least certain character's.
void layoutWords(const PpocrPage& page, const PpocrEngine& ppocr, const std::vector<int>& tokens,
                 const std::vector<float>& probs, const std::vector<int>& attended, PageText& text) {
    std::vector<std::string> ctc;
    std::vector<std::pair<int, int>> ctcAt;  // (line, character) of each CTC character
    for (size_t l = 0; l < page.lines.size(); ++l)
        for (size_t c = 0; c < page.lines[l].charIds.size(); ++c) {
            ctc.push_back(ppocr.charOf(page.lines[l].charIds[c]));
            ctcAt.emplace_back(int(l), int(c));
        }
    std::vector<std::string> outChars;
    std::vector<int> outToken;  // index into tokens for each output character
    for (size_t k = 0; k < tokens.size(); ++k)
        if (tokens[k] >= kFirstChar) {
            outChars.push_back(ppocr.charOf(tokens[k] - kFirstChar + 1));
            outToken.push_back(int(k));
        }
    // Each character's place: the visual token it attended to most (summed over layers and heads;
    // the reader's copy head looks at the character it writes), where that is a character; else
    // a Levenshtein alignment of the output with the front-end's characters.
    std::vector<int> visualToCtc;  // visual token (visualTokens() order) -> CTC character, or -1
    for (size_t l = 0, offset = 0; l < page.lines.size(); offset += page.lines[l].charIds.size(), ++l) {
        const PpocrLine& line = page.lines[l];
        if (!bringsVisualTokens(line)) continue;
        for (size_t c = 0; c < line.charFrames.size(); ++c) visualToCtc.push_back(int(offset + c));
        visualToCtc.push_back(-1);  // the line's end
    }
    std::vector<int> tokenToChar(tokens.size(), -1);
    std::vector<int> aligned;  // computed only if some character attended to no character
    for (size_t i = 0; i < outToken.size(); ++i) {
        const int v = attended[size_t(outToken[i])];
        int at = v >= 0 && v < int(visualToCtc.size()) ? visualToCtc[size_t(v)] : -1;
        if (at < 0) {
            if (aligned.empty()) aligned = alignToCtc(outChars, ctc);
            at = aligned[i];
        }
        tokenToChar[size_t(outToken[i])] = at;
    }

    int paragraph = 0, lastLine = page.lines.empty() ? -1 : 0;
    Line* current = nullptr;
    int currentSource = -2;
    auto flushWord = [&](Word& w, std::vector<int>& chars) {
        if (w.text.empty()) return;
        int srcLine = lastLine;
        float x0 = 1e30f, x1 = -1e30f;
        for (int ci : chars) {
            if (ci < 0) continue;
            const auto [l, c] = ctcAt[size_t(ci)];
            srcLine = l;
            const PpocrLine& pl = page.lines[size_t(l)];
            if (pl.frameX.empty()) continue;
            const float x = pl.xOfFrame(pl.charFrames[size_t(c)]);
            x0 = std::min(x0, x - pl.halfFrame());
            x1 = std::max(x1, x + pl.halfFrame());
        }
        if (srcLine >= 0 && srcLine < int(page.lines.size())) {
            const Box& lb = page.lines[size_t(srcLine)].box;
            if (x1 < x0) x0 = float(lb.x), x1 = float(lb.x + 1);
            w.box = {int(std::max(x0, float(lb.x))), lb.y, std::max(1, int(x1 - std::max(x0, float(lb.x)))), lb.h};
        }
        lastLine = srcLine;
        if (!current || currentSource != srcLine || current->paragraph != paragraph) {
            text.lines.emplace_back();
            current = &text.lines.back();
            current->paragraph = paragraph;
            current->box = w.box;
            currentSource = srcLine;
        }
        current->words.push_back(w);
        current->box = current->box.united(w.box);
        w = Word{};
        chars.clear();
    };
    Word word;
    std::vector<int> wordChars;
    float wordMin = 1.f;
    for (size_t k = 0; k < tokens.size(); ++k) {
        const int t = tokens[k];
        if (t == kSpace || t == kLineBreak || t == kParagraph || t < kFirstChar) {
            word.confidence = 100.f * wordMin;
            flushWord(word, wordChars);
            wordMin = 1.f;
            if (t == kParagraph) ++paragraph;
            continue;
        }
        word.text += ppocr.charOf(t - kFirstChar + 1);
        wordChars.push_back(tokenToChar[k]);
        wordMin = std::min(wordMin, probs[k]);
    }
    word.confidence = 100.f * wordMin;
    flushWord(word, wordChars);
}

}  // namespace

// Over 120 lines: the decoding rules (line ends, hyphens, punctuation, prior, draft) share one page's state.
Result<ReaderPage> ReaderEngine::decodePage(const Result<PpocrPage>& read, int dpi, const std::atomic<bool>* cancel,
                                            const std::function<void(const std::string&)>& onText) {
    const int pageNo = d->pagesRead++;
    if (!read) return read.status();
    const PpocrPage& page = *read;
    const auto& config = d->model->config;
    const std::vector<float> visual = visualTokens(page, config.visualTokenIds);
    const int count = int(visual.size()) / config.visualStride();
    ReaderPage result;
    result.text.width = page.width;
    result.text.height = page.height;
    result.text.dpi = dpi;
    result.text.engine = "reader";
    result.text.engineVersion = fs::path(d->options.modelDir).filename().string();
    if (count > d->options.attention.maxPageTokens) {
        result.failure = "the page brings " + std::to_string(count) + " visual tokens, more than the reader's " +
                         std::to_string(d->options.attention.maxPageTokens);
        return result;
    }
    // A new session at the first page and after a failed page (its junk is not context); at every
    // page with contextPerPage (the ablation of the volume's context).
    if (d->options.contextPerPage) d->dropSession();
    bool fresh = false;
    if (!d->session) {
        d->session = std::make_unique<decoder::DecodeSession>(d->model, d->options.attention);
        d->sampler = std::make_unique<decoder::GreedySampler>(d->options.greedy);
        if (Status s = d->session->begin({kBos}); !s) return s;
        d->sessionPages = 0;  // the checkpoint fields were reset with the session (dropSession)
        fresh = true;
    }
    if (Status s = d->session->addPage(d->sessionPages, visual.data(), count); !s) return s;
    // What a resume needs of the page: its inputs and the gate's summary of it (so that a page
    // behind the window is not computed again at resume).
    std::vector<float> kept = visual;
    const std::vector<float> summary = d->session->pageSummary(d->sessionPages);
    kept.insert(kept.end(), summary.begin(), summary.end());
    d->pending.push_back(std::move(kept));
    ++d->sessionPages;

    std::vector<int> tokens;
    std::vector<float> probs;
    std::vector<int> attended;  // per written token: the visual token it attended to most, or -1
    RereadDetector reread(count);
    const int cap = std::min(d->options.greedy.maxTokensPerPage, 2 * count + 64);
    d->sampler->beginPage();
    auto fail = [&](std::string why) {
        result.failure = std::move(why);
        d->dropSession();  // the next page starts a fresh session
        return result;
    };
    // One step's logits: the token chosen, and whether the page goes on, is done or failed.
    enum class Outcome { Go, Done, Failed };
    std::string failure;
    int chosen = -1, chosenFrom = -1;  // the last token chosen and the visual token it came from
    // The front-end's reading of each visual token (the CTC character, the line end).
    std::vector<int> visualIds;
    if (config.visualTokenIds)
        for (int t = 0; t < count; ++t) visualIds.push_back(int(visual[size_t(t) * config.visualStride() + config.visualDim]));
    // Tesseract's glyph at each visual token where it differs from the front-end's character (-1:
    // none, the same, or not in the vocabulary), with its confidence: ReaderOptions::evidencePrior.
    std::vector<int> evidenceIds;
    std::vector<float> evidenceConf;
    if (d->options.evidencePrior > 0 && config.visualTokenIds)
        differingEvidence(page, d->idOf, visualIds.size(), evidenceIds, evidenceConf);
    LineEndRule lineEndRule(visualIds);
    // Per line with visual tokens: whether a wide white band sets the next one apart
    // (ReaderOptions::layoutParagraphs).
    std::vector<bool> laidApart;
    if (d->options.layoutParagraphs) {
        std::vector<Box> boxes;
        for (const auto& line : page.lines)
            if (bringsVisualTokens(line)) boxes.push_back(line.box);
        laidApart = wideWhiteBands(boxes, page.medianLineHeight());
    }
    const bool lineEnds = config.lineAlignedPositions() && config.visualTokenIds;
    // The front-end's reading of the next visual token gets `draftPrior` nats, times the front-end's
    // probability of it, before the pick (every kind of line end where the visual token is one):
    // where the model is unsure, what the front-end saw clearly wins. Confidences stay the model's
    // own, so a word written against the model's choice is flagged (docs/DECODING.md).
    // Lines of a Latin script join with nothing only at a hyphen or a dash: on a page of such a
    // script (under a tenth of its letters CJK), where the front-end read a letter or digit at the
    // start of the next line and, at the end of this one, a letter, a digit or a mark that closes a
    // word or sentence (. , ; : ? ! ' " ’ ” ) ]), the end of a line the model wrote text on is a
    // space or a paragraph, never LINE_JOIN (the model, unsure of the two, joined "so long / that"
    // into "longthat" on a real magazine page, and "with me.” / My father" into "me.My" on a book
    // page). On a Chinese page lines join with nothing, table cells of figures included.
    std::vector<bool> wordChar(visualIds.size(), false);
    std::vector<bool> hyphen(visualIds.size(), false);  // the front-end's hyphens (LineEndHyphen, below)
    std::vector<bool> endsWord(visualIds.size(), false);  // a letter, a digit, or what closes a word or sentence
    std::vector<PrintedPunctuation::Kind> kinds(visualIds.size(), PrintedPunctuation::Other);
    int latinLetters = 0, cjkLetters = 0;
    for (size_t t = 0; t < visualIds.size(); ++t) {
        if (visualIds[t] == kSpace) kinds[t] = PrintedPunctuation::Space;
        if (visualIds[t] < kFirstChar || visualIds[t] >= kSkip) continue;
        const std::string ch = d->ppocr->charOf(visualIds[t] - kFirstChar + 1);
        wordChar[t] = isLatinWordCharacter(ch);
        hyphen[t] = ch == "-" || ch == "\u2010" || ch == "\u00ac";
        kinds[t] = PrintedPunctuation::kindOf(ch);
        endsWord[t] = endsLatinWord(ch);
        latinLetters += wordChar[t] ? 1 : 0;
        cjkLetters += isCjkCharacter(ch) ? 1 : 0;
    }
    const bool spacedScript = latinLetters > 0 && cjkLetters * 10 < latinLetters + cjkLetters;
    // Only on pages of a Latin script: Chinese sets its own full-width marks and dashes.
    PrintedPunctuation printed(std::move(kinds), d->dashTokens, spacedScript ? d->emDash : -1,
                               spacedScript && d->options.closeUpSpacing);
    // A line the model skipped whole (a running head, a folio) ends with LINE_JOIN, as trained:
    // it adds nothing to the text, and the rule leaves it alone.
    bool lineHasText = false;
    // Text written since the last line end that was a space or a paragraph: a running head written,
    // then joined with nothing to the skipped folio beside it, still ends its paragraph at the band.
    bool textSinceBreak = false;
    LineEndHyphen lineEndHyphen(hyphen);
    std::vector<float> biased;
    // A token of the text, written: to the repetition rules (they look at the text only), the
    // page's tokens with its probability and the visual token it read, and the stream.
    auto write = [&](int token, float prob, int visual) {
        d->sampler->push(token);
        tokens.push_back(token);
        probs.push_back(prob);
        attended.push_back(visual);
        if (onText) {
            if (token == kParagraph) onText("\n\n");
            else if (token == kSpace || token == kLineBreak) onText(" ");
            else if (token >= kFirstChar) onText(d->ppocr->charOf(token - kFirstChar + 1));
        }
    };
    auto handle = [&](const decoder::StepResult& step, int guess) {
        const std::vector<float>& logits = *step.logits;
        const bool early = lineEnds && d->options.lineEndRule && !lineEndRule.allowsLineEnd();
        const bool noSkip = lineEnds && d->options.skipRule && !lineEndRule.allowsSkip();
        const auto [lineLast, nextFirst] = lineEnds ? lineEndRule.junction() : std::pair<int, int>{-1, -1};
        const bool noJoin = lineEnds && d->options.joinRule && spacedScript && lineHasText && !early && lineLast >= 0 && nextFirst >= 0 &&
                            endsWord[size_t(lineLast)] && wordChar[size_t(nextFirst)];
        const bool prior = d->options.draftPrior > 0 && guess >= 0;
        const int evidence = guess >= 0 && size_t(guess) < evidenceIds.size() ? evidenceIds[size_t(guess)] : -1;
        const bool bias = early || noSkip || prior || noJoin || evidence >= 0;
        if (bias) {
            biased = logits;
            if (early)
                for (int id : config.lineEndTokenIds) biased[size_t(id)] = -std::numeric_limits<float>::infinity();
            if (noJoin) biased[size_t(kLineJoin)] = -std::numeric_limits<float>::infinity();
            if (noSkip) biased[size_t(kSkip)] = -std::numeric_limits<float>::infinity();
            if (prior) {
                const int id = visualIds[size_t(guess)];
                if (config.isLineEnd(id))
                    for (int e : config.lineEndTokenIds) biased[size_t(e)] += d->options.draftPrior;
                else  // weighted by the front-end's own probability of its character; more where the model hardly knows it
                    biased[size_t(id)] += (size_t(id) < d->rare.size() && d->rare[size_t(id)] ? d->options.rarePrior : d->options.draftPrior) *
                                          visual[size_t(guess) * config.visualStride() + kCharProb];
            }
            if (evidence >= 0) biased[size_t(evidence)] += d->options.evidencePrior * evidenceConf[size_t(guess)];
        }
        int picked = d->sampler->pick(bias ? biased : logits);
        // Text the layout sets apart from the next line ends its paragraph, however the model ended it.
        const size_t line = size_t(lineEndRule.line());
        if (lineEnds && textSinceBreak && picked >= 0 && config.isLineEnd(picked) && line < laidApart.size() && laidApart[line])
            picked = kParagraph;
        const int hyphenBack = lineEnds && d->options.hyphenRule
                                   ? lineEndHyphen.pick(picked, guess, lineLast, picked >= 0 && config.isLineEnd(picked))
                                   : -1;
        const int next = chosen = picked >= 0 ? printed.pick(picked, guess) : picked;
        lineEndRule.push(next >= 0 && config.isLineEnd(next));
        if (next >= 0 && config.isLineEnd(next)) lineHasText = false;
        else if (next >= 0 && next != kSkip) lineHasText = true;
        if (next >= 0 && config.isLineEnd(next) && next != kLineJoin) textSinceBreak = false;
        else if (next >= 0 && next != kSkip && !config.isLineEnd(next)) textSinceBreak = true;
        chosenFrom = step.attendedVisual;
        if (next < 0) {
            failure = "decoding stopped: every token was banned by the repetition rule";
            return Outcome::Failed;
        }
        const float mx = decoder::kernels::maxOf(logits.data(), logits.size());
        const float prob = std::exp(logits[size_t(picked)] - mx) / decoder::kernels::sumExpShifted(logits.data(), logits.size(), mx);
        ++result.tokens;
        if (next == kPageBreak || next == kEos) return Outcome::Done;
        if (result.tokens >= cap) {
            failure = "the page reached the token cap (" + std::to_string(cap) + " tokens for " + std::to_string(count) +
                      " visual tokens)";
            return Outcome::Failed;
        }
        // With line-aligned positions the reader writes one line end per visual line end, so the
        // page's text is complete once it has written the last one (docs/DECODING.md): decoding
        // stops there rather than letting the model write on past the page's visual tokens.
        const bool pageDone = config.isLineEnd(next) && d->session->lineEndsLeft() == 1;
        if (pageDone && next == kLineJoin) return Outcome::Done;
        // A visual token that is not reading text, or lines joined with nothing: nothing to write.
        if (next == kSkip || next == kLineJoin) return Outcome::Go;
        if (hyphenBack >= 0 && !printed.inWrittenDash(hyphenBack)) write(visualIds[size_t(hyphenBack)], prob, hyphenBack);
        write(next, prob, step.attendedVisual);
        reread.push(step.attendedVisual);
        if (d->sampler->looping()) {
            failure = "decoding loop: the output repeats itself (page " + std::to_string(pageNo + 1) + ", " +
                      std::to_string(result.tokens) + " tokens)";
            return Outcome::Failed;
        }
        if (reread.looping()) {
            failure = "decoding loop: the reader went back over lines it had already written (page " +
                      std::to_string(pageNo + 1) + ", " + std::to_string(reread.reread()) + " of " +
                      std::to_string(tokens.size()) + " tokens re-read)";
            return Outcome::Failed;
        }
        return pageDone ? Outcome::Done : Outcome::Go;
    };
    // The draft: the reader mostly writes the front-end's character of the visual token it looks
    // at, then the next one's. So after a token that came from visual token v, the guesses are the
    // ids of v + 1, v + 2, ...; each is fed only if the model chose it (stepDraft), so the text is
    // the same as decoding one token at a time.
    // Where the model departs from the front-end (Chinese, Fraktur) guesses are mostly refused, and
    // computing many of them costs more than it saves: a draft is twice as long as what the last
    // one got fed (at least 2, at most kMaxDraftTokens).
    // The visual token the next written token reads: the one after the token the last one
    // attended to most, held to the line being written where the decoder has line ends (attention
    // that jumped back to a similar line must not pull the prior and the draft with it: with them
    // following attention, a chart's axis labels on a real page were copied again and again).
    auto nextGuess = [&] {
        if (lineEnds) return lineEndRule.nextGuess(chosenFrom);
        return chosenFrom >= 0 ? chosenFrom + 1 : int(visualIds.size());
    };
    int input = fresh ? kBos : kPageBreak;
    const int maxDraft = d->options.draft ? decoder::DecodeSession::kMaxDraftTokens : 1;
    int draftFrom = 0, draftLength = maxDraft;
    // In a batch, this page's drafts are computed with the other engines' while it is decoded.
    decoder::StepBatcher::Membership member;
    if (d->options.sharing) member = d->options.sharing->batcher().join();
    for (;;) {
        if (cancel && cancel->load(std::memory_order_relaxed)) return Status(ErrorCode::Cancelled, "reading cancelled");
        std::vector<int> inputs{input};
        for (int v = std::max(0, draftFrom); v < int(visualIds.size()) && int(inputs.size()) < draftLength; ++v)
            inputs.push_back(visualIds[size_t(v)]);
        result.computedTokens += int(inputs.size());
        Outcome outcome = Outcome::Go;
        const auto onStep = [&](int i, const decoder::StepResult& step) {
            const int g = draftFrom + i;
            outcome = handle(step, g < int(visualIds.size()) ? g : -1);
            // With a prior the pick depends on the guess, so the pass goes on only where the next
            // guess is the one a plain step would get (LineEndRule::nextGuess).
            const bool guessHolds = (d->options.draftPrior <= 0 && evidenceIds.empty()) || nextGuess() == g + 1;
            return outcome == Outcome::Go && guessHolds && size_t(i) + 1 < inputs.size() && inputs[size_t(i) + 1] == chosen;
        };
        auto fed = d->options.sharing ? d->options.sharing->batcher().stepDraft(*d->session, inputs, onStep)
                                      : d->session->stepDraft(inputs, onStep);
        if (!fed) return fed.status();
        if (outcome == Outcome::Failed) return fail(failure);
        if (outcome == Outcome::Done) break;
        input = chosen;
        draftFrom = nextGuess();
        draftLength = std::min(std::max(2 * *fed, 2), maxDraft);
    }

    if (d->options.pageEndHyphen && spacedScript && lineEnds)
        keepPageEndHyphen(visualIds, wordChar, hyphen, [&](size_t v) { return visual[v * config.visualStride() + kCharProb]; },
                          tokens, probs, attended);
    layoutWords(page, *d->ppocr, tokens, probs, attended, result.text);
    return result;
}

namespace {

constexpr uint32_t kCheckpointMagic = 0x51524331;  // "QRC1"

}  // namespace

DecoderCheckpoint ReaderEngine::checkpoint() {
    // Layout: magic, model identity, pages read, context pages, then (with a session) the
    // session's state and the repetition rules' recent tokens.
    ByteWriter w;
    w.put(kCheckpointMagic);
    w.putString(d->identity());
    w.put(uint32_t(d->pagesRead));
    w.put(d->session ? uint32_t(d->sessionPages) : 0u);
    if (d->session) {
        w.putString(d->session->saveState());
        const auto& h = d->sampler->history();
        w.put(uint32_t(h.size()));
        for (int t : h) w.put(uint32_t(t));
    }
    DecoderCheckpoint cp;
    cp.state = w.take();
    cp.restartPages = d->restartPages;
    cp.firstNewPage = d->firstPending;
    cp.newPages = std::move(d->pending);
    d->pending.clear();
    d->restartPages = false;
    d->firstPending = d->session ? d->sessionPages : 0;
    return cp;
}

Status ReaderEngine::restore(const std::string& state, const decoder::DecodeSession::PageProvider& pages) {
    auto bad = [](const std::string& why) { return Status(ErrorCode::Corrupt, "reader checkpoint: " + why); };
    ByteReader r(state);
    uint32_t magic = 0, pagesRead = 0, sessionPages = 0;
    std::string identity;
    if (!r.get(magic) || magic != kCheckpointMagic) return bad("not a reader checkpoint");
    if (!r.getString(identity) || !r.get(pagesRead) || !r.get(sessionPages)) return bad("truncated");
    if (identity != d->identity())
        return Status(ErrorCode::InvalidArgument, "reader checkpoint: saved with another reader model than " +
                                                      d->options.modelDir);
    std::string sessionState;
    std::vector<int> history;
    if (sessionPages > 0) {
        uint32_t n = 0;
        // The count must fit in what is left of the checkpoint before anything is allocated for it.
        if (!r.getString(sessionState) || !r.get(n) || n > r.remaining() / sizeof(uint32_t)) return bad("truncated");
        history.resize(n);
        for (auto& t : history) {
            uint32_t v = 0;
            if (!r.get(v) || v >= uint32_t(kVocabSize)) return bad("truncated");
            t = int(v);
        }
    }
    if (!r.atEnd()) return bad("trailing bytes");
    d->dropSession();
    if (sessionPages > 0) {
        auto session = decoder::DecodeSession::restore(d->model, d->options.attention, sessionState, pages);
        if (!session) return session.status();
        if ((*session)->pagesAdded() != int(sessionPages)) return bad("the session holds another number of pages");
        d->session = std::move(session).value();
        d->sampler = std::make_unique<decoder::GreedySampler>(d->options.greedy);
        d->sampler->restoreHistory(history);
        d->sessionPages = int(sessionPages);
        d->restartPages = false;
        d->firstPending = int(sessionPages);
    }
    d->pagesRead = int(pagesRead);
    return Status::ok();
}

}  // namespace quire
