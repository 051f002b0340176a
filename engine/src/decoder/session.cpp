#include "quire/decoder/session.h"

#include "decoder/kernels.h"
#include "decoder/pair_runner.h"
#include "decoder/step_backend.h"

#include <cblas.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

namespace quire::decoder {

const char* attentionModeName(AttentionMode m) {
    switch (m) {
        case AttentionMode::Full: return "full";
        case AttentionMode::RSwa: return "rswa";
        case AttentionMode::SrSwa: return "srswa";
    }
    return "?";
}

Result<AttentionMode> parseAttentionMode(const std::string& s) {
    if (s == "full") return AttentionMode::Full;
    if (s == "rswa") return AttentionMode::RSwa;
    if (s == "srswa") return AttentionMode::SrSwa;
    return Status(ErrorCode::InvalidArgument, "unknown attention mode '" + s + "' (full, rswa, srswa)");
}

const char* stepDeviceName(StepDevice d) {
    switch (d) {
        case StepDevice::Cpu: return "cpu";
        case StepDevice::Cuda: return "cuda";
        case StepDevice::Mirror: return "mirror";
    }
    return "?";
}

Result<StepDevice> parseStepDevice(const std::string& s) {
    if (s == "cpu") return StepDevice::Cpu;
    if (s == "cuda") return StepDevice::Cuda;
    if (s == "mirror") return StepDevice::Mirror;
    return Status(ErrorCode::InvalidArgument, "unknown device '" + s + "' (cpu, cuda)");
}

namespace {

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

// The visual inputs of the pages a session was fed, in an unlinked temporary file under $TMPDIR
// (else /tmp): what a page that left the SR-SWA window is computed again from when the gate picks
// it, so that host memory does not grow with the volume. The file goes when the session does.
class SpillFile {
public:
    SpillFile() = default;
    SpillFile(const SpillFile&) = delete;
    SpillFile& operator=(const SpillFile&) = delete;
    ~SpillFile() {
        if (m_fd >= 0) ::close(m_fd);
    }

    Result<int64_t> append(const float* data, size_t count) {
        if (m_fd < 0)
            if (Status s = open(); !s) return s;
        const int64_t at = m_size;
        const char* p = reinterpret_cast<const char*>(data);
        size_t left = count * sizeof(float);
        while (left > 0) {
            const ssize_t n = ::pwrite(m_fd, p, left, off_t(m_size));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return Status(ErrorCode::Io, "decoder: cannot write its page spill file in " + m_dir + ": " + std::strerror(errno));
            p += n, left -= size_t(n), m_size += n;
        }
        return at;
    }

    Status read(int64_t at, float* out, size_t count) const {
        char* p = reinterpret_cast<char*>(out);
        size_t left = count * sizeof(float);
        while (left > 0) {
            const ssize_t n = m_fd < 0 ? -1 : ::pread(m_fd, p, left, off_t(at));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return Status(ErrorCode::Io, "decoder: cannot read back its page spill file in " + m_dir);
            p += n, left -= size_t(n), at += n;
        }
        return Status::ok();
    }

    int64_t size() const { return m_size; }

private:
    Status open() {
        const char* tmp = std::getenv("TMPDIR");
        m_dir = tmp && *tmp ? tmp : "/tmp";
#ifdef O_TMPFILE
        m_fd = ::open(m_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
        if (m_fd < 0) {  // a file system without O_TMPFILE: a named file, unlinked at once
            std::string name = m_dir + "/quire-decoder-XXXXXX";
            m_fd = ::mkstemp(name.data());
            if (m_fd >= 0) ::unlink(name.c_str());
        }
        if (m_fd < 0) return Status(ErrorCode::Io, "decoder: cannot make its page spill file in " + m_dir + ": " + std::strerror(errno));
        return Status::ok();
    }

    int m_fd = -1;
    int64_t m_size = 0;
    std::string m_dir;
};

void rmsnorm(const float* x, const float* w, float* out, int n, float eps) {
    double ss = 0;
    for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
    const float r = float(1.0 / std::sqrt(ss / n + eps));
    for (int i = 0; i < n; ++i) out[i] = x[i] * r * w[i];
}

// A weight matrix W [rows][cols] (row-major) packed for kernels::gemmPacked, with its shape: the
// products of a step's one row and a draft's few (Y = X Wᵀ) go through it.
struct PackedMatrix {
    int rows = 0, cols = 0;
    std::vector<float> data;
    PackedMatrix() = default;
    PackedMatrix(const std::vector<float>& w, int r, int c) : PackedMatrix(w.data(), r, c) {}
    PackedMatrix(const float* w, int r, int c) : rows(r), cols(c), data(kernels::packedSize(r, c)) {
        kernels::packRows(w, r, c, size_t(c), data.data());
    }
    void apply(const float* X, int T, float* Y) const {
        kernels::gemmPacked(data.data(), rows, cols, X, size_t(cols), T, Y, size_t(rows));
    }
};
struct PackedLayer {
    PackedMatrix wq, wk, wv, wo, wGate, wUp, wDown;
};

// A model's weights packed for the steps. Sessions on one model share them: a batch of sessions
// (DecodeSession::stepBatch) reads each weight once a step, and sixteen sessions on a large model
// do not hold sixteen copies. Holds the model, so a cached entry's address cannot be reused.
struct PackedWeights {
    std::shared_ptr<const ModelWeights> model;
    std::vector<PackedLayer> layers;
    PackedMatrix head;
};

std::shared_ptr<const PackedWeights> packedWeightsOf(const std::shared_ptr<const ModelWeights>& model) {
    static std::mutex mutex;
    static std::map<const ModelWeights*, std::weak_ptr<const PackedWeights>> cache;
    std::lock_guard lock(mutex);
    std::erase_if(cache, [](const auto& e) { return e.second.expired(); });
    if (auto it = cache.find(model.get()); it != cache.end())
        if (auto packed = it->second.lock()) return packed;
    const ModelConfig& c = model->config;
    const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, F = c.intermediateSize;
    auto packed = std::make_shared<PackedWeights>();
    packed->model = model;
    for (const LayerWeights& L : model->layers)
        packed->layers.push_back(
            {{L.wq, Q, H}, {L.wk, KV, H}, {L.wv, KV, H}, {L.wo, H, Q}, {L.wGate, F, H}, {L.wUp, F, H}, {L.wDown, H, F}});
    packed->head = PackedMatrix(model->head(), c.vocabSize, H);
    cache[model.get()] = packed;
    return packed;
}

}  // namespace

// A device of kind `d` (Mirror or Cuda) for `model`'s steps: the mirror's faultAtStep (tests only).
Result<std::unique_ptr<StepBackend>> makeBackend(const std::shared_ptr<const ModelWeights>& model, StepDevice d,
                                                 bool bf16Weights, int64_t faultAtStep) {
    if (d == StepDevice::Mirror) return makeMirrorBackend(model, faultAtStep);
    return makeCudaBackend(model, bf16Weights);
}

// The backend of a SharedDevice: one call at a time, whichever session's thread makes it. (A
// step's spansFor calls back into the device, on the same thread, to stage gated blocks: the
// lock is recursive.) Each call is whole — it leaves nothing half done for the next — so
// sessions on several threads interleave their calls safely; their slots are their own.
class LockedBackend final : public StepBackend {
public:
    explicit LockedBackend(std::unique_ptr<StepBackend> b) : inner(std::move(b)) {}
    const char* name() const override { return inner->name(); }
    Status reserveSlots(int n) override {
        std::lock_guard lock(mutex);
        return inner->reserveSlots(n);
    }
    int slots() const override {
        std::lock_guard lock(mutex);
        return inner->slots();
    }
    Status writeSlot(int slot, const float* block) override {
        std::lock_guard lock(mutex);
        return inner->writeSlot(slot, block);
    }
    Status writeSlotLayer(int slot, int layer, const float* block) override {
        std::lock_guard lock(mutex);
        return inner->writeSlotLayer(slot, layer, block);
    }
    Status step(const DeviceStepIO& io, const SpansFor& spansFor, bool perLayer) override {
        std::lock_guard lock(mutex);
        return inner->step(io, spansFor, perLayer);
    }
    Status stepBatch(const std::vector<DeviceStepIO>& ios, const BatchSpansFor& spansFor, bool perLayer) override {
        std::lock_guard lock(mutex);
        return inner->stepBatch(ios, spansFor, perLayer);
    }
    Status prefill(const DevicePrefillIO& io, int maxTokens) override {
        std::lock_guard lock(mutex);
        return inner->prefill(io, maxTokens);
    }
    size_t deviceBytes() const override {
        std::lock_guard lock(mutex);
        return inner->deviceBytes();
    }

private:
    std::unique_ptr<StepBackend> inner;
    mutable std::recursive_mutex mutex;
};

struct SharedDevice::Impl {
    std::shared_ptr<const ModelWeights> model;
    StepDevice kind = StepDevice::Cpu;
    std::shared_ptr<StepBackend> backend;
    // Ranges of slots: those given back, to be taken again (sessions of one batch ask for the
    // same size), and the end of those handed out.
    std::mutex mutex;
    std::vector<std::pair<int, int>> freeRanges;  // (first slot, count)
    int end = 0;
    int take(int n) {
        std::lock_guard lock(mutex);
        for (auto it = freeRanges.begin(); it != freeRanges.end(); ++it)
            if (it->second >= n) {
                const int first = it->first;
                if (it->second == n) freeRanges.erase(it);
                else it->first += n, it->second -= n;
                return first;
            }
        end += n;
        return end - n;
    }
    void give(int first, int n) {
        std::lock_guard lock(mutex);
        freeRanges.push_back({first, n});
    }
};

SharedDevice::SharedDevice(std::unique_ptr<Impl> d) : d(std::move(d)) {}
SharedDevice::~SharedDevice() = default;
StepDevice SharedDevice::device() const { return d->kind; }

Result<std::shared_ptr<SharedDevice>> SharedDevice::open(std::shared_ptr<const ModelWeights> model, StepDevice device,
                                                          bool bf16Weights, int64_t faultAtStep) {
    auto d = std::make_unique<Impl>();
    d->model = model, d->kind = device;
    if (device == StepDevice::Cpu)
        return Status(ErrorCode::InvalidArgument, "a shared device is a GPU's (the CPU's sessions share their weights anyway)");
    auto made = makeBackend(model, device, bf16Weights, faultAtStep);
    if (!made) return made.status();
    d->backend = std::make_shared<LockedBackend>(std::move(*made));
    return std::shared_ptr<SharedDevice>(new SharedDevice(std::move(d)));
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
    static int runsTotal(const PositionRuns& runs) {
        int n = 0;
        for (const auto& r : runs) n += r.second;
        return n;
    }
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
    std::string deviceNotice;  // why the steps run on the CPU instead (deviceFallback)
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

    Impl(std::shared_ptr<const ModelWeights> m, AttentionParams params)
        : model(std::move(m)), c(model->config), p(params), packedWeights(packedWeightsOf(model)),
          packed(packedWeights->layers), packedHead(packedWeights->head), pairs(std::make_unique<PairRunner>(params.threads)) {
        halfFloats = size_t(c.numLayers) * c.numKvHeads * kBlockTokens * c.headDim;
        blockFloats = 2 * halfFloats;
        invFreq.resize(size_t(c.headDim / 2));
        for (int i = 0; i < c.headDim / 2; ++i) invFreq[size_t(i)] = std::pow(c.ropeTheta, -2.0 * i / c.headDim);
        fixedPool = p.mode == AttentionMode::SrSwa;
        spilling = fixedPool && !p.measureRecall;
        if (fixedPool) {
            const int perPage = (p.maxPageTokens + kBlockTokens - 1) / kBlockTokens;
            const int window = 1 + p.windowBefore + p.windowAfter;
            // Sinks, the window's pages plus one being fed, the ring (+2 partially filled), and the
            // staging area the gated blocks are copied into on a GPU.
            // Line-aligned positions start a generated block at each line: up to one more
            // (partly filled) block per recent token, still a bound fixed at the start.
            capacitySlots = (p.maxSinkTokens + kBlockTokens - 1) / kBlockTokens + (window + 1) * perPage +
                            (p.recentTokens + kBlockTokens - 1) / kBlockTokens + 2 + p.gatedPages * p.blocksPerGatedPage +
                            (c.lineAlignedPositions() ? p.recentTokens : 0);
            pool.assign(size_t(capacitySlots) * blockFloats, 0.f);
            for (int s = capacitySlots - 1; s >= 0; --s) freeSlots.push_back(s);
        }
        const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim;
        x.resize(size_t(H)), h.resize(size_t(H)), q.resize(size_t(Q)), k.resize(size_t(KV)), v.resize(size_t(KV));
        att.resize(size_t(Q)), tmp.resize(size_t(std::max(H, Q))), gateBuf.resize(size_t(c.intermediateSize));
        upBuf.resize(size_t(c.intermediateSize)), logits.resize(size_t(c.vocabSize));
        recentQueries.assign(size_t(std::max(1, p.gateQueryTokens)), {});
        selection.resize(size_t(c.numLayers));
        setTrigEntries(size_t(1) << 14);
        lastPositions.resize(size_t(c.numLayers));
        if (p.device != StepDevice::Cpu) openDevice();
    }

    ~Impl();

    float* data(Block& b) { return b.slot >= 0 ? &pool[size_t(b.slot) * blockFloats] : b.host.data(); }
    const float* data(const Block& b) const { return b.slot >= 0 ? &pool[size_t(b.slot) * blockFloats] : b.host.data(); }
    size_t kIndex(int layer, int g, int t) const {
        return ((size_t(layer) * c.numKvHeads + g) * kBlockTokens + t) * c.headDim;
    }

    Block makeBlock(BlockKind kind, int page, int64_t pos0) const {
        Block b;
        b.kind = kind, b.page = page, b.pos0 = pos0;
        b.kMin.assign(size_t(c.numLayers) * c.numKvHeads * c.headDim, INFINITY);
        b.kMax.assign(b.kMin.size(), -INFINITY);
        return b;
    }

    Result<int> newBlock(BlockKind kind, int page) {
        int slot;
        if (freeSlots.empty()) {
            if (fixedPool)
                return Status(ErrorCode::Internal, "KV pool exhausted: the fixed budget is too small for these settings");
            slot = capacitySlots++;  // full attention and R-SWA grow with the volume
            pool.resize(size_t(capacitySlots) * blockFloats);
        } else {
            slot = freeSlots.back();
            freeSlots.pop_back();
        }
        Block b = makeBlock(kind, page, position);
        b.slot = slot;
        if (!freeIds.empty()) {
            const int id = freeIds.back();
            freeIds.pop_back();
            blocks[size_t(id)] = std::move(b);
            return id;
        }
        blocks.push_back(std::move(b));
        return int(blocks.size()) - 1;
    }

    // A block no longer referenced: its slot and memory are given back and its id reused.
    void freeBlock(int id) {
        Block& b = blocks[size_t(id)];
        releaseSlot(b);
        b = Block();
        freeIds.push_back(id);
    }

    void releaseSlot(Block& b) {
        if (b.slot < 0) return;
        freeSlots.push_back(b.slot);
        b.slot = -1;
    }

    void offload(Block& b) {  // keys and values move to host memory; bounds stay
        if (b.slot < 0) return;
        b.host.assign(data(b), data(b) + blockFloats);
        releaseSlot(b);
    }

    // Writes one token's key and value for (layer, KV head g) at slot t of block b, the key rotated
    // at the token's position unless it already is, and widens the block's Quest bounds. The pool
    // slot is marked for copying to the device, unless the device computed the values itself.
    void storeKv(Block& b, int layer, int g, int t, const float* key, const float* value, bool rotated,
                 bool deviceHasIt = false) {
        if (!deviceHasIt) markDirty(b);
        float* base = data(b);
        float* kk = base + kIndex(layer, g, t);
        std::copy_n(key, c.headDim, kk);
        if (!rotated) rotate(kk, b.pos0 + t);
        std::copy_n(value, c.headDim, base + halfFloats + kIndex(layer, g, t));
        const size_t o = (size_t(layer) * c.numKvHeads + g) * c.headDim;
        for (int i = 0; i < c.headDim; ++i) {
            b.kMin[o + i] = std::min(b.kMin[o + i], kk[i]);
            b.kMax[o + i] = std::max(b.kMax[o + i], kk[i]);
        }
    }

    // cos and sin of each rotary frequency at a position (cos first, then sin), kept once computed:
    // the token selector rotates the query for every block of every gated page at every step, at
    // few distinct positions (the step's own, and a capped frame for each far block), and computing
    // them afresh made each later page of a volume several times slower to decode than its first
    // (docs/BENCHMARKS.md). The values are the ones computed before, so the picks are the same.
    // A table of slots (setTrigEntries), direct-mapped by position (a hash map's node lookups were
    // a third of the token selector's time). The pointer is good until the next call (which may
    // take its slot).
    const float* trigAt(int64_t pos) const {
        const int D = c.headDim, half = D / 2;
        const size_t slot = size_t(pos < 0 ? -pos : pos) % trigTags.size();
        float* t = &trigTable[slot * size_t(D)];
        if (trigTags[slot] != pos) {
            for (int i = 0; i < half; ++i) {
                const double a = double(pos) * invFreq[size_t(i)];
                t[i] = float(std::cos(a));
                t[half + i] = float(std::sin(a));
            }
            trigTags[slot] = pos;
        }
        return t;
    }
    void setTrigEntries(size_t entries) {
        trigTags.assign(std::max<size_t>(1, entries), std::numeric_limits<int64_t>::min());
        trigTable.assign(trigTags.size() * size_t(c.headDim), 0.f);
    }
    mutable std::vector<int64_t> trigTags;  // the position each slot holds
    mutable std::vector<float> trigTable;

    void rotate(float* vec, int64_t pos) const { rotateWith(vec, trigAt(pos)); }
    // rotate() with the cos and sin of trigAt().
    void rotateWith(float* vec, const float* t) const {
        const int half = c.headDim / 2;
        for (int i = 0; i < half; ++i) {
            const float cs = t[i], sn = t[half + i];
            const float x0 = vec[i], x1 = vec[i + half];
            vec[i] = x0 * cs - x1 * sn;
            vec[i + half] = x0 * sn + x1 * cs;
        }
    }

    // A contiguous run of attended tokens in one block.
    struct Span {
        const Block* block;
        int first, last;  // token range [first, last)
        int64_t queryPos; // position the query is rotated to for this span (the position frame)
    };

    static PositionRuns positionRuns(const std::vector<Span>& spans) {
        PositionRuns runs;
        runs.reserve(spans.size());
        for (const auto& s : spans) runs.push_back({s.block->pos0 + s.first, s.last - s.first});
        return runs;
    }

    // Frames positions: when the attended set spans more positions than the model was trained on,
    // it is laid out contiguously (gaps removed) around the query; otherwise positions are
    // absolute. Rotation is relative, so this only changes the position the query is rotated to.
    // Spans whose positions overlap (a page and its text, with page-aligned positions) form one
    // interval, so the distances inside it are kept.
    void frame(std::vector<Span>& spans, int64_t queryPos) const {
        std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
            return a.block->pos0 + a.first < b.block->pos0 + b.first;
        });
        if (spans.empty()) return;
        const int64_t lo = std::min(queryPos, spans.front().block->pos0 + spans.front().first);
        int64_t hi = queryPos + 1;
        for (const auto& s : spans) hi = std::max(hi, s.block->pos0 + s.last);
        if (hi - 1 - lo < c.maxPositions) {
            for (auto& s : spans) s.queryPos = queryPos;
            return;
        }
        // Disjoint intervals of attended positions (the query's own included), laid end to end.
        struct Interval {
            int64_t begin, end, virt;
        };
        std::vector<Interval> iv;
        auto add = [&](int64_t a, int64_t b) {
            if (!iv.empty() && a <= iv.back().end) iv.back().end = std::max(iv.back().end, b);
            else iv.push_back({a, b, 0});
        };
        bool queryAdded = false;
        for (const auto& s : spans) {
            const int64_t a = s.block->pos0 + s.first;
            if (!queryAdded && queryPos < a) add(queryPos, queryPos + 1), queryAdded = true;
            add(a, s.block->pos0 + s.last);
        }
        if (!queryAdded) add(queryPos, queryPos + 1);
        int64_t virt = 0;
        for (auto& i : iv) i.virt = virt, virt += i.end - i.begin;
        auto virtualOf = [&](int64_t pos) {
            auto it = std::upper_bound(iv.begin(), iv.end(), pos, [](int64_t p, const Interval& i) { return p < i.begin; });
            --it;  // the interval holding pos
            return it->virt + (pos - it->begin);
        };
        const int64_t queryVirt = virtualOf(queryPos);
        for (auto& s : spans) {
            const int64_t abs = s.block->pos0 + s.first;
            s.queryPos = abs + (queryVirt - virtualOf(abs));
        }
    }

