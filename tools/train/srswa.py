"""The runtime's SR-SWA attention (docs/DECODING.md), replayed in PyTorch over a teacher-forced
sequence: what each generated token attends to, layer by layer, chosen as DecodeSession chooses it
— the window of pages (with look-ahead), the page gate over earlier pages, the token selector's
Quest blocks inside them, the sinks and the last generated tokens — with the runtime's position
frame. `replay` returns, per generated token and layer, the attended items and the logits; the
parity fixture (make_srswa_parity_fixture.py) comes from it, and tst_decoder checks that
DecodeSession attends exactly the same positions and computes the same logits.

Why a replay: the gate and the selector choose by the model's own queries and keys, and a
refreshing step's choice for layer l depends on layers below it, so the set is known only by
decoding in order, as the runtime does.
"""
import math

import torch
import torch.nn.functional as F

from model import SINK, VISUAL, positions

BLOCK = 16  # tokens of a KV block (kBlockTokens): the selector's unit


class Pattern:
    """AttentionParams' SR-SWA budgets (engine/include/quire/decoder/session.h)."""

    def __init__(self, window_before=0, window_after=1, gated_pages=4, blocks_per_gated_page=8,
                 gate_refresh_steps=8, gate_query_tokens=16, gate_hold=0.05, recent=128):
        self.window_before, self.window_after = window_before, window_after
        self.gated_pages, self.blocks_per_gated_page = gated_pages, blocks_per_gated_page
        self.gate_refresh_steps, self.gate_query_tokens = gate_refresh_steps, gate_query_tokens
        self.gate_hold, self.recent = gate_hold, recent

    def to_dict(self):
        return dict(self.__dict__)


