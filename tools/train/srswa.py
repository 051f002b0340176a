"""The runtime's SR-SWA attention (docs/DECODING.md) in PyTorch, over a teacher-forced sequence:
what each generated token attends to, layer by layer, chosen as DecodeSession chooses it — the
window of pages (with look-ahead), the page gate over earlier pages, the token selector's Quest
blocks inside them, the sinks and the last generated tokens — with the runtime's position frame.
`run` gives the logits of every generated token (with gradients, for training) and, when asked,
what each attended; the parity fixture (make_srswa_parity_fixture.py) comes from it, and
tst_decoder checks that DecodeSession attends exactly the same positions and computes the same
logits.

The gate and the selector choose by the model's own queries and keys, and a refreshing step's
choice for layer l depends on the layers below it, so the sets are known only by decoding in
order. The steps between two refreshes share their gated blocks and window, so they go through
each layer together (a chunk); only the ring of recent tokens differs from step to step.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

from model import GEN, SINK, VISUAL, positions

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


def inv_freq(c):
    return c.rope_theta ** (-2.0 * torch.arange(c.head_dim // 2, dtype=torch.float64) / c.head_dim)


def rotate(x, pos, inv):
    """Rotate-half rotary embedding of x [N, heads, D] at positions pos [N] (angles in double)."""
    ang = torch.as_tensor(pos, dtype=torch.float64)[:, None] * inv
    cos, sin = ang.cos().to(x.dtype)[:, None], ang.sin().to(x.dtype)[:, None]
    h = x.shape[-1] // 2
    x0, x1 = x[..., :h], x[..., h:]
    return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)


def frame_offsets(key_pos, qpos, max_positions):
    """DecodeSession's position frame: for each key (absolute positions, numpy int64), how far the
    query's rotation moves from its own position. While the attended positions span less than
    max_positions, nowhere; else they are laid end to end without their gaps (the query's own
    position included), so the query moves by the gaps between the key's interval and its own."""
    lo, hi = min(qpos, int(key_pos.min())), max(qpos + 1, int(key_pos.max()) + 1)
    if hi - 1 - lo < max_positions:
        return np.zeros(len(key_pos), np.int64)
    u = np.unique(np.append(key_pos, qpos))
    gaps_below = u - np.arange(len(u))  # constant inside an interval of consecutive positions
    return gaps_below[np.searchsorted(u, key_pos)] - gaps_below[np.searchsorted(u, qpos)]