    // Attention of the current query (q, all heads) over `spans` at `layer`, into att. The heads
    // of a KV group are done together, so each key and value is read once per group; dot
    // products (kernels::dot) keep eight partial sums, which vectorise (a single running sum is
    // a serial chain it may not reorder).
    void attend(int layer, const std::vector<Span>& spans) {
        const int D = c.headDim, G = c.groupSize();
        const float scale = float(1.0 / std::sqrt(double(D)));
        int total = 0;
        for (const auto& s : spans) total += s.last - s.first;
        scores.resize(size_t(total) * G);
        qrot.resize(size_t(G) * D);
        for (int g = 0; g < c.numKvHeads; ++g) {
            int idx = 0;
            int64_t rotatedFor = INT64_MIN;
            for (const auto& s : spans) {
                if (s.queryPos != rotatedFor) {
                    for (int j = 0; j < G; ++j) {
                        const float* qh = &q[size_t(g * G + j) * D];
                        std::copy(qh, qh + D, &qrot[size_t(j) * D]);
                        rotate(&qrot[size_t(j) * D], s.queryPos);
                    }
                    rotatedFor = s.queryPos;
                }
                const float* base = data(*s.block);
                for (int t = s.first; t < s.last; ++t, ++idx) {
                    const float* kk = base + kIndex(layer, g, t);
                    for (int j = 0; j < G; ++j)
                        scores[size_t(j) * total + idx] = kernels::dot(&qrot[size_t(j) * D], kk, D) * scale;
                }
            }
            for (int j = 0; j < G; ++j) {
                float* sc = &scores[size_t(j) * total];
                const float mx = kernels::maxOf(sc, size_t(total));
                kernels::scale(sc, size_t(total), 1.f / kernels::expShifted(sc, size_t(total), mx));
                std::fill(&att[size_t(g * G + j) * D], &att[size_t(g * G + j) * D] + D, 0.f);
            }
            if (trackingStep) {
                int at = 0;
                for (const auto& s : spans) {
                    const Block& b = *s.block;
                    if (b.kind == BlockKind::Visual && b.page == currentPage) {
                        const int64_t first = b.pos0 - trackedPagePos0;
                        for (int t = s.first; t < s.last; ++t) {
                            const size_t v = size_t(first + t);
                            if (v >= attendedMass.size()) continue;
                            for (int j = 0; j < G; ++j) attendedMass[v] += scores[size_t(j) * total + at + (t - s.first)];
                        }
                    }
                    at += s.last - s.first;
                }
            }
            idx = 0;
            for (const auto& s : spans) {
                const float* base = data(*s.block) + halfFloats;
                for (int t = s.first; t < s.last; ++t, ++idx) {
                    const float* vv = base + kIndex(layer, g, t);
                    for (int j = 0; j < G; ++j) {
                        const float w = scores[size_t(j) * total + idx];
                        float* out = &att[size_t(g * G + j) * D];
                        for (int i = 0; i < D; ++i) out[i] += w * vv[i];
                    }
                }
            }
        }
    }

    // What page token t attends to while its page (blocks `ids`) is prefilled: the sinks and,
    // causally, the page up to itself.
    std::vector<Span> causalPageSpans(const std::vector<Block*>& page, int t) const {
        std::vector<Span> spans = wholeBlocks(sinkBlocks);
        for (int bi = 0; bi <= t / kBlockTokens; ++bi)
            spans.push_back({page[size_t(bi)], 0, bi == t / kBlockTokens ? t % kBlockTokens + 1 : kBlockTokens, 0});
        return spans;
    }

    std::vector<Span> wholeBlocks(const std::vector<int>& ids) const {
        std::vector<Span> out;
        append(out, ids);
        return out;
    }

    // The spans a generated token attends to at `layer` (the current token is already written):
    // `generatedCount` tokens generated with it, `query` its pre-rotary query (all heads) and
    // `pos` its position.
    // `select`: the token selector's choice of gated blocks for this layer (refreshed when `refresh`).
    std::vector<Span> generatedSet(int layer, int64_t generatedCount, const float* query, int64_t pos, Selection& select,
                                   bool refresh) {
        std::vector<Span> spans = wholeBlocks(sinkBlocks);
        const int64_t oldestRecent = generatedCount - p.recentTokens;  // index of the first token kept (self is generatedCount-1)
        for (int id : genBlocks) {
            const Block& b = blocks[size_t(id)];
            int first = 0;
            if (p.mode != AttentionMode::Full) first = int(std::clamp<int64_t>(oldestRecent - b.genIndex0, 0, b.count));
            if (first < b.count) spans.push_back({&b, first, b.count, 0});
        }
        if (p.mode != AttentionMode::SrSwa) {
            // Full and R-SWA see every page (and Full every generated block: genBlocks holds them all).
            for (const auto& [page, ids] : pageBlocks) append(spans, ids);
        } else {
            for (const auto& [page, ids] : pageBlocks)
                if (inWindow(page)) append(spans, ids);
            if (refresh || select.size() != gated.size()) select = selectGatedBlocks(layer, query, pos);
            for (const auto& [page, ids] : select) {
                const std::vector<const Block*> pageSet = gatedPageBlocks(page);
                for (int id : ids) spans.push_back({pageSet[size_t(id)], 0, pageSet[size_t(id)]->count, 0});
            }
        }
        return spans;
    }

    void append(std::vector<Span>& spans, const std::vector<int>& ids) const {
        for (int id : ids) spans.push_back({&blocks[size_t(id)], 0, blocks[size_t(id)].count, 0});
    }

    bool inWindow(int page) const { return page >= currentPage - p.windowBefore && page <= currentPage + p.windowAfter; }

