// The inside of a DecodeSession (quire/decoder/session.h): its state and the operations on it, one
// noun per source file — kv_pool.cpp (blocks and slots), rotary.cpp (positions), attention.cpp
// (what a token attends), page_gate.cpp (gate and token selector), page_spill.cpp (pages behind
// the window), prefill.cpp (a page through the layers), step.cpp (generated steps, batches),
// draft.cpp (draft verification), session_device.cpp (a GPU or the mirror), session_state.cpp
// (save and restore) — and session.cpp, which wires them behind the public API. The state is
// one struct because every part reads the same pages, blocks and positions; the files keep each
// part's code apart.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "decoder/kernels.h"
#include "decoder/packed_weights.h"
#include "decoder/pair_runner.h"
#include "decoder/spill_file.h"
#include "decoder/step_backend.h"
#include "quire/decoder/session.h"

namespace quire::decoder {

enum class BlockKind { Sink, Visual, Generated };

// One 16-token block of keys (rotated at their absolute positions) and values, for every layer.
struct Block {
    BlockKind kind = BlockKind::Sink;
    int page = -1;
    int count = 0;
    int64_t pos0 = 0;         // absolute position of token 0; tokens are consecutive
    int64_t genIndex0 = 0;    // for generated blocks: generated-token index of token 0
    int slot = -1;            // pool slot, or -1 when the data is in `host`
    std::vector<float> host;  // data outside the pool (same layout as a slot): a recomputed gated
                              // page, a draft token, or (measureRecall) a page kept for the probe
    std::vector<float> kMin, kMax;  // Quest bounds per [layer][kvHead][dim], over stored keys
    bool sealed = false;      // no more tokens go in
};

inline void rmsnorm(const float* x, const float* w, float* out, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const float r = float(1.0 / std::sqrt(ss / n + eps));
    for (int i = 0; i < n; ++i) out[i] = x[i] * r * w[i];
}

struct DecodeSession::Impl {
    std::shared_ptr<const ModelWeights> model;
    const ModelConfig& c;
    AttentionParams p;
    // The weights packed for steps and drafts (a page's prefill, thousands of rows, uses OpenBLAS),
    // shared by the sessions on the model.
    std::shared_ptr<const PackedWeights> packedWeights;
    const std::vector<PackedLayer>& packed;
    const PackedMatrix& packedHead;
    // A draft pass's two halves (attention by KV group, the LM head by rows): on a helper thread
    // with AttentionParams::threads 2, else in turn.
    std::unique_ptr<PairRunner> pairs;
    // Layout of one block: K then V, each [layer][kvHead][token][dim].
    size_t halfFloats, blockFloats;
    std::vector<float> pool;       // slots
    std::vector<int> freeSlots;
    int capacitySlots = 0;
    bool fixedPool = false;
    std::vector<Block> blocks;     // blocks by id; a freed id is reused (freeIds)
    std::vector<int> freeIds;
    std::vector<int> sinkBlocks;
    std::map<int, std::vector<int>> pageBlocks;
    std::vector<int> genBlocks;    // live generated blocks, oldest first
    // The page gate's summaries, one row per page in page order (pages are fed consecutively from
    // gateFirstPage): each page's mean pre-rotary key per [layer][kvHead][dim], and the inverse of
    // its norm per layer (0 for a zero vector). The gate scores every earlier page at each refresh,
    // so the rows are contiguous and scored with matrix-vector products.
    std::vector<float> gateMeans, gateInvNorms;
    int gateFirstPage = 0, gatePages = 0;
    std::map<int, int> pageTokens;
    int64_t position = 0, generated = 0;
    int64_t frontier = 0;  // one past the highest position used (page-aligned positions reuse lower ones)
    int currentPage = 0;
    bool pageFedSinceLastGen = false;
    std::vector<double> invFreq;
    // Gate state.
    std::vector<std::vector<float>> recentQueries;  // ring of [layer][kvHead][dim]
    int recentQueryNext = 0, stepsSinceGate = 0;
    std::vector<int> gated;
    // The token selector's blocks of each gated page, per layer: chosen with the page gate (every
    // gateRefreshSteps steps and at each page break) by the query of the step that refreshes it,
    // and attended by the steps until the next refresh. Scoring every block of every gated page
    // for every token and layer was a fifth of a later page's decoding; the gate's pages change
    // only at those steps anyway.
    using Selection = std::vector<std::pair<int, std::vector<int>>>;  // (page, block indices)
    std::vector<Selection> selection;  // [layer]
    // Scratch.
    std::vector<float> x, h, q, k, v, att, tmp, gateBuf, upBuf, logits, scores, qrot;
    // What the last token attended to, per layer: runs of positions (first, count), expanded only
    // when asked for (lastAttendedPositions(); a draft would otherwise list ~3,000 a token and layer).
    using PositionRuns = std::vector<std::pair<int64_t, int>>;
    std::vector<PositionRuns> lastPositions;
    static int runsTotal(const PositionRuns& runs);
    RecallStats recall;
    bool recallProbe = false;
    std::vector<int> sinkTokens;
    std::map<int, int64_t> pagePos0;
    // Line-aligned positions: positions of each fed page's visual line ends (pages not yet left
    // behind), and how many line ends the text of the current page has written.
    std::map<int, std::vector<int64_t>> pageLineEnds;
    int writtenLineEnds = 0;
    // trackAttention: attention mass per visual token of the current page during one step
    // (the page's first position cached for the hot loop).
    bool trackingStep = false;
    int64_t trackedPagePos0 = 0;
    std::vector<float> attendedMass;
    std::vector<int> retiredGenBlocks;  // measureRecall: generated blocks kept in host memory
    // SR-SWA (without measureRecall): a page behind the window gives its pool slots back; its
    // visual inputs wait in the spill file, and a page the gate picks is computed again from them
    // into a cache of the most often gated pages (host memory bounded by gatedCachePages pages,
    // and one more: a page leaving the window enters the cache with its keys and values, until
    // the next pick decides whether it stays).
    bool spilling = false;
    SpillFile spill;
    std::map<int, int64_t> spillOffset;  // page -> where its visual inputs start in the spill file
    // The gate tends to pick its pages from a pool a little larger than k_p, a different few as the
    // query moves: a least-recently-used cache smaller than the pool misses on nearly every pick.
    // So the cache keeps the pages picked most often lately (a pick count decayed at each refresh)
    // and drops the least used.
    struct GatedPage {
        std::vector<Block> blocks;
        double uses = 0;
    };
    std::map<int, GatedPage> gatedCache;
    int64_t recomputedPages = 0, computedPages = 0;
    uint64_t pageLayout = 0;  // changes whenever pages' blocks are made or given back

