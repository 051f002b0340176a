// ReaderEngine: the reader model over PP-OCR's visual tokens, page by page in one decoder session,
// its decoding rules, word boxes from attention, and its checkpoint.
#include "quire/reader/reader.h"
#include "quire/reader/reader_sharing.h"

#include "page_decoding.h"

#include "core/byte_stream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <ctime>
#include <filesystem>
#include <fstream>
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

Result<std::vector<bool>> readRareCharacters(const std::string& file, int below, const std::vector<std::string>& characters) {
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
    std::vector<bool> rare(characters.size(), false);
    for (size_t id = 0; id < characters.size(); ++id) {
        if (characters[id].empty()) continue;
        const auto it = counts.find(characters[id]);
        rare[id] = it == counts.end() || it->second < below;
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
    int sessionPages = 0;  // pages fed to the current session, those fed ahead included
    // The visual tokens of the pages fed ahead of the current one (look-ahead), in order: the next
    // page read must be the first of them.
    std::deque<std::vector<float>> fedAhead;
    // Checkpoints: whether the context restarted since the last one, and the pages added since.
    bool restartPages = true;
    int firstPending = 0;
    std::vector<std::vector<float>> pending;
    std::string modelIdentity;  // computed at the first checkpoint or restore
    std::vector<bool> rare;     // by vocabulary id: characters the model hardly saw (empty: no counts)
    std::unordered_map<std::string, int> idOf;  // a character's vocabulary id (the evidence's glyphs)
    std::vector<std::string> characters;         // by vocabulary id: its text, empty where not a character
    std::vector<int> unwritten;                  // vocabulary ids of options.unwritten

    const std::string& identity() {
        if (modelIdentity.empty()) {
            const fs::path dir(options.modelDir);
            auto weights = fileSha256(dir / "model.safetensors");
            auto config = fileSha256(dir / "config.json");
            modelIdentity = (weights ? *weights : std::string("?")) + "/" + (config ? *config : std::string("?"));
        }
        return modelIdentity;
    }
    // Whether `fed`, a page fed ahead (its inputs, after a resume with the gate's summary after
    // them), is the page whose visual tokens are `visual`.
    bool fedAheadIs(const std::vector<float>& fed, const std::vector<float>& visual) const {
        const auto& c = model->config;
        const size_t summary = size_t(c.numLayers) * c.numKvHeads * c.headDim;
        return (fed.size() == visual.size() || fed.size() == visual.size() + summary) &&
               std::equal(visual.begin(), visual.end(), fed.begin());
    }
    // Feeds a page's visual tokens to the session and keeps what a resume needs of it: its inputs
    // and the gate's summary of it (so that a page behind the window is not computed again).
    Status feedPage(const std::vector<float>& visual, int count) {
        if (Status s = session->addPage(sessionPages, visual.data(), count); !s) return s;
        std::vector<float> kept = visual;
        const std::vector<float> summary = session->pageSummary(sessionPages);
        kept.insert(kept.end(), summary.begin(), summary.end());
        pending.push_back(std::move(kept));
        ++sessionPages;
        return Status::ok();
    }
    std::string lastDeviceNotice;  // of sessions already dropped
    void dropSession() {
        if (session && !session->deviceNotice().empty()) lastDeviceNotice = session->deviceNotice();
        session.reset();
        sampler.reset();
        fedAhead.clear();
        restartPages = true;
        pending.clear();
        firstPending = 0;
    }
};

ReaderEngine::ReaderEngine() : d(std::make_unique<Impl>()) {}
ReaderEngine::~ReaderEngine() = default;
int ReaderEngine::pagesRead() const { return d->pagesRead; }
int ReaderEngine::pagesAhead() const { return d->options.attention.windowAfter; }
const PpocrEngine& ReaderEngine::frontEnd() const { return *d->ppocr; }
const std::vector<std::string>& ReaderEngine::characters() const { return d->characters; }
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
    const auto& c = (*model)->config;
    PpocrOptions frontEnd = options.ppocr;
    frontEnd.recBatch = options.frontEndLineBatch > 0 ? options.frontEndLineBatch : c.frontEndLineBatch;
    auto ppocr = PpocrEngine::load(frontEnd);
    if (!ppocr) return ppocr.status();
    if ((*ppocr)->classCount() != kKeyCount + 2)
        return Status(ErrorCode::Corrupt, "reader: the front-end has " + std::to_string((*ppocr)->classCount()) +
                                              " classes, the reader's vocabulary is made for " + std::to_string(kKeyCount + 2));
    // A model reads the front-end's 124 values a token, or with Tesseract's evidence 3 more and 2 ids.
    const bool evidence = c.visualEvidenceIds > 0;
    const int visualDim = kVisualDim + (evidence ? kEvidenceValues : 0);
    const bool vocabOk = c.vocabSize == kBaseVocabSize || c.vocabSize == kVocabSize;
    if (c.visualDim != visualDim || !vocabOk || (evidence && c.visualEvidenceIds != kEvidenceIds))
        return Status(ErrorCode::Corrupt, *dir + ": not a reader model for this front-end (visual_dim " +
                                              std::to_string(c.visualDim) + ", vocab_size " + std::to_string(c.vocabSize) +
                                              ", visual_evidence_ids " + std::to_string(c.visualEvidenceIds) + "; expected " +
                                              "vocab_size " + std::to_string(kBaseVocabSize) + " or " + std::to_string(kVocabSize) +
                                              ", with visual_dim " + std::to_string(kVisualDim) + ", or " +
                                              std::to_string(kVisualDim + kEvidenceValues) + " and " + std::to_string(kEvidenceIds) +
                                              " evidence ids)");
    if (c.pageBreakTokenId != kPageBreak || c.eosTokenId != kEos || c.bosTokenId != kBos)
        return Status(ErrorCode::Corrupt, *dir + ": special token ids differ from the reader vocabulary");
    std::unique_ptr<ReaderEngine> e(new ReaderEngine);
    e->d->options = options;
    e->d->options.modelDir = *dir;
    decoder::AttentionParams& a = e->d->options.attention;
    useTrainedPattern(a, c);
    if (options.windowBefore >= 0) a.windowBefore = options.windowBefore;
    if (options.windowAfter >= 0) a.windowAfter = options.windowAfter;
    if (options.gatedPages >= 0) a.gatedPages = options.gatedPages;
    a.maxPageTokens = std::max(options.attention.maxPageTokens, 6144);
    a.trackAttention = true;  // word boxes from the visual tokens attended to
    e->d->model = std::move(model).value();
    // Engines of a batch on a device share one (their steps run together there); where it cannot be
    // opened, each session tries its own device and falls back to the CPU with a notice.
    if (options.sharing && a.device != decoder::StepDevice::Cpu && a.mode == decoder::AttentionMode::SrSwa && !a.sharedDevice)
        if (auto shared = options.sharing->device(e->d->model, a.device, a.deviceBf16, a.deviceMemoryLimit))
            a.sharedDevice = *shared;
    e->d->ppocr = std::move(ppocr).value();
    auto& chars = e->d->characters;
    chars.assign(size_t(c.vocabSize), std::string());
    for (int cls = 1; cls <= kKeyCount; ++cls) chars[size_t(kFirstChar + cls - 1)] = e->d->ppocr->charOf(cls);
    for (int k = 0; kFirstExtra + k < c.vocabSize; ++k) chars[size_t(kFirstExtra + k)] = kExtraCharacters[k];
    for (int id = 0; id < c.vocabSize; ++id) {
        const std::string& ch = chars[size_t(id)];
        if (ch.empty()) continue;
        if (PrintedPunctuation::isDash(ch)) e->d->dashTokens.push_back(id);
        if (ch == "\u2014" && e->d->options.joinDashes) e->d->emDash = id;
        e->d->idOf.emplace(ch, id);
        if (reader_vocab::isBoxDrawing(ch) && !e->d->options.boxDrawing) e->d->unwritten.push_back(id);
    }
    for (const std::string& ch : e->d->options.unwritten)
        if (auto it = e->d->idOf.find(ch); it != e->d->idOf.end()) e->d->unwritten.push_back(it->second);
    const fs::path counts = fs::path(*dir) / "character_counts.tsv";
    std::error_code ec;
    if (e->d->options.rareBelow > 0 && fs::exists(counts, ec)) {
        auto rareIds = readRareCharacters(counts.string(), e->d->options.rareBelow, chars);
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

}  // namespace

std::vector<float> ReaderEngine::visualTokens(const PpocrPage& page, bool withIds,
                                              const std::unordered_map<std::string, int>* evidenceIds) {
    const bool ev = withIds && evidenceIds;
    const int stride = kVisualDim + (ev ? kEvidenceValues + 1 + kEvidenceIds : withIds ? 1 : 0);
    // A glyph's id (-1: none, or not one character of the vocabulary); `first`: its first character only.
    auto idOf = [&](const std::string& glyph, bool first) {
        size_t len = glyph.size();
        if (first && !glyph.empty()) {  // one UTF-8 character
            const auto lead = static_cast<unsigned char>(glyph[0]);
            len = std::min(glyph.size(), size_t(lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4));
        }
        const auto it = len ? evidenceIds->find(glyph.substr(0, len)) : evidenceIds->end();
        return it == evidenceIds->end() ? -1.f : float(it->second);
    };
    std::vector<float> out;
    const float height = float(std::max(1, page.height));
    for (const auto& line : page.lines) {
        if (!bringsVisualTokens(line)) continue;
        const size_t n = line.charFrames.size();
        const float y = (float(line.box.y) + float(line.box.h) / 2) / height;
        const bool has = ev && line.evidence.size() == n && line.evidenceConf.size() == n &&
                         line.evidenceBreak.size() == n && line.evidenceBefore.size() == n;  // else none on the line
        for (size_t c = 0; c < n; ++c) {
            const int f = std::min(line.charFrames[c], line.frames - 1);
            out.insert(out.end(), line.features.begin() + size_t(f) * 120, line.features.begin() + size_t(f + 1) * 120);
            out.push_back(line.charProbs[c]);
            out.push_back(c == 0 ? 1.f : 0.f);
            out.push_back(c + 1 == n ? 1.f : 0.f);
            out.push_back(y);
            const bool paired = has && !line.evidence[c].empty();
            if (ev)
                out.insert(out.end(), {paired ? line.evidenceConf[c] : 0.f, paired ? 1.f : 0.f,
                                       has && line.evidenceBreak[c] ? 1.f : 0.f});
            if (withIds) out.push_back(float(vocabId(line.charIds[c])));
            if (ev) out.insert(out.end(), {paired ? idOf(line.evidence[c], false) : -1.f,
                                           has ? idOf(line.evidenceBefore[c], true) : -1.f});
        }
        // The line's end, where lines join.
        out.insert(out.end(), 120, 0.f);
        out.insert(out.end(), {1.f, 0.f, 1.f, y});
        if (ev) out.insert(out.end(), size_t(kEvidenceValues), 0.f);
        if (withIds) out.push_back(float(kLineBreak));
        if (ev) out.insert(out.end(), {-1.f, has ? idOf(line.evidenceTrailing, true) : -1.f});
    }
    if (out.empty()) {  // a blank page still brings one (unknown) token
        out.assign(size_t(stride), 0.f);
        if (ev) out[size_t(stride - 2)] = out[size_t(stride - 1)] = -1.f;
    }
    return out;
}

bool ReaderEngine::readsEvidence() const { return d->model->config.visualEvidenceIds > 0; }

std::vector<float> ReaderEngine::modelInputs(const PpocrPage& page) const {
    return visualTokens(page, d->model->config.visualTokenIds, readsEvidence() ? &d->idOf : nullptr);
}


Result<ReaderPage> ReaderEngine::readPage(const cv::Mat& image, int dpi, const std::atomic<bool>* cancel,
                                          const std::function<void(const std::string&)>& onText) {
    return readEncoded(encode(image, cancel), dpi, cancel, onText);
}

Result<PpocrPage> ReaderEngine::encode(const cv::Mat& image, const std::atomic<bool>* cancel) const {
    return d->ppocr->read(image, true, cancel);
}

Result<ReaderPage> ReaderEngine::readEncoded(const Result<PpocrPage>& encoded, int dpi, const std::atomic<bool>* cancel,
                                             const std::function<void(const std::string&)>& onText,
                                             const std::vector<const Result<PpocrPage>*>& ahead) {
    const auto start = std::chrono::steady_clock::now();
    const double cpuStart = threadCpuSeconds();
    auto page = decodePage(encoded, dpi, cancel, onText, ahead);
    if (!page) {
        d->dropSession();  // a half-read page is no context to go on from
        return page;
    }
    page->decodeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    page->decodeCpuSeconds = threadCpuSeconds() - cpuStart;
    if (d->session) {
        const decoder::SessionStats st = d->session->stats();
        page->pagesComputedAgain = st.recomputedPages;
        page->deviceBatchedSteps = st.deviceBatchedSteps;
    }
    return page;
}


Result<ReaderPage> ReaderEngine::decodePage(const Result<PpocrPage>& read, int dpi, const std::atomic<bool>* cancel,
                                            const std::function<void(const std::string&)>& onText,
                                            const std::vector<const Result<PpocrPage>*>& ahead) {
    const int pageNo = d->pagesRead++;
    if (!read) return read.status();
    const PpocrPage& page = *read;
    const auto& config = d->model->config;
    const std::vector<float> visual = modelInputs(page);
    const int count = int(visual.size()) / config.visualStride();
    ReaderPage result;
    result.text.width = page.width;
    result.text.height = page.height;
    result.text.dpi = dpi;
    result.text.engine = "reader";
    result.text.engineVersion = fs::path(d->options.modelDir).filename().string();
    // A new session at the first page and after a failed page (its junk is not context); at every
    // page with contextPerPage (the ablation of the volume's context).
    if (d->options.contextPerPage) d->dropSession();
    // A page fed ahead is in the session already; one that is not the page fed ahead for it (a
    // resumed project whose next page changed) leaves that session's context behind.
    const bool wasFedAhead = !d->fedAhead.empty() && d->fedAheadIs(d->fedAhead.front(), visual);
    if (!d->fedAhead.empty() && !wasFedAhead) d->dropSession();
    if (count > d->options.attention.maxPageTokens) {
        result.failure = "the page brings " + std::to_string(count) + " visual tokens, more than the reader's " +
                         std::to_string(d->options.attention.maxPageTokens);
        return result;
    }
    bool fresh = false;
    if (!d->session) {
        d->session = std::make_unique<decoder::DecodeSession>(d->model, d->options.attention);
        d->sampler = std::make_unique<decoder::GreedySampler>(d->options.greedy);
        if (Status s = d->session->begin({kBos}); !s) return s;
        d->sessionPages = 0;  // the checkpoint fields were reset with the session (dropSession)
        fresh = true;
    }
    if (wasFedAhead) d->fedAhead.pop_front();
    else if (Status s = d->feedPage(visual, count); !s) return s;
    // Look-ahead: the pages after this one, fed before its text is written (as in training:
    // tools/train/train.py, build_sequence), up to the window's pages after it.
    for (size_t i = d->fedAhead.size(); i < ahead.size() && int(i) < d->options.attention.windowAfter; ++i) {
        if (!ahead[i] || !*ahead[i]) break;
        std::vector<float> next = modelInputs(**ahead[i]);
        const int nextCount = int(next.size()) / config.visualStride();
        if (nextCount > d->options.attention.maxPageTokens) break;
        if (Status s = d->feedPage(next, nextCount); !s) return s;
        d->fedAhead.push_back(std::move(next));
    }

    PageDecoding decoding({d->options, config, *d->ppocr, d->characters, d->dashTokens, d->emDash, d->rare, d->idOf, d->unwritten}, page, visual, pageNo,
                          *d->sampler, *d->session, onText);
    using Outcome = PageDecoding::Outcome;
    const std::vector<int>& visualIds = decoding.visualIds();
    // The draft: the reader mostly writes the front-end's character of the visual token it looks
    // at, then the next one's. So after a token that came from visual token v, the guesses are the
    // ids of v + 1, v + 2, ...; each is fed only if the model chose it (stepDraft), so the text is
    // the same as decoding one token at a time.
    // Where the model departs from the front-end (Chinese, Fraktur) guesses are mostly refused, and
    // computing many of them costs more than it saves: a draft is twice as long as what the last
    // one got fed (at least 2, at most kMaxDraftTokens).
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
            outcome = decoding.step(step, g < int(visualIds.size()) ? g : -1);
            // With a prior the pick depends on the guess, so the pass goes on only where the next
            // guess is the one a plain step would get (LineEndRule::nextGuess).
            const bool guessHolds = decoding.picksIgnoreGuess() || decoding.nextGuess() == g + 1;
            return outcome == Outcome::Go && guessHolds && size_t(i) + 1 < inputs.size() && inputs[size_t(i) + 1] == decoding.chosen();
        };
        auto fed = d->options.sharing ? d->options.sharing->batcher().stepDraft(*d->session, inputs, onStep)
                                      : d->session->stepDraft(inputs, onStep);
        if (!fed) return fed.status();
        result.tokens = decoding.tokens();
        if (outcome == Outcome::Failed) {
            result.failure = decoding.failure();
            d->dropSession();  // the next page starts a fresh session
            return result;
        }
        if (outcome == Outcome::Done) break;
        input = decoding.chosen();
        draftFrom = decoding.nextGuess();
        draftLength = std::min(std::max(2 * *fed, 2), maxDraft);
    }
    decoding.finish(result.text);
    return result;
}

