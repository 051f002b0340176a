// Continuous decoding of a whole volume with constant KV memory.
//
// The sequence is [sinks: BOS + prompt] then, interleaved as the caller feeds them, the visual
// tokens of each page and the generated text. A generated token attends to:
//   Full   every earlier token;
//   RSwa   sinks, every page's visual tokens, and the last `recentTokens` generated tokens
//          (Unlimited-OCR's R-SWA);
//   SrSwa  sinks, the visual tokens of a window of pages around the current one, up to
//          `gatedPages` earlier pages chosen by the page gate and inside each up to
//          `blocksPerGatedPage` 16-token blocks chosen by Quest bounds (with the gate, by the
//          query of the step that refreshes it), and the recent tokens.
// Visual tokens of a page attend to the sinks and, causally, to their own page.
// With budgets that cover everything, SrSwa computes exactly what RSwa computes.
//
// Memory under SrSwa does not grow with the volume: the pool holds the sinks, the window and the
// recent tokens; a page behind the window is dropped from memory (its visual inputs go to an
// unlinked spill file under $TMPDIR, about 0.5 KB a token) and computed again from them when the
// page gate picks it. What stays per page is the gate's summary (numLayers × numKvHeads × headDim
// floats) and a few counters.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "quire/decoder/model.h"