    // A device for the generated steps and the pages' prefill (AttentionParams::device;
    // step_backend.h). Its slots are [prefill scratch | staging | the pool's slots, same numbers
    // shifted by poolBase()]. A page prefilled on the device lands in its pool slots there (a page
    // computed again for the gate, whose blocks live in host memory, in the scratch slots) and its
    // keys and values come back to the host; a pool slot written on the host (the sinks, a
    // restore's generated tokens, a page the CPU computed) is marked and copied before the next
    // step; a generated token's key and value are written by the device and copied back. Gated
    // blocks live in host memory (the cache of gated pages): each layer's selected blocks go to
    // staging slots, that layer's slice only, kept while the selection keeps them (SR-SWA's budget
    // k_p × k_b staging slots, so device memory is fixed when the session starts).
    std::shared_ptr<StepBackend> device;  // the session's own, or a SharedDevice's
    Status deviceStatus;  // why the asked-for device is not there (begin() returns it)
    // Why the steps run on the CPU instead (deviceFallback), or with smaller budgets than asked.
    std::string deviceNotice;
    int deviceBudgetCuts = 0;  // halvings of the gate and selector budgets for the device's memory
    int stagingSlots = 0, prefillSlots = 0;
    // On a SharedDevice the session's slots are the range [deviceBase, deviceBase + deviceRange).
    int deviceBase = 0, deviceRange = 0;
    int scratchSlot(int i) const { return deviceBase + i; }
    int stagingSlot(int j) const { return deviceBase + prefillSlots + j; }
    int poolBase() const { return deviceBase + prefillSlots + stagingSlots; }
    std::vector<uint8_t> slotDirty;
    struct Staged {
        int page = -1;
        int64_t pos0 = -1;
        uint64_t lastUse = 0;
    };
    std::vector<std::vector<Staged>> staged;  // [layer][staging slot]
    uint64_t deviceSteps = 0;
    int64_t deviceUploads = 0;
    std::vector<float> devQueries, devKeys, devValues;