    // Quest: per block, Σ max(q·min, q·max) bounds q·k from above; the best k_b blocks of each gated
    // page (page, block indices into gatedPageBlocks(page)), for the query of a step at `pos`.
    Selection selectGatedBlocks(int layer, const float* query, int64_t pos) const {
        Selection out;
        const int D = c.headDim;
        // The query rotated to the step's own position, once per head: every block within half the
        // trained range is scored in that frame; a block further back in its own (kernels::questBound
        // rotates the query as it scores, with the frame's cos and sin looked up once per block).
        std::vector<float> atPos(query, query + size_t(c.numHeads) * D);
        for (int hh = 0; hh < c.numHeads; ++hh) rotate(atPos.data() + size_t(hh) * D, pos);
        const size_t o = size_t(layer) * c.numKvHeads * D;
        for (int page : gated) {
            const std::vector<const Block*> pageSet = gatedPageBlocks(page);
            std::vector<std::pair<float, int>> scored;
            scored.reserve(pageSet.size());
            for (int id = 0; id < int(pageSet.size()); ++id) {
                const Block& b = *pageSet[size_t(id)];
                // Nominal frame: the block as if it stood right before the window.
                const int64_t rel = std::min<int64_t>(pos - b.pos0, c.maxPositions / 2);
                const int64_t qpos = b.pos0 + rel;
                const float score = qpos == pos ? kernels::questBound(atPos.data(), nullptr, &b.kMin[o], &b.kMax[o], c.numHeads,
                                                                      c.groupSize(), D)
                                                : kernels::questBound(query, trigAt(qpos), &b.kMin[o], &b.kMax[o], c.numHeads,
                                                                      c.groupSize(), D);
                scored.push_back({score, id});
            }
            const size_t keep = std::min(scored.size(), size_t(p.blocksPerGatedPage));
            std::partial_sort(scored.begin(), scored.begin() + long(keep), scored.end(),
                              [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
            std::vector<int> ids;
            for (size_t i = 0; i < keep; ++i) ids.push_back(scored[i].second);
            out.push_back({page, std::move(ids)});
        }
        return out;
    }

    // The blocks of a gated page: computed again into the cache, or still in the pool / host memory.
    std::vector<const Block*> gatedPageBlocks(int page) const {
        std::vector<const Block*> out;
        if (auto it = gatedCache.find(page); it != gatedCache.end()) {
            for (const Block& b : it->second.blocks) out.push_back(&b);
        } else if (auto ids = pageBlocks.find(page); ids != pageBlocks.end()) {
            for (int id : ids->second) out.push_back(&blocks[size_t(id)]);
        }
        return out;
    }

    // A page's visual inputs to the spill file, what it is computed again from once it is behind
    // the window.
    Status spillInputs(int page, const float* visual, int count) {
        auto at = spill.append(visual, size_t(count) * c.visualStride());
        if (!at) return at.status();
        spillOffset[page] = *at;
        return Status::ok();
    }

    // Pages are fed once each, in order (the gate's rows and the spill offsets follow them).
    bool isNextPage(int page) const { return !pagePos0.count(page) && (pagePos0.empty() || page == pagePos0.rbegin()->first + 1); }

    // Restore: a page behind the window, known by its inputs (to the spill file) and its summary.
    Status addSpilledPage(int page, const float* visual, int count, int64_t pos0, std::vector<float> summary) {
        if (Status s = spillInputs(page, visual, count); !s) return s;
        pagePos0[page] = pos0;
        pageTokens[page] = count;
        addGateSummary(page, summary);
        return Status::ok();
    }

    // Makes sure every gated page's keys and values are at hand: a page behind the window is
    // computed again from its spilled inputs (the same keys and values it had when it was fed).
    // The cache keeps the gatedCachePages most recently gated pages.
    Status materializeGated() {
        if (!spilling) return Status::ok();
        constexpr double kDecay = 0.98;  // per refresh: a pick counts half after 34 refreshes
        for (auto& [page, gp] : gatedCache) gp.uses *= kDecay;
        for (int page : gated) {
            if (pageBlocks.count(page)) continue;
            auto it = gatedCache.find(page);
            if (it == gatedCache.end()) {
                const auto at = spillOffset.find(page);
                const auto count = pageTokens.find(page);
                if (at == spillOffset.end() || count == pageTokens.end())
                    return Status(ErrorCode::Internal, "decoder: the gate picked page " + std::to_string(page) + ", which it was never fed");
                std::vector<float> visual(size_t(count->second) * c.visualStride());
                if (Status s = spill.read(at->second, visual.data(), visual.size()); !s) return s;
                GatedPage gp;
                const int64_t pos0 = pagePos0.at(page);
                for (int i = 0; i < count->second; i += kBlockTokens) {
                    gp.blocks.push_back(makeBlock(BlockKind::Visual, page, pos0 + i));
                    gp.blocks.back().host.assign(blockFloats, 0.f);
                }
                std::vector<Block*> into;
                for (Block& b : gp.blocks) into.push_back(&b);
                if (Status s = computePage(into, visual.data(), count->second, pos0, nullptr); !s) return s;
                ++recomputedPages;
                it = gatedCache.emplace(page, std::move(gp)).first;
            }
            it->second.uses += 1;
        }
        const size_t keep = size_t(std::max<int>(p.gatedCachePages, int(gated.size())));
        while (gatedCache.size() > keep) {
            auto least = gatedCache.end();
            for (auto it = gatedCache.begin(); it != gatedCache.end(); ++it)
                if (std::find(gated.begin(), gated.end(), it->first) == gated.end() &&
                    (least == gatedCache.end() || it->second.uses < least->second.uses))
                    least = it;
            if (least == gatedCache.end()) break;
            gatedCache.erase(least);
        }
        return Status::ok();
    }

    // The page gate: cosine between the running mean of recent pre-rotary queries and each earlier
    // page's mean pre-rotary key, summed over layers; the best k_p pages outside the window.
    // Inverse norm of each layer's slice of a summary or query (0 for a zero slice).
    std::vector<float> layerInvNorms(const std::vector<float>& v) const {
        const size_t per = size_t(c.numKvHeads) * c.headDim;
        std::vector<float> out(size_t(c.numLayers), 0.f);
        for (int l = 0; l < c.numLayers; ++l) {
            double ss = 0;
            for (size_t i = l * per; i < (l + 1) * per; ++i) ss += double(v[i]) * v[i];
            out[size_t(l)] = ss > 0 ? float(1.0 / std::sqrt(ss)) : 0.f;
        }
        return out;
    }

    void addGateSummary(int page, const std::vector<float>& summary) {
        if (gatePages == 0) gateFirstPage = page;
        gateMeans.insert(gateMeans.end(), summary.begin(), summary.end());
        const std::vector<float> inv = layerInvNorms(summary);
        gateInvNorms.insert(gateInvNorms.end(), inv.begin(), inv.end());
        ++gatePages;
    }

    Status refreshGate() {
        const std::vector<int> held = std::move(gated);  // sorted
        gated.clear();
        if (p.mode != AttentionMode::SrSwa || p.gatedPages <= 0) return Status::ok();
        const size_t n = size_t(c.numLayers) * c.numKvHeads * c.headDim;
        std::vector<float> gq(n, 0.f);
        int have = 0;
        for (const auto& r : recentQueries)
            if (!r.empty()) {
                for (size_t i = 0; i < n; ++i) gq[i] += r[i];
                ++have;
            }
        // Score of a page: Σ over layers of the cosine between the query's and the page's slices.
        const int rows = std::clamp(currentPage - p.windowBefore - gateFirstPage, 0, gatePages);  // earlier pages only
        const int per = c.numKvHeads * c.headDim, L = c.numLayers;
        const std::vector<float> qInv = layerInvNorms(gq);
        std::vector<float> dots(size_t(rows) * L, 0.f);
        if (rows > 0 && have)
            for (int l = 0; l < L; ++l)  // dots[page][l] = page's layer-l slice · query's, strided over the rows
                cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, per, qInv[size_t(l)], gateMeans.data() + size_t(l) * per, int(n),
                            gq.data() + size_t(l) * per, 1, 0.0f, dots.data() + l, L);
        std::vector<std::pair<float, int>> scored;
        for (int r = 0; r < rows; ++r) {
            float score = 0;
            for (int l = 0; l < L; ++l) score += dots[size_t(r) * L + l] * gateInvNorms[size_t(r) * L + l];
            const int page = gateFirstPage + r;
            if (have && std::binary_search(held.begin(), held.end(), page)) score += p.gateHold;
            scored.push_back({have ? score : 0.f, page});
        }
        // The best k_p, ties to the earlier page.
        const size_t keep = std::min(scored.size(), size_t(p.gatedPages));
        std::partial_sort(scored.begin(), scored.begin() + long(keep), scored.end(),
                          [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
        for (size_t i = 0; i < keep; ++i) gated.push_back(scored[i].second);
        std::sort(gated.begin(), gated.end());
        return materializeGated();
    }

    // Share of full attention's softmax mass (over every token so far) that falls on `spans`.
    void measureRecall(int layer, const std::vector<Span>& spans, int64_t queryPos) {
        std::vector<Span> all = wholeBlocks(sinkBlocks);
        for (const auto& [page, ids] : pageBlocks) append(all, ids);
        append(all, retiredGenBlocks);
        append(all, genBlocks);
        frame(all, queryPos);
        // The attended tokens, by block and index: with page-aligned positions a generated token
        // shares its position with a visual token of its page, so positions alone do not tell them apart.
        std::vector<std::pair<const Block*, int>> picked;
        for (const auto& s : spans)
            for (int t = s.first; t < s.last; ++t) picked.push_back({s.block, t});
        std::sort(picked.begin(), picked.end());
        const int D = c.headDim, G = c.groupSize();
        const float scale = float(1.0 / std::sqrt(double(D)));
        std::vector<float> qr(static_cast<size_t>(D));
        for (int hh = 0; hh < c.numHeads; ++hh) {
            const int g = hh / G;
            std::vector<double> sc;
            std::vector<char> in;
            for (const auto& s : all) {
                std::copy(&q[size_t(hh) * D], &q[size_t(hh) * D] + D, qr.begin());
                rotate(qr.data(), s.queryPos);
                const float* base = data(*s.block);
                for (int t = s.first; t < s.last; ++t) {
                    const float* kk = base + kIndex(layer, g, t);
                    double dot = 0;
                    for (int i = 0; i < D; ++i) dot += double(qr[size_t(i)]) * kk[i];
                    sc.push_back(dot * scale);
                    in.push_back(std::binary_search(picked.begin(), picked.end(), std::pair<const Block*, int>{s.block, t}));
                }
            }
            const double mx = *std::max_element(sc.begin(), sc.end());
            double sum = 0, hit = 0;
            for (size_t i = 0; i < sc.size(); ++i) {
                const double e = std::exp(sc[i] - mx);
                sum += e;
                if (in[i]) hit += e;
            }
            recall.samples.push_back(hit / sum);
        }
    }

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

    Status checkStep(int inputToken) const {
        if (sinkBlocks.empty()) return Status(ErrorCode::InvalidArgument, "step: begin() first");
        if (inputToken < 0 || inputToken >= c.vocabSize) return Status(ErrorCode::InvalidArgument, "step: token out of range");
        return Status::ok();
    }

    Result<PendingStep> beginStep(int inputToken) {
        if (Status s = checkStep(inputToken); !s) return s;
        const bool pageBreak = inputToken == c.pageBreakTokenId && generated > 0;
        if (pageBreak) enterNextPage();
        placeLineEnd(inputToken);
        offloadLeftPages();
        auto id = generatedBlock();
        if (!id) return id.status();
        PendingStep ps;
        ps.blockId = *id, ps.t = blocks[size_t(*id)].count, ps.input = inputToken;
        ++generated;
        ps.refresh = p.mode == AttentionMode::SrSwa && (pageBreak || stepsSinceGate >= p.gateRefreshSteps || generated == 1);
        if (ps.refresh) {
            if (Status s = refreshGate(); !s) return s;
            stepsSinceGate = 0;
        }
        ++stepsSinceGate;
        embed(inputToken);
        ps.gq.assign(size_t(c.numLayers) * c.numKvHeads * c.headDim, 0.f);
        const auto tokensOfPage = pageTokens.find(currentPage);
        trackingStep = p.trackAttention && tokensOfPage != pageTokens.end();
        if (trackingStep) {
            attendedMass.assign(size_t(tokensOfPage->second), 0.f);
            trackedPagePos0 = pagePos0[currentPage];
        }
        return ps;
    }

    // A generated step's attention at layer l on the CPU (q, k, v hold its projections).
    void stepAttention(int l, PendingStep& ps) {
        addGateQuery(ps.gq, l, q.data());
        attendLayer(l, ps.blockId, ps.t, [&](int layer) {
            return generatedSet(layer, generated, q.data(), position, selection[size_t(layer)], ps.refresh);
        });
    }

    // The rest of step(); the logits are in `logits` already (a device's or a batch's) or computed
    // here from x.
    StepResult endStep(PendingStep& ps, bool logitsDone) {
        pushRecentQuery(std::move(ps.gq));
        ++position;
        frontier = std::max(frontier, position);
        evictOldGenerated();
        if (!logitsDone) computeLogits();
        StepResult result{&logits, currentPage, -1};
        if (trackingStep) {
            trackingStep = false;
            result.attendedVisual = mostAttended(attendedMass);
        }
        return result;
    }

    // The forward passes of steps begun in n sessions on one model (at most kPackedRows), as
    // forward() computes each: every weight matrix applied to the sessions' rows together (the
    // packed product gives a row the same result whatever rows go with it, so each session's
    // logits are its own step's, bit for bit), each session attending over its own blocks, the
    // sessions split between the two threads of the first session's `pairs`.
    static void forwardBatch(Impl* const* s, PendingStep* ps, int n) {
        Impl& first = *s[0];
        const ModelConfig& c = first.c;
        const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim,
                  F = c.intermediateSize;
        std::vector<float> X(size_t(n) * H), Xn(X.size()), Qm(size_t(n) * Q), Km(size_t(n) * KV), Vm(Km.size()),
            A(Qm.size()), O(X.size()), Gm(size_t(n) * F), Um(Gm.size());
        for (int i = 0; i < n; ++i) std::copy_n(s[size_t(i)]->x.data(), H, &X[size_t(i) * H]);
        for (int l = 0; l < c.numLayers; ++l) {
            first.projectRows(l, n, X, Xn, Qm, Km, Vm);
            first.pairs->run([&](int half) {
                for (int i = half; i < n; i += 2) {
                    Impl& si = *s[size_t(i)];
                    std::copy_n(&Qm[size_t(i) * Q], Q, si.q.data());
                    std::copy_n(&Km[size_t(i) * KV], KV, si.k.data());
                    std::copy_n(&Vm[size_t(i) * KV], KV, si.v.data());
                    si.stepAttention(l, ps[i]);
                    std::copy_n(si.att.data(), Q, &A[size_t(i) * Q]);
                }
            });
            first.finishLayerRows(l, n, A, X, Xn, O, Gm, Um);
        }
        for (int i = 0; i < n; ++i) rmsnorm(&X[size_t(i) * H], first.model->finalNorm.data(), &Xn[size_t(i) * H], H, c.rmsNormEps);
        std::vector<float> all(size_t(n) * c.vocabSize);
        first.applySplit(first.packedHead, Xn.data(), n, all.data());
        for (int i = 0; i < n; ++i)
            std::copy_n(&all[size_t(i) * c.vocabSize], c.vocabSize, s[size_t(i)]->logits.data());
    }

    // Row-wise Y[T, rows] = X[T, cols] W[rows, cols]^T.
    static void gemm(const std::vector<float>& w, int rows, int cols, const float* X, int T, float* Y) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, rows, cols, 1.0f, X, cols, w.data(), cols, 0.0f, Y,
                    rows);
    }

    // gemm() of a page's T rows in two halves of rows, one per thread of `pairs` (OpenBLAS sums
    // each output along the same K order whatever rows go with it: tst_decoder
    // twoThreadsPrefillWhatOneDoes).
    void gemmRows(const std::vector<float>& w, int rows, int cols, const float* X, int T, float* Y) const {
        const int mid = T / 2;
        pairs->run([&](int half) {
            const int t0 = half == 0 ? 0 : mid, t1 = half == 0 ? mid : T;
            if (t0 < t1) gemm(w, rows, cols, X + size_t(t0) * cols, t1 - t0, Y + size_t(t0) * rows);
        });
    }

    // The same through the packed copy for a step's or a draft's few rows (up to kPackedRows), split
    // between the threads of `pairs`; through OpenBLAS for a page's thousands (its copying of W into
    // panels then costs little), split by rows.
    static constexpr int kPackedRows = 64;
    void product(const std::vector<float>& w, const PackedMatrix& pw, const float* X, int T, float* Y) const {
        if (T <= kPackedRows) applySplit(pw, X, T, Y);
        else gemmRows(w, pw.rows, pw.cols, X, T, Y);
    }

    // Rows of tokens through a layer in matrix products: the attention input (norm, then Q, K, V
    // pre-rotary) ...
    void projectRows(int layer, int T, const std::vector<float>& X, std::vector<float>& Xn, std::vector<float>& Qm,
                     std::vector<float>& Km, std::vector<float>& Vm) const {
        const LayerWeights& L = model->layers[size_t(layer)];
        const PackedLayer& P = packed[size_t(layer)];
        const int H = c.hiddenSize;
        for (int t = 0; t < T; ++t) rmsnorm(&X[size_t(t) * H], L.attnNorm.data(), &Xn[size_t(t) * H], H, c.rmsNormEps);
        if (T > kPackedRows) {
            product(L.wq, P.wq, Xn.data(), T, Qm.data());
            product(L.wk, P.wk, Xn.data(), T, Km.data());
            product(L.wv, P.wv, Xn.data(), T, Vm.data());
            return;
        }
        pairs->run([&](int half) {  // Q on one thread, K and V (as many rows between them) on the other
            if (half == 0) {
                P.wq.apply(Xn.data(), T, Qm.data());
            } else {
                P.wk.apply(Xn.data(), T, Km.data());
                P.wv.apply(Xn.data(), T, Vm.data());
            }
        });
    }

    // ... and, given the attention's output A, the rest: output projection and the SwiGLU MLP,
    // each added to the residual X.
    void finishLayerRows(int layer, int T, const std::vector<float>& A, std::vector<float>& X, std::vector<float>& Xn,
                         std::vector<float>& O, std::vector<float>& Gm, std::vector<float>& Um) const {
        const LayerWeights& L = model->layers[size_t(layer)];
        const PackedLayer& P = packed[size_t(layer)];
        const int H = c.hiddenSize, F = c.intermediateSize;
        product(L.wo, P.wo, A.data(), T, O.data());
        for (size_t i = 0; i < size_t(T) * H; ++i) X[i] += O[i];
        for (int t = 0; t < T; ++t) rmsnorm(&X[size_t(t) * H], L.mlpNorm.data(), &Xn[size_t(t) * H], H, c.rmsNormEps);
        if (T <= kPackedRows) {
            pairs->run([&](int half) {  // the gate on one thread, the up projection on the other
                if (half == 0) P.wGate.apply(Xn.data(), T, Gm.data());
                else P.wUp.apply(Xn.data(), T, Um.data());
            });
        } else {
            product(L.wGate, P.wGate, Xn.data(), T, Gm.data());
            product(L.wUp, P.wUp, Xn.data(), T, Um.data());
        }
        kernels::swiglu(Gm.data(), Um.data(), size_t(T) * F);
        product(L.wDown, P.wDown, Gm.data(), T, O.data());
        for (size_t i = 0; i < size_t(T) * H; ++i) X[i] += O[i];
    }

    // Causal attention of a page's T tokens (pre-rotary queries Qm, [T][heads·D]) over the sinks
    // and the page itself at `layer`, into A: the same result as attend() token by token, with the
    // page part as matrix products over row chunks (scores Q·Kᵀ, then weights·V). The KV groups in
    // two halves, one per thread of `pairs` (each writes its own heads of A); the rotary table is
    // read before the fork (trigAt() may fill it), into copies for the page's positions and the
    // sinks' query positions.
    void pageAttention(int layer, const std::vector<Block*>& page, int64_t pos0, const std::vector<float>& Qm,
                       const std::vector<std::vector<Span>>& sinkSpans, int T, std::vector<float>& A) {
        const int D = c.headDim, G = c.groupSize(), Q = c.numHeads * D;
        const float scale = float(1.0 / std::sqrt(double(D)));
        constexpr int kChunk = 256;
        std::vector<float> pageTrig(size_t(T) * D);
        for (int t = 0; t < T; ++t) std::copy_n(trigAt(pos0 + t), D, &pageTrig[size_t(t) * D]);
        std::vector<std::vector<size_t>> sinkTrigAt(static_cast<size_t>(T));  // per sink span: its trig in sinkTrig
        std::vector<float> sinkTrig;
        std::map<int64_t, size_t> sinkTrigOf;
        for (int t = 0; t < T; ++t)
            for (const Span& sp : sinkSpans[size_t(t)]) {
                auto [it, fresh] = sinkTrigOf.try_emplace(sp.queryPos, sinkTrig.size());
                if (fresh) {
                    const float* trig = trigAt(sp.queryPos);
                    sinkTrig.insert(sinkTrig.end(), trig, trig + D);
                }
                sinkTrigAt[size_t(t)].push_back(it->second);
            }
        pairs->run([&](int half) {
            std::vector<float> K(size_t(T) * D), V(size_t(T) * D), Qr(size_t(kChunk) * D), S(size_t(kChunk) * T),
                O(size_t(kChunk) * D);
            std::vector<float> qs(static_cast<size_t>(D)), sinkScores;
            const auto [g0, g1] = groupsOf(half);
            for (int g = g0; g < g1; ++g) {
                for (int t = 0; t < T; ++t) {  // the page's keys (rotated) and values, contiguous
                    const float* base = data(*page[size_t(t / kBlockTokens)]);
                    const size_t at = kIndex(layer, g, t % kBlockTokens);
                    std::copy_n(base + at, D, &K[size_t(t) * D]);
                    std::copy_n(base + halfFloats + at, D, &V[size_t(t) * D]);
                }
                for (int j = 0; j < G; ++j) {
                    const int hh = g * G + j;
                    for (int r0 = 0; r0 < T; r0 += kChunk) {
                        const int rows = std::min(kChunk, T - r0), cols = r0 + rows;
                        for (int r = 0; r < rows; ++r) {
                            float* qr = &Qr[size_t(r) * D];
                            std::copy_n(&Qm[size_t(r0 + r) * Q + size_t(hh) * D], D, qr);
                            rotateWith(qr, &pageTrig[size_t(r0 + r) * D]);
                        }
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, D, scale, Qr.data(), D, K.data(),
                                    D, 0.0f, S.data(), cols);
                        for (int r = 0; r < rows; ++r) {
                            const int t = r0 + r;
                            float* row = &S[size_t(r) * cols];
                            // The sinks, each span with the query rotated where the frame puts it.
                            sinkScores.clear();
                            const auto& spans = sinkSpans[size_t(t)];
                            for (size_t si = 0; si < spans.size(); ++si) {
                                const Span& sp = spans[si];
                                std::copy_n(&Qm[size_t(t) * Q + size_t(hh) * D], D, qs.begin());
                                rotateWith(qs.data(), &sinkTrig[sinkTrigAt[size_t(t)][si]]);
                                for (int u = sp.first; u < sp.last; ++u)
                                    sinkScores.push_back(kernels::dot(qs.data(), data(*sp.block) + kIndex(layer, g, u), D) *
                                                         scale);
                            }
                            const float mx = std::max(kernels::maxOf(sinkScores.data(), sinkScores.size()),
                                                      kernels::maxOf(row, size_t(t) + 1));
                            const float sum = kernels::expShifted(sinkScores.data(), sinkScores.size(), mx) +
                                              kernels::expShifted(row, size_t(t) + 1, mx);
                            const float inv = 1.f / sum;
                            kernels::scale(row, size_t(t) + 1, inv);
                            std::fill(row + t + 1, row + cols, 0.f);  // causal
                            float* out = &A[size_t(t) * Q + size_t(hh) * D];
                            std::fill(out, out + D, 0.f);
                            size_t k = 0;
                            for (const Span& sp : spans)
                                for (int u = sp.first; u < sp.last; ++u, ++k) {
                                    const float w = sinkScores[k] * inv;
                                    const float* vv = data(*sp.block) + halfFloats + kIndex(layer, g, u);
                                    for (int i = 0; i < D; ++i) out[i] += w * vv[i];
                                }
                        }
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, cols, 1.0f, S.data(), cols,
                                    V.data(), D, 0.0f, O.data(), D);
                        for (int r = 0; r < rows; ++r) {
                            float* out = &A[size_t(r0 + r) * Q + size_t(hh) * D];
                            for (int i = 0; i < D; ++i) out[i] += O[size_t(r) * D + i];
                        }
                    }
                }
            }
        });
    }

    // A page's token t at `layer`: its keys (pre-rotary, all KV heads) and values into the page's
    // blocks `into`, and its share of the page's mean key into `summary` (when given).
    void storePageToken(const std::vector<Block*>& into, int layer, int t, int T, const float* keys, const float* values,
                        std::vector<float>* summary, bool deviceHasIt) {
        const int D = c.headDim;
        Block& b = *into[size_t(t / kBlockTokens)];
        const int bt = t % kBlockTokens;
        for (int g = 0; g < c.numKvHeads; ++g) {
            const float* kin = keys + size_t(g) * D;
            if (summary) {
                const size_t so = (size_t(layer) * c.numKvHeads + g) * D;
                for (int i = 0; i < D; ++i) (*summary)[so + i] += kin[i] / float(T);
            }
            storeKv(b, layer, g, bt, kin, values + size_t(g) * D, false, deviceHasIt);
        }
        b.count = std::max(b.count, bt + 1);
    }

    // Prefill of a page's visual tokens into the pool at the current position (pageBlocks[page]).
    Status prefillPage(int page, const float* visual, int T, std::vector<float>& summary) {
        std::vector<int>& ids = pageBlocks[page];
        for (int i = 0; i < T; i += kBlockTokens) {
            auto id = newBlock(BlockKind::Visual, page);
            if (!id) return id.status();
            blocks[size_t(*id)].pos0 = position + i;
            ids.push_back(*id);
        }
        ++pageLayout;
        std::vector<Block*> into;
        for (int id : ids) into.push_back(&blocks[size_t(id)]);
        if (Status s = computePage(into, visual, T, position, &summary); !s) return s;
        position += T;
        frontier = std::max(frontier, position);
        if (c.pageAlignedPositions) position = pagePos0[page];  // the page's text starts where the page does
        return Status::ok();
    }

    // The keys and values of a page's T visual tokens at positions pos0 .. pos0 + T - 1, all
    // layers, in matrix products, into the blocks `into` (ceil(T / 16) of them, empty, pos0 set):
    // every token attends to the sinks and causally to the page. They depend on nothing else, so a
    // page computed again from the same inputs gets the same keys and values. `summary`, when
    // given, receives the page's mean pre-rotary key (the page gate's summary).
    Status computePage(const std::vector<Block*>& into, const float* visual, int T, int64_t pos0,
                       std::vector<float>* summary) {
        const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, F = c.intermediateSize;
        ++computedPages;
        if (device) {
            const Status s = devicePrefill(into, visual, T, pos0, summary);
            if (s) return s;
            if (!p.deviceFallback) return s;
            dropDevice("the prefill of a page at position " + std::to_string(pos0), s);
        }
        std::vector<float> X(size_t(T) * H), Xn(size_t(T) * H), Qm(size_t(T) * Q), Km(size_t(T) * KV), Vm(size_t(T) * KV),
            A(size_t(T) * Q), O(size_t(T) * H), Gm(size_t(T) * F), Um(size_t(T) * F);
        if (!c.visualTokenIds) {
            gemmRows(model->visualW, H, c.visualDim, visual, T, X.data());
        } else {
            // Features and ids are interleaved per token: pack the features for one product, then add
            // each token's embedding.
            const int stride = c.visualStride();
            std::vector<float> packed(size_t(T) * c.visualDim);
            for (int t = 0; t < T; ++t)
                std::copy_n(visual + size_t(t) * stride, c.visualDim, &packed[size_t(t) * c.visualDim]);
            gemmRows(model->visualW, H, c.visualDim, packed.data(), T, X.data());
            for (int t = 0; t < T; ++t) {
                const float* e = &model->embed[size_t(visual[size_t(t) * stride + c.visualDim]) * H];
                for (int j = 0; j < H; ++j) X[size_t(t) * H + j] += e[j];
            }
        }
        for (int t = 0; t < T; ++t)
            for (int j = 0; j < H; ++j) X[size_t(t) * H + j] += model->visualB[size_t(j)];
        // Where each token's query is rotated for each sink span (the position frame; the page's
        // own keys are in the query's interval, so they see its absolute position).
        std::vector<std::vector<Span>> sinkQueryPos(static_cast<size_t>(T));
        for (int t = 0; t < T; ++t) {
            std::vector<Span> spans = causalPageSpans(into, t);
            frame(spans, pos0 + t);
            for (const Span& sp : spans) {
                if (sp.block->kind == BlockKind::Sink) sinkQueryPos[size_t(t)].push_back(sp);
                else if (sp.queryPos != pos0 + t) return Status(ErrorCode::Internal, "prefill: page keys outside the query's frame");
            }
        }
        for (int l = 0; l < c.numLayers; ++l) {
            projectRows(l, T, X, Xn, Qm, Km, Vm);
            for (int t = 0; t < T; ++t) storePageToken(into, l, t, T, &Km[size_t(t) * KV], &Vm[size_t(t) * KV], summary, false);
            if (!p.referencePrefill) {
                pageAttention(l, into, pos0, Qm, sinkQueryPos, T, A);
            } else {
                for (int t = 0; t < T; ++t) {
                    std::copy(&Qm[size_t(t) * Q], &Qm[size_t(t) * Q] + Q, q.begin());
                    std::vector<Span> spans = causalPageSpans(into, t);
                    frame(spans, pos0 + t);
                    attend(l, spans);
                    std::copy(att.begin(), att.begin() + Q, &A[size_t(t) * Q]);
                }
            }
            finishLayerRows(l, T, A, X, Xn, O, Gm, Um);
        }
        return Status::ok();
    }

    // --- Bookkeeping of one generated step, shared by step() and stepDraft() ---

    void enterNextPage() {
        ++currentPage;
        writtenLineEnds = 0;
        pageLineEnds.erase(pageLineEnds.begin(), pageLineEnds.lower_bound(currentPage));
    }

    // Where the `written`-th line end written on `page` puts the text (just past that visual line
    // end), or -1 when the page has no such line end.
    int64_t lineEndPosition(int page, int written) const {
        auto it = pageLineEnds.find(page);
        return it != pageLineEnds.end() && written < int(it->second.size()) ? it->second[size_t(written)] + 1 : -1;
    }

    // Line-aligned positions: a line end sits where the page's next line starts (docs/DECODING.md).
    void placeLineEnd(int token) {
        if (!c.lineAlignedPositions() || !c.isLineEnd(token)) return;
        if (const int64_t at = lineEndPosition(currentPage, writtenLineEnds); at >= 0) position = at;
        ++writtenLineEnds;
    }

    // SR-SWA: pages behind the window give their blocks back (their inputs are in the spill file
    // and their summaries stay for the gate). With measureRecall, pages outside the window go to
    // host memory instead, so that the probe can compare with full attention.
    void offloadLeftPages() {
        if (p.mode != AttentionMode::SrSwa) return;
        if (!spilling) {
            for (auto& [page, ids] : pageBlocks)
                if (!inWindow(page))
                    for (int id : ids) offload(blocks[size_t(id)]);
            return;
        }
        while (!pageBlocks.empty() && pageBlocks.begin()->first < currentPage - p.windowBefore) {
            const int page = pageBlocks.begin()->first;
            if (p.gatedPages > 0 && !gatedCache.count(page)) {
                // Its keys and values go to the gated pages' cache as they are (the page just left
                // the window, and the gate's next pick is often this page: computing it again from
                // its inputs gave the same values at the cost of a whole page's forward pass). Not
                // yet a pick: the next materializeGated() drops it first if the gate does not take it.
                GatedPage gp;
                for (int id : pageBlocks.begin()->second) {
                    offload(blocks[size_t(id)]);
                    gp.blocks.push_back(std::move(blocks[size_t(id)]));
                    freeBlock(id);  // (its slot went with offload())
                }
                gatedCache.emplace(page, std::move(gp));
            } else {
                for (int id : pageBlocks.begin()->second) freeBlock(id);
            }
            pageBlocks.erase(pageBlocks.begin());
            ++pageLayout;
        }
    }

    // The block the next generated token goes to (a new one when the last is full, sealed by a
    // page, or not followed by the token's position).
    Result<int> generatedBlock() {
        if (genBlocks.empty() || blocks[size_t(genBlocks.back())].count == kBlockTokens ||
            blocks[size_t(genBlocks.back())].sealed ||
            blocks[size_t(genBlocks.back())].pos0 + blocks[size_t(genBlocks.back())].count != position) {
            auto id = newBlock(BlockKind::Generated, currentPage);
            if (!id) return id.status();
            blocks[size_t(*id)].genIndex0 = generated;
            genBlocks.push_back(*id);
        }
        return genBlocks.back();
    }

    // Pre-rotary query of each KV group (mean over its heads), for the page gate's running mean.
    void addGateQuery(std::vector<float>& gq, int layer, const float* query) const {
        const int G = c.groupSize();
        for (int hh = 0; hh < c.numHeads; ++hh)
            for (int i = 0; i < c.headDim; ++i)
                gq[(size_t(layer) * c.numKvHeads + hh / G) * c.headDim + i] += query[size_t(hh) * c.headDim + i] / float(G);
    }

    void pushRecentQuery(std::vector<float> gq) {
        if (recentQueries.empty()) return;
        recentQueries[size_t(recentQueryNext)] = std::move(gq);
        recentQueryNext = (recentQueryNext + 1) % int(recentQueries.size());
    }

    // Generated blocks wholly older than the recent window are dropped (R-SWA / SR-SWA).
    void evictOldGenerated() {
        if (p.mode == AttentionMode::Full) return;
        while (genBlocks.size() > 1) {
            Block& b = blocks[size_t(genBlocks.front())];
            if (b.genIndex0 + b.count > generated - p.recentTokens) break;
            if (p.measureRecall) {
                offload(b);
                retiredGenBlocks.push_back(genBlocks.front());
            } else {
                freeBlock(genBlocks.front());
            }
            genBlocks.erase(genBlocks.begin());
        }
    }

    // The first of the largest (a vectorised maximum, then its first place: std::max_element's
    // running comparison was a twentieth of a draft pass).
    static int mostAttended(const std::vector<float>& mass) {
        const float best = kernels::maxOf(mass.data(), mass.size());
        return best > 0 ? int(std::find(mass.begin(), mass.end(), best) - mass.begin()) : -1;
    }

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

    // The forward pass of `posOf.size()` inputs at positions posOf, as step() would compute them
    // one after another: layer by layer, weights applied in matrix products, each token attending
    // to what step() would give it (generatedSet at its generated count, query and position) plus
    // the draft tokens up to itself.
    // refreshAt[i]: the gate is refreshed at token i (its query chooses the gated blocks from there).
    Result<Draft> computeDraft(const std::vector<int>& inputs, const std::vector<int64_t>& posOf,
                               const std::vector<bool>& refreshAt) {
        const int k = int(posOf.size());
        const int H = c.hiddenSize, Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, D = c.headDim,
                  F = c.intermediateSize, L = c.numLayers;
        Draft dr;
        dr.pos = posOf;
        dr.own.resize(size_t(k));
        for (int i = 0; i < k; ++i) {
            Block& b = dr.own[size_t(i)];
            b.kind = BlockKind::Generated, b.page = currentPage, b.count = 1, b.pos0 = posOf[size_t(i)];
            b.genIndex0 = generated + i;
            b.host.assign(blockFloats, 0.f);
        }
        dr.gateQueries.assign(size_t(k), std::vector<float>(size_t(L) * KV, 0.f));
        dr.positions.assign(size_t(k), std::vector<PositionRuns>(size_t(L)));
        dr.selections.assign(size_t(k), {});
        std::vector<std::vector<float>> mass;
        const auto tokensOfPage = pageTokens.find(currentPage);
        const bool tracking = p.trackAttention && tokensOfPage != pageTokens.end();
        if (tracking) {
            mass.assign(size_t(k), std::vector<float>(size_t(tokensOfPage->second), 0.f));
            trackedPagePos0 = pagePos0[currentPage];
        }
        std::vector<float> X(size_t(k) * H), Xn(size_t(k) * H), Qm(size_t(k) * Q), Km(size_t(k) * KV),
            Vm(size_t(k) * KV), A(size_t(k) * Q), O(size_t(k) * H), Gm(size_t(k) * F), Um(size_t(k) * F);
        for (int i = 0; i < k; ++i)
            std::copy_n(&model->embed[size_t(inputs[size_t(i)]) * H], H, &X[size_t(i) * H]);
        std::vector<std::vector<Span>> spans(static_cast<size_t>(k));
        refreshWindowCache();
        for (int l = 0; l < L; ++l) {
            projectRows(l, k, X, Xn, Qm, Km, Vm);
            for (int i = 0; i < k; ++i) {
                addGateQuery(dr.gateQueries[size_t(i)], l, &Qm[size_t(i) * Q]);
                float* base = dr.own[size_t(i)].host.data();
                for (int g = 0; g < c.numKvHeads; ++g) {
                    float* kk = base + kIndex(l, g, 0);
                    std::copy_n(&Km[size_t(i) * KV + size_t(g) * D], D, kk);
                    rotate(kk, posOf[size_t(i)]);
                    std::copy_n(&Vm[size_t(i) * KV + size_t(g) * D], D, base + halfFloats + kIndex(l, g, 0));
                }
            }
            Selection select = selection[size_t(l)];  // the session's, until a token of the draft refreshes it
            for (int i = 0; i < k; ++i) {
                auto& sp = spans[size_t(i)];
                sp = generatedSet(l, generated + i + 1, &Qm[size_t(i) * Q], posOf[size_t(i)], select, refreshAt[size_t(i)]);
                if (refreshAt[size_t(i)]) dr.selections[size_t(i)].push_back(select);
                for (int j = 0; j <= i; ++j) sp.push_back({&dr.own[size_t(j)], 0, 1, 0});
                frame(sp, posOf[size_t(i)]);
                dr.positions[size_t(i)][size_t(l)] = positionRuns(sp);
            }
            attendDraft(l, spans, posOf, Qm, k, A, tracking ? &mass : nullptr);
            finishLayerRows(l, k, A, X, Xn, O, Gm, Um);
        }
        for (int i = 0; i < k; ++i) rmsnorm(&X[size_t(i) * H], model->finalNorm.data(), &Xn[size_t(i) * H], H, c.rmsNormEps);
        std::vector<float> all(size_t(k) * c.vocabSize);
        applySplit(packedHead, Xn.data(), k, all.data());
        dr.logits.resize(size_t(k));
        dr.attended.assign(size_t(k), -1);
        for (int i = 0; i < k; ++i) {
            dr.logits[size_t(i)].assign(all.begin() + long(i) * c.vocabSize, all.begin() + long(i + 1) * c.vocabSize);
            if (tracking) dr.attended[size_t(i)] = mostAttended(mass[size_t(i)]);
        }
        return dr;
    }

    // The KV groups [first, second) of half 0 or 1 of a pass split over `pairs` (attention of a
    // draft and of a page's prefill): the first half takes the odd group where there is one.
    std::pair<int, int> groupsOf(int half) const {
        const int split = (c.numKvHeads + 1) / 2;
        return half == 0 ? std::pair{0, split} : std::pair{split, c.numKvHeads};
    }

    // Attention of a draft's k tokens at `layer` (queries Qm, pre-rotary), into A, for all tokens
    // at once: keys and values of the union of their spans gathered once per KV group (the window's
    // from the window cache), scores and weighted values as matrix products over the queries each
    // rotated to its token's position, each token's softmax masked to its own spans. A span the
    // position frame moves (its query rotated to pos + delta instead of pos) enters the union with
    // its keys rotated by -delta: rotation is relative, so q rotated to pos + delta against k is q
    // rotated to pos against k rotated by -delta (the same up to float rounding as attend()).
    void attendDraft(int layer, const std::vector<std::vector<Span>>& spans, const std::vector<int64_t>& pos,
                     const std::vector<float>& Qm, int k, std::vector<float>& A, std::vector<std::vector<float>>* mass) {
        const int D = c.headDim, G = c.groupSize(), Q = c.numHeads * D;
        const float scale = float(1.0 / std::sqrt(double(D)));
        // Keys are laid out as [the window cache's tokens | the union of the other spans].
        const size_t Nc = windowCache.tokens;
        struct Range {
            const Block* block;
            int64_t delta;  // the keys rotated by -delta
            int first, last;
            size_t offset;
        };
        std::vector<Range> uni;
        std::map<std::pair<const Block*, int64_t>, size_t> where;
        std::vector<std::vector<std::pair<size_t, int>>> cachedHits(static_cast<size_t>(k));  // (row, count)
        for (int i = 0; i < k; ++i)
            for (const Span& s : spans[size_t(i)]) {
                const int64_t delta = s.queryPos - pos[size_t(i)];
                if (delta == 0 && Nc > 0 && s.first == 0 && s.last == s.block->count && s.block >= blocks.data() &&
                    s.block < blocks.data() + blocks.size()) {
                    const int64_t row = windowCache.rowOf(int(s.block - blocks.data()));
                    if (row >= 0) {
                        cachedHits[size_t(i)].push_back({size_t(row), s.last});
                        continue;
                    }
                }
                auto [it, fresh] = where.try_emplace({s.block, delta}, uni.size());
                if (fresh) {
                    uni.push_back({s.block, delta, s.first, s.last, 0});
                } else {
                    Range& u = uni[it->second];
                    u.first = std::min(u.first, s.first), u.last = std::max(u.last, s.last);
                }
            }
        size_t N = Nc;
        for (auto& u : uni) u.offset = N, N += size_t(u.last - u.first);
        const size_t Nu = N - Nc;
        std::vector<uint8_t> allowed(size_t(k) * N, 0);
        for (int i = 0; i < k; ++i) {
            uint8_t* ok = &allowed[size_t(i) * N];
            for (const auto& [row, count] : cachedHits[size_t(i)]) std::fill_n(ok + row, count, uint8_t(1));
            for (const Span& s : spans[size_t(i)]) {
                auto u = where.find({s.block, s.queryPos - pos[size_t(i)]});
                if (u == where.end()) continue;  // in the cache
                const Range& r = uni[u->second];
                std::fill_n(ok + r.offset + size_t(s.first - r.first), s.last - s.first, uint8_t(1));
            }
        }
        // Each token's allowed keys as runs [first, last) of the score row: the softmax works
        // run by run (vectorised), leaving the rest of the row 0.
        std::vector<std::vector<std::pair<size_t, size_t>>> runs(static_cast<size_t>(k));
        for (int i = 0; i < k; ++i) {
            const uint8_t* ok = &allowed[size_t(i) * N];
            for (size_t n = 0; n < N;) {
                if (!ok[n]) {
                    ++n;
                    continue;
                }
                const size_t first = n;
                while (n < N && ok[n]) ++n;
                runs[size_t(i)].push_back({first, n});
            }
        }
        // The current page's blocks in the window cache (row, block), for the attention tracking.
        std::vector<std::pair<size_t, const Block*>> cachedCurrent;
        if (mass)
            for (int id : windowCache.ids)
                if (blocks[size_t(id)].page == currentPage) cachedCurrent.push_back({size_t(windowCache.rowOf(id)), &blocks[size_t(id)]});
        // The cos and sin that turn each framed range's keys by -delta, looked up once and copied
        // (a later trigAt() may take the slot).
        std::vector<float> turn(uni.size() * size_t(D));
        for (size_t u = 0; u < uni.size(); ++u)
            if (uni[u].delta != 0) std::copy_n(trigAt(-uni[u].delta), D, &turn[u * size_t(D)]);
        const int rows = k * G;
        // The queries rotated to their tokens' positions, per KV group (here: trigAt() may fill
        // the rotary table, which the two halves below must not do at once).
        std::vector<float> Qr(size_t(c.numKvHeads) * rows * D);
        for (int g = 0; g < c.numKvHeads; ++g)
            for (int i = 0; i < k; ++i)
                for (int j = 0; j < G; ++j) {
                    float* qr = &Qr[((size_t(g) * k + i) * G + j) * D];
                    std::copy_n(&Qm[size_t(i) * Q + size_t(g * G + j) * D], D, qr);
                    rotate(qr, pos[size_t(i)]);
                }
        // The KV groups in two halves (pairs.run: on two threads where the session has them). Each
        // writes its own heads of A; the attention mass of the second half goes to its own rows,
        // added after, so the sums are the same with one thread or two.
        std::vector<std::vector<float>> mass1;
        if (mass && !mass->empty()) mass1.assign(mass->size(), std::vector<float>((*mass)[0].size(), 0.f));
        pairs->run([&](int half) {
            std::vector<std::vector<float>>* into = half == 0 ? mass : (mass ? &mass1 : nullptr);
            std::vector<float> Ku(Nu * D), Vu(Nu * D), S(size_t(rows) * std::max<size_t>(N, 1)), O(size_t(rows) * D);
            const auto [g0, g1] = groupsOf(half);
            for (int g = g0; g < g1; ++g) {
                for (size_t ui = 0; ui < uni.size(); ++ui) {
                    const Range& u = uni[ui];
                    const float* base = data(*u.block);
                    for (int t = u.first; t < u.last; ++t) {
                        const size_t n = u.offset - Nc + size_t(t - u.first);
                        std::copy_n(base + kIndex(layer, g, t), D, &Ku[n * D]);
                        if (u.delta != 0) rotateWith(&Ku[n * D], &turn[ui * size_t(D)]);
                        std::copy_n(base + halfFloats + kIndex(layer, g, t), D, &Vu[n * D]);
                    }
                }
                const float* Qg = &Qr[size_t(g) * rows * D];
                const float* Kc = windowCache.keys(layer, g, c);
                const float* Vc = windowCache.values(layer, g, c);
                if (Nc > 0) kernels::gemmPacked(Kc, int(Nc), D, Qg, size_t(D), rows, S.data(), N, scale);
                if (Nu > 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, int(Nu), D, scale, Qg, D, Ku.data(), D,
                                0.0f, S.data() + Nc, int(N));
                for (int i = 0; i < k; ++i)
                    for (int j = 0; j < G; ++j) {
                        float* row = &S[(size_t(i) * G + j) * N];
                        const auto& rr = runs[size_t(i)];
                        float mx = -INFINITY;
                        for (const auto& [a, b] : rr) mx = std::max(mx, kernels::maxOf(row + a, b - a));
                        float sum = 0;
                        size_t done = 0;  // the row is 0 outside the runs
                        for (const auto& [a, b] : rr) {
                            std::fill(row + done, row + a, 0.f);
                            sum += kernels::expShifted(row + a, b - a, mx);
                            done = b;
                        }
                        std::fill(row + done, row + N, 0.f);
                        const float inv = 1.f / sum;
                        for (const auto& [a, b] : rr) kernels::scale(row + a, b - a, inv);
                        if (into) {
                            for (const auto& [r, b] : cachedCurrent)
                                addMassRun((*into)[size_t(i)], b->pos0, row + r, b->count);
                            for (const auto& u : uni)
                                if (u.block->kind == BlockKind::Visual && u.block->page == currentPage)
                                    addMassRun((*into)[size_t(i)], u.block->pos0 + u.first, row + u.offset, u.last - u.first);
                        }
                    }
                if (Nc > 0) kernels::gemmPacked(Vc, D, int(Nc), S.data(), N, rows, O.data(), size_t(D));
                if (Nu > 0)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, int(Nu), 1.0f, S.data() + Nc, int(N), Vu.data(),
                                D, Nc > 0 ? 1.0f : 0.0f, O.data(), D);
                if (N == 0) std::fill(O.begin(), O.end(), 0.f);
                for (int i = 0; i < k; ++i)
                    for (int j = 0; j < G; ++j) {
                        float* out = &A[size_t(i) * Q + size_t(g * G + j) * D];
                        std::copy_n(&O[(size_t(i) * G + j) * D], D, out);
                    }
            }
        });
        if (mass)
            for (size_t i = 0; i < mass->size(); ++i) kernels::addTo((*mass)[i].data(), mass1[i].data(), mass1[i].size());
    }

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

    void refreshWindowCache() {
        std::vector<int> ids;
        if (p.mode == AttentionMode::SrSwa)
            for (const auto& [page, pids] : pageBlocks)
                if (inWindow(page)) ids.insert(ids.end(), pids.begin(), pids.end());
        if (ids == windowCache.ids && pageLayout == windowCache.layout) return;
        WindowCache w;
        w.ids = ids;
        w.layout = pageLayout;
        w.rows.assign(blocks.size(), -1);
        for (int id : ids) w.rows[size_t(id)] = int64_t(w.tokens), w.tokens += size_t(blocks[size_t(id)].count);
        const int D = c.headDim, N = int(w.tokens);
        w.kStride = kernels::packedSize(N, D), w.vStride = kernels::packedSize(D, N);
        w.k.resize(size_t(c.numLayers) * c.numKvHeads * w.kStride);
        w.v.resize(size_t(c.numLayers) * c.numKvHeads * w.vStride);
        std::vector<float> K(w.tokens * D), V(w.tokens * D);
        for (int l = 0; l < c.numLayers; ++l)
            for (int g = 0; g < c.numKvHeads; ++g) {
                for (int id : ids) {
                    const Block& b = blocks[size_t(id)];
                    const float* src = data(b);
                    for (int t = 0; t < b.count; ++t) {
                        std::copy_n(src + kIndex(l, g, t), D, &K[(size_t(w.rows[size_t(id)]) + size_t(t)) * D]);
                        std::copy_n(src + halfFloats + kIndex(l, g, t), D, &V[(size_t(w.rows[size_t(id)]) + size_t(t)) * D]);
                    }
                }
                const size_t at = size_t(l) * c.numKvHeads + g;
                if (N > 0) {
                    kernels::packRows(K.data(), N, D, size_t(D), &w.k[at * w.kStride]);
                    kernels::packColumns(V.data(), D, N, size_t(D), &w.v[at * w.vStride]);
                }
            }
        windowCache = std::move(w);
    }

    // Attention weights w[0..count) of the tracked page's tokens from `position` on, added to
    // `mass` (positions outside the page left out).
    void addMassRun(std::vector<float>& mass, int64_t position, const float* w, int count) const {
        const int64_t v0 = position - trackedPagePos0;
        const int64_t from = std::max<int64_t>(0, -v0), to = std::min<int64_t>(count, int64_t(mass.size()) - v0);
        if (from < to) kernels::addTo(mass.data() + (v0 + from), w + from, size_t(to - from));
    }

    // Feeds draft token i for good: the bookkeeping step() does, with the keys, values and gate
    // query the draft computed for it.
    Status commitDraftToken(const Draft& dr, int i, int token, bool gateRefreshed) {
        placeLineEnd(token);
        if (position != dr.pos[size_t(i)]) return Status(ErrorCode::Internal, "draft: a token's position changed");
        auto id = generatedBlock();
        if (!id) return id.status();
        Block& b = blocks[size_t(*id)];
        const int t = b.count;
        ++generated;
        if (gateRefreshed) stepsSinceGate = 0;
        ++stepsSinceGate;
        if (gateRefreshed && dr.selections[size_t(i)].size() == selection.size()) selection = dr.selections[size_t(i)];
        const float* src = dr.own[size_t(i)].host.data();  // keys already rotated at the token's position
        for (int l = 0; l < c.numLayers; ++l)
            for (int g = 0; g < c.numKvHeads; ++g)
                storeKv(b, l, g, t, src + kIndex(l, g, 0), src + halfFloats + kIndex(l, g, 0), true);
        b.count = std::max(b.count, t + 1);
        pushRecentQuery(dr.gateQueries[size_t(i)]);
        ++position;
        frontier = std::max(frontier, position);
        evictOldGenerated();
        lastPositions = dr.positions[size_t(i)];
        return Status::ok();
    }

    void computeLogits() {
        rmsnorm(x.data(), model->finalNorm.data(), h.data(), c.hiddenSize, c.rmsNormEps);
        applySplit(packedHead, h.data(), 1, logits.data());
    }

    // Y = X Wᵀ with W's rows in two halves (on panel boundaries), one per thread of `pairs`: each
    // output is the same sum either way.
    void applySplit(const PackedMatrix& w, const float* X, int T, float* Y) const {
        const int panels = (w.rows + kernels::kPanel - 1) / kernels::kPanel;
        const int mid = std::min(w.rows, (panels + 1) / 2 * kernels::kPanel);
        pairs->run([&](int half) {
            const int r0 = half == 0 ? 0 : mid, r1 = half == 0 ? mid : w.rows;
            if (r0 < r1)
                kernels::gemmPacked(w.data.data() + size_t(r0) * w.cols, r1 - r0, w.cols, X, size_t(w.cols), T, Y + r0,
                                    size_t(w.rows));
        });
    }

    void openDevice() {
        if (p.measureRecall || p.referencePrefill) {
            deviceStatus = Status(ErrorCode::InvalidArgument,
                                  std::string("decoder: the ") + stepDeviceName(p.device) +
                                      " device computes plain steps only (no recall probe or reference prefill)");
            return;
        }
        if (p.sharedDevice) {
            SharedDevice::Impl& sd = p.sharedDevice->impl();
            if (sd.model != model || sd.kind != p.device || p.mode != AttentionMode::SrSwa) {
                deviceStatus = Status(ErrorCode::InvalidArgument,
                                      "decoder: a shared device takes SR-SWA sessions on its own model and of its own kind");
                return;
            }
            device = sd.backend;
        } else {
            auto made = makeBackend(model, p.device, p.deviceBf16, p.deviceFaultAtStep);
            if (!made) {
                if (p.deviceFallback) deviceNotice = "decoding on the CPU: " + made.status().message();
                else deviceStatus = made.status();
                return;
            }
            device = std::move(*made);
        }
        if (p.mode == AttentionMode::SrSwa) stagingSlots = std::max(0, p.gatedPages) * std::max(0, p.blocksPerGatedPage);
        prefillSlots = (p.maxPageTokens + kBlockTokens - 1) / kBlockTokens;
        staged.assign(size_t(c.numLayers), std::vector<Staged>(size_t(stagingSlots)));
        if (p.sharedDevice) {
            deviceRange = prefillSlots + stagingSlots + capacitySlots;
            deviceBase = p.sharedDevice->impl().take(deviceRange);
        }
        devQueries.resize(size_t(c.numLayers) * c.numHeads * c.headDim);
        devKeys.resize(size_t(c.numLayers) * c.numKvHeads * c.headDim);
        devValues.resize(devKeys.size());
    }

    void markDirty(const Block& b) {
        if (!device || b.slot < 0) return;
        if (slotDirty.size() <= size_t(b.slot)) slotDirty.resize(size_t(capacitySlots), 0);
        slotDirty[size_t(b.slot)] = 1;
    }

    // The device's slots cover the pool, and every pool slot written on the host since is copied.
    Status syncDevice() {
        if (Status s = device->reserveSlots(poolBase() + capacitySlots); !s) return s;
        for (size_t slot = 0; slot < slotDirty.size(); ++slot)
            if (slotDirty[slot]) {
                if (Status s = device->writeSlot(poolBase() + int(slot), &pool[slot * blockFloats]); !s) return s;
                slotDirty[slot] = 0;
                ++deviceUploads;
            }
        return Status::ok();
    }

    // A layer's spans as the device's: a block in the pool by its slot, a block in host memory (a
    // gated page's) by the staging slot that holds its layer slice, copied there if not yet.
    Status toDevice(int layer, const std::vector<Span>& spans, std::vector<DeviceSpan>& out) {
        out.clear();
        std::vector<Staged>& st = staged[size_t(layer)];
        for (const Span& s : spans) {
            const Block& b = *s.block;
            int slot;
            if (b.slot >= 0) {
                slot = poolBase() + b.slot;
            } else {
                int at = -1;
                for (int j = 0; j < stagingSlots && at < 0; ++j)
                    if (st[size_t(j)].page == b.page && st[size_t(j)].pos0 == b.pos0) at = j;
                if (at < 0) {  // the least recently used staging slot not used by this step
                    for (int j = 0; j < stagingSlots; ++j)
                        if (st[size_t(j)].lastUse < deviceSteps && (at < 0 || st[size_t(j)].lastUse < st[size_t(at)].lastUse)) at = j;
                    if (at < 0 || b.host.empty())
                        return Status(ErrorCode::Internal, "decoder: more gated blocks than the device's staging slots");
                    if (Status e = device->writeSlotLayer(stagingSlot(at), layer, b.host.data()); !e) return e;
                    ++deviceUploads;
                    st[size_t(at)].page = b.page, st[size_t(at)].pos0 = b.pos0;
                }
                st[size_t(at)].lastUse = deviceSteps;
                slot = stagingSlot(at);
            }
            // Attention tracking: the current page's visual tokens, by their index on the page.
            const int32_t track = trackingStep && b.kind == BlockKind::Visual && b.page == currentPage
                                      ? int32_t(b.pos0 - trackedPagePos0 + s.first)
                                      : -1;
            out.push_back({int32_t(slot), int32_t(s.first), int32_t(s.last - s.first), s.queryPos, track});
        }
        return Status::ok();
    }

    // computePage() on the device: the same spans (the sinks framed, the page causally), the keys
    // and values into the blocks' device slots and back into the host's blocks with their Quest
    // bounds and the page's summary.
    Status devicePrefill(const std::vector<Block*>& into, const float* visual, int T, int64_t pos0, std::vector<float>* summary) {
        if (Status s = syncDevice(); !s) return s;  // the sinks the page attends to
        std::vector<int32_t> blockSlots;
        for (size_t i = 0; i < into.size(); ++i)
            blockSlots.push_back(into[i]->slot >= 0 ? poolBase() + into[i]->slot : scratchSlot(int(i)));  // host blocks: the scratch
        std::vector<DeviceSpan> spans;
        std::vector<int32_t> offsets{0};
        for (int t = 0; t < T; ++t) {
            std::vector<Span> sp = causalPageSpans(into, t);
            frame(sp, pos0 + t);
            for (const Span& s : sp) {
                const auto at = std::find(into.begin(), into.end(), s.block);
                const int32_t slot = at != into.end() ? blockSlots[size_t(at - into.begin())] : poolBase() + s.block->slot;
                if (at == into.end() && s.block->slot < 0) return Status(ErrorCode::Internal, "prefill: a sink outside the pool");
                spans.push_back({slot, int32_t(s.first), int32_t(s.last - s.first), s.queryPos});
            }
            offsets.push_back(int32_t(spans.size()));
        }
        const int KV = c.numKvHeads * c.headDim;
        std::vector<float> keys(size_t(c.numLayers) * T * KV), values(keys.size());
        DevicePrefillIO io;
        io.tokens = T, io.pos0 = pos0, io.visual = visual, io.blockSlots = blockSlots.data(), io.spans = spans.data();
        io.offsets = offsets.data(), io.keys = keys.data(), io.values = values.data();
        if (Status s = device->prefill(io, prefillSlots * kBlockTokens); !s) return s;
        for (int l = 0; l < c.numLayers; ++l)
            for (int t = 0; t < T; ++t)
                storePageToken(into, l, t, T, &keys[(size_t(l) * T + t) * KV], &values[(size_t(l) * T + t) * KV], summary, true);
        return Status::ok();
    }

    // The device failed `what`: the CPU takes over (the host holds every key and value it had).
    void dropDevice(const std::string& what, const Status& why) {
        deviceNotice = "decoding on the CPU from " + what + ": " + why.message();
        device.reset();
    }

    // step()'s forward pass on the device, in three parts (a batch on a shared device runs the
    // first and the last for each session around one device call): the token's block and the
    // device's copies made ready, and io filled; the spans of layer l as generatedSet() gives them
    // (query: the layer's pre-rotary query, or null when the spans are asked for up front); the
    // gate query, and the token's key and value back into the host's block with its Quest bounds.
    Status deviceBegin(const PendingStep& ps, DeviceStepIO& io, bool& perLayer) {
        Block& b = blocks[size_t(ps.blockId)];
        b.count = std::max(b.count, ps.t + 1);
        ++deviceSteps;
        if (Status s = syncDevice(); !s) return s;
        perLayer = ps.refresh;
        if (p.mode == AttentionMode::SrSwa)
            for (const Selection& sel : selection) perLayer = perLayer || sel.size() != gated.size();
        io = DeviceStepIO{};
        io.token = ps.input, io.slot = poolBase() + b.slot, io.t = ps.t, io.pos = b.pos0 + ps.t;
        io.logits = logits.data(), io.queries = devQueries.data(), io.keys = devKeys.data(), io.values = devValues.data();
        if (trackingStep) io.trackTokens = int(attendedMass.size()), io.attendedMass = attendedMass.data();
        return Status::ok();
    }
    Status deviceSpans(const PendingStep& ps, int l, const float* query, std::vector<DeviceSpan>& out) {
        std::vector<Span> spans = generatedSet(l, generated, query ? query : q.data(), position, selection[size_t(l)], ps.refresh);
        frame(spans, blocks[size_t(ps.blockId)].pos0 + ps.t);
        lastPositions[size_t(l)] = positionRuns(spans);
        return toDevice(l, spans, out);
    }
    void deviceEnd(PendingStep& ps) {
        Block& b = blocks[size_t(ps.blockId)];
        const int Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, D = c.headDim;
        for (int l = 0; l < c.numLayers; ++l) {
            addGateQuery(ps.gq, l, &devQueries[size_t(l) * Q]);
            for (int g = 0; g < c.numKvHeads; ++g)
                storeKv(b, l, g, ps.t, &devKeys[size_t(l) * KV + size_t(g) * D], &devValues[size_t(l) * KV + size_t(g) * D], true,
                        true);
        }
    }
    Status deviceForward(PendingStep& ps) {
        DeviceStepIO io;
        bool perLayer = false;
        if (Status s = deviceBegin(ps, io, perLayer); !s) return s;
        auto spansFor = [&](int l, const float* query, std::vector<DeviceSpan>& out) { return deviceSpans(ps, l, query, out); };
        if (Status s = device->step(io, spansFor, perLayer); !s) return s;
        deviceEnd(ps);
        return Status::ok();
    }

    void embed(int token) {
        const float* e = &model->embed[size_t(token) * c.hiddenSize];
        std::copy(e, e + c.hiddenSize, x.begin());
    }
};