namespace quire::decoder {

constexpr int kBlockTokens = 16;

enum class AttentionMode { Full, RSwa, SrSwa };

// Where a session's pages are prefilled and its generated steps computed; the session's decisions
// (window, gate, selector, positions) stay on the host, which keeps a copy of every key and value.
//   Cpu     the engine's own kernels (the reference);
//   Cuda    a GPU through cuBLAS and the kernels of cuda/ (engine/src/decoder/step_backend.h);
//   Mirror  the device path run in plain loops on the host (built in; the tests and benchmarks
//           choose it to check the device path without a GPU).
enum class StepDevice { Cpu, Cuda, Mirror };
const char* stepDeviceName(StepDevice d);
Result<StepDevice> parseStepDevice(const std::string& s);
const char* attentionModeName(AttentionMode m);
Result<AttentionMode> parseAttentionMode(const std::string& s);

class SharedDevice;

struct AttentionParams {
    AttentionMode mode = AttentionMode::SrSwa;
    int recentTokens = 128;        // n: generated tokens kept (self included)
    int windowBefore = 1;          // pages before the current one in the window
    int windowAfter = 2;           // pages after it (fed ahead); W = 1 + before + after
    int gatedPages = 4;            // k_p
    int blocksPerGatedPage = 8;    // k_b
    int gateRefreshSteps = 8;      // the page gate (and the token selector) is re-evaluated this often and at each page break
    int gateQueryTokens = 16;      // running mean of this many recent pre-rotary queries
    // A page the gate holds stays picked unless another scores higher by more than this (scores
    // are cosines summed over layers). Without it the picks flip among near-equal pages as the
    // query drifts, and each flip cuts a draft pass short and may compute a page again.
    float gateHold = 0.05f;
    // A page behind the window keeps only its summary for the gate and its visual inputs in a
    // spill file on disk; when the gate picks it, its keys and values are computed again. This
    // many gated pages stay computed, those picked most often lately (host memory: at most this
    // many pages' keys and values). The gate picks from a pool somewhat larger than gatedPages:
    // on a generated volume 8 missed on most picks past page 300, 16 almost never.
    int gatedCachePages = 16;
    int maxPageTokens = 512;       // visual tokens a page may bring (sizes the fixed pool)
    // CPU threads a draft pass computes with, 1 or 2: its attention split by KV group and its LM
    // head by rows, the same results either way (a helper thread per session).
    int threads = 1;
    int maxSinkTokens = 64;
    // Benchmarks only: keep every key in host memory and measure, at each generated step, the share
    // of full attention's softmax mass that falls on the tokens this mode attends to.
    bool measureRecall = false;
    // Tests only: prefill a page token by token with the decode step's attention instead of in
    // matrix products (the reference the batched prefill is checked against).
    bool referencePrefill = false;
    // Report, per step, the current page's visual token attended to most (StepResult); a reader
    // places words on the page by it.
    bool trackAttention = false;
    // Where generated steps run (StepDevice). Not with measureRecall or referencePrefill, which
    // need the host's attention (begin() says so). Drafts (stepDraft) run as plain steps there; on
    // a shared device, one token a draft, stepped with the device's other sessions (computeDrafts).
    StepDevice device = StepDevice::Cpu;
    // Cuda: the weights stored as bf16 (products accumulate in fp32); false keeps them fp32.
    bool deviceBf16 = true;
    // When the device cannot be had (no GPU, no memory for the weights) or fails a step (out of
    // memory as the pool grows, a launch error), the session goes on with the CPU's steps — the
    // host holds every key and value, so nothing is lost and the text is the CPU's — and says so
    // in deviceNotice(). Off: begin() or step() fails with the device's message (benchmarks).
    // An SR-SWA session reserves its device memory when it starts; where the device has not that
    // much, it first halves its gate and selector budgets (blocksPerGatedPage, gatedPages), down
    // to no gated pages, and falls back to the CPU only when even that does not fit
    // (deviceNotice() and stats() say which).
    bool deviceFallback = true;
    // The most device memory, in bytes, the session's own device may hold (weights, pool,
    // scratch); 0: all the device has. A reservation beyond it fails as the device's own
    // out-of-memory would. (A SharedDevice takes its limit in open().)
    size_t deviceMemoryLimit = 0;
    // Tests only: the device fails at this generated step (as a GPU out of memory would); -1 never.
    int64_t deviceFaultAtStep = -1;
    // Sessions given the same SharedDevice (of `device`'s kind) hold their blocks in it, and
    // DecodeSession::stepBatch computes their steps together there. SR-SWA only.
    std::shared_ptr<SharedDevice> sharedDevice;
};

// One device for several sessions on one model (a batch of volumes): the weights go to it once,
// and each session's blocks take a range of its slots (the session's memory, fixed when it
// starts, given back when it ends), so that DecodeSession::stepBatch computes their steps
// together there, each weight read once a step for all of them. SR-SWA sessions only: their
// memory is fixed when they start. Sessions whose device fails go on with the CPU as alone. The
// device takes one call at a time, so its sessions may be used from several threads (each
// session from one thread at a time, as always); the packed weights that sessions on one model
// share on the CPU are read-only.
class SharedDevice {
public:
    // Fails with the reason where there is no such device or no memory for the weights.
    // faultAtStep (tests only, the mirror): its step of that number, counted over the sessions'
    // steps from 0, fails as an out-of-memory GPU would.
    // memoryLimit: as AttentionParams::deviceMemoryLimit, for the whole device.
    static Result<std::shared_ptr<SharedDevice>> open(std::shared_ptr<const ModelWeights> model, StepDevice device,
                                                      bool bf16Weights = true, int64_t faultAtStep = -1,
                                                      size_t memoryLimit = 0);
    ~SharedDevice();
    StepDevice device() const;
    struct Impl;
    Impl& impl() { return *d; }

private:
    explicit SharedDevice(std::unique_ptr<Impl> d);
    std::unique_ptr<Impl> d;
};

// Attention-mass recall against full attention, per (layer, head) sample.
struct RecallStats {
    std::vector<double> samples;  // one value per layer and head and measured step
    double mean() const;
    double percentile(double p) const;
};

struct StepResult {
    const std::vector<float>* logits = nullptr;  // [vocab], valid until the next call
    int page = 0;                                // the page the step belongs to
    // With AttentionParams::trackAttention: the visual token of that page (index in the order it
    // was fed) that received the most attention, summed over layers and heads; -1 if none.
    int attendedVisual = -1;
};

struct SessionStats {
    size_t poolCapacityBytes = 0;  // KV memory reserved for the sequence ("device" memory)
    size_t poolUsedBytes = 0;
    size_t hostBytes = 0;          // keys/values outside the pool: recomputed gated pages (bounded by
                                   // gatedCachePages), or with measureRecall every page outside the window
    size_t spillBytes = 0;         // visual inputs of the pages fed, in the spill file (disk)
    int64_t recomputedPages = 0;   // gated pages computed again from the spill file so far
    int64_t computedPages = 0;     // pages computed in all: fed, restored and computed again
    int attendedTokens = 0;        // tokens the last step attended to (layer 0)
    int64_t position = 0;          // absolute position of the next token
    int currentPage = 0;
    size_t deviceBytes = 0;        // with a device (AttentionParams::device): the memory it holds
    int64_t deviceUploadBlocks = 0;  // blocks (or one layer of a gated block) copied to it so far
    int64_t deviceBatchedSteps = 0;  // steps computed on a shared device together with other sessions'
    bool onDevice = false;         // the steps run on the device (false: the CPU, asked or fallen back)
    // The SR-SWA budgets the session runs with: those asked, or smaller where the device did not
    // have the memory for them (deviceBudgetCuts halvings; deviceNotice() says so).
    int gatedPages = 0, blocksPerGatedPage = 0;
    int deviceBudgetCuts = 0;
};

class DecodeSession {
public:
    DecodeSession(std::shared_ptr<const ModelWeights> model, AttentionParams params);
    ~DecodeSession();

