// quire::cuda::DecoderStep against plain loops on the host: generated weights, a pool of random
// keys and values, spans over it with several query positions (the position frame) and partial
// blocks; steps run as one captured graph (spans known up front, replayed with other tokens,
// positions and span counts) and layer by layer (spans asked for with each layer's query); the
// pool grown in between (content kept, graph captured again); a batch of sequences in one step. Logits, queries, keys and values
// within 1e-3 relative (fp32 weights) or 3e-2 (bf16); any NaN fails. Skips without a GPU. Plain
// C++ (no Qt), so it builds on the GPU machine beside the op checks (tools/gpu-check.sh).
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "check_util.h"
#include "quire_cuda/decoder_step.h"
#include "quire_cuda/device.h"

using namespace quire::cuda;
using namespace quire::cuda::check;

namespace {

constexpr int kBlockTokens = 16;
int g_passed = 0, g_failed = 0;

struct Model {
    DecoderShape c;
    std::vector<float> embed, finalNorm, head, visualW, visualB, evidenceGain;
    struct Layer {
        std::vector<float> attnNorm, wq, wk, wv, wo, mlpNorm, wGate, wUp, wDown;
    };
    std::vector<Layer> layers;
    DecoderHostWeights host() const {
        DecoderHostWeights w;
        w.embed = embed.data(), w.finalNorm = finalNorm.data(), w.head = head.data();
        w.visualW = visualW.data(), w.visualB = visualB.data();
        w.evidenceGain = evidenceGain.empty() ? nullptr : evidenceGain.data();
        for (const Layer& L : layers)
            w.layers.push_back({L.attnNorm.data(), L.wq.data(), L.wk.data(), L.wv.data(), L.wo.data(), L.mlpNorm.data(),
                                L.wGate.data(), L.wUp.data(), L.wDown.data()});
        return w;
    }
};

std::vector<float> scaled(size_t n, uint32_t seed, float s) {
    auto v = randomVec(n, seed);
    for (auto& x : v) x *= s;
    return v;
}

Model makeModel(const DecoderShape& c) {
    Model m;
    m.c = c;
    const int H = c.hidden, Q = c.heads * c.headDim, KV = c.kvHeads * c.headDim, F = c.intermediate;
    uint32_t seed = 100;
    const float sh = 1.f / std::sqrt(float(H)), sq = 1.f / std::sqrt(float(Q)), sf = 1.f / std::sqrt(float(F));
    m.embed = scaled(size_t(c.vocab) * H, seed++, 1.f);
    m.finalNorm = scaled(size_t(H), seed++, 0.1f);
    for (auto& x : m.finalNorm) x += 1.f;
    m.head = scaled(size_t(c.vocab) * H, seed++, sh);
    m.visualW = scaled(size_t(H) * c.visualDim, seed++, 1.f / std::sqrt(float(c.visualDim)));
    m.visualB = scaled(size_t(H), seed++, 0.1f);
    if (c.evidenceIds) m.evidenceGain = scaled(size_t(c.evidenceIds) * H, 1000, 0.5f);  // its own seed: the rest as before
    for (int l = 0; l < c.layers; ++l) {
        Model::Layer L;
        L.attnNorm = std::vector<float>(size_t(H), 1.f), L.mlpNorm = std::vector<float>(size_t(H), 1.f);
        L.wq = scaled(size_t(Q) * H, seed++, sh), L.wk = scaled(size_t(KV) * H, seed++, sh), L.wv = scaled(size_t(KV) * H, seed++, sh);
        L.wo = scaled(size_t(H) * Q, seed++, sq), L.wGate = scaled(size_t(F) * H, seed++, sh), L.wUp = scaled(size_t(F) * H, seed++, sh);
        L.wDown = scaled(size_t(H) * F, seed++, sf);
        m.layers.push_back(std::move(L));
    }
    return m;
}

// The step in plain loops (double sums), on a host copy of the pool.
struct Reference {
    const Model& m;
    std::vector<float> pool;
    size_t halfFloats, blockFloats;
    explicit Reference(const Model& model) : m(model) {
        halfFloats = size_t(m.c.layers) * m.c.kvHeads * kBlockTokens * m.c.headDim;
        blockFloats = 2 * halfFloats;
    }
    size_t kIndex(int l, int g, int t) const { return ((size_t(l) * m.c.kvHeads + g) * kBlockTokens + t) * m.c.headDim; }
    void rotate(float* v, int64_t pos) const {
        const int D = m.c.headDim, half = D / 2;
        for (int i = 0; i < half; ++i) {
            const double a = double(pos) * std::pow(m.c.ropeTheta, -2.0 * i / D);
            const float cs = float(std::cos(a)), sn = float(std::sin(a)), x0 = v[i], x1 = v[i + half];
            v[i] = x0 * cs - x1 * sn, v[i + half] = x0 * sn + x1 * cs;
        }
    }
    void norm(const float* x, const float* w, float* out) const {
        double ss = 0;
        for (int i = 0; i < m.c.hidden; ++i) ss += double(x[i]) * x[i];
        const double r = 1.0 / std::sqrt(ss / m.c.hidden + m.c.rmsEps);
        for (int i = 0; i < m.c.hidden; ++i) out[i] = float(x[i] * r * w[i]);
    }
    static void matvec(const std::vector<float>& W, int rows, int cols, const float* x, float* y) {
        for (int r = 0; r < rows; ++r) {
            double s = 0;
            for (int i = 0; i < cols; ++i) s += double(W[size_t(r) * cols + i]) * x[i];
            y[r] = float(s);
        }
    }
    void step(int token, int slot, int t, int64_t pos, const std::vector<std::vector<AttentionSpan>>& spans,
              std::vector<float>& logits, std::vector<float>& queries, std::vector<float>& keys, std::vector<float>& values,
              std::vector<float>* mass = nullptr) {
        const DecoderShape& c = m.c;
        const int H = c.hidden, D = c.headDim, Q = c.heads * D, KV = c.kvHeads * D, F = c.intermediate, G = c.heads / c.kvHeads;
        std::vector<float> x(m.embed.begin() + long(token) * H, m.embed.begin() + long(token + 1) * H), h(static_cast<size_t>(H)),
            q(static_cast<size_t>(Q)), k(static_cast<size_t>(KV)), v(static_cast<size_t>(KV)), att(static_cast<size_t>(Q)), o(static_cast<size_t>(H)), g(static_cast<size_t>(F)),
            u(static_cast<size_t>(F)), qr(static_cast<size_t>(D));
        logits.assign(size_t(c.vocab), 0.f), queries.assign(size_t(c.layers) * Q, 0.f);
        keys.assign(size_t(c.layers) * KV, 0.f), values.assign(size_t(c.layers) * KV, 0.f);
        for (int l = 0; l < c.layers; ++l) {
            const Model::Layer& L = m.layers[size_t(l)];
            norm(x.data(), L.attnNorm.data(), h.data());
            matvec(L.wq, Q, H, h.data(), q.data()), matvec(L.wk, KV, H, h.data(), k.data()), matvec(L.wv, KV, H, h.data(), v.data());
            std::copy(q.begin(), q.end(), queries.begin() + long(l) * Q);
            for (int gi = 0; gi < c.kvHeads; ++gi) {
                rotate(&k[size_t(gi) * D], pos);
                std::copy_n(&k[size_t(gi) * D], D, &pool[size_t(slot) * blockFloats + kIndex(l, gi, t)]);
                std::copy_n(&v[size_t(gi) * D], D, &pool[size_t(slot) * blockFloats + halfFloats + kIndex(l, gi, t)]);
            }
            std::copy(k.begin(), k.end(), keys.begin() + long(l) * KV), std::copy(v.begin(), v.end(), values.begin() + long(l) * KV);
            for (int hh = 0; hh < c.heads; ++hh) {
                std::vector<double> w;
                for (const auto& s : spans[size_t(l)]) {
                    std::copy_n(&q[size_t(hh) * D], D, qr.begin());
                    rotate(qr.data(), s.queryPos);
                    for (int tt = s.first; tt < s.first + s.count; ++tt) {
                        double dot = 0;
                        for (int i = 0; i < D; ++i) dot += double(qr[size_t(i)]) * pool[size_t(s.block) * blockFloats + kIndex(l, hh / G, tt) + i];
                        w.push_back(dot / std::sqrt(double(D)));
                    }
                }
                double mx = -INFINITY, sum = 0;
                for (double s : w) mx = std::max(mx, s);
                for (double& s : w) sum += (s = std::exp(s - mx));
                size_t n = 0;
                std::vector<double> acc(size_t(D), 0.0);
                for (const auto& s : spans[size_t(l)])
                    for (int tt = s.first; tt < s.first + s.count; ++tt, ++n)
                        for (int i = 0; i < D; ++i)
                            acc[size_t(i)] += w[n] / sum * pool[size_t(s.block) * blockFloats + halfFloats + kIndex(l, hh / G, tt) + i];
                for (int i = 0; i < D; ++i) att[size_t(hh) * D + i] = float(acc[size_t(i)]);
                if (mass) {  // tracked tokens' weights, summed over heads and layers
                    size_t k = 0;
                    for (const auto& s : spans[size_t(l)])
                        for (int tt = 0; tt < s.count; ++tt, ++k)
                            if (s.track >= 0 && size_t(s.track + tt) < mass->size()) (*mass)[size_t(s.track + tt)] += float(w[k] / sum);
                }
            }
            matvec(L.wo, H, Q, att.data(), o.data());
            for (int i = 0; i < H; ++i) x[size_t(i)] += o[size_t(i)];
            norm(x.data(), L.mlpNorm.data(), h.data());
            matvec(L.wGate, F, H, h.data(), g.data()), matvec(L.wUp, F, H, h.data(), u.data());
            for (int i = 0; i < F; ++i) g[size_t(i)] = float(g[size_t(i)] / (1.0 + std::exp(-double(g[size_t(i)]))) * u[size_t(i)]);
            matvec(L.wDown, H, F, g.data(), o.data());
            for (int i = 0; i < H; ++i) x[size_t(i)] += o[size_t(i)];
        }
        norm(x.data(), m.finalNorm.data(), h.data());
        matvec(m.head, c.vocab, H, h.data(), logits.data());
    }
};

// The reference's prefill: the projector, then per layer every token's key and value into the
// page's slots before any token attends (causally, through its spans).
void referencePrefill(Reference& ref, const PrefillSpec& spec, std::vector<float>& keys, std::vector<float>& values) {
    const Model& m = ref.m;
    const DecoderShape& c = m.c;
    const int T = spec.tokens, H = c.hidden, D = c.headDim, Q = c.heads * D, KV = c.kvHeads * D, F = c.intermediate,
              G = c.heads / c.kvHeads, stride = c.visualStride();
    keys.assign(size_t(c.layers) * T * KV, 0.f), values.assign(keys.size(), 0.f);
    std::vector<float> X(size_t(T) * H), h(static_cast<size_t>(H)), q(size_t(T) * Q), k(static_cast<size_t>(KV)),
        v(static_cast<size_t>(KV)), att(static_cast<size_t>(Q)), o(static_cast<size_t>(H)), g(static_cast<size_t>(F)),
        u(static_cast<size_t>(F)), qr(static_cast<size_t>(D));
    for (int t = 0; t < T; ++t) {
        const float* row = spec.visual + size_t(t) * stride;
        float* x = &X[size_t(t) * H];
        Reference::matvec(m.visualW, H, c.visualDim, row, x);
        for (int i = 0; i < H; ++i) x[i] += m.visualB[size_t(i)];
        if (!c.visualTokenIds) continue;
        for (int i = 0; i < H; ++i) x[i] += m.embed[size_t(row[c.visualDim]) * H + i];  // its id, then its evidence ids
        for (int k = 0; k < c.evidenceIds; ++k)
            if (const float e = row[c.visualDim + 1 + k]; e >= 0)
                for (int i = 0; i < H; ++i) x[i] += m.evidenceGain[size_t(k) * H + i] * m.embed[size_t(e) * H + i];
    }
    for (int l = 0; l < c.layers; ++l) {
        const Model::Layer& L = m.layers[size_t(l)];
        for (int t = 0; t < T; ++t) {
            ref.norm(&X[size_t(t) * H], L.attnNorm.data(), h.data());
            Reference::matvec(L.wq, Q, H, h.data(), &q[size_t(t) * Q]);
            Reference::matvec(L.wk, KV, H, h.data(), k.data()), Reference::matvec(L.wv, KV, H, h.data(), v.data());
            std::copy(k.begin(), k.end(), keys.begin() + long((size_t(l) * T + t) * KV));
            std::copy(v.begin(), v.end(), values.begin() + long((size_t(l) * T + t) * KV));
            const size_t base = size_t(spec.blockSlots[t / kBlockTokens]) * ref.blockFloats;
            for (int gi = 0; gi < c.kvHeads; ++gi) {
                ref.rotate(&k[size_t(gi) * D], spec.pos0 + t);
                std::copy_n(&k[size_t(gi) * D], D, &ref.pool[base + ref.kIndex(l, gi, t % kBlockTokens)]);
                std::copy_n(&v[size_t(gi) * D], D, &ref.pool[base + ref.halfFloats + ref.kIndex(l, gi, t % kBlockTokens)]);
            }
        }
        for (int t = 0; t < T; ++t) {
            for (int hh = 0; hh < c.heads; ++hh) {
                std::vector<double> w;
                for (int si = spec.offsets[t]; si < spec.offsets[t + 1]; ++si) {
                    const AttentionSpan& s = spec.spans[si];
                    std::copy_n(&q[size_t(t) * Q + size_t(hh) * D], D, qr.begin());
                    ref.rotate(qr.data(), s.queryPos);
                    for (int tt = s.first; tt < s.first + s.count; ++tt) {
                        double dot = 0;
                        for (int i = 0; i < D; ++i)
                            dot += double(qr[size_t(i)]) * ref.pool[size_t(s.block) * ref.blockFloats + ref.kIndex(l, hh / G, tt) + i];
                        w.push_back(dot / std::sqrt(double(D)));
                    }
                }
                double mx = -INFINITY, sum = 0;
                for (double x : w) mx = std::max(mx, x);
                for (double& x : w) sum += (x = std::exp(x - mx));
                std::vector<double> acc(static_cast<size_t>(D), 0.0);
                size_t n = 0;
                for (int si = spec.offsets[t]; si < spec.offsets[t + 1]; ++si) {
                    const AttentionSpan& s = spec.spans[si];
                    for (int tt = s.first; tt < s.first + s.count; ++tt, ++n)
                        for (int i = 0; i < D; ++i)
                            acc[size_t(i)] += w[n] / sum *
                                              ref.pool[size_t(s.block) * ref.blockFloats + ref.halfFloats + ref.kIndex(l, hh / G, tt) + i];
                }
                for (int i = 0; i < D; ++i) att[size_t(hh) * D + i] = float(acc[size_t(i)]);
            }
            float* x = &X[size_t(t) * H];
            Reference::matvec(L.wo, H, Q, att.data(), o.data());
            for (int i = 0; i < H; ++i) x[i] += o[size_t(i)];
            ref.norm(x, L.mlpNorm.data(), h.data());
            Reference::matvec(L.wGate, F, H, h.data(), g.data()), Reference::matvec(L.wUp, F, H, h.data(), u.data());
            for (int i = 0; i < F; ++i) g[size_t(i)] = float(g[size_t(i)] / (1.0 + std::exp(-double(g[size_t(i)]))) * u[size_t(i)]);
            Reference::matvec(L.wDown, H, F, g.data(), o.data());
            for (int i = 0; i < H; ++i) x[i] += o[size_t(i)];
        }
    }
}

// Spans for step `s`: per layer, a shuffled set of distinct slots (the step's own block, with
// tokens up to t, among them), some partial, and query positions from two frames.
std::vector<std::vector<AttentionSpan>> makeSpans(int layers, int slots, int ownSlot, int t, int64_t pos, int count,
                                                  uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::vector<AttentionSpan>> out(static_cast<size_t>(layers));
    for (int l = 0; l < layers; ++l) {
        std::vector<int> ids;
        for (int i = 0; i < slots; ++i)
            if (i != ownSlot) ids.push_back(i);
        std::shuffle(ids.begin(), ids.end(), rng);
        ids.resize(size_t(std::min<int>(count, int(ids.size()))));
        for (size_t i = 0; i < ids.size(); ++i) {
            const int first = int(rng() % 4), n = kBlockTokens - first - int(rng() % 3);
            out[size_t(l)].push_back({ids[i], first, n, i % 3 == 0 ? pos + 5000 : pos});
        }
        out[size_t(l)].push_back({ownSlot, 0, t + 1, pos});
    }
    return out;
}

void check(const std::string& name, bool ok, const std::string& detail) {
    if (ok) ++g_passed, std::printf("PASS %s\n", name.c_str());
    else ++g_failed, std::printf("FAIL %s: %s\n", name.c_str(), detail.c_str());
}

// Over 120 lines: one shape's checks share its weights and device (graph, layers, growth, prefill).
void runShape(const std::string& label, const DecoderShape& c, bool bf16) {
    const Model m = makeModel(c);
    std::string why;
    auto dev = DecoderStep::create(c, m.host(), bf16, &why);
    if (!dev) return check(label + " create", false, why);
    Reference ref(m);
    int slots = 24;
    std::string e = dev->reserveSlots(slots);
    if (!e.empty()) return check(label + " reserve", false, e);
    ref.pool = scaled(size_t(slots) * ref.blockFloats, 7, 1.f);
    for (int s = 0; s < slots; ++s)
        if (!(e = dev->writeSlot(s, &ref.pool[size_t(s) * ref.blockFloats])).empty()) return check(label + " write", false, e);
    const double tol = bf16 ? 3e-2 : 1e-3;
    const int Q = c.heads * c.headDim, KV = c.kvHeads * c.headDim;
    for (int step = 0; step < 12; ++step) {
        if (step == 6) {  // grow the pool: what it held stays, the graph is captured again
            const int more = 40;
            if (!(e = dev->reserveSlots(more)).empty()) return check(label + " grow", false, e);
            const auto extra = scaled(size_t(more - slots) * ref.blockFloats, 9, 1.f);
            ref.pool.insert(ref.pool.end(), extra.begin(), extra.end());
            for (int s = slots; s < more; ++s)
                if (!(e = dev->writeSlot(s, &ref.pool[size_t(s) * ref.blockFloats])).empty()) return check(label + " write", false, e);
            slots = more;
        }
        if (step == 3) {  // one layer of a block replaced, as a gated block's staging does
            const auto block = scaled(ref.blockFloats, 11, 1.f);
            const size_t per = size_t(c.kvHeads) * kBlockTokens * c.headDim, at = size_t(1) * per;
            if (!(e = dev->writeSlotLayer(2, 1, block.data())).empty()) return check(label + " layer", false, e);
            std::copy_n(block.begin() + long(at), per, ref.pool.begin() + long(2 * ref.blockFloats + at));
            std::copy_n(block.begin() + long(ref.halfFloats + at), per, ref.pool.begin() + long(2 * ref.blockFloats + ref.halfFloats + at));
        }
        const bool perLayer = step % 3 == 2;
        const int token = (step * 37 + 5) % c.vocab, own = step % 5, t = step % kBlockTokens;
        const int64_t pos = 100 + step * 3 + (step > 8 ? 40000 : 0);
        auto spans = makeSpans(c.layers, slots, own, t, pos, 4 + step % 7, uint32_t(step));
        // Odd steps track attention on every other span (as a reader's page), at distinct indices.
        const bool track = step % 2 == 1;
        const int trackTokens = track ? 16 * 12 : 0;
        if (track)
            for (auto& layer : spans)
                for (size_t i = 0; i < layer.size(); i += 2) layer[i].track = int32_t(16 * (i / 2));
        std::vector<float> wl, wq, wk, wv, wMass(size_t(trackTokens), 0.f), gMass(size_t(trackTokens), 0.f);
        ref.step(token, own, t, pos, spans, wl, wq, wk, wv, track ? &wMass : nullptr);
        std::vector<float> gl(wl.size()), gq(wq.size()), gk(wk.size()), gv(wv.size());
        std::vector<float> seenQuery;
        auto spansFor = [&](int l, const float* query, std::vector<AttentionSpan>& out) -> std::string {
            if (perLayer != (query != nullptr)) return "query given " + std::string(query ? "" : "not ") + "as asked";
            if (query) seenQuery.insert(seenQuery.end(), query, query + Q);
            out = spans[size_t(l)];
            return {};
        };
        e = dev->step(token, own, t, pos, spansFor, perLayer, gl.data(), gq.data(), gk.data(), gv.data(), trackTokens,
                      track ? gMass.data() : nullptr);
        const std::string what = label + " step " + std::to_string(step) + (perLayer ? " (layer by layer)" : " (graph)") +
                                 (track ? ", tracking attention" : "");
        if (!e.empty()) return check(what, false, e);
        const double el = maxRelErr(gl, wl), eq = maxRelErr(gq, wq), ek = maxRelErr(gk, wk), ev = maxRelErr(gv, wv);
        const double eSeen = perLayer ? maxRelErr(seenQuery, wq) : 0;
        const double eMass = track ? maxRelErr(gMass, wMass) : 0;
        char buf[240];
        std::snprintf(buf, sizeof buf, "logits %.2e queries %.2e keys %.2e values %.2e (layer queries %.2e, attention mass %.2e)",
                      el, eq, ek, ev, eSeen, eMass);
        check(what, el <= tol && eq <= tol && ek <= tol && ev <= tol && eSeen <= tol && eMass <= tol, buf);
        (void)KV;
    }
    // A batch of five sequences in one stepBatch (each its own slot, place in its block, position,
    // token and spans; none reads another's slot), against the reference's steps one by one:
    // spans asked for up front (the batch's graph captured), layer by layer with each sequence's
    // query, then up front again with other tokens, places and spans (the graph replayed); then
    // the three again with attention tracked on the odd sequences (a reader's, 12 · 16 tokens each).
    for (int round = 0; round < 6; ++round) {
        const bool perLayer = round % 3 == 1, tracking = round >= 3;
        constexpr int B = 5, kFirstOwn = 10;
        std::vector<BatchItem> items(B);
        std::vector<std::vector<std::vector<AttentionSpan>>> spans(B);
        std::vector<std::vector<float>> wl(B), wq(B), wk(B), wv(B), gl(B), gq(B), gk(B), gv(B), seen(B), wMass(B), gMass(B);
        for (int i = 0; i < B; ++i) {
            const int own = kFirstOwn + i, t = (3 * i + round) % kBlockTokens, token = (i * 11 + 3 + round) % c.vocab;
            const int64_t pos = 2000 + 100 * i + round + (i == 4 ? 50000 : 0);
            spans[size_t(i)] = makeSpans(c.layers, slots, own, t, pos, 3 + i, uint32_t(100 + i + 10 * round));
            for (auto& layer : spans[size_t(i)])
                std::erase_if(layer, [&](const AttentionSpan& sp) {
                    return sp.block >= kFirstOwn && sp.block < kFirstOwn + B && sp.block != own;
                });
            const bool track = tracking && i % 2 == 1;
            if (track) {
                for (auto& layer : spans[size_t(i)])
                    for (size_t s = 0; s < layer.size(); s += 2) layer[s].track = int32_t(16 * (s / 2));
                wMass[size_t(i)].assign(16 * 12, 0.f), gMass[size_t(i)].assign(16 * 12, -1.f);
            }
            ref.step(token, own, t, pos, spans[size_t(i)], wl[size_t(i)], wq[size_t(i)], wk[size_t(i)], wv[size_t(i)],
                     track ? &wMass[size_t(i)] : nullptr);
            gl[size_t(i)].resize(wl[size_t(i)].size()), gq[size_t(i)].resize(wq[size_t(i)].size());
            gk[size_t(i)].resize(wk[size_t(i)].size()), gv[size_t(i)].resize(wv[size_t(i)].size());
            items[size_t(i)] = {token, own, t, pos, gl[size_t(i)].data(), gq[size_t(i)].data(), gk[size_t(i)].data(), gv[size_t(i)].data(),
                                int(gMass[size_t(i)].size()), track ? gMass[size_t(i)].data() : nullptr};
        }
        auto spansFor = [&](int item, int l, const float* query, std::vector<AttentionSpan>& out) -> std::string {
            if (perLayer != (query != nullptr)) return "query given " + std::string(query ? "" : "not ") + "as asked";
            if (query) seen[size_t(item)].insert(seen[size_t(item)].end(), query, query + Q);
            out = spans[size_t(item)][size_t(l)];
            return {};
        };
        e = dev->stepBatch(items, spansFor, perLayer);
        const std::string what = label + " batch of 5" +
                                 (perLayer ? " (layer by layer)" : round % 3 == 0 ? " (graph captured)" : " (graph replayed)") +
                                 (tracking ? ", tracking attention on two" : "");
        if (!e.empty()) return check(what, false, e);
        double el = 0, eq = 0, ek = 0, ev = 0, eSeen = 0, eMass = 0;
        for (int i = 0; i < B; ++i) {
            el = std::max(el, maxRelErr(gl[size_t(i)], wl[size_t(i)])), eq = std::max(eq, maxRelErr(gq[size_t(i)], wq[size_t(i)]));
            ek = std::max(ek, maxRelErr(gk[size_t(i)], wk[size_t(i)])), ev = std::max(ev, maxRelErr(gv[size_t(i)], wv[size_t(i)]));
            if (perLayer) eSeen = std::max(eSeen, maxRelErr(seen[size_t(i)], wq[size_t(i)]));
            if (!wMass[size_t(i)].empty()) eMass = std::max(eMass, maxRelErr(gMass[size_t(i)], wMass[size_t(i)]));
        }
        char buf[240];
        std::snprintf(buf, sizeof buf, "logits %.2e queries %.2e keys %.2e values %.2e (layer queries %.2e, attention mass %.2e)",
                      el, eq, ek, ev, eSeen, eMass);
        check(what, el <= tol && eq <= tol && ek <= tol && ev <= tol && eSeen <= tol && eMass <= tol, buf);
    }
    // A page's prefill: 37 tokens (three blocks, the last partial) into slots 5, 9 and 13, each
    // token attending to two sink blocks (one framed elsewhere) and causally to the page; then a
    // step attending to the page reads what the prefill stored.
    {
        const int T = 37;
        const int64_t pos0 = 1000;
        const std::vector<int32_t> blockSlots = {5, 9, 13};
        // Rows of visualStride(): features, then (with ids) an id and the evidence ids, a third of them -1.
        const auto features = scaled(size_t(T) * c.visualDim, 13, 1.f);
        std::vector<float> visual;
        for (int t = 0; t < T; ++t) {
            visual.insert(visual.end(), features.begin() + long(t) * c.visualDim, features.begin() + long(t + 1) * c.visualDim);
            if (!c.visualTokenIds) continue;
            visual.push_back(float((t * 7 + 3) % c.vocab));
            for (int k = 0; k < c.evidenceIds; ++k) visual.push_back((t + k) % 3 == 2 ? -1.f : float((t * 5 + k) % c.vocab));
        }
        std::vector<AttentionSpan> spans;
        std::vector<int32_t> offsets{0};
        for (int t = 0; t < T; ++t) {
            spans.push_back({0, 0, 16, pos0 + t}), spans.push_back({1, 0, 4, pos0 + t - 200 * (t % 2)});
            for (int b = 0; b <= t / kBlockTokens; ++b)
                spans.push_back({blockSlots[size_t(b)], 0, b == t / kBlockTokens ? t % kBlockTokens + 1 : kBlockTokens, pos0 + t});
            offsets.push_back(int32_t(spans.size()));
        }
        PrefillSpec spec;
        spec.tokens = T, spec.pos0 = pos0, spec.visual = visual.data(), spec.blockSlots = blockSlots.data();
        spec.spans = spans.data(), spec.offsets = offsets.data();
        std::vector<float> wk, wv, gk(size_t(c.layers) * T * KV), gv(gk.size());
        referencePrefill(ref, spec, wk, wv);
        spec.keys = gk.data(), spec.values = gv.data();
        e = dev->prefill(spec, 64);
        if (!e.empty()) return check(label + " prefill", false, e);
        const double ek = maxRelErr(gk, wk), ev = maxRelErr(gv, wv);
        char buf[160];
        std::snprintf(buf, sizeof buf, "keys %.2e values %.2e", ek, ev);
        check(label + " prefill", ek <= tol && ev <= tol, buf);
        std::vector<std::vector<AttentionSpan>> after(static_cast<size_t>(c.layers));
        for (auto& sp : after) sp = {{0, 0, 16, pos0 + T}, {5, 0, 16, pos0 + T}, {9, 0, 16, pos0 + T}, {13, 0, 5, pos0 + T}, {3, 0, 1, pos0 + T}};
        std::vector<float> wl, wq, wk2, wv2;
        ref.step(9, 3, 0, pos0 + T, after, wl, wq, wk2, wv2);
        std::vector<float> gl(wl.size()), gq(wq.size()), gk2(wk2.size()), gv2(wv2.size());
        e = dev->step(9, 3, 0, pos0 + T,
                      [&](int l, const float*, std::vector<AttentionSpan>& out) {
                          out = after[size_t(l)];
                          return std::string();
                      },
                      false, gl.data(), gq.data(), gk2.data(), gv2.data());
        if (!e.empty()) return check(label + " step after the prefill", false, e);
        std::snprintf(buf, sizeof buf, "logits %.2e", maxRelErr(gl, wl));
        check(label + " step after the prefill", maxRelErr(gl, wl) <= tol, buf);
    }
    // A token or a span outside the pool is refused, not read.
    std::vector<float> l(size_t(c.vocab)), q(size_t(c.layers) * Q), k(size_t(c.layers) * KV), v(k.size());
    e = dev->step(c.vocab, 0, 0, 0, [](int, const float*, std::vector<AttentionSpan>&) { return std::string(); }, false,
                  l.data(), q.data(), k.data(), v.data());
    check(label + " refuses a token out of range", !e.empty(), "accepted");
    e = dev->step(1, 0, 0, 0,
                  [&](int, const float*, std::vector<AttentionSpan>& out) {
                      out = {{slots, 0, 4, 0}};
                      return std::string();
                  },
                  false, l.data(), q.data(), k.data(), v.data());
    check(label + " refuses a span outside the pool", !e.empty(), "accepted");
}

// A memory limit (DecoderStep::create's memoryLimit) makes the device refuse what exceeds it as
// a full GPU would ("out of device memory"), and keeps what fits: the session's budget cuts rely
// on this refusal.
void checkMemoryLimit(const std::string& label, const DecoderShape& c, bool bf16) {
    const Model m = makeModel(c);
    std::string why;
    auto free = DecoderStep::create(c, m.host(), bf16, &why);
    if (!free) return check(label + " create", false, why);
    const size_t weights = free->deviceBytes(), limit = weights + (size_t(4) << 20);
    free.reset();
    auto small = DecoderStep::create(c, m.host(), bf16, &why, weights / 2);
    check(label + " weights over the limit refused", !small && why.find("out of device memory") != std::string::npos, why);
    auto dev = DecoderStep::create(c, m.host(), bf16, &why, limit);
    if (!dev) return check(label + " create under a limit", false, why);
    const size_t blockBytes = size_t(2) * c.layers * c.kvHeads * kBlockTokens * c.headDim * sizeof(float);
    const std::string big = dev->reserveSlots(int((size_t(8) << 20) / blockBytes) + 1);
    check(label + " pool over the limit refused", big.find("out of device memory") != std::string::npos, big);
    const std::string fits = dev->reserveSlots(2);
    check(label + " pool under the limit kept", fits.empty() && dev->slots() >= 2 && dev->deviceBytes() <= limit, fits);
    const std::string scratch = dev->reservePrefill(1 << 20);
    check(label + " prefill scratch over the limit refused", scratch.find("out of device memory") != std::string::npos, scratch);
}

}  // namespace