DecodeSession::Impl::~Impl() {
    if (p.sharedDevice && deviceRange > 0) p.sharedDevice->impl().give(deviceBase, deviceRange);
}

DecodeSession::DecodeSession(std::shared_ptr<const ModelWeights> model, AttentionParams params)
    : d(std::make_unique<Impl>(std::move(model), params)), m_params(params) {}

DecodeSession::~DecodeSession() = default;

std::vector<int> DecodeSession::gatedPages() const { return d->gated; }

const std::string& DecodeSession::deviceNotice() const { return d->deviceNotice; }

int DecodeSession::pagesAdded() const { return int(d->pagePos0.size()); }

std::vector<float> DecodeSession::pageSummary(int page) const {
    const int r = page - d->gateFirstPage;
    if (r < 0 || r >= d->gatePages) return {};
    const size_t n = size_t(d->c.numLayers) * d->c.numKvHeads * d->c.headDim;
    return std::vector<float>(d->gateMeans.begin() + long(r * n), d->gateMeans.begin() + long((r + 1) * n));
}

int DecodeSession::lineEndsLeft() const {
    auto it = d->pageLineEnds.find(d->currentPage);
    return it == d->pageLineEnds.end() ? 0 : std::max(0, int(it->second.size()) - d->writtenLineEnds);
}