namespace {

constexpr uint32_t kCheckpointMagic = 0x51524332;    // "QRC2": with the pages fed ahead
constexpr uint32_t kCheckpointMagicV1 = 0x51524331;  // "QRC1": none fed ahead

}  // namespace

DecoderCheckpoint ReaderEngine::checkpoint() {
    // Layout: magic, model identity, pages read, context pages, the last of them fed ahead, then
    // (with a session) the session's state and the repetition rules' recent tokens.
    ByteWriter w;
    w.put(kCheckpointMagic);
    w.putString(d->identity());
    w.put(uint32_t(d->pagesRead));
    w.put(d->session ? uint32_t(d->sessionPages) : 0u);
    w.put(d->session ? uint32_t(d->fedAhead.size()) : 0u);
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
    uint32_t magic = 0, pagesRead = 0, sessionPages = 0, fedAhead = 0;
    std::string identity;
    if (!r.get(magic) || (magic != kCheckpointMagic && magic != kCheckpointMagicV1)) return bad("not a reader checkpoint");
    if (!r.getString(identity) || !r.get(pagesRead) || !r.get(sessionPages)) return bad("truncated");
    if (magic == kCheckpointMagic && !r.get(fedAhead)) return bad("truncated");
    if (fedAhead > 0 && fedAhead >= sessionPages)
        return bad("more pages fed ahead than the context holds");
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
            if (!r.get(v) || v >= uint32_t(d->model->config.vocabSize)) return bad("truncated");
            t = int(v);
        }
    }
    if (!r.atEnd()) return bad("trailing bytes");
    d->dropSession();
    if (sessionPages > 0) {
        auto session = decoder::DecodeSession::restore(d->model, d->options.attention, sessionState, pages);
        if (!session) return session.status();
        if ((*session)->pagesAdded() != int(sessionPages)) return bad("the session holds another number of pages");
        // The pages fed ahead, to know them when their turn comes: their inputs without the gate's
        // summary after them.
        std::deque<std::vector<float>> ahead;
        for (uint32_t i = sessionPages - fedAhead; i < sessionPages; ++i) {
            auto page = pages(int(i));
            if (!page) return page.status();
            ahead.push_back(std::move(page).value());
        }
        d->session = std::move(session).value();
        d->fedAhead = std::move(ahead);
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