int main() {
    std::string why;
    const auto devices = listDevices(&why);
    if (devices.empty()) {
        std::printf("no GPU (%s): decoder step checks skipped\n0 passed, 0 failed\n", why.c_str());
        return 0;
    }
    std::printf("GPU: %s\n", devices[0].name.c_str());
    DecoderShape tiny;
    tiny.vocab = 48, tiny.hidden = 32, tiny.layers = 2, tiny.heads = 4, tiny.kvHeads = 2, tiny.headDim = 8, tiny.intermediate = 48;
    tiny.visualDim = 12;
    DecoderShape reader;
    reader.vocab = 6627, reader.hidden = 384, reader.layers = 4, reader.heads = 6, reader.kvHeads = 2, reader.headDim = 64,
    reader.intermediate = 1024, reader.visualDim = 120;
    reader.visualTokenIds = true, reader.evidenceIds = 2;  // as a reader that reads Tesseract's evidence
    DecoderShape wide;  // Unlimited-OCR's head size, fewer layers
    wide.vocab = 1000, wide.hidden = 1280, wide.layers = 2, wide.heads = 10, wide.kvHeads = 10, wide.headDim = 128,
    wide.intermediate = 3584, wide.visualDim = 1280;
    runShape("tiny fp32", tiny, false);
    runShape("reader fp32", reader, false);
    runShape("reader bf16", reader, true);
    runShape("heads of 128 fp32", wide, false);
    runShape("heads of 128 bf16", wide, true);
    checkMemoryLimit("reader bf16", reader, true);
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