Status DecodeSession::begin(const std::vector<int>& sinkTokens) {
    if (!d->blocks.empty()) return Status(ErrorCode::InvalidArgument, "begin: the session has already started");
    if (!d->deviceStatus) return d->deviceStatus;
    if (sinkTokens.empty() || int(sinkTokens.size()) > m_params.maxSinkTokens)
        return Status(ErrorCode::InvalidArgument, "begin: between 1 and " + std::to_string(m_params.maxSinkTokens) + " sink tokens");
    d->sinkTokens = sinkTokens;
    for (size_t i = 0; i < sinkTokens.size(); ++i) {
        const int tok = sinkTokens[i];
        if (tok < 0 || tok >= d->c.vocabSize) return Status(ErrorCode::InvalidArgument, "begin: token out of range");
        if (d->sinkBlocks.empty() || d->blocks[size_t(d->sinkBlocks.back())].count == kBlockTokens) {
            auto id = d->newBlock(BlockKind::Sink, -1);
            if (!id) return id.status();
            d->sinkBlocks.push_back(*id);
        }
        const int id = d->sinkBlocks.back();
        const int t = d->blocks[size_t(id)].count;
        d->embed(tok);
        d->forward([&](int l) { d->attendLayer(l, id, t, [&](int) { return d->wholeBlocks(d->sinkBlocks); }); });
        ++d->position;
        d->frontier = std::max(d->frontier, d->position);
    }
    return Status::ok();
}

