// Elementwise fusion. Paddle's exported graphs spell every activation as a run of full-tensor
// operators (a learnable affine is Mul then Add; hard-swish is Add, Clip, Mul, Div), and on the
// recognizer's wide line batches each such pass is a trip through memory: before fusion, Add and
// Mul alone took a third of a page's time. A chain runs all its steps on a cache-sized chunk.
#include <algorithm>
#include <map>

#include "nn/graph.h"
#include "core/simd.h"

namespace quire::nn {
namespace {

struct Links {
    std::vector<int> consumers;        // per value id
    std::map<int, size_t> producer;    // value id → node index
};

Links linksOf(const Graph& g) {
    Links l;
    l.consumers.assign(g.valueNames.size(), 0);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        for (int id : g.nodes[k].in)
            if (id >= 0) ++l.consumers[size_t(id)];
        for (int id : g.nodes[k].out) l.producer[id] = k;
    }
    for (int id : g.outputs) l.consumers[size_t(id)] += 1000;  // graph outputs are never fused away
    return l;
}

const Tensor* constantOf(const Graph& g, int id) { return id >= 0 ? g.constants[size_t(id)].get() : nullptr; }

bool scalarConst(const Graph& g, int id, float* value) {
    const Tensor* t = constantOf(g, id);
    if (!t || t->size() != 1) return false;
    *value = t->isInt ? float(t->i[0]) : t->f[0];
    return true;
}

// Turns one node into a single-input chain where possible.
bool toChain(const Graph& g, Node& n) {
    const bool isBinary = n.op == Op::Add || n.op == Op::Sub || n.op == Op::Mul || n.op == Op::Div;
    if (n.in.empty() || n.in[0] < 0 || (isBinary && (n.in.size() != 2 || n.in[1] < 0))) return false;
    std::vector<Micro> m;
    int input = -1;
    float c = 0;
    switch (n.op) {
    case Op::Relu: m.push_back({Micro::Relu}); input = n.in[0]; break;
    case Op::Sigmoid: m.push_back({Micro::Sigmoid}); input = n.in[0]; break;
    case Op::Sqrt: m.push_back({Micro::Sqrt}); input = n.in[0]; break;
    case Op::HardSigmoid: m.push_back({Micro::HardSigmoid, n.alpha, n.beta}); input = n.in[0]; break;
    case Op::Clip: {
        float lo = n.clipMin, hi = n.clipMax;
        if (!n.clipFromAttrs) {
            if (n.in.size() > 1 && n.in[1] >= 0 && !scalarConst(g, n.in[1], &lo)) return false;
            if (n.in.size() > 2 && n.in[2] >= 0 && !scalarConst(g, n.in[2], &hi)) return false;
        }
        m.push_back({Micro::Clip, lo, hi});
        input = n.in[0];
        break;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div: {
        const bool rightConst = scalarConst(g, n.in[1], &c) && !constantOf(g, n.in[0]);
        const bool leftConst = !rightConst && scalarConst(g, n.in[0], &c) && !constantOf(g, n.in[1]);
        if (!rightConst && !leftConst) return false;
        input = rightConst ? n.in[0] : n.in[1];
        if (n.op == Op::Add) m.push_back({Micro::AddC, c});
        else if (n.op == Op::Mul) m.push_back({Micro::MulC, c});
        else if (n.op == Op::Sub && rightConst) m.push_back({Micro::AddC, -c});
        else if (n.op == Op::Sub) m.push_back({Micro::MulC, -1.f}), m.push_back({Micro::AddC, c});
        else if (n.op == Op::Div && rightConst && c != 0.f) m.push_back({Micro::MulC, 1.f / c});
        else return false;  // c / x stays a division
        break;
    }
    default: return false;
    }
    n.op = Op::Chain;
    n.micro = std::move(m);
    n.in = {input};
    return true;
}

void dropMarked(Graph& g, std::vector<bool>& drop, int& removed) {
    std::vector<Node> kept;
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        if (drop[k]) ++removed;
        else kept.push_back(std::move(g.nodes[k]));
    }
    g.nodes = std::move(kept);
}

// Chain B reading Chain A's only output: A takes B's steps and output.
void mergeChains(Graph& g, int& removed) {
    Links l = linksOf(g);
    std::vector<bool> drop(g.nodes.size(), false);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        Node& b = g.nodes[k];
        if (b.op != Op::Chain || b.in.empty() || b.in[0] < 0) continue;
        auto it = l.producer.find(b.in[0]);
        if (it == l.producer.end() || drop[it->second]) continue;
        Node& a = g.nodes[it->second];
        if (a.op != Op::Chain || l.consumers[size_t(b.in[0])] != 1) continue;
        // b takes a's input and steps first; a disappears (b sits later, after every producer).
        std::vector<Micro> steps = a.micro;
        steps.insert(steps.end(), b.micro.begin(), b.micro.end());
        b.micro = std::move(steps);
        b.in = a.in;
        drop[it->second] = true;
    }
    dropMarked(g, drop, removed);
}