    Status begin(const std::vector<int>& sinkTokens);
    // Visual tokens of page `page` ([count, visualStride()], row-major: the features, then the
    // token's vocabulary id where the model has visual_token_ids). Pages are fed in order.
    Status addPage(int page, const float* visual, int count);
    // Feeds the previous output token (the page-break token moves to the next page) and returns
    // the logits of the next one.
    Result<StepResult> step(int inputToken);
    // One step of each of several sessions at once (a batch of volumes): sessions[i] is fed
    // inputs[i] as its step() would be, and results[i] is what that step() returns, logits bit for
    // bit. The sessions must run one model (the same ModelWeights). On the CPU each weight matrix is
    // read once for the batch (up to 64 sessions a pass) instead of once a session, and with
    // `threads` 2 in the first session the sessions' attention is split between two threads. A
    // session computing on a device takes its own step(). An error leaves the sessions as a failed
    // step() leaves one.
    static Result<std::vector<StepResult>> stepBatch(const std::vector<DecodeSession*>& sessions,
                                                      const std::vector<int>& inputs);
    // Draft verification: feeds inputs[0] and then, for as long as onStep(i, result) returns true,
    // inputs[i + 1] — the same tokens, logits and state as calling step() on each in turn (up to
    // float rounding), with the tokens computed together in matrix products. A caller that guesses
    // the next tokens (a reader's front-end draft) checks each guess against the logits before the
    // next is fed. The draft is cut before a page break and at kMaxDraftTokens, and ends early
    // where the page gate, falling due inside it, picks other pages than the ones it was computed
    // with; so onStep may see fewer results than inputs. Returns the number fed (≥ 1).
    static constexpr int kMaxDraftTokens = 16;
    Result<int> stepDraft(const std::vector<int>& inputs, const std::function<bool(int, const StepResult&)>& onStep);
    // stepDraft() in three parts, so that several sessions' drafts are computed together (a batch
    // of volumes, StepBatcher): beginDraft() plans the draft and feeds its first input's page turn
    // and gate refresh; computeDrafts() computes the begun drafts of several sessions — those on
    // one model with each weight matrix applied to all their tokens at once (single tokens as
    // stepBatch() computes them) — and may run on another thread than the sessions' own (their
    // threads wait meanwhile); endDraft() feeds the tokens as stepDraft() does. Each session's
    // tokens, logits and state are those of its stepDraft(), bit for bit.
    Status beginDraft(const std::vector<int>& inputs);
    static Status computeDrafts(const std::vector<DecodeSession*>& sessions);
    Result<int> endDraft(const std::function<bool(int, const StepResult&)>& onStep);