    Impl(std::shared_ptr<const ModelWeights> m, AttentionParams params);
    // The fixed pool (SR-SWA) for the budgets in p, empty; before any block is made.
    void sizePool();
    // The device's memory for the session (its slots and prefill scratch), reserved at the start.
    Status reserveDevice();

    ~Impl();

    float* data(Block& b) { return b.slot >= 0 ? &pool[size_t(b.slot) * blockFloats] : b.host.data(); }
    const float* data(const Block& b) const { return b.slot >= 0 ? &pool[size_t(b.slot) * blockFloats] : b.host.data(); }
    size_t kIndex(int layer, int g, int t) const;

    Block makeBlock(BlockKind kind, int page, int64_t pos0) const;

    Result<int> newBlock(BlockKind kind, int page);

    // A block no longer referenced: its slot and memory are given back and its id reused.
    void freeBlock(int id);

    void releaseSlot(Block& b);

    void offload(Block& b);

    // Writes one token's key and value for (layer, KV head g) at slot t of block b, the key rotated
    // at the token's position unless it already is, and widens the block's Quest bounds. The pool
    // slot is marked for copying to the device, unless the device computed the values itself.
    void storeKv(Block& b, int layer, int g, int t, const float* key, const float* value, bool rotated,
                 bool deviceHasIt = false);

    // cos and sin of each rotary frequency at a position (cos first, then sin), kept once computed:
    // the token selector rotates the query for every block of every gated page at every step, at
    // few distinct positions (the step's own, and a capped frame for each far block), and computing
    // them afresh made each later page of a volume several times slower to decode than its first
    // (docs/BENCHMARKS.md). The values are the ones computed before, so the picks are the same.
    // A table of slots (setTrigEntries), direct-mapped by position (a hash map's node lookups were
    // a third of the token selector's time). The pointer is good until the next call (which may
    // take its slot).
    const float* trigAt(int64_t pos) const;
    void setTrigEntries(size_t entries);
    mutable std::vector<int64_t> trigTags;  // the position each slot holds
    mutable std::vector<float> trigTable;

    void rotate(float* vec, int64_t pos) const { rotateWith(vec, trigAt(pos)); }
    // rotate() with the cos and sin of trigAt().
    void rotateWith(float* vec, const float* t) const;

    // A contiguous run of attended tokens in one block.
    struct Span {
        const Block* block;
        int first, last;  // token range [first, last)
        int64_t queryPos; // position the query is rotated to for this span (the position frame)
    };

    static PositionRuns positionRuns(const std::vector<Span>& spans);

    // Frames positions: when the attended set spans more positions than the model was trained on,
    // it is laid out contiguously (gaps removed) around the query; otherwise positions are
    // absolute. Rotation is relative, so this only changes the position the query is rotated to.
    // Spans whose positions overlap (a page and its text, with page-aligned positions) form one
    // interval, so the distances inside it are kept.
    void frame(std::vector<Span>& spans, int64_t queryPos) const;