// Mul(x, Chain(x)) where the chain's output feeds only this Mul: one chain x ← x · f(x).
void fuseGates(Graph& g, int& removed) {
    Links l = linksOf(g);
    std::vector<bool> drop(g.nodes.size(), false);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        Node& m = g.nodes[k];
        if (m.op != Op::Mul || m.in.size() != 2) continue;
        for (int side = 0; side < 2; ++side) {
            const int gateId = m.in[size_t(side)], x = m.in[size_t(1 - side)];
            auto it = l.producer.find(gateId);
            if (it == l.producer.end() || drop[it->second]) continue;
            Node& c = g.nodes[it->second];
            if (c.op != Op::Chain || c.in[0] != x || l.consumers[size_t(gateId)] != 1) continue;
            Micro gate{Micro::SelfGate};
            gate.gate = c.micro;
            m.op = Op::Chain;
            m.micro = {gate};
            m.in = {x};
            drop[it->second] = true;
            break;
        }
    }
    dropMarked(g, drop, removed);
}

// The convolution whose output only chain `ch` reads, or null: where the passes below fold the
// chain's affine steps and then the rest of it.
Node* convReadOnlyBy(Graph& g, const Links& l, const Node& ch, const std::vector<bool>& drop) {
    if (ch.op != Op::Chain || ch.micro.empty() || ch.in.empty() || ch.in[0] < 0) return nullptr;
    auto it = l.producer.find(ch.in[0]);
    if (it == l.producer.end() || drop[it->second]) return nullptr;
    Node& conv = g.nodes[it->second];
    return conv.op == Op::Conv && l.consumers[size_t(ch.in[0])] == 1 ? &conv : nullptr;
}

// Leading MulC/AddC steps of a chain right after a convolution go into the convolution's weights.
void foldIntoConvs(Graph& g, int& removed) {
    Links l = linksOf(g);
    std::vector<bool> drop(g.nodes.size(), false);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        Node& ch = g.nodes[k];
        Node* found = convReadOnlyBy(g, l, ch, drop);
        if (!found) continue;
        Node& conv = *found;
        if (conv.in.size() < 2 || !constantOf(g, conv.in[1])) continue;
        if (constantOf(g, conv.in[1])->isInt || constantOf(g, conv.in[1])->rank() != 4) continue;
        if (conv.in.size() > 2 && conv.in[2] >= 0 && !constantOf(g, conv.in[2])) continue;
        size_t steps = 0;
        while (steps < ch.micro.size() && (ch.micro[steps].kind == Micro::MulC || ch.micro[steps].kind == Micro::AddC)) ++steps;
        if (steps == 0) continue;
        Tensor w = *constantOf(g, conv.in[1]);
        const int64_t M = w.shape[0];
        Tensor b = Tensor::floats({M});
        if (conv.in.size() > 2 && conv.in[2] >= 0) b = *constantOf(g, conv.in[2]);
        if (b.isInt || b.size() != M) continue;
        for (size_t s = 0; s < steps; ++s) {
            const Micro& mi = ch.micro[s];
            if (mi.kind == Micro::MulC) {
                for (float& v : w.f) v *= mi.a;
                for (float& v : b.f) v *= mi.a;
            } else {
                for (float& v : b.f) v += mi.a;
            }
        }
        const int wId = g.id(g.valueNames[size_t(conv.in[1])] + "#affine" + std::to_string(k));
        const int bId = g.id(g.valueNames[size_t(conv.out[0])] + "#affine_bias");
        g.constants.resize(g.valueNames.size());
        g.constants[size_t(wId)] = std::make_shared<Tensor>(std::move(w));
        g.constants[size_t(bId)] = std::make_shared<Tensor>(std::move(b));
        conv.in = {conv.in[0], wId, bId};
        ch.micro.erase(ch.micro.begin(), ch.micro.begin() + long(steps));
        if (ch.micro.empty()) {  // the chain was only an affine: the convolution writes its output
            conv.out = ch.out;
            drop[k] = true;
        }
        l.consumers.resize(g.valueNames.size(), 0);
    }
    dropMarked(g, drop, removed);
}