class Run:
    """DecodeSession's state over one sequence, advanced a page or a chunk of steps at a time."""

    def __init__(self, model, pattern, kinds, tokens, visual, pages, record=False):
        self.m, self.c, self.p, self.record = model, model.c, pattern, record
        c = self.c
        self.kinds, self.tokens, self.pages = kinds, tokens, pages
        self.visual = torch.as_tensor(np.asarray(visual, np.float32))
        self.pos = np.asarray(positions(kinds, c.page_aligned_positions, tokens, c.line_end_token_ids,
                                        c.visual_line_end_token_id, pages, c.page_break_token_id), np.int64)
        self.inv = inv_freq(c)
        self.G = c.num_heads // c.num_kv_heads
        # Per layer, the keys (pre-rotary and rotated) and values of each segment of items computed
        # together (a sink, a page, a chunk of steps); item -> (segment, row).
        self.segments = [[] for _ in range(c.num_layers)]
        self.seg_of, self.row_of = np.full(len(kinds), -1, np.int64), np.full(len(kinds), -1, np.int64)
        self.sinks, self.gen_items, self.page_items = [], [], {}
        self.summary, self.bounds = {}, {}  # page -> [L, KV, D] mean pre-rotary key; (page, layer) -> (min, max) per block
        self.current, self.generated = 0, 0
        self.gated, self.selection = [], [None] * c.num_layers
        self.recent_queries, self.recent_next = [None] * pattern.gate_query_tokens, 0
        self.outputs = {}  # generated item -> final hidden state
        self.attended = {}  # record: generated item -> [layer] -> attended items

    # -- keys, values, attention -----------------------------------------------------------------
    def _store(self, l, items, k, v):
        seg = len(self.segments[l])
        self.segments[l].append((k, rotate(k, self.pos[items], self.inv), v))
        if l == 0:
            self.seg_of[items], self.row_of[items] = seg, np.arange(len(items))

    def _gather(self, l, items):
        """Keys (pre-rotary, rotated) and values [len(items), KV, D] of items, in that order."""
        items = np.asarray(items, np.int64)
        seg, row = self.seg_of[items], self.row_of[items]
        cuts = np.flatnonzero(np.diff(seg)) + 1
        out = []
        for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(items)]])):
            k, kr, v = self.segments[l][int(seg[a])]
            idx = torch.as_tensor(row[a:b])
            out.append((k[idx], kr[idx], v[idx]))
        return tuple(torch.cat(t) for t in zip(*out))

    def _attend(self, l, queries, q, keys, allowed):
        """Attention of `queries` (items; q [n, heads, D] pre-rotary) over `keys` (items), where
        allowed [n, len(keys)] says which key each query attends. Keys at the query's own frame
        are scored with rotated vectors; others with the rotary identity at their frame's offset."""
        c, G = self.c, self.G
        k, kr, v = self._gather(l, keys)
        keys, queries = np.asarray(keys, np.int64), np.asarray(queries, np.int64)
        kpos, qpos = self.pos[keys], self.pos[queries]
        shift = np.zeros((len(queries), len(keys)), np.int64)
        for t in range(len(queries)):
            sel = allowed[t].numpy()
            shift[t, sel] = frame_offsets(kpos[sel], int(qpos[t]), c.max_position_embeddings)
        far = np.flatnonzero((shift != 0).any(0))
        near = np.flatnonzero(~(shift != 0).any(0))
        n, KV, D = len(queries), c.num_kv_heads, c.head_dim
        # Queries grouped by KV head: [KV, G * n, D], so each product is one batched matmul.
        qg = rotate(q, qpos, self.inv).view(n, KV, G, D).permute(1, 2, 0, 3).reshape(KV, G * n, D)
        parts, order = [torch.bmm(qg, kr[torch.as_tensor(near)].permute(1, 2, 0))], list(near)
        if len(far):
            fi = torch.as_tensor(far)
            kf = k[fi].repeat_interleave(G, 1)  # pre-rotary [far, heads, D]
            h = D // 2
            a = torch.einsum("thi,khi->tkhi", q[..., :h], kf[..., :h]) + torch.einsum("thi,khi->tkhi", q[..., h:], kf[..., h:])
            b = torch.einsum("thi,khi->tkhi", q[..., :h], kf[..., h:]) - torch.einsum("thi,khi->tkhi", q[..., h:], kf[..., :h])
            delta = torch.as_tensor(qpos[:, None] + shift[:, far] - kpos[far][None, :], dtype=torch.float64)
            ang = delta[..., None] * self.inv
            cos, sin = ang.cos().to(q.dtype)[:, :, None], ang.sin().to(q.dtype)[:, :, None]
            sf = (a * cos + b * sin).sum(-1)  # [n, far, heads]
            parts.append(sf.view(n, len(far), KV, G).permute(2, 3, 0, 1).reshape(KV, G * n, len(far)))
            order += list(far)
        scores = torch.cat(parts, dim=2) / math.sqrt(D)  # [KV, G * n, keys in `order`]
        order = torch.as_tensor(np.asarray(order, np.int64))
        mask = allowed[:, order].repeat(G, 1)  # rows in (group member, query) order
        w = torch.softmax(scores.masked_fill(~mask[None], float("-inf")), dim=-1)
        out = torch.bmm(w, v[order].permute(1, 0, 2))  # [KV, G * n, D]
        return out.view(KV, G, n, D).permute(2, 0, 1, 3).reshape(n, -1)

    def _layers(self, items, x, keys_of_layer, on_query=None):
        """items through the layers: x [n, H] their inputs; keys_of_layer(l, q) -> (keys, allowed)
        after their keys and values are stored. Returns the final hidden states [n, H]."""
        c = self.c
        for l, layer in enumerate(self.m.layers):
            n = layer.attn_norm(x)
            q = layer.q_proj(n).view(len(items), c.num_heads, c.head_dim)
            k = layer.k_proj(n).view(len(items), c.num_kv_heads, c.head_dim)
            self._store(l, items, k, layer.v_proj(n).view(len(items), c.num_kv_heads, c.head_dim))
            if on_query:
                on_query(l, q, k)
            keys, allowed = keys_of_layer(l, q)
            x = x + layer.o_proj(self._attend(l, items, q, keys, allowed))
            m = layer.mlp_norm(x)
            x = x + layer.down_proj(F.silu(layer.gate_proj(m)) * layer.up_proj(m))
        return x

    # -- sinks and pages ------------------------------------------------------------------------
    def sink(self, i):
        self.sinks.append(i)
        keys = list(self.sinks)
        self._layers([i], self.m.embed_tokens.weight[self.tokens[i]][None],
                     lambda l, q: (keys, torch.ones(1, len(keys), dtype=torch.bool)))

    def page(self, items):
        """A page's visual tokens: each sees the sinks and its page up to itself."""
        c, m = self.c, self.m
        page = self.pages[items[0]]
        self.page_items[page] = items
        x = m.visual_proj(self.visual[items[0]:items[-1] + 1])
        if c.visual_token_ids:
            x = x + m.embed_tokens.weight[torch.tensor([self.tokens[i] for i in items])]
        keys = self.sinks + items
        ns, n = len(self.sinks), len(items)
        allowed = torch.cat([torch.ones(n, ns, dtype=torch.bool), torch.ones(n, n, dtype=torch.bool).tril()], 1)
        mean = torch.zeros(c.num_layers, c.num_kv_heads, c.head_dim)

        def keep(l, q, k):
            mean[l] = k.detach().mean(0)
        self._layers(items, x, lambda l, q: (keys, allowed), keep)
        self.summary[page] = mean

    # -- generated tokens -----------------------------------------------------------------------
    def _refresh_gate(self):
        p, c = self.p, self.c
        held, self.gated = self.gated, []
        if p.gated_pages <= 0:
            return
        ring = [r for r in self.recent_queries if r is not None]
        gq = sum(ring) if ring else torch.zeros(c.num_layers, c.num_kv_heads, c.head_dim)

        def inv(v):  # per layer, 1 / norm (0 for a zero vector)
            n = v.reshape(c.num_layers, -1).double().norm(dim=1)
            return torch.where(n > 0, 1 / n, torch.zeros_like(n)).float()
        qinv = inv(gq)
        scored = []
        for pg in sorted(self.summary):
            if pg >= self.current - p.window_before:
                continue
            s = self.summary[pg]
            dots = (s.reshape(c.num_layers, -1) * gq.reshape(c.num_layers, -1)).sum(1) * qinv
            score = float((dots * inv(s)).sum()) + (p.gate_hold if pg in held else 0.0)
            scored.append((score if ring else 0.0, pg))
        scored.sort(key=lambda t: (-t[0], t[1]))
        self.gated = sorted(pg for _, pg in scored[:p.gated_pages])

    def _page_bounds(self, page, l):
        """Quest bounds of each block of a page at layer l — the per-channel min and max of its
        rotated keys, [blocks, KV, D] each — and each block's first position."""
        if (page, l) not in self.bounds:
            items = self.page_items[page]
            _, kr, _ = self._gather(l, items)
            kr = kr.detach()
            nb = (len(items) + BLOCK - 1) // BLOCK
            pad = nb * BLOCK - len(items)  # the last block's missing tokens repeat its first
            kp = torch.cat([kr, kr[(nb - 1) * BLOCK:][:1].expand(pad, -1, -1)]).view(nb, BLOCK, *kr.shape[1:])
            pos0 = self.pos[np.asarray(items[::BLOCK], np.int64)]
            self.bounds[(page, l)] = (kp.min(1).values, kp.max(1).values, pos0)
        return self.bounds[(page, l)]

    def _select(self, l, q, qpos):
        """The selector's blocks of each gated page for query q [heads, D] at qpos: Quest bounds
        in each block's nominal frame (at most half the trained range before the query)."""
        c, G = self.c, self.G
        q = q.detach()
        out = {}
        for pg in self.gated:
            lo, hi, pos0 = self._page_bounds(pg, l)
            at = pos0 + np.minimum(qpos - pos0, c.max_position_embeddings // 2)
            qr = rotate(q[None].expand(len(at), -1, -1), at, self.inv)  # [blocks, heads, D]
            bound = torch.maximum(qr * lo.repeat_interleave(G, 1), qr * hi.repeat_interleave(G, 1)).sum((1, 2))
            order = torch.sort(-bound, stable=True).indices  # ties to the earlier block
            out[pg] = order[:self.p.blocks_per_gated_page].tolist()
        return out

    def chunk(self, items, refresh):
        """Generated steps that share the gate's choice; the first refreshes it (and may turn the
        page) where `refresh`."""
        c, p = self.c, self.p
        if self.tokens[items[0]] == c.page_break_token_id and self.generated > 0:
            self.current += 1
        if refresh:
            self._refresh_gate()
        g0 = self.generated
        self.generated += len(items)
        self.gen_items += items
        window = [it for pg, its in sorted(self.page_items.items())
                  if self.current - p.window_before <= pg <= self.current + p.window_after for it in its]
        # The ring of each step: the generated tokens from (its index - recent + 1) to itself.
        ring_from = max(0, g0 - p.recent + 1) if p.recent > 0 else g0 + len(items)
        ring = self.gen_items[ring_from:]
        gidx = np.arange(ring_from, g0 + len(items))
        mine = np.arange(g0, g0 + len(items))
        ring_ok = torch.as_tensor((gidx[None, :] <= mine[:, None]) & (gidx[None, :] > mine[:, None] - p.recent))
        gq = torch.zeros(len(items), c.num_layers, c.num_kv_heads, c.head_dim)
        qpos = int(self.pos[items[0]])

        def keys(l, q):
            gq[:, l] = q.detach().view(len(items), c.num_kv_heads, self.G, c.head_dim).mean(2)
            if refresh or self.selection[l] is None or len(self.selection[l]) != len(self.gated):
                self.selection[l] = self._select(l, q[0], qpos)
            gated = [it for pg in sorted(self.selection[l]) for b in self.selection[l][pg]
                     for it in self.page_items[pg][b * BLOCK:(b + 1) * BLOCK]]
            fixed = self.sinks + window + gated
            allowed = torch.cat([torch.ones(len(items), len(fixed), dtype=torch.bool), ring_ok], 1)
            if self.record:
                for t, i in enumerate(items):
                    self.attended.setdefault(i, []).append(fixed + [r for r, ok in zip(ring, ring_ok[t]) if ok])
            return fixed + ring, allowed
        x = self._layers(items, self.m.embed_tokens.weight[torch.tensor([self.tokens[i] for i in items])], keys)
        for t in range(len(items)):
            if p.gate_query_tokens > 0:
                self.recent_queries[self.recent_next] = gq[t]
                self.recent_next = (self.recent_next + 1) % p.gate_query_tokens
        for t, i in enumerate(items):
            self.outputs[i] = x[t]


def chunks(kinds, tokens, pages, pattern, page_break):
    """The sequence in the order the runtime takes it, as (kind, items, refresh): ("sink", [i]),
    ("page", the items of one page), ("steps", generated items that share the gate's choice: from
    a refresh, or a page fed between steps, to the next of either)."""
    out, generated, since = [], 0, 0
    for i, k in enumerate(kinds):
        if k == GEN:
            turn = tokens[i] == page_break and generated > 0
            generated += 1
            refresh = turn or since >= pattern.gate_refresh_steps or generated == 1
            if refresh or out[-1][0] != "steps":  # a page fed between steps ends a chunk, not the gate's choice
                out.append(("steps", [], refresh))
            since = 1 if refresh else since + 1
        elif k == SINK:
            out.append(("sink", [], False))
        elif not (out and out[-1][0] == "page" and pages[out[-1][1][0]] == pages[i]):
            out.append(("page", [], False))
        out[-1][1].append(i)
    return out


def run(model, pattern, kinds, tokens, visual, pages, record=False):
    """Runs a sequence (kinds, tokens, visual rows [T, V], pages: the page of each visual token,
    -1 otherwise) as DecodeSession would. Returns the Run and the logits of the generated items in
    order [n, vocab] (with gradients where enabled); with record, Run.attended lists, per
    generated item and layer, the items it attended."""
    r = Run(model, pattern, kinds, tokens, visual, pages, record)
    for kind, items, refresh in chunks(kinds, tokens, pages, pattern, model.c.page_break_token_id):
        if kind == "sink":
            r.sink(items[0])
        elif kind == "page":
            r.page(items)
        else:
            r.chunk(items, refresh)
    x = model.norm(torch.stack([r.outputs[i] for i in r.gen_items]))
    w = model.embed_tokens.weight if model.lm_head is None else model.lm_head.weight
    return r, x @ w.T