    // Attention of the current query (q, all heads) over `spans` at `layer`, into att. The heads
    // of a KV group are done together, so each key and value is read once per group; dot
    // products (kernels::dot) keep eight partial sums, which vectorise (a single running sum is
    // a serial chain it may not reorder).
    void attend(int layer, const std::vector<Span>& spans);

    // What page token t attends to while its page (blocks `ids`) is prefilled: the sinks and,
    // causally, the page up to itself.
    std::vector<Span> causalPageSpans(const std::vector<Block*>& page, int t) const;

    std::vector<Span> wholeBlocks(const std::vector<int>& ids) const;

    // The spans a generated token attends to at `layer` (the current token is already written):
    // `generatedCount` tokens generated with it, `query` its pre-rotary query (all heads) and
    // `pos` its position.
    // `select`: the token selector's choice of gated blocks for this layer (refreshed when `refresh`).
    std::vector<Span> generatedSet(int layer, int64_t generatedCount, const float* query, int64_t pos, Selection& select,
                                   bool refresh);

    void append(std::vector<Span>& spans, const std::vector<int>& ids) const;

    bool inWindow(int page) const { return page >= currentPage - p.windowBefore && page <= currentPage + p.windowAfter; }

    // Quest: per block, Σ max(q·min, q·max) bounds q·k from above; the best k_b blocks of each gated
    // page (page, block indices into gatedPageBlocks(page)), for the query of a step at `pos`.
    Selection selectGatedBlocks(int layer, const float* query, int64_t pos) const;

    // The blocks of a gated page: computed again into the cache, or still in the pool / host memory.
    std::vector<const Block*> gatedPageBlocks(int page) const;

    // A page's visual inputs to the spill file, what it is computed again from once it is behind
    // the window.
    Status spillInputs(int page, const float* visual, int count);

    // Pages are fed once each, in order (the gate's rows and the spill offsets follow them).
    bool isNextPage(int page) const { return !pagePos0.count(page) && (pagePos0.empty() || page == pagePos0.rbegin()->first + 1); }

    // Restore: a page behind the window, known by its inputs (to the spill file) and its summary.
    Status addSpilledPage(int page, const float* visual, int count, int64_t pos0, std::vector<float> summary);

    // Makes sure every gated page's keys and values are at hand: a page behind the window is
    // computed again from its spilled inputs (the same keys and values it had when it was fed).
    // The cache keeps the gatedCachePages most recently gated pages.
    Status materializeGated();

    // The page gate: cosine between the running mean of recent pre-rotary queries and each earlier
    // page's mean pre-rotary key, summed over layers; the best k_p pages outside the window.
    // Inverse norm of each layer's slice of a summary or query (0 for a zero slice).
    std::vector<float> layerInvNorms(const std::vector<float>& v) const;

    void addGateSummary(int page, const std::vector<float>& summary);

    Status refreshGate();

    // Share of full attention's softmax mass (over every token so far) that falls on `spans`.
    void measureRecall(int layer, const std::vector<Span>& spans, int64_t queryPos);

    // Runs the layers for the token whose input embedding is in x: at each layer, with its
    // projections in q, k and v, attention(layer) leaves the attention's output in att
    // (attendLayer() or stepAttention()).
    template <typename Attention>
    void forward(Attention attention) {
        const int H = c.hiddenSize;
        for (int l = 0; l < c.numLayers; ++l) {
            const LayerWeights& L = model->layers[size_t(l)];
            const PackedLayer& P = packed[size_t(l)];
            rmsnorm(x.data(), L.attnNorm.data(), h.data(), H, c.rmsNormEps);
            P.wq.apply(h.data(), 1, q.data());
            P.wk.apply(h.data(), 1, k.data());
            P.wv.apply(h.data(), 1, v.data());
            attention(l);
            P.wo.apply(att.data(), 1, tmp.data());
            for (int i = 0; i < H; ++i) x[size_t(i)] += tmp[size_t(i)];
            rmsnorm(x.data(), L.mlpNorm.data(), h.data(), H, c.rmsNormEps);
            P.wGate.apply(h.data(), 1, gateBuf.data());
            P.wUp.apply(h.data(), 1, upBuf.data());
            kernels::swiglu(gateBuf.data(), upBuf.data(), size_t(c.intermediateSize));
            P.wDown.apply(gateBuf.data(), 1, tmp.data());
            for (int i = 0; i < H; ++i) x[size_t(i)] += tmp[size_t(i)];
        }
    }