// A chain that is a convolution's only reader becomes the convolution's epilogue: it runs on each
// band of outputs while that is in cache (cpu::conv2d), not as a pass of its own over the tensor.
void fuseConvEpilogues(Graph& g, int& removed) {
    Links l = linksOf(g);
    std::vector<bool> drop(g.nodes.size(), false);
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        Node& ch = g.nodes[k];
        Node* conv = convReadOnlyBy(g, l, ch, drop);
        if (!conv || !conv->micro.empty() || conv->out.size() != 1) continue;
        conv->micro = std::move(ch.micro);
        conv->out = ch.out;
        drop[k] = true;
    }
    dropMarked(g, drop, removed);
}

template <typename F>
void each(float* x, int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i) x[i] = f(x[i]);
}

QUIRE_CLONES void runSteps(const std::vector<Micro>& chain, float* x, int64_t n, float* scratch) {
    for (const Micro& m : chain) {
        const float a = m.a, b = m.b;
        switch (m.kind) {
        case Micro::MulC: each(x, n, [a](float v) { return v * a; }); break;
        case Micro::AddC: each(x, n, [a](float v) { return v + a; }); break;
        case Micro::Clip: each(x, n, [a, b](float v) { return std::min(std::max(v, a), b); }); break;
        case Micro::Relu: each(x, n, [](float v) { return v > 0.f ? v : 0.f; }); break;
        case Micro::Sigmoid: each(x, n, [](float v) { return 1.f / (1.f + std::exp(-v)); }); break;
        case Micro::HardSigmoid: each(x, n, [a, b](float v) { return std::min(std::max(a * v + b, 0.f), 1.f); }); break;
        case Micro::Sqrt: each(x, n, [](float v) { return std::sqrt(v); }); break;
        case Micro::SelfGate:
            std::copy(x, x + n, scratch);
            runSteps(m.gate, scratch, n, scratch + n);
            for (int64_t i = 0; i < n; ++i) x[i] *= scratch[i];
            break;
        }
    }
}

// Hard-swish before its division, then an affine (Paddle's x·clip(x + 3, 0, 6), /6, learnable
// scale and shift: the chain after most of the recognizer's convolutions), in one pass instead of
// six; the same operations in the same order, so the same floats.
bool isHardSwishAffine(const std::vector<Micro>& c) {
    return c.size() == 4 && c[0].kind == Micro::SelfGate && c[0].gate.size() == 2 && c[0].gate[0].kind == Micro::AddC &&
           c[0].gate[1].kind == Micro::Clip && c[1].kind == Micro::MulC && c[2].kind == Micro::MulC &&
           c[3].kind == Micro::AddC;
}

QUIRE_CLONES void hardSwishAffine(const std::vector<Micro>& c, float* x, int64_t n) {
    const float shift = c[0].gate[0].a, lo = c[0].gate[1].a, hi = c[0].gate[1].b;
    const float m1 = c[1].a, m2 = c[2].a, add = c[3].a;
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = v * std::min(std::max(v + shift, lo), hi) * m1 * m2 + add;
    }
}

int gateDepth(const std::vector<Micro>& chain) {
    int d = 0;
    for (const auto& m : chain)
        if (m.kind == Micro::SelfGate) d = std::max(d, 1 + gateDepth(m.gate));
    return d;
}

}  // namespace

void runChain(const std::vector<Micro>& chain, float* x, int64_t n) {
    if (isHardSwishAffine(chain)) return hardSwishAffine(chain, x, n);
    constexpr int64_t kChunk = 2048;  // 8 KB: the chunk and its gate scratch stay in L1
    // One buffer per thread: convolution epilogues call this once per channel of a band.
    thread_local std::vector<float> scratch;
    const size_t need = size_t(kChunk * std::max(1, gateDepth(chain)));
    if (scratch.size() < need) scratch.resize(need);
    for (int64_t o = 0; o < n; o += kChunk) runSteps(chain, x + o, std::min(kChunk, n - o), scratch.data());
}

Tensor conv2dWithChain(const Tensor& x, const Tensor& w, const float* bias, const ConvShape& s,
                       const std::vector<Micro>& chain) {
    const cpu::Epilogue epilogue = [&chain](float* run, int64_t count) { runChain(chain, run, count); };
    return cpu::conv2d(x, w, bias, s, chain.empty() ? nullptr : &epilogue);
}

int fuseElementwise(Graph& g) {
    int removed = 0;
    for (auto& n : g.nodes) toChain(g, n);
    mergeChains(g, removed);
    fuseGates(g, removed);
    mergeChains(g, removed);
    foldIntoConvs(g, removed);
    fuseConvEpilogues(g, removed);
    return removed;
}

}  // namespace quire::nn