    SessionStats stats() const;
    // How many positions' rotary cos and sin the session keeps (16,384 slots by default, a position
    // taking the slot of another; tests set it small so that happens inside a step).
    void setRotaryCacheLimit(size_t positions);
    const AttentionParams& params() const { return m_params; }
    int pagesAdded() const;
    // Line-aligned positions: how many of the current page's visual line ends the text written so
    // far (the tokens fed to step()) has not reached yet; 0 without line-aligned positions.
    int lineEndsLeft() const;
    // Per layer, the tokens the last step attended to, as (absolute position) lists: for tests and
    // the attention-mass recall benchmark.
    std::vector<std::vector<int64_t>> lastAttendedPositions() const;
    const RecallStats& recall() const;
    void clearRecall();
    // With measureRecall set: compute recall on the steps while the probe is on.
    void setRecallProbe(bool on);

    // Why the session is not (or no longer) computing on the device it was asked for; empty while
    // it is, or when it was asked for the CPU.
    const std::string& deviceNotice() const;

    // The pages the gate picked at its last refresh, in page order (SR-SWA; empty otherwise).
    std::vector<int> gatedPages() const;

    // The page gate's summary of a fed page (numLayers × numKvHeads × headDim floats), empty for a
    // page not fed. A caller that keeps pages for restore() keeps this after the page's inputs.
    std::vector<float> pageSummary(int page) const;

    // Everything needed to continue: counters, page pointer, gate state, the generated tokens' keys
    // and values, and where each page's visual tokens sat. Pages' keys and values are not stored:
    // they depend only on the sinks and the page itself, so restore() computes the window's pages
    // again from their visual tokens at their original positions. `pages(p)` gives page p's
    // inputs, [count, visualStride()], optionally followed by its pageSummary(): with the summary,
    // a page behind the window is not computed at all (SR-SWA), so resuming a long volume costs
    // the window, not the volume.
    std::string saveState() const;
    using PageProvider = std::function<Result<std::vector<float>>(int page)>;
    static Result<std::unique_ptr<DecodeSession>> restore(std::shared_ptr<const ModelWeights> model,
                                                          AttentionParams params, const std::string& state,
                                                          const PageProvider& pages);

private:
    struct Impl;
    std::unique_ptr<Impl> d;
    AttentionParams m_params;
};

// Greedy decoding with a sliding-window no-repeat n-gram ban and a loop detector.
struct GreedyOptions {
    int noRepeatNgram = 35;
    int ngramWindow = 1024;
    int maxTokensPerPage = 2048;
    int loopMinRepeats = 4;    // a period repeated this many times in a row ...
    int loopMaxPeriod = 64;    // ... up to this length counts as a loop
    int loopMinSpan = 8;       // ... once the repeats cover at least this many tokens
};

class GreedySampler {
public:
    explicit GreedySampler(GreedyOptions o = {}) : m_opt(o) {}
    // The best token not banned by the n-gram rule.
    int pick(const std::vector<float>& logits) const;
    void push(int token);
    // A loop is a page repeating itself: tokens before the last beginPage() do not count for
    // looping() (a volume's pages may well repeat a form or a heading), while the n-gram ban
    // slides across pages.
    void beginPage() { m_pageStart = m_history.size(); }
    bool looping() const { return loopSpan() > 0; }
    // The tokens at the end of this page's output that the repeats cover (0: no loop).
    int loopSpan() const;
    // The tokens the rules still look at (the last ones, at least `memory()` of them): what a
    // resumed run gives back to restoreHistory() to continue with identical decisions.
    const std::vector<int>& history() const { return m_history; }
    int memory() const;
    void restoreHistory(const std::vector<int>& tokens) { m_history = tokens, m_pageStart = tokens.size(); }

private:
    GreedyOptions m_opt;
    std::vector<int> m_history;
    size_t m_pageStart = 0;
};

}  // namespace quire::decoder