    // forward()'s attention at layer l, with the token's projections in q, k and v: its key and
    // value into block `blockId` at slot `t`, then attention over setFor(l) into att.
    template <typename SetFor>
    void attendLayer(int l, int blockId, int t, SetFor setFor) {
        const int D = c.headDim;
        Block& b = blocks[size_t(blockId)];
        for (int g = 0; g < c.numKvHeads; ++g) storeKv(b, l, g, t, &k[size_t(g) * D], &v[size_t(g) * D], false);
        b.count = std::max(b.count, t + 1);
        std::vector<Span> spans = setFor(l);
        frame(spans, b.pos0 + t);
        lastPositions[size_t(l)] = positionRuns(spans);
        attend(l, spans);
        if (p.measureRecall && recallProbe && b.kind == BlockKind::Generated) measureRecall(l, spans, b.pos0 + t);
    }

    // --- A generated step, in three parts: beginStep() (the page turn, the gate, the embedding),
    // the forward pass (forward() with stepAttention(), deviceForward(), or a batch's
    // forwardBatch()), then endStep().
    struct PendingStep {
        int blockId = 0, t = 0, input = 0;
        bool refresh = false;
        std::vector<float> gq;  // the step's gate query, summed over the layers as they run
    };

    Status checkStep(int inputToken) const;

    Result<PendingStep> beginStep(int inputToken);

    // A generated step's attention at layer l on the CPU (q, k, v hold its projections).
    void stepAttention(int l, PendingStep& ps);

    // The rest of step(); the logits are in `logits` already (a device's or a batch's) or computed
    // here from x.
    StepResult endStep(PendingStep& ps, bool logitsDone);

    // The forward passes of steps begun in n sessions on one model (at most kPackedRows), as
    // forward() computes each: every weight matrix applied to the sessions' rows together (the
    // packed product gives a row the same result whatever rows go with it, so each session's
    // logits are its own step's, bit for bit), each session attending over its own blocks, the
    // sessions split between the two threads of the first session's `pairs`.
    static void forwardBatch(Impl* const* s, PendingStep* ps, int n);
    // forwardBatch() over any number of sessions, kPackedRows a pass (stepBatch, computeDrafts).
    static void forwardBatches(const std::vector<Impl*>& s, std::vector<PendingStep>& ps);

    // Row-wise Y[T, rows] = X[T, cols] W[rows, cols]^T.
    static void gemm(const std::vector<float>& w, int rows, int cols, const float* X, int T, float* Y);

    // gemm() of a page's T rows in two halves of rows, one per thread of `pairs` (OpenBLAS sums
    // each output along the same K order whatever rows go with it: tst_decoder_batch
    // twoThreadsPrefillWhatOneDoes).
    void gemmRows(const std::vector<float>& w, int rows, int cols, const float* X, int T, float* Y) const;

    // The same through the packed copy for a step's or a draft's few rows (up to kPackedRows), split
    // between the threads of `pairs`; through OpenBLAS for a page's thousands (its copying of W into
    // panels then costs little), split by rows.
    static constexpr int kPackedRows = 64;
    void product(const std::vector<float>& w, const PackedMatrix& pw, const float* X, int T, float* Y) const;

