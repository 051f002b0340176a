"""The runtime's SR-SWA attention (docs/DECODING.md) in PyTorch, over a teacher-forced sequence:
what each generated token attends to, layer by layer, chosen as DecodeSession chooses it — the
window of pages (with look-ahead), the page gate over earlier pages, the token selector's Quest
blocks inside them, the sinks and the last generated tokens — with the runtime's position frame.
`run` gives the logits of every generated token (with gradients, for training) and, when asked,
what each attended; the parity fixture (make_srswa_parity_fixture.py) comes from it, and
tst_decoder_attention checks that DecodeSession attends exactly the same positions and computes the same
logits.

The gate and the selector choose by the model's own queries and keys, and a refreshing step's
choice for layer l depends on the layers below it, so the sets are known only by decoding in
order. The steps between two refreshes share their gated blocks and window (a chunk); only the
ring of recent tokens differs from step to step. A page's text goes through each layer at once,
with the gate's choices guessed and then confirmed from the pass's own queries (Run.text); chunk
by chunk (Run.chunk) is the reference, and tools/train/srswa_check.py holds the two together.
"""
import collections
import math

import numpy as np
import torch
import torch.nn.functional as F

from model import GEN, SINK, VISUAL, positions, rope

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
    """model.rope for rows at their own positions: x [N, heads, D], pos [N]."""
    return rope(x.transpose(0, 1), torch.as_tensor(pos), theta).transpose(0, 1)


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
    QUERY_SLICE = 48  # queries whose attention _attend computes at once

    def __init__(self, model, pattern, kinds, tokens, visual, pages, record=False):
        self.m, self.c, self.p, self.record = model, model.c, pattern, record
        c = self.c
        self.kinds, self.tokens, self.pages = kinds, tokens, pages
        self.visual = torch.as_tensor(np.asarray(visual, np.float32))
        self.pos = np.asarray(positions(kinds, c.page_aligned_positions, tokens, c.line_end_token_ids,
                                        c.visual_line_end_token_id, pages, c.page_break_token_id), np.int64)
        self.G = c.num_heads // c.num_kv_heads
        # Per layer, the rotated keys and the values of each segment of items computed together (a
        # sink, a page, a chunk of steps); item -> (segment, row).
        self.segments = [[] for _ in range(c.num_layers)]
        self.seg_of, self.row_of = np.full(len(kinds), -1, np.int64), np.full(len(kinds), -1, np.int64)
        self.sinks, self.gen_items, self.page_items = [], [], {}
        self.summary, self.bounds = {}, {}  # page -> [L, KV, D] mean pre-rotary key; (page, layer) -> (min, max) per block
        self.current, self.generated = 0, 0
        self.gated, self.selection = [], [None] * c.num_layers
        self.recent_queries, self.recent_next = [None] * pattern.gate_query_tokens, 0
        self.outputs = {}  # generated item -> final hidden state
        self.attended = {}  # record: generated item -> [layer] -> attended items
        self.window_cache = {}  # (layer, segments) -> the window pages' keys and values, once a page
        self.stats = collections.Counter()  # text(): runs computed together, their passes, runs chunk by chunk
        # Training (labels): each page's loss is backpropagated when the text turns the page.
        self.labels, self.pending, self.loss_scale = None, [], 1.0
        self.loss_sum, self.correct = 0.0, 0

    # -- keys, values, attention -----------------------------------------------------------------
    def _store(self, l, items, k, v):
        seg = len(self.segments[l])
        self.segments[l].append((rotate(k, self.pos[items], self.c.rope_theta), v))
        if l == 0:
            self.seg_of[items], self.row_of[items] = seg, np.arange(len(items))

    def _gather(self, l, items):
        """Rotated keys and values [len(items), KV, D] of items, in that order."""
        items = np.asarray(items, np.int64)
        seg, row = self.seg_of[items], self.row_of[items]
        cuts = np.flatnonzero(np.diff(seg)) + 1
        out = []
        for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(items)]])):
            kr, v = self.segments[l][int(seg[a])]
            idx = torch.as_tensor(row[a:b])
            out.append((kr[idx], v[idx]))
        return tuple(torch.cat(t) for t in zip(*out))

    def _attend(self, queries, q, groups, allowed):
        """Attention of `queries` (items; q [n, heads, D] pre-rotary) over key groups [(items,
        rotated keys, values)], where allowed [n, keys of all groups] says which key each query
        attends. The query is rotated where the position frame puts it for each key: at its own
        position for most, with one product per group; at a few other positions for keys in other
        intervals of a long volume. Scores and outputs are per group, so a group held for many
        queries (the window's pages) is not copied."""
        c, G = self.c, self.G
        n, KV, D = len(queries), c.num_kv_heads, c.head_dim
        if n > self.QUERY_SLICE:  # a page's text at once: in slices, each over the keys it attends
            return torch.cat([self._attend(queries[a:a + self.QUERY_SLICE], q[a:a + self.QUERY_SLICE],
                                           *self._narrow(groups, allowed[a:a + self.QUERY_SLICE]))
                              for a in range(0, n, self.QUERY_SLICE)])
        queries = np.asarray(queries, np.int64)
        qpos = self.pos[queries]
        kpos = np.concatenate([self.pos[np.asarray(items, np.int64)] for items, _, _ in groups])
        shift = np.zeros((n, len(kpos)), np.int64)
        allowed_np = allowed.numpy()
        for t in range(n):
            sel = allowed_np[t]
            shift[t, sel] = frame_offsets(kpos[sel], int(qpos[t]), c.max_position_embeddings)
        moved = (shift != 0).any(0)

        def layout(sc):  # [n, keys, heads] -> [KV, G * n, keys] (rows in group member, query order)
            return sc.view(n, sc.shape[1], KV, G).permute(2, 3, 0, 1).reshape(KV, G * n, sc.shape[1])
        scale = 1 / math.sqrt(D)  # on the queries: scores come out of the products scaled
        qg = (rotate(q, qpos, self.c.rope_theta) * scale).view(n, KV, G, D).permute(1, 2, 0, 3).reshape(KV, G * n, D)
        parts, at = [], 0  # (scores [KV, G * n, k], columns, values [k, KV, D])
        for items, kr, v in groups:
            cols = np.arange(at, at + len(items))
            at += len(items)
            near, far = cols[~moved[cols]], cols[moved[cols]]
            if len(near) == len(cols):
                parts.append((torch.bmm(qg, kr.permute(1, 2, 0)), cols, v))
                continue
            if len(near):
                ni = torch.as_tensor(near - cols[0])
                parts.append((torch.bmm(qg, kr[ni].permute(1, 2, 0)), near, v[ni]))
            # Far keys: query t meets key j rotated further by its frame offset s[t, j]. Queries
            # whose offsets differ from their first far key's by the same a[j] (the steps of one
            # chunk, mostly) share one product: <R(s) q, k> = <R(s[t, 0]) q, R(-a[j]) k>.
            fi = torch.as_tensor(far - cols[0])
            sh = shift[:, far]
            pattern, group = np.unique(sh - sh[:, :1], axis=0, return_inverse=True)
            qr = rotate(q, qpos, self.c.rope_theta) * scale
            outs, rows_of = [], []
            allowed_far = allowed_np[:, far]
            for g in range(len(pattern)):
                rows = np.flatnonzero(group.reshape(-1) == g)
                need = np.flatnonzero(allowed_far[rows].any(0))  # scores of other keys are masked out
                qt = rotate(qr[torch.as_tensor(rows)], sh[rows, 0], self.c.rope_theta)
                kt = rotate(kr[fi[need]], -pattern[g][need], self.c.rope_theta).repeat_interleave(G, 1)
                sg = qt.new_zeros(len(rows), len(far), c.num_heads)
                sg[:, torch.as_tensor(need)] = torch.einsum("thd,jhd->tjh", qt, kt)
                outs.append(sg)
                rows_of.append(rows)
            sc = torch.cat(outs)[torch.as_tensor(np.argsort(np.concatenate(rows_of), kind="stable"))]
            parts.append((layout(sc), far, v[fi]))
        # The softmax over all groups without joining their scores: each group's exponentials
        # against the largest score of the row, summed apart; only a group some query does not
        # attend whole is masked. (One joined, masked score matrix cost more than the products.)
        # In place where autograd allows: each group's scores are a fresh product's, several MB.
        for sc, cols, v in parts:
            ok = allowed[:, torch.as_tensor(cols)]
            if not bool(ok.all()):
                sc.masked_fill_(~ok.repeat(G, 1)[None], float("-inf"))
        top = torch.stack([sc.amax(-1) for sc, _, _ in parts]).amax(0).detach()[..., None]  # [KV, G * n, 1]
        total, out = 0, 0
        for sc, cols, v in parts:
            e = (sc - top).exp_()
            total = total + e.sum(-1, keepdim=True)
            out = out + torch.bmm(e, v.permute(1, 0, 2))
        out = out / total
        return out.view(KV, G, n, D).permute(2, 0, 1, 3).reshape(n, -1)

    @staticmethod
    def _narrow(groups, allowed):
        """Key groups and allowed [n, keys] without the keys no query attends (a group attended
        whole is kept as it is, not copied)."""
        need = allowed.any(0).numpy()
        out, cols, at = [], [], 0
        for items, kr, v in groups:
            m = need[at:at + len(items)]
            if m.all():
                out.append((items, kr, v))
                cols.append(np.arange(at, at + len(items)))
            elif m.any():
                idx = np.flatnonzero(m)
                ti = torch.as_tensor(idx)
                out.append(([items[i] for i in idx], kr[ti], v[ti]))
                cols.append(at + idx)
            at += len(items)
        return out, allowed[:, torch.as_tensor(np.concatenate(cols))]

    def _layers(self, items, x, keys_of_layer, on_query=None):
        """items through the layers: x [n, H] their inputs; keys_of_layer(l, q) -> (key groups,
        allowed), after their keys and values are stored. Returns the final hidden states [n, H]."""
        c = self.c
        for l, layer in enumerate(self.m.layers):
            n = layer.attn_norm(x)
            q = layer.q_proj(n).view(len(items), c.num_heads, c.head_dim)
            k = layer.k_proj(n).view(len(items), c.num_kv_heads, c.head_dim)
            self._store(l, items, k, layer.v_proj(n).view(len(items), c.num_kv_heads, c.head_dim))
            if on_query:
                on_query(l, q, k)
            groups, allowed = keys_of_layer(l, q)
            x = x + layer.o_proj(self._attend(items, q, groups, allowed))
            m = layer.mlp_norm(x)
            x = x + layer.down_proj(F.silu(layer.gate_proj(m)) * layer.up_proj(m))
        return x

    # -- sinks and pages ------------------------------------------------------------------------
    def sink(self, i):
        self.sinks.append(i)
        keys = list(self.sinks)
        self._layers([i], self.m.embed_tokens.weight[self.tokens[i]][None],
                     lambda l, q: ([(keys, *self._gather(l, keys))], torch.ones(1, len(keys), dtype=torch.bool)))

    def page(self, items):
        """A page's visual tokens: each sees the sinks and its page up to itself."""
        c, m = self.c, self.m
        page = self.pages[items[0]]
        self.page_items[page] = items
        x = m.visual_input(self.visual[items[0]:items[-1] + 1],
                           m.embed_tokens.weight[torch.tensor([self.tokens[i] for i in items])])
        ns, n = len(self.sinks), len(items)
        allowed = torch.cat([torch.ones(n, ns, dtype=torch.bool), torch.ones(n, n, dtype=torch.bool).tril()], 1)
        mean = torch.zeros(c.num_layers, c.num_kv_heads, c.head_dim)

        def keep(l, q, k):
            mean[l] = k.detach().mean(0)
        self._layers(items, x, lambda l, q: ([(self.sinks, *self._gather(l, self.sinks)),
                                              (items, *self.segments[l][-1])], allowed), keep)
        self.summary[page] = mean

    # -- generated tokens -----------------------------------------------------------------------
    def _refresh_gate(self):
        self.gated = self._gate_choice(self.recent_queries, self.gated)

    def _gate_choice(self, ring_buffer, held):
        """The pages the gate picks (sorted) from the gate queries' ring buffer (entries None until
        filled, summed in buffer order as the runtime does), `held` the pages it held before."""
        p, c = self.p, self.c
        if p.gated_pages <= 0:
            return []
        ring = [r for r in ring_buffer if r is not None]
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
        return sorted(pg for _, pg in scored[:p.gated_pages])

    def _page_bounds(self, page, l):
        """Quest bounds of each block of a page at layer l — the per-channel min and max of its
        rotated keys, [blocks, KV, D] each — and each block's first position."""
        if (page, l) not in self.bounds:
            items = self.page_items[page]
            kr, _ = self._gather(l, items)
            kr = kr.detach()
            nb = (len(items) + BLOCK - 1) // BLOCK
            pad = nb * BLOCK - len(items)  # the last block's missing tokens repeat its first
            kp = torch.cat([kr, kr[(nb - 1) * BLOCK:][:1].expand(pad, -1, -1)]).view(nb, BLOCK, *kr.shape[1:])
            pos0 = self.pos[np.asarray(items[::BLOCK], np.int64)]
            self.bounds[(page, l)] = (kp.min(1).values, kp.max(1).values, pos0)
        return self.bounds[(page, l)]

    def _select(self, l, q, qpos, gated):
        """The selector's blocks of each of the `gated` pages for query q [heads, D] at qpos: Quest
        bounds in each block's nominal frame (at most half the trained range before the query)."""
        return self._select_many(l, q[None], [qpos], [gated])[0]

    def _select_many(self, l, qs, qpos, gates):
        """_select for several queries qs [m, heads, D] at qpos [m], each with its gated pages:
        one product per page for all the queries that gate it."""
        c, G = self.c, self.G
        qs = qs.detach()
        out = [{} for _ in gates]
        for pg in sorted(set(pg for gated in gates for pg in gated)):
            rows = [k for k, gated in enumerate(gates) if pg in gated]
            lo, hi, pos0 = self._page_bounds(pg, l)
            at = pos0[None, :] + np.minimum(np.asarray(qpos)[rows][:, None] - pos0[None, :], c.max_position_embeddings // 2)
            m, nb = at.shape
            qr = rotate(qs[rows][:, None].expand(m, nb, -1, -1).reshape(m * nb, *qs.shape[1:]), at.reshape(-1),
                        self.c.rope_theta).view(m, nb, *qs.shape[1:])  # [queries, blocks, heads, D]
            bound = torch.maximum(qr * lo.repeat_interleave(G, 1), qr * hi.repeat_interleave(G, 1)).sum((2, 3))
            # Ties go to the earlier block.
            order = torch.sort(-bound, dim=1, stable=True).indices[:, :self.p.blocks_per_gated_page]
            for k, blocks in zip(rows, order.tolist()):
                out[k][pg] = blocks
        return out

    def _window(self, l, pages):
        """The window pages' keys and values at layer l, joined once for all the chunks that see them."""
        segs = tuple(int(self.seg_of[self.page_items[pg][0]]) for pg in pages)
        if (l, segs) not in self.window_cache:
            items = [it for pg in pages for it in self.page_items[pg]]
            kr, v = (torch.cat(t) for t in zip(*(self.segments[l][sg] for sg in segs)))
            self.window_cache[(l, segs)] = (items, kr, v)
        return self.window_cache[(l, segs)]

    def flush(self):
        """Training: backpropagates the loss of the generated tokens since the last flush (a page's
        text), then holds every key and value computed so far as a constant, so memory holds one
        page's graph. Earlier pages and text stay in the context; gradients stop at them."""
        if self.labels is None or not self.pending:
            return
        x = self.m.norm(torch.stack([self.outputs.pop(i) for i in self.pending]))
        logits = x @ (self.m.embed_tokens.weight if self.m.lm_head is None else self.m.lm_head.weight).T
        labels = torch.as_tensor(self.labels[np.asarray(self.pending)])
        loss = F.cross_entropy(logits, labels, reduction="sum")
        (loss * self.loss_scale).backward()
        self.loss_sum += loss.item()
        self.correct += int((logits.argmax(-1) == labels).sum())
        self.pending = []
        self.segments = [[(kr.detach(), v.detach()) for kr, v in segs] for segs in self.segments]
        self.window_cache.clear()

    def _turn(self, items):
        """Where generated `items` start with a page break: the text turns the page."""
        c, p = self.c, self.p
        if self.tokens[items[0]] == c.page_break_token_id and self.generated > 0:
            self.flush()
            self.current += 1
            self.window_cache.clear()
            if self.labels is not None:  # the window's pages again, with gradients for this page's text
                for pg in sorted(self.page_items):
                    if self.current - p.window_before <= pg <= self.current + p.window_after:
                        self.page(self.page_items[pg])

    def _window_pages(self):
        p = self.p
        return [pg for pg in sorted(self.page_items)
                if self.current - p.window_before <= pg <= self.current + p.window_after]

    def _ring(self, g0, n):
        """The ring of recent tokens of generated steps g0 .. g0 + n - 1 (their items in gen_items):
        the ring's items and ring_ok [n, ring], whether each step attends each (from its index -
        recent + 1 to itself)."""
        p = self.p
        ring_from = max(0, g0 - p.recent + 1) if p.recent > 0 else g0 + n
        gidx = np.arange(ring_from, g0 + n)
        mine = np.arange(g0, g0 + n)
        ok = torch.as_tensor((gidx[None, :] <= mine[:, None]) & (gidx[None, :] > mine[:, None] - p.recent))
        return self.gen_items[ring_from:g0 + n], ok

    def _blocks(self, selection):
        """The items of the selector's blocks ({page: [block, ...]}), page by page in its order."""
        return [it for pg in sorted(selection) for b in selection[pg]
                for it in self.page_items[pg][b * BLOCK:(b + 1) * BLOCK]]

    def _push_queries(self, ring_buffer, at, gq):
        """The gate queries' ring buffer after steps whose queries are gq [n, L, KV, D]; returns the next slot."""
        for t in range(len(gq)):
            if self.p.gate_query_tokens > 0:
                ring_buffer[at] = gq[t]
                at = (at + 1) % self.p.gate_query_tokens
        return at

    def chunk(self, items, refresh):
        """Generated steps that share the gate's choice; the first refreshes it (and may turn the
        page) where `refresh`."""
        self._turn(items)
        self._steps(items, refresh)

    def _steps(self, items, refresh):
        c = self.c
        if refresh:
            self._refresh_gate()
        g0 = self.generated
        self.generated += len(items)
        self.gen_items += items
        window_pages = self._window_pages()
        ring, ring_ok = self._ring(g0, len(items))
        gq = torch.zeros(len(items), c.num_layers, c.num_kv_heads, c.head_dim)
        qpos = int(self.pos[items[0]])

        def keys(l, q):
            gq[:, l] = q.detach().view(len(items), c.num_kv_heads, self.G, c.head_dim).mean(2)
            if refresh or self.selection[l] is None or len(self.selection[l]) != len(self.gated):
                self.selection[l] = self._select(l, q[0], qpos, self.gated)
            gated = self._blocks(self.selection[l])
            window = self._window(l, window_pages)
            rest = self.sinks + gated + ring
            allowed = torch.cat([torch.ones(len(items), len(window[0]) + len(self.sinks) + len(gated), dtype=torch.bool),
                                 ring_ok], 1)
            if self.record:
                ring_arr, ring_ok_np = np.asarray(ring, np.int64), ring_ok.numpy()
                for t, i in enumerate(items):
                    self.attended.setdefault(i, []).append(window[0] + self.sinks + gated +
                                                           ring_arr[ring_ok_np[t]].tolist())
            return [window, (rest, *self._gather(l, rest))], allowed
        x = self._layers(items, self.m.embed_tokens.weight[torch.tensor([self.tokens[i] for i in items])], keys)
        self.recent_next = self._push_queries(self.recent_queries, self.recent_next, gq)
        for t, i in enumerate(items):
            self.outputs[i] = x[t]
        if self.labels is not None:
            self.pending += items

    def text(self, steps, attempts=4):
        """A run of generated chunks [(items, refresh)] with no page fed between them (a page's
        text), computed together: every step of the run through each layer at once, each attending
        what it would attend step by step. The gate's choice at each refresh depends on the queries
        of the steps before it, so the run is computed with guessed choices (the first chunk's, which
        is exact, for all), the choices recomputed from the run's own queries, and the run computed
        again until the two agree — then, chunk by chunk, every step saw what it would have seen
        (the first chunk's inputs are exact, so its queries are, so the second's choice is, ...).
        Where they do not agree after `attempts` or a chunk keeps the gate's choice, chunk by chunk."""
        self._turn(steps[0][0])
        if all(refresh for _, refresh in steps) and self._together(steps, attempts):
            return
        self.stats["sequential runs"] += 1
        for items, refresh in steps:
            self._steps(items, refresh)

    def _together(self, steps, attempts):
        """text()'s passes; False, with nothing changed, where the choices do not settle."""
        c = self.c
        items = [i for it, _ in steps for i in it]
        n, g0 = len(items), self.generated
        first = np.cumsum([0] + [len(it) for it, _ in steps[:-1]])  # each chunk's first row
        rows_of = [slice(int(f), int(f) + len(it)) for f, (it, _) in zip(first, steps)]  # each chunk's rows
        chunk_of = np.repeat(np.arange(len(steps)), [len(it) for it, _ in steps])
        qpos = [int(self.pos[it[0]]) for it, _ in steps]
        gen_before = len(self.gen_items)
        self.gen_items += items
        ring, ring_ok = self._ring(g0, n)
        window_pages = self._window_pages()
        held = self.gated
        gates = [self._gate_choice(self.recent_queries, held)] * len(steps)
        seg_counts = [len(sg) for sg in self.segments]
        x0 = self.m.embed_tokens.weight[torch.tensor([self.tokens[i] for i in items])]
        for _ in range(attempts):
            gq = torch.zeros(n, c.num_layers, c.num_kv_heads, c.head_dim)
            selections = [None] * c.num_layers
            attended = {}

            def keys(l, q):
                gq[:, l] = q.detach().view(n, c.num_kv_heads, self.G, c.head_dim).mean(2)
                selections[l] = self._select_many(l, q[torch.as_tensor(first)], qpos, gates)
                blocks = [self._blocks(sel) for sel in selections[l]]
                union = sorted(set(i for b in blocks for i in b))
                col = {it: j for j, it in enumerate(union)}
                gated_ok = torch.zeros(n, len(union), dtype=torch.bool)
                for rows, b in zip(rows_of, blocks):
                    gated_ok[rows, torch.as_tensor([col[i] for i in b], dtype=torch.long)] = True
                window = self._window(l, window_pages)
                rest = self.sinks + union + ring
                everyone = torch.ones(n, len(window[0]) + len(self.sinks), dtype=torch.bool)
                allowed = torch.cat([everyone, gated_ok, ring_ok], 1)
                if self.record:
                    ring_arr, ring_ok_np = np.asarray(ring, np.int64), ring_ok.numpy()
                    for t, i in enumerate(items):
                        attended.setdefault(i, []).append(window[0] + self.sinks + blocks[chunk_of[t]] +
                                                          ring_arr[ring_ok_np[t]].tolist())
                return [window, (rest, *self._gather(l, rest))], allowed
            x = self._layers(items, x0, keys)
            self.stats["passes"] += 1
            # The gate's choices the run's own queries make, chunk by chunk.
            buffer, at, prev, made = list(self.recent_queries), self.recent_next, held, []
            for rows in rows_of:
                prev = self._gate_choice(buffer, prev)
                made.append(prev)
                at = self._push_queries(buffer, at, gq[rows])
            if made == gates:
                self.stats["runs together"] += 1
                self.gated, self.recent_queries, self.recent_next = gates[-1], buffer, at
                self.selection = [sel[-1] for sel in selections]
                self.generated += n
                self.attended.update(attended)
                for t, i in enumerate(items):
                    self.outputs[i] = x[t]
                if self.labels is not None:
                    self.pending += items
                return True
            gates = made
            for l, count in enumerate(seg_counts):  # the run's keys and values again, from the start
                del self.segments[l][count:]
        del self.gen_items[gen_before:]
        return False


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


def run(model, pattern, kinds, tokens, visual, pages, record=False, labels=None, together=True):
    """Runs a sequence (kinds, tokens, visual rows [T, V], pages: the page of each visual token,
    -1 otherwise) as DecodeSession would. Returns the Run and the logits of the generated items in
    order [n, vocab]; with record, Run.attended lists, per generated item and layer, the items it
    attended. With labels (per item; those of generated items are used): training — the mean
    cross-entropy over the generated items is backpropagated page by page (Run.flush), and the
    Run's loss_sum and correct say how it went; no logits are returned. `together`: each page's
    text computed in one pass (Run.text) rather than chunk by chunk as the runtime steps — the
    same attention and, but for the order of float sums, the same numbers
    (tools/train/srswa_check.py)."""
    r = Run(model, pattern, kinds, tokens, visual, pages, record)
    if labels is not None:
        r.labels = np.asarray(labels)
        r.loss_scale = 1.0 / max(1, sum(1 for k in kinds if k == GEN))
    pending = []  # consecutive chunks of steps, computed together when the next page or sink comes

    def steps_done():
        if pending:
            r.text(pending) if together else [r.chunk(items, refresh) for items, refresh in pending]
            pending.clear()
    for kind, items, refresh in chunks(kinds, tokens, pages, pattern, model.c.page_break_token_id):
        if kind == "steps":
            if together and pending and r.tokens[items[0]] == model.c.page_break_token_id:
                steps_done()  # a page's text is one run
            pending.append((items, refresh))
            continue
        steps_done()
        if kind == "sink":
            r.sink(items[0])
        else:
            r.page(items)
    steps_done()
    if labels is not None:
        r.flush()
        return r, None
    x = model.norm(torch.stack([r.outputs[i] for i in r.gen_items]))
    w = model.embed_tokens.weight if model.lm_head is None else model.lm_head.weight
    return r, x @ w.T