def rotate(x, pos, theta):
    """Rotate-half rotary embedding of x [..., D] at positions pos [...] (angles in double)."""
    D = x.shape[-1]
    inv = theta ** (-2.0 * torch.arange(D // 2, dtype=torch.float64) / D)
    ang = torch.as_tensor(pos, dtype=torch.float64)[..., None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x0, x1 = x[..., : D // 2], x[..., D // 2:]
    return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)


def query_positions(key_pos, qpos, max_positions):
    """Where the query is rotated for each key (DecodeSession's position frame): its own position
    while the attended positions span less than max_positions; else the attended positions (the
    query's included) are laid end to end without their gaps, and the query is rotated so that
    each key keeps its distance in that layout."""
    lo, hi = min(qpos, min(key_pos)), max(qpos + 1, max(key_pos) + 1)
    if hi - 1 - lo < max_positions:
        return [qpos] * len(key_pos)
    starts, virt, v, prev = {}, {}, 0, None  # per position: its interval's start and virtual start
    for p in sorted(set(key_pos) | {qpos}):
        if prev is None or p > prev + 1:
            start, vstart = p, v
        starts[p], virt[p] = start, vstart
        v += 1
        prev = p
    qvirt = virt[qpos] + qpos - starts[qpos]
    return [qvirt + starts[p] - virt[p] for p in key_pos]


class Replay:
    """DecodeSession's state over one sequence, advanced item by item (no gradients)."""

    def __init__(self, model, pattern, kinds, tokens, visual, pages):
        self.m, self.c, self.p = model, model.c, pattern
        c = self.c
        self.kinds, self.tokens, self.visual, self.pages = kinds, tokens, visual, pages
        self.pos = positions(kinds, c.page_aligned_positions, tokens, c.line_end_token_ids,
                             c.visual_line_end_token_id, pages, c.page_break_token_id)
        n, L, KV, D = len(kinds), c.num_layers, c.num_kv_heads, c.head_dim
        self.K = torch.zeros(L, n, KV, D)  # keys rotated at their absolute positions
        self.V = torch.zeros(L, n, KV, D)
        self.sinks, self.gen_items = [], []
        self.page_items, self.summary = {}, {}  # page -> items; page -> [L, KV, D] mean pre-rotary key
        self.current, self.generated, self.since_gate = 0, 0, 0
        self.gated, self.selection = [], [None] * L  # selection[l]: page -> block indices
        self.recent_queries, self.recent_next = [None] * pattern.gate_query_tokens, 0

    # -- one layer over one token --------------------------------------------------------------
    def _attend(self, layer, i, q, keys):
        """The attention output for item i's query q [heads, D] (pre-rotary) over items `keys`."""
        c = self.c
        G = c.num_heads // c.num_kv_heads
        kpos = [self.pos[j] for j in keys]
        qp = query_positions(kpos, self.pos[i], c.max_position_embeddings)
        qr = rotate(q[None].expand(len(keys), -1, -1), torch.tensor(qp)[:, None].expand(-1, c.num_heads), c.rope_theta)
        idx = torch.tensor(keys)
        k = self.K[layer, idx].repeat_interleave(G, dim=1)  # [keys, heads, D]
        v = self.V[layer, idx].repeat_interleave(G, dim=1)
        w = torch.softmax((qr * k).sum(-1) / math.sqrt(c.head_dim), dim=0)  # [keys, heads]
        return (w[..., None] * v).sum(0).reshape(-1)

    def _forward(self, i, x, keys_of_layer, on_query=None):
        """Item i through the layers: x [H] the embedded input; keys_of_layer(l, q) -> attended
        items (after i's key and value are stored). Returns the final hidden state."""
        c = self.c
        for l, layer in enumerate(self.m.layers):
            n = layer.attn_norm(x)
            q = layer.q_proj(n).view(c.num_heads, c.head_dim)
            k = layer.k_proj(n).view(c.num_kv_heads, c.head_dim)
            self.K[l, i] = rotate(k, torch.full((c.num_kv_heads,), self.pos[i]), c.rope_theta)
            self.V[l, i] = layer.v_proj(n).view(c.num_kv_heads, c.head_dim)
            if on_query:
                on_query(l, q, k)
            x = x + layer.o_proj(self._attend(l, i, q, keys_of_layer(l, q)))
            m = layer.mlp_norm(x)
            x = x + layer.down_proj(F.silu(layer.gate_proj(m)) * layer.up_proj(m))
        return x

    # -- sinks and pages ------------------------------------------------------------------------
    def sink(self, i):
        self.sinks.append(i)
        self._forward(i, self.m.embed_tokens.weight[self.tokens[i]], lambda l, q: list(self.sinks))

    def page(self, items):
        """A page's visual tokens: each sees the sinks and its page up to itself."""
        c, m = self.c, self.m
        page = self.pages[items[0]]
        self.page_items[page] = items
        feats = torch.as_tensor(self.visual[items[0]:items[-1] + 1], dtype=torch.float32)
        x = m.visual_proj(feats)
        if c.visual_token_ids:
            x = x + m.embed_tokens.weight[torch.tensor([self.tokens[i] for i in items])]
        mean = torch.zeros(c.num_layers, c.num_kv_heads, c.head_dim)

        def keep(l, q, k):
            mean[l] += k / len(items)
        for t, i in enumerate(items):
            self._forward(i, x[t], lambda l, q: self.sinks + items[:t + 1], keep)
        self.summary[page] = mean

    # -- generated tokens -----------------------------------------------------------------------
    def _refresh_gate(self):
        p, c = self.p, self.c
        held, self.gated = self.gated, []
        if p.gated_pages <= 0:
            return
        ring = [r for r in self.recent_queries if r is not None]
        gq = sum(ring) if ring else torch.zeros(c.num_layers, c.num_kv_heads, c.head_dim)
        fed = sorted(self.summary)
        eligible = [pg for pg in fed if pg < self.current - p.window_before]

        def inv(v):  # per layer, 1 / norm (0 for a zero vector)
            n = v.reshape(c.num_layers, -1).double().norm(dim=1)
            return torch.where(n > 0, 1 / n, torch.zeros_like(n)).float()
        qinv = inv(gq)
        scored = []
        for pg in eligible:
            s = self.summary[pg]
            dots = (s.reshape(c.num_layers, -1) * gq.reshape(c.num_layers, -1)).sum(1) * qinv
            score = float((dots * inv(s)).sum()) + (p.gate_hold if pg in held else 0.0)
            scored.append((score if ring else 0.0, pg))
        scored.sort(key=lambda t: (-t[0], t[1]))
        self.gated = sorted(pg for _, pg in scored[:p.gated_pages])

    def _blocks(self, page):
        items = self.page_items[page]
        return [items[b:b + BLOCK] for b in range(0, len(items), BLOCK)]

    def _select(self, layer, q, qpos):
        """The selector's blocks of each gated page for query q [heads, D] at qpos: Quest bounds."""
        c, G = self.c, self.c.num_heads // self.c.num_kv_heads
        out = {}
        for pg in self.gated:
            scored = []
            for b, items in enumerate(self._blocks(pg)):
                k = self.K[layer, torch.tensor(items)]  # [tokens, KV, D]
                lo, hi = k.min(0).values.repeat_interleave(G, 0), k.max(0).values.repeat_interleave(G, 0)
                pos0 = self.pos[items[0]]
                at = pos0 + min(qpos - pos0, c.max_position_embeddings // 2)  # the nominal frame
                qr = rotate(q, torch.full((c.num_heads,), at), c.rope_theta)
                scored.append((float(torch.maximum(qr * lo, qr * hi).sum()), b))
            scored.sort(key=lambda t: (-t[0], t[1]))
            out[pg] = [b for _, b in scored[:self.p.blocks_per_gated_page]]
        return out

    def generate(self, i):
        """A generated token (its input): returns (attended items per layer, logits)."""
        c, p = self.c, self.p
        token = self.tokens[i]
        page_break = token == c.page_break_token_id and self.generated > 0
        if page_break:
            self.current += 1
        self.generated += 1
        self.gen_items.append(i)
        refresh = page_break or self.since_gate >= p.gate_refresh_steps or self.generated == 1
        if refresh:
            self._refresh_gate()
            self.since_gate = 0
        self.since_gate += 1
        G = c.num_heads // c.num_kv_heads
        gq = torch.zeros(c.num_layers, c.num_kv_heads, c.head_dim)
        window = [it for pg, its in sorted(self.page_items.items())
                  if self.current - p.window_before <= pg <= self.current + p.window_after for it in its]
        recent = self.gen_items[-p.recent:] if p.recent > 0 else []
        attended = []

        def keys(l, q):
            gq[l] = q.view(c.num_kv_heads, G, c.head_dim).sum(1) / G
            if refresh or self.selection[l] is None or len(self.selection[l]) != len(self.gated):
                self.selection[l] = self._select(l, q, self.pos[i])
            gated = [it for pg in sorted(self.selection[l]) for b in self.selection[l][pg] for it in self._blocks(pg)[b]]
            attended.append(self.sinks + window + gated + recent)
            return attended[-1]
        x = self._forward(i, self.m.embed_tokens.weight[token], keys)
        if p.gate_query_tokens > 0:
            self.recent_queries[self.recent_next] = gq
            self.recent_next = (self.recent_next + 1) % p.gate_query_tokens
        x = self.m.norm(x)
        w = self.m.embed_tokens.weight if self.m.lm_head is None else self.m.lm_head.weight
        return attended, x @ w.T


def replay(model, pattern, kinds, tokens, visual, pages):
    """Runs a sequence (lists: kinds, tokens, visual [T, V] rows, pages: the page of each visual
    token, -1 otherwise) as DecodeSession would. Returns per generated item (in order): its index,
    the attended items per layer and the logits."""
    r = Replay(model, pattern, kinds, tokens, visual, pages)
    out = []
    with torch.no_grad():
        i = 0
        while i < len(kinds):
            if kinds[i] == SINK:
                r.sink(i)
                i += 1
            elif kinds[i] == VISUAL:
                j = i
                while j < len(kinds) and kinds[j] == VISUAL and pages[j] == pages[i]:
                    j += 1
                r.page(list(range(i, j)))
                i = j
            else:
                attended, logits = r.generate(i)
                out.append((i, attended, logits))
                i += 1
    return r, out