    // Rows of tokens through a layer in matrix products: the attention input (norm, then Q, K, V
    // pre-rotary) ...
    void projectRows(int layer, int T, const std::vector<float>& X, std::vector<float>& Xn, std::vector<float>& Qm,
                     std::vector<float>& Km, std::vector<float>& Vm) const;

    // ... and, given the attention's output A, the rest: output projection and the SwiGLU MLP,
    // each added to the residual X.
    void finishLayerRows(int layer, int T, const std::vector<float>& A, std::vector<float>& X, std::vector<float>& Xn,
                         std::vector<float>& O, std::vector<float>& Gm, std::vector<float>& Um) const;

    // Causal attention of a page's T tokens (pre-rotary queries Qm, [T][heads·D]) over the sinks
    // and the page itself at `layer`, into A: the same result as attend() token by token, with the
    // page part as matrix products over row chunks (scores Q·Kᵀ, then weights·V). The KV groups in
    // two halves, one per thread of `pairs` (each writes its own heads of A); the rotary table is
    // read before the fork (trigAt() may fill it), into copies for the page's positions and the
    // sinks' query positions.
    void pageAttention(int layer, const std::vector<Block*>& page, int64_t pos0, const std::vector<float>& Qm,
                       const std::vector<std::vector<Span>>& sinkSpans, int T, std::vector<float>& A);

    // A page's token t at `layer`: its keys (pre-rotary, all KV heads) and values into the page's
    // blocks `into`, and its share of the page's mean key into `summary` (when given).
    void storePageToken(const std::vector<Block*>& into, int layer, int t, int T, const float* keys, const float* values,
                        std::vector<float>* summary, bool deviceHasIt);

    // Prefill of a page's visual tokens into the pool at the current position (pageBlocks[page]).
    Status prefillPage(int page, const float* visual, int T, std::vector<float>& summary);

    // The keys and values of a page's T visual tokens at positions pos0 .. pos0 + T - 1, all
    // layers, in matrix products, into the blocks `into` (ceil(T / 16) of them, empty, pos0 set):
    // every token attends to the sinks and causally to the page. They depend on nothing else, so a
    // page computed again from the same inputs gets the same keys and values. `summary`, when
    // given, receives the page's mean pre-rotary key (the page gate's summary).
    Status computePage(const std::vector<Block*>& into, const float* visual, int T, int64_t pos0,
                       std::vector<float>* summary);

    // --- Bookkeeping of one generated step, shared by step() and stepDraft() ---

    void enterNextPage();

    // Where the `written`-th line end written on `page` puts the text (just past that visual line
    // end), or -1 when the page has no such line end.
    int64_t lineEndPosition(int page, int written) const;

    // Line-aligned positions: a line end sits where the page's next line starts (docs/DECODING.md).
    void placeLineEnd(int token);

    // SR-SWA: pages behind the window give their blocks back (their inputs are in the spill file
    // and their summaries stay for the gate). With measureRecall, pages outside the window go to
    // host memory instead, so that the probe can compare with full attention.
    void offloadLeftPages();

    // The block the next generated token goes to (a new one when the last is full, sealed by a
    // page, or not followed by the token's position).
    Result<int> generatedBlock();

    // Pre-rotary query of each KV group (mean over its heads), for the page gate's running mean.
    void addGateQuery(std::vector<float>& gq, int layer, const float* query) const;

    void pushRecentQuery(std::vector<float> gq);

    // Generated blocks wholly older than the recent window are dropped (R-SWA / SR-SWA).
    void evictOldGenerated();

    // The first of the largest (a vectorised maximum, then its first place: std::max_element's
    // running comparison was a twentieth of a draft pass).
    static int mostAttended(const std::vector<float>& mass);

    // --- Draft verification ---