Status DecodeSession::addPage(int page, const float* visual, int count) {
    auto& c = d->c;
    if (d->sinkBlocks.empty()) return Status(ErrorCode::InvalidArgument, "addPage: begin() first");
    if (count <= 0 || count > m_params.maxPageTokens)
        return Status(ErrorCode::InvalidArgument, "addPage: a page brings 1 to " + std::to_string(m_params.maxPageTokens) + " visual tokens");
    if (!d->isNextPage(page))
        return Status(ErrorCode::InvalidArgument, "addPage: pages are fed once each, in order");
    if (c.visualTokenIds)
        for (int t = 0; t < count; ++t) {
            const float id = visual[size_t(t) * c.visualStride() + c.visualDim];
            if (!(id >= 0 && id < float(c.vocabSize)) || id != std::floor(id))
                return Status(ErrorCode::InvalidArgument,
                              "addPage: visual token " + std::to_string(t) + " carries no valid vocabulary id");
        }
    // SR-SWA: the page's inputs go to the spill file first (what the page is computed again from
    // once it is behind the window); if that fails, the session is left as it was.
    if (d->spilling)
        if (Status s = d->spillInputs(page, visual, count); !s) return s;
    // Generated tokens after this page start a new block (positions inside a block stay consecutive).
    if (!d->genBlocks.empty()) d->blocks[size_t(d->genBlocks.back())].sealed = true;
    std::vector<float> summary(size_t(c.numLayers) * c.numKvHeads * c.headDim, 0.f);
    if (c.pageAlignedPositions) d->position = std::max(d->position, d->frontier);
    d->pagePos0[page] = d->position;
    if (c.lineAlignedPositions()) {
        std::vector<int64_t>& ends = d->pageLineEnds[page];
        ends.clear();
        for (int t = 0; t < count; ++t)
            if (int(visual[size_t(t) * c.visualStride() + c.visualDim]) == c.visualLineEndTokenId)
                ends.push_back(d->position + t);
    }
    if (Status s = d->prefillPage(page, visual, count, summary); !s) return s;
    d->addGateSummary(page, summary);
    d->pageTokens[page] = count;
    d->pageFedSinceLastGen = true;
    return Status::ok();
}