    // A draft's tokens computed together: each token's keys and values (in a block of its own,
    // outside the pool), gate queries, logits, most-attended visual token and attended positions.
    struct Draft {
        std::vector<Block> own;
        std::vector<std::vector<float>> gateQueries, logits;
        std::vector<int> attended;
        std::vector<std::vector<PositionRuns>> positions;  // [token][layer]
        std::vector<int64_t> pos;
        std::vector<std::vector<Selection>> selections;  // [token][layer], for tokens that refresh the gate
    };

    // A draft between beginDraft() and endDraft(): what was planned, and what computeDrafts() made.
    //   Plain   the inputs fed by step() in endDraft (a device's steps, a benchmark's probe);
    //   Single  one token: its step begun in beginDraft, forwarded in computeDrafts (with other
    //           sessions' single steps, as stepBatch does), ended in endDraft: step() exactly;
    //   Tokens  posOf.size() tokens computed together (Draft), fed one by one in endDraft.
    struct DraftPass {
        // Plain: step() each in endDraft; Single: one token on the CPU; Tokens: a draft on the CPU;
        // Shared: one token on a shared device, stepped with the other sessions there.
        enum class Kind { None, Plain, Single, Tokens, Shared } kind = Kind::None;
        bool computed = false;
        std::vector<int> inputs;
        std::vector<int64_t> posOf;
        std::vector<bool> refreshAt;  // the gate is refreshed at token i (its query chooses from there)
        PendingStep pending;          // Single, Shared
        Draft draft;                  // Tokens
        std::vector<std::vector<Span>> spans;  // per token, the layer being computed
        std::vector<std::vector<float>> mass;  // per token, attention on the current page's tokens
        bool tracking = false;
    };
    DraftPass draftPass;

    // Tokens: the draft's own blocks, gate queries and attention tracking made ready, and the window
    // cache brought up to date, before the layers run.
    void startDraft(DraftPass& dp);

    // Layer l of a Tokens draft, given its rows' pre-rotary projections (Qm, Km, Vm): each token's
    // keys and values, gate query and attended spans (generatedSet at its generated count, query
    // and position, plus the draft's tokens up to itself), and its attention output into A.
    void draftLayer(int l, DraftPass& dp, const float* Qm, const float* Km, const float* Vm, float* A);

    // The Tokens drafts of n sessions on one model (their rows together at most kPackedRows), as
    // each would be computed alone: every weight matrix applied to all the rows at once (a packed
    // product gives a row the same result whatever rows go with it), each session attending over
    // its own blocks.
    static void computeDraftRows(Impl* const* s, int n);

    // The KV groups [first, second) of half 0 or 1 of a pass split over `pairs` (attention of a
    // draft and of a page's prefill): the first half takes the odd group where there is one.
    std::pair<int, int> groupsOf(int half) const;

    // Attention of a draft's k tokens at `layer` (queries Qm, pre-rotary), into A, for all tokens
    // at once: keys and values of the union of their spans gathered once per KV group (the window's
    // from the window cache), scores and weighted values as matrix products over the queries each
    // rotated to its token's position, each token's softmax masked to its own spans. A span the
    // position frame moves (its query rotated to pos + delta instead of pos) enters the union with
    // its keys rotated by -delta: rotation is relative, so q rotated to pos + delta against k is q
    // rotated to pos against k rotated by -delta (the same up to float rounding as attend()).
    void attendDraft(int layer, const std::vector<std::vector<Span>>& spans, const std::vector<int64_t>& pos,
                     const float* Qm, int k, float* A, std::vector<std::vector<float>>* mass);