Result<StepResult> DecodeSession::step(int inputToken) {
    auto ps = d->beginStep(inputToken);
    if (!ps) return ps.status();
    bool onDevice = false;
    if (d->device) {
        Status s = d->deviceForward(*ps);
        if (s) {
            onDevice = true;
        } else {
            if (!m_params.deviceFallback) return s;
            d->dropDevice("generated step " + std::to_string(d->generated - 1) + " (counted from 0)", s);
        }
    }
    if (!onDevice) {
        d->forward([&](int l) { d->stepAttention(l, *ps); });
    }
    return d->endStep(*ps, onDevice);
}

Result<std::vector<StepResult>> DecodeSession::stepBatch(const std::vector<DecodeSession*>& sessions,
                                                         const std::vector<int>& inputs) {
    if (sessions.empty() || sessions.size() != inputs.size())
        return Status(ErrorCode::InvalidArgument, "stepBatch: one input for each of one or more sessions");
    for (size_t i = 0; i < sessions.size(); ++i) {
        if (!sessions[i]) return Status(ErrorCode::InvalidArgument, "stepBatch: no session");
        if (sessions[i]->d->model != sessions[0]->d->model)
            return Status(ErrorCode::InvalidArgument, "stepBatch: the sessions run different models");
        if (std::find(sessions.begin(), sessions.begin() + long(i), sessions[i]) != sessions.begin() + long(i))
            return Status(ErrorCode::InvalidArgument, "stepBatch: a session appears twice");
        if (Status s = sessions[i]->d->checkStep(inputs[i]); !s) return s;
    }
    if (sessions.size() == 1) {
        auto r = sessions[0]->step(inputs[0]);
        if (!r) return r.status();
        return std::vector<StepResult>{*r};
    }
    std::vector<StepResult> results(sessions.size());
    // On the CPU: together. On a shared device: together there, those on one device. Otherwise
    // (a device of its own, attention tracking, alone on its shared device): each its own step().
    std::vector<size_t> onCpu, alone;
    std::map<StepBackend*, std::vector<size_t>> onShared;
    for (size_t i = 0; i < sessions.size(); ++i) {
        const Impl& si = *sessions[i]->d;
        if (!si.device) onCpu.push_back(i);
        else if (si.p.sharedDevice && !si.p.trackAttention) onShared[si.device.get()].push_back(i);
        else alone.push_back(i);
    }
    std::erase_if(onShared, [&](const auto& group) {
        if (group.second.size() > 1) return false;
        alone.push_back(group.second.front());
        return true;
    });
    for (size_t i : alone) {
        auto r = sessions[i]->step(inputs[i]);
        if (!r) return r.status();
        results[i] = *r;
    }
    // Begins the steps of sessions `which`.
    auto begin = [&](const std::vector<size_t>& which, std::vector<Impl*>& impls,
                     std::vector<Impl::PendingStep>& pending) -> Status {
        for (size_t i : which) {
            Impl& si = *sessions[i]->d;
            auto ps = si.beginStep(inputs[i]);
            if (!ps) return ps.status();
            impls.push_back(&si);
            pending.push_back(std::move(*ps));
        }
        return Status::ok();
    };
    // Their forward passes on the CPU, kPackedRows sessions a pass.
    auto onTheCpu = [](const std::vector<Impl*>& impls, std::vector<Impl::PendingStep>& pending) {
        for (size_t from = 0; from < impls.size(); from += size_t(Impl::kPackedRows)) {
            const size_t to = std::min(impls.size(), from + size_t(Impl::kPackedRows));
            Impl::forwardBatch(impls.data() + from, pending.data() + from, int(to - from));
        }
    };
    for (const auto& [backend, members] : onShared) {
        std::vector<Impl*> impls;
        std::vector<Impl::PendingStep> pending;
        if (Status s = begin(members, impls, pending); !s) return s;
        std::vector<DeviceStepIO> ios(members.size());
        bool perLayer = false;
        Status s;
        for (size_t j = 0; j < impls.size() && s; ++j) {
            bool mine = false;
            s = impls[j]->deviceBegin(pending[j], ios[j], mine);
            perLayer = perLayer || mine;
        }
        if (s)
            s = backend->stepBatch(ios, [&](int item, int l, const float* query, std::vector<DeviceSpan>& out) {
                return impls[size_t(item)]->deviceSpans(pending[size_t(item)], l, query, out);
            }, perLayer);
        if (s) {
            for (size_t j = 0; j < impls.size(); ++j) impls[j]->deviceEnd(pending[j]);
        } else {  // each session goes on with the CPU (the host holds every key and value)
            for (Impl* si : impls) {
                if (!si->p.deviceFallback) return s;
                si->dropDevice("generated step " + std::to_string(si->generated - 1) + " (counted from 0), in a batch", s);
            }
            onTheCpu(impls, pending);
        }
        for (size_t j = 0; j < impls.size(); ++j) results[members[j]] = impls[j]->endStep(pending[j], true);
    }
    std::vector<Impl*> impls;
    std::vector<Impl::PendingStep> pending;
    if (Status s = begin(onCpu, impls, pending); !s) return s;
    onTheCpu(impls, pending);
    for (size_t j = 0; j < impls.size(); ++j) results[onCpu[j]] = impls[j]->endStep(pending[j], true);
    return results;
}

Result<int> DecodeSession::stepDraft(const std::vector<int>& inputs,
                                     const std::function<bool(int, const StepResult&)>& onStep) {
    auto& c = d->c;
    if (inputs.empty()) return Status(ErrorCode::InvalidArgument, "stepDraft: no input");
    if (d->sinkBlocks.empty()) return Status(ErrorCode::InvalidArgument, "step: begin() first");
    for (int tok : inputs)
        if (tok < 0 || tok >= c.vocabSize) return Status(ErrorCode::InvalidArgument, "step: token out of range");
    // Where step() would place each input, and how many one pass may take: none after the first
    // may turn the page. The page gate falls due every gateRefreshSteps tokens; the pass assumes
    // it chooses the same pages again there, and checks that when it gets there (below).
    const bool srswa = m_params.mode == AttentionMode::SrSwa;
    const bool pageBreak0 = inputs[0] == c.pageBreakTokenId && d->generated > 0;
    const int page = d->currentPage + (pageBreak0 ? 1 : 0);
    int written = pageBreak0 ? 0 : d->writtenLineEnds;
    int64_t pos = d->position;
    int since = d->stepsSinceGate;
    const bool refresh0 = srswa && (pageBreak0 || since >= m_params.gateRefreshSteps || d->generated == 0);
    std::vector<int64_t> posOf;
    std::vector<bool> refreshAt;
    const int limit = std::min({int(inputs.size()), kMaxDraftTokens, std::max(1, m_params.recentTokens)});
    for (int i = 0; i < limit; ++i) {
        const int tok = inputs[size_t(i)];
        if (i > 0 && tok == c.pageBreakTokenId) break;
        if (c.lineAlignedPositions() && c.isLineEnd(tok)) {
            if (const int64_t at = d->lineEndPosition(page, written); at >= 0) pos = at;
            ++written;
        }
        posOf.push_back(pos++);
        const bool refresh = i == 0 ? refresh0 : srswa && since >= m_params.gateRefreshSteps;
        refreshAt.push_back(refresh);
        since = (refresh ? 0 : since) + 1;
    }
    const int k = int(posOf.size());
    if (k == 1 || m_params.measureRecall || m_params.referencePrefill || d->device) {
        // One token, a benchmark's probe, or a device's steps: the plain steps.
        const int n = k == 1 ? 1 : int(inputs.size());
        for (int i = 0; i < n; ++i) {
            auto r = step(inputs[size_t(i)]);
            if (!r) return r.status();
            if (!onStep(i, *r)) return i + 1;
        }
        return n;
    }
    // The first input is fed whatever the draft holds: its page turn and gate refresh happen now.
    if (pageBreak0) d->enterNextPage();
    d->offloadLeftPages();
    if (refresh0)
        if (Status s = d->refreshGate(); !s) return s;
    auto draft = d->computeDraft(inputs, posOf, refreshAt);
    if (!draft) return draft.status();
    for (int i = 0; i < k; ++i) {
        if (i > 0 && refreshAt[size_t(i)]) {
            // The gate falls due here, with the queries of the tokens fed so far: if it picks other
            // pages, this token and the rest were computed with the wrong ones and are not fed.
            const std::vector<int> assumed = d->gated;
            if (Status s = d->refreshGate(); !s) return s;
            if (d->gated != assumed) return i;
        }
        if (Status s = d->commitDraftToken(*draft, i, inputs[size_t(i)], refreshAt[size_t(i)]); !s) return s;
        const StepResult r{&draft->logits[size_t(i)], d->currentPage, draft->attended[size_t(i)]};
        if (!onStep(i, r)) return i + 1;
    }
    return k;
}

void DecodeSession::setRotaryCacheLimit(size_t positions) {
    d->setTrigEntries(positions);
}

SessionStats DecodeSession::stats() const {
    SessionStats s;
    const size_t blockBytes = d->blockFloats * sizeof(float);
    s.poolCapacityBytes = size_t(d->capacitySlots) * blockBytes;
    int used = 0;
    size_t host = 0;
    for (const auto& b : d->blocks) {
        used += b.slot >= 0;
        host += b.host.size() * sizeof(float);
    }
    for (const auto& [page, gp] : d->gatedCache)
        for (const auto& b : gp.blocks) host += b.host.size() * sizeof(float);
    s.poolUsedBytes = size_t(used) * blockBytes;
    s.hostBytes = host;
    s.spillBytes = size_t(d->spill.size());
    s.recomputedPages = d->recomputedPages;
    s.computedPages = d->computedPages;
    s.attendedTokens = d->lastPositions.empty() ? 0 : d->runsTotal(d->lastPositions[0]);
    s.position = d->position;
    s.currentPage = d->currentPage;
    s.deviceBytes = d->device ? d->device->deviceBytes() : 0;
    s.deviceUploadBlocks = d->deviceUploads;
    return s;
}

std::vector<std::vector<int64_t>> DecodeSession::lastAttendedPositions() const {
    std::vector<std::vector<int64_t>> out;
    for (const auto& runs : d->lastPositions) {
        auto& layer = out.emplace_back();
        for (const auto& [first, count] : runs)
            for (int t = 0; t < count; ++t) layer.push_back(first + t);
    }
    return out;
}
const RecallStats& DecodeSession::recall() const { return d->recall; }
void DecodeSession::clearRecall() { d->recall.samples.clear(); }
void DecodeSession::setRecallProbe(bool on) { d->recallProbe = on; }

double RecallStats::mean() const {
    if (samples.empty()) return 0;
    return std::accumulate(samples.begin(), samples.end(), 0.0) / double(samples.size());
}

double RecallStats::percentile(double pct) const {
    if (samples.empty()) return 0;
    std::vector<double> v = samples;
    const size_t k = std::min(v.size() - 1, size_t(pct / 100.0 * double(v.size())));
    std::nth_element(v.begin(), v.begin() + long(k), v.end());
    return v[k];
}

int GreedySampler::pick(const std::vector<float>& logits) const {
    std::vector<char> banned(logits.size(), 0);
    const int n = m_opt.noRepeatNgram;
    const int len = int(m_history.size());
    if (n > 0 && len >= n - 1) {
        // Every earlier occurrence of the last n-1 tokens bans the token that followed it.
        const int from = std::max(0, len - m_opt.ngramWindow);
        for (int s = from; s + n - 1 < len; ++s) {
            bool same = true;
            for (int j = 0; j < n - 1 && same; ++j) same = m_history[size_t(s + j)] == m_history[size_t(len - (n - 1) + j)];
            if (same) banned[size_t(m_history[size_t(s + n - 1)])] = 1;
        }
    }
    int best = -1;
    for (size_t i = 0; i < logits.size(); ++i)
        if (!banned[i] && (best < 0 || logits[i] > logits[size_t(best)])) best = int(i);
    return best;
}

int GreedySampler::memory() const {
    return std::max({m_opt.ngramWindow, m_opt.noRepeatNgram, m_opt.loopMaxPeriod * m_opt.loopMinRepeats, m_opt.loopMinSpan, 8});
}

void GreedySampler::push(int token) {
    m_history.push_back(token);
    // The rules look back `memory()` tokens at most: older ones are dropped (in bulk, so pushing
    // stays amortised constant time) and a volume's history does not grow without bound.
    const size_t keep = size_t(memory());
    if (m_history.size() >= 2 * keep) {
        const size_t dropped = m_history.size() - keep;
        m_history.erase(m_history.begin(), m_history.begin() + long(dropped));
        m_pageStart = m_pageStart > dropped ? m_pageStart - dropped : 0;
    }
}

bool GreedySampler::looping() const {
    const int len = int(m_history.size() - m_pageStart);
    for (int period = 1; period <= m_opt.loopMaxPeriod; ++period) {
        int need = period * m_opt.loopMinRepeats;
        if (need < 8) continue;
        need = std::max(need, m_opt.loopMinSpan);  // the repeats must cover this many tokens
        if (len < need) continue;
        bool periodic = true;
        const int* h = m_history.data() + m_pageStart;
        for (int i = len - need; i + period < len && periodic; ++i) periodic = h[i] == h[i + period];
        if (periodic) return true;
    }
    return false;
}

}  // namespace quire::decoder

namespace quire::decoder {
namespace {

class Writer {
public:
    template <typename T>
    void put(const T& v) { m_out.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
    void putFloats(const std::vector<float>& v) {
        put(uint64_t(v.size()));
        m_out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    }
    std::string take() { return std::move(m_out); }

private:
    std::string m_out;
};

class Reader {
public:
    explicit Reader(const std::string& s) : m_s(s) {}
    template <typename T>
    bool get(T& v) {
        if (m_pos + sizeof(T) > m_s.size()) return false;
        std::memcpy(&v, m_s.data() + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return true;
    }
    bool getFloats(std::vector<float>& v, uint64_t maxCount) {
        uint64_t n = 0;
        if (!get(n) || n > maxCount || m_pos + n * sizeof(float) > m_s.size()) return false;
        v.resize(size_t(n));
        if (n > 0) std::memcpy(v.data(), m_s.data() + m_pos, size_t(n) * sizeof(float));  // an empty vector's data() may be null
        m_pos += size_t(n) * sizeof(float);
        return true;
    }

private:
    const std::string& m_s;
    size_t m_pos = 0;
};

// "QDS3"; QDS2 lacked the token selector's choice (restored without it, the selector chooses at the
// next step; the reader saves at page ends, where the next step chooses anyway); QDS1 lacked the
// line-end count.
constexpr uint32_t kStateMagic = 0x51445333, kStateMagic2 = 0x51445332;

}  // namespace

std::string DecodeSession::saveState() const {
    const auto& c = d->c;
    Writer w;
    w.put(kStateMagic);
    for (int v : {c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, int(m_params.mode),
                  m_params.recentTokens, m_params.windowBefore, m_params.windowAfter})
        w.put(int32_t(v));
    w.put(int64_t(d->position));
    w.put(int64_t(d->generated));
    w.put(int32_t(d->currentPage));
    w.put(int32_t(d->stepsSinceGate));
    w.put(int32_t(d->recentQueryNext));
    w.put(uint32_t(d->sinkTokens.size()));
    for (int t : d->sinkTokens) w.put(int32_t(t));
    w.put(uint32_t(d->pagePos0.size()));
    for (const auto& [page, pos0] : d->pagePos0) {
        w.put(int32_t(page));
        w.put(int64_t(pos0));
        w.put(int32_t(d->pageTokens.at(page)));
    }
    w.put(uint32_t(d->gated.size()));
    for (int g : d->gated) w.put(int32_t(g));
    w.put(uint32_t(d->recentQueries.size()));
    for (const auto& r : d->recentQueries) w.putFloats(r);
    w.put(uint32_t(d->genBlocks.size()));
    for (int id : d->genBlocks) {
        const Block& b = d->blocks[size_t(id)];
        w.put(int64_t(b.pos0));
        w.put(int64_t(b.genIndex0));
        w.put(int32_t(b.count));
        w.put(int32_t(b.page));
        w.put(uint8_t(b.sealed));
        const float* data = d->data(b);
        w.putFloats(std::vector<float>(data, data + d->blockFloats));
        w.putFloats(b.kMin);
        w.putFloats(b.kMax);
    }
    w.put(int32_t(d->writtenLineEnds));
    w.put(uint32_t(d->selection.size()));
    for (const auto& layer : d->selection) {
        w.put(uint32_t(layer.size()));
        for (const auto& [page, ids] : layer) {
            w.put(int32_t(page));
            w.put(uint32_t(ids.size()));
            for (int id : ids) w.put(int32_t(id));
        }
    }
    return w.take();
}

Result<std::unique_ptr<DecodeSession>> DecodeSession::restore(std::shared_ptr<const ModelWeights> model,
                                                               AttentionParams params, const std::string& state,
                                                               const PageProvider& pages) {
    const ModelConfig c = model->config;
    auto bad = [](const std::string& why) { return Status(ErrorCode::Corrupt, "decoder state: " + why); };
    Reader r(state);
    uint32_t magic = 0;
    if (!r.get(magic) || (magic != kStateMagic && magic != kStateMagic2)) return bad("not a saved decoder state");
    for (int want : {c.vocabSize, c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, int(params.mode),
                     params.recentTokens, params.windowBefore, params.windowAfter}) {
        int32_t v = 0;
        if (!r.get(v) || v != want) return bad("saved with another model or attention settings");
    }
    int64_t position = 0, generated = 0;
    int32_t currentPage = 0, stepsSinceGate = 0, recentNext = 0;
    uint32_t nSinks = 0;
    if (!r.get(position) || !r.get(generated) || !r.get(currentPage) || !r.get(stepsSinceGate) || !r.get(recentNext) ||
        !r.get(nSinks) || nSinks > uint32_t(params.maxSinkTokens))
        return bad("truncated");
    // Positions and counters far beyond any volume (2^40 tokens) are damage: refused before any
    // arithmetic on them can overflow.
    constexpr int64_t kMaxPosition = int64_t(1) << 40;
    auto inRange = [&](int64_t v) { return v >= 0 && v < kMaxPosition; };
    if (currentPage < 0 || !inRange(generated) || !inRange(position)) return bad("page pointer out of range");  // before pages are placed by it
    std::vector<int> sinks(nSinks);
    for (auto& t : sinks) {
        int32_t v;
        if (!r.get(v)) return bad("truncated");
        t = v;
    }
    auto session = std::make_unique<DecodeSession>(model, params);
    if (Status s = session->begin(sinks); !s) return s;
    Impl& d = *session->d;
    const uint64_t qFloats = uint64_t(c.numLayers) * c.numKvHeads * c.headDim;  // a gate query or summary
    uint32_t nPages = 0;
    if (!r.get(nPages)) return bad("truncated");
    for (uint32_t i = 0; i < nPages; ++i) {
        int32_t page, count;
        int64_t pos0;
        if (!r.get(page) || !r.get(pos0) || !r.get(count)) return bad("truncated");
        if (page < 0 || count < 1 || count > params.maxPageTokens || !inRange(pos0)) return bad("a page is out of range");
        auto visual = pages(page);
        if (!visual) return visual.status();
        const size_t inputs = size_t(count) * c.visualStride(), summary = size_t(qFloats);
        if (visual->size() != inputs && visual->size() != inputs + summary)
            return bad("page " + std::to_string(page) + " now has a different number of visual tokens");
        if (!d.isNextPage(page)) return bad("pages out of order");
        d.position = pos0;
        d.currentPage = currentPage;
        if (d.spilling && page < currentPage - params.windowBefore && visual->size() == inputs + summary) {
            // Behind the window with its summary: nothing to compute until the gate picks it.
            const float* s = visual->data() + inputs;
            if (!std::all_of(s, s + summary, [](float v) { return std::isfinite(v); }))
                return bad("page " + std::to_string(page) + " has a damaged summary");
            if (Status st = d.addSpilledPage(page, visual->data(), count, pos0, std::vector<float>(s, s + summary)); !st)
                return st;
            continue;
        }
        if (Status s = session->addPage(page, visual->data(), count); !s) return s;
        // Pages behind the window leave the pool at once, as they had when the state was saved.
        d.offloadLeftPages();
    }
    // Every count and index is checked against what the session holds: a damaged project must give
    // a refusal, never a huge allocation or an index out of range later.
    const int lastPage = d.pagePos0.empty() ? 0 : d.pagePos0.rbegin()->first;
    if (currentPage > lastPage + 1) return bad("page pointer out of range");
    uint32_t nGated = 0;
    if (!r.get(nGated) || nGated > uint32_t(std::max(0, params.gatedPages))) return bad("gate state does not match");
    d.gated.resize(nGated);
    for (auto& g : d.gated) {
        int32_t v;
        if (!r.get(v)) return bad("truncated");
        if (!d.pagePos0.count(v)) return bad("the gate holds a page the state does not have");
        g = v;
    }
    uint32_t nQueries = 0;
    if (!r.get(nQueries) || nQueries != d.recentQueries.size()) return bad("gate state does not match");
    for (auto& q : d.recentQueries)
        if (!r.getFloats(q, qFloats)) return bad("truncated");
        else if (!q.empty() && q.size() != qFloats) return bad("gate state does not match");
    if (recentNext < 0 || recentNext >= int(d.recentQueries.size())) return bad("gate state does not match");
    d.currentPage = currentPage;
    d.offloadLeftPages();
    if (Status s = d.materializeGated(); !s) return s;
    uint32_t nGen = 0;
    if (!r.get(nGen)) return bad("truncated");
    for (uint32_t i = 0; i < nGen; ++i) {
        int64_t pos0, genIndex0;
        int32_t count, page;
        uint8_t sealed;
        if (!r.get(pos0) || !r.get(genIndex0) || !r.get(count) || !r.get(page) || !r.get(sealed)) return bad("truncated");
        if (count < 1 || count > kBlockTokens || page < 0 || !inRange(genIndex0) || !inRange(pos0))
            return bad("a generated block is out of range");
        auto id = d.newBlock(BlockKind::Generated, page);
        if (!id) return id.status();
        Block& b = d.blocks[size_t(*id)];
        b.pos0 = pos0, b.genIndex0 = genIndex0, b.count = count, b.sealed = sealed != 0;
        std::vector<float> data;
        if (!r.getFloats(data, d.blockFloats) || data.size() != d.blockFloats || !r.getFloats(b.kMin, qFloats) ||
            !r.getFloats(b.kMax, qFloats) || b.kMin.size() != qFloats || b.kMax.size() != qFloats)
            return bad("truncated");
        std::copy(data.begin(), data.end(), d.data(b));
        d.markDirty(b);
        d.genBlocks.push_back(*id);
    }
    d.position = position;
    d.frontier = position;
    for (const Block& b : d.blocks)
        if (b.count > 0) d.frontier = std::max(d.frontier, b.pos0 + b.count);
    d.generated = generated;
    d.stepsSinceGate = stepsSinceGate;
    d.recentQueryNext = recentNext;
    int32_t writtenLineEnds = 0;
    if (!r.get(writtenLineEnds) || writtenLineEnds < 0) return bad("truncated");
    d.writtenLineEnds = writtenLineEnds;
    if (magic == kStateMagic) {
        uint32_t nLayers = 0;
        if (!r.get(nLayers) || nLayers != d.selection.size()) return bad("selector state does not match");
        for (auto& layer : d.selection) {
            uint32_t nPages = 0;
            if (!r.get(nPages) || nPages > d.gated.size()) return bad("selector state does not match");
            for (uint32_t i = 0; i < nPages; ++i) {
                int32_t page = 0;
                uint32_t nIds = 0;
                if (!r.get(page) || !r.get(nIds)) return bad("truncated");
                if (std::find(d.gated.begin(), d.gated.end(), page) == d.gated.end())
                    return bad("the token selector holds a page the gate does not");
                const size_t blocksOfPage = d.gatedPageBlocks(page).size();
                if (nIds > blocksOfPage) return bad("selector state does not match");
                std::vector<int> ids(nIds);
                for (int& id : ids) {
                    int32_t v = 0;
                    if (!r.get(v)) return bad("truncated");
                    if (v < 0 || size_t(v) >= blocksOfPage) return bad("the token selector holds a block out of range");
                    id = v;
                }
                layer.push_back({page, std::move(ids)});
            }
        }
    }
    return session;
}

}  // namespace quire::decoder