    // SR-SWA drafts: the keys and values of the window's pages, contiguous per layer and KV head,
    // so a draft's attention reads them in place instead of gathering them from their blocks for
    // every draft. Rebuilt when the window moves; bounded like the pool (the window's pages).
    struct WindowCache {
        uint64_t layout = ~uint64_t(0);  // pageLayout when built (block ids are reused)
        std::vector<int> ids;       // the visual blocks held, in order
        std::vector<int64_t> rows;  // by block id: its first token's row, -1 for a block not held
        int64_t rowOf(int id) const { return id >= 0 && size_t(id) < rows.size() ? rows[size_t(id)] : -1; }
        size_t tokens = 0;
        // Per layer and KV head, packed for kernels::gemmPacked: the keys as `tokens` rows of
        // headDim (scores = Q Kᵀ), the values transposed, headDim rows of `tokens` (O = S V).
        std::vector<float> k, v;
        size_t kStride = 0, vStride = 0;
        const float* keys(int layer, int g, const ModelConfig& c) const {
            return tokens ? &k[(size_t(layer) * c.numKvHeads + g) * kStride] : nullptr;
        }
        const float* values(int layer, int g, const ModelConfig& c) const {
            return tokens ? &v[(size_t(layer) * c.numKvHeads + g) * vStride] : nullptr;
        }
    };
    WindowCache windowCache;

    void refreshWindowCache();

    // Attention weights w[0..count) of the tracked page's tokens from `position` on, added to
    // `mass` (positions outside the page left out).
    void addMassRun(std::vector<float>& mass, int64_t position, const float* w, int count) const;

    // Feeds draft token i for good: the bookkeeping step() does, with the keys, values and gate
    // query the draft computed for it.
    Status commitDraftToken(const Draft& dr, int i, int token, bool gateRefreshed);

    void computeLogits();

    // Y = X Wᵀ with W's rows in two halves (on panel boundaries), one per thread of `pairs`: each
    // output is the same sum either way.
    void applySplit(const PackedMatrix& w, const float* X, int T, float* Y) const;

    void openDevice();

    void markDirty(const Block& b);

    // The device's slots cover the pool, and every pool slot written on the host since is copied.
    Status syncDevice();

    // A layer's spans as the device's: a block in the pool by its slot, a block in host memory (a
    // gated page's) by the staging slot that holds its layer slice, copied there if not yet.
    Status toDevice(int layer, const std::vector<Span>& spans, std::vector<DeviceSpan>& out);

    // computePage() on the device: the same spans (the sinks framed, the page causally), the keys
    // and values into the blocks' device slots and back into the host's blocks with their Quest
    // bounds and the page's summary.
    Status devicePrefill(const std::vector<Block*>& into, const float* visual, int T, int64_t pos0, std::vector<float>* summary);

    // The device failed `what`: the CPU takes over (the host holds every key and value it had).
    void dropDevice(const std::string& what, const Status& why);

    // step()'s forward pass on the device, in three parts (a batch on a shared device runs the
    // first and the last for each session around one device call): the token's block and the
    // device's copies made ready, and io filled; the spans of layer l as generatedSet() gives them
    // (query: the layer's pre-rotary query, or null when the spans are asked for up front); the
    // gate query, and the token's key and value back into the host's block with its Quest bounds.
    Status deviceBegin(const PendingStep& ps, DeviceStepIO& io, bool& perLayer);
    Status deviceSpans(const PendingStep& ps, int l, const float* query, std::vector<DeviceSpan>& out);
    void deviceEnd(PendingStep& ps);
    Status deviceForward(PendingStep& ps);
    // step()'s forward pass alone: on the device where the session has one (true: the logits are
    // done), else, or where the device fails and the CPU may take over, on the CPU (false).
    Result<bool> forwardStep(PendingStep& ps);
    // The forward passes of steps begun in sessions on one shared device, as one device batch (its
    // stepBatch); where the device fails, each session drops it and the CPU computes them
    // (forwardBatches). The logits are done either way: endStep(ps, true) follows.
    static Status forwardOnShared(StepBackend& backend, const std::vector<Impl*>& impls, std::vector<PendingStep>& pending);
    int64_t batchedDeviceSteps = 0;  // steps computed in a batch on a shared device (SessionStats)

    void embed(int token);
};

}  // namespace quire::decoder
