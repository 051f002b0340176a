"""Quire's reader decoder in PyTorch: the runtime's model family (docs/MODEL_FORMAT.md) with the
attention patterns of docs/DECODING.md as masks, so the model is trained with the pattern it runs
with, and weights export to the runtime's safetensors + config.json.

A sequence is a list of items in the order the runtime sees them: sink tokens (BOS + prompt), the
visual tokens of each page as they are fed, and the generated tokens (teacher-forced in training).
Positions are the items' indices (the runtime's absolute positions; its position frame only
changes anything beyond max_position_embeddings).
"""
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

SINK, VISUAL, GEN = 0, 1, 2


class Config:
    def __init__(self, **kw):
        self.vocab_size = kw.get("vocab_size", 6629)
        self.hidden_size = kw.get("hidden_size", 256)
        self.num_layers = kw.get("num_layers", 4)
        self.num_heads = kw.get("num_heads", 4)
        self.num_kv_heads = kw.get("num_kv_heads", 2)
        self.head_dim = kw.get("head_dim", 64)
        self.intermediate_size = kw.get("intermediate_size", 768)
        self.visual_dim = kw.get("visual_dim", 124)
        self.rms_norm_eps = kw.get("rms_norm_eps", 1e-5)
        self.rope_theta = kw.get("rope_theta", 10000.0)
        self.max_position_embeddings = kw.get("max_position_embeddings", 8192)
        self.tie_word_embeddings = kw.get("tie_word_embeddings", True)
        self.bos_token_id = kw.get("bos_token_id", 1)
        self.eos_token_id = kw.get("eos_token_id", 2)
        self.page_break_token_id = kw.get("page_break_token_id", 3)
        self.visual_token_ids = kw.get("visual_token_ids", False)
        self.page_aligned_positions = kw.get("page_aligned_positions", False)
        self.line_end_token_ids = list(kw.get("line_end_token_ids", []))
        self.visual_line_end_token_id = kw.get("visual_line_end_token_id", -1)
        # Ids of a second recogniser's reading carried by each visual token after its own id (issue
        # #29, item 2: Tesseract's paired glyph, the glyph it read just before); -1 where none.
        self.visual_evidence_ids = kw.get("visual_evidence_ids", 0)

    def to_json(self):
        d = dict(self.__dict__)
        d["model_type"] = "quire-srswa-decoder"
        return json.dumps(d, indent=2)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, pos, theta):
    """Rotate-half rotary embedding; x [..., T, D], pos [T] (angles in double precision)."""
    D = x.shape[-1]
    inv = theta ** (-2.0 * torch.arange(D // 2, dtype=torch.float64) / D)
    ang = pos.to(torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x0, x1 = x[..., : D // 2], x[..., D // 2:]
    return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, D = c.hidden_size, c.head_dim
        self.c = c
        self.attn_norm = RMSNorm(H, c.rms_norm_eps)
        self.q_proj = nn.Linear(H, c.num_heads * D, bias=False)
        self.k_proj = nn.Linear(H, c.num_kv_heads * D, bias=False)
        self.v_proj = nn.Linear(H, c.num_kv_heads * D, bias=False)
        self.o_proj = nn.Linear(c.num_heads * D, H, bias=False)
        self.mlp_norm = RMSNorm(H, c.rms_norm_eps)
        self.gate_proj = nn.Linear(H, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(H, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, H, bias=False)

    def forward(self, x, pos, mask):
        c = self.c
        B, T, _ = x.shape
        n = self.attn_norm(x)
        q = self.q_proj(n).view(B, T, c.num_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(n).view(B, T, c.num_kv_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(n).view(B, T, c.num_kv_heads, c.head_dim).transpose(1, 2)
        q, k = rope(q, pos, c.rope_theta), rope(k, pos, c.rope_theta)
        g = c.num_heads // c.num_kv_heads
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(c.head_dim)
        s = s.masked_fill(~mask[:, None, :, :], float("-inf"))
        a = torch.softmax(s, dim=-1) @ v
        x = x + self.o_proj(a.transpose(1, 2).reshape(B, T, -1))
        m = self.mlp_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))


class QuireDecoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.visual_proj = nn.Linear(c.visual_dim, c.hidden_size)
        # Each evidence id's embedding, scaled per dimension, is added to its visual token's input;
        # zero at first, so a model given evidence starts as the model it was initialised from.
        self.visual_evidence_gain = (nn.Parameter(torch.zeros(c.visual_evidence_ids, c.hidden_size))
                                     if c.visual_evidence_ids else None)
        self.layers = nn.ModuleList(Layer(c) for _ in range(c.num_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.lm_head = None if c.tie_word_embeddings else nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        nn.init.normal_(self.embed_tokens.weight, std=0.02)

    def visual_input(self, visual, emb):
        """Visual tokens' inputs: visual [..., V + evidence ids] (the ids as floats, -1: none), emb
        the embeddings of their own ids (added with visual_token_ids)."""
        c = self.c
        x = self.visual_proj(visual[..., :c.visual_dim]) + (emb if c.visual_token_ids else 0)
        for k in range(c.visual_evidence_ids):
            ids = visual[..., c.visual_dim + k].long()
            x = x + (ids >= 0)[..., None] * self.embed_tokens(ids.clamp(min=0)) * self.visual_evidence_gain[k]
        return x

    def forward(self, tokens, visual, kinds, mask, pos=None):
        """tokens [B, T] (where kind is VISUAL: the visual token's id, used with visual_token_ids),
        visual [B, T, V (+ evidence ids)] (used where VISUAL), kinds [B, T], mask [B, T, T] bool
        (True: may attend). Returns logits [B, T, vocab]."""
        T = tokens.shape[1]
        emb = self.embed_tokens(tokens.clamp(min=0))
        vis = self.visual_input(visual, emb)
        x = torch.where((kinds == VISUAL)[..., None], vis, emb)
        if pos is None:
            pos = torch.as_tensor(positions(kinds[0].tolist(), self.c.page_aligned_positions, tokens[0].tolist(),
                                            self.c.line_end_token_ids, self.c.visual_line_end_token_id))
        for layer in self.layers:
            x = layer(x, pos, mask)
        x = self.norm(x)
        return x @ self.embed_tokens.weight.T if self.lm_head is None else self.lm_head(x)


def parity_weights(model, std=0.3):
    """Random weights large enough that logits, gate scores and Quest bounds differ from token to
    token (the parity fixtures' seeded models; the caller seeds torch)."""
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, std)
        for layer in model.layers:
            layer.attn_norm.weight.uniform_(0.5, 1.5)
            layer.mlp_norm.weight.uniform_(0.5, 1.5)
        model.norm.weight.uniform_(0.5, 1.5)
    return model


def rotary_peak_weights(head_dim, theta, span=9000, iters=3000):
    """Weights of the rotary frequency pairs for a head that should attend to relative position 0
    only: maximises the smallest gap, over 0 < |offset| < span, between the score at offset 0 and
    at the offset (an exponentiated-gradient ascent on a smoothed minimum; about 0.22 of the peak
    for 48-dim heads, against 0.04 for equal weights)."""
    import numpy as np
    inv = theta ** (-2.0 * np.arange(head_dim // 2) / head_dim)
    gap = 1 - np.cos(np.arange(1, span)[:, None] * inv[None, :])
    w = np.ones(head_dim // 2) / (head_dim // 2)
    for _ in range(iters):
        m = gap @ w
        p = np.exp(-200 * (m - m.min()))
        g = (p / p.sum()) @ gap
        w = w * np.exp(0.5 * g / np.abs(g).max())
        w /= w.sum()
    return w / w.max(), float((gap @ w).min() / w.sum())


def copy_init(model, visual_flag=10.0, gain=6.0, sharpness=40.0, visual_scale=0.03):
    """Starts the reader as a copier of the front-end: at initialisation every written token
    predicts the id of the visual token at its own position, which line-aligned positions make the
    right answer for most tokens (docs/TRAINING.md); training then learns where not to copy. Without
    it, a run spends its first thousand steps finding that copy head (see the copy-task diagnostic).
    Residual dim 0 flags visual tokens (projector bias), dim 1 all token embeddings. In layer 0,
    query heads 0 and 2 (one per KV head) attend by position alone to the visual token at relative
    offset 0 and carry its embedding's dims 2..97 into the written token's residual. Every other
    residual write (other heads, all MLPs, layers 1..) starts at zero, so the network starts as
    exactly that copier."""
    c = model.c
    H, D = c.hidden_size, c.head_dim
    assert c.visual_token_ids and c.page_aligned_positions and c.num_kv_heads * D + 2 <= H
    G = c.num_heads // c.num_kv_heads
    w, gap = rotary_peak_weights(D, c.rope_theta)
    w = torch.as_tensor(w, dtype=torch.float32)
    with torch.no_grad():
        e = model.embed_tokens.weight
        e.normal_(0, 0.1)
        e[:, 0] = 0
        e[:, 1] = 1
        vp = model.visual_proj
        vp.weight[: 2 + c.num_kv_heads * D] = 0
        vp.weight.mul_(visual_scale)  # the flag must dominate a visual token's norm (its key's scale)
        vp.bias[: 2 + c.num_kv_heads * D] = 0
        vp.bias[0] = visual_flag
        L0 = model.layers[0]
        L0.q_proj.weight.zero_(), L0.k_proj.weight.zero_(), L0.v_proj.weight.zero_(), L0.o_proj.weight.zero_()
        # Normalised, a visual token's dim 0 is about sqrt(H) and a written token's dim 1 about the
        # same; the peak score is then `sharpness` nats over the rotary gap.
        scale = math.sqrt(sharpness * math.sqrt(D) / (gap * w.sum().item())) / math.sqrt(H)
        for g in range(c.num_kv_heads):
            L0.k_proj.weight[g * D: g * D + D // 2, 0] = w.sqrt() * scale
            h = g * G  # the first query head of the group copies; the others are free
            L0.q_proj.weight[h * D: h * D + D // 2, 1] = w.sqrt() * scale
            for j in range(D):
                L0.v_proj.weight[g * D + j, 2 + g * D + j] = 1.0
                L0.o_proj.weight[2 + g * D + j, h * D + j] = gain
            # The free heads keep random queries; their values and outputs start at zero.
            for hh in range(h + 1, h + G):
                L0.q_proj.weight[hh * D:(hh + 1) * D].normal_(0, 0.02)
        L0.down_proj.weight.zero_()
        for L in model.layers[1:]:
            L.o_proj.weight.zero_()
            L.down_proj.weight.zero_()
    return gap


def positions(kinds, page_aligned, tokens=None, line_ends=(), visual_line_end=-1, pages=None, page_break=3):
    """Rotary positions of a sequence's items, as DecodeSession places them (docs/DECODING.md).
    Plain: the items' indices.
    Page-aligned: a page's visual tokens start at the next unused position, and the page's text
    starts at the page's first position (at the page break that moves to it), so the t-th
    character written sits at the position of the t-th visual token (the character it most likely
    reads). A page fed ahead of the current one (the window's look-ahead) leaves the current
    page's text where it stands.
    Line-aligned (page-aligned with `line_ends`, which needs the visual tokens' ids in `tokens`):
    the k-th line-end token written on a page sits just past the page's k-th visual line end
    (a visual token whose id is `visual_line_end`), where the next line's visual tokens start;
    the tokens after it follow on from there.
    `pages`: the page of each visual token; without it each run of visual tokens is one page."""
    if not page_aligned:
        return list(range(len(kinds)))
    if pages is None:
        pages, page = [], -1
        for i, k in enumerate(kinds):
            page += k == VISUAL and (i == 0 or kinds[i - 1] != VISUAL)
            pages.append(page if k == VISUAL else -1)
    line_ends = set(line_ends)
    out, position, frontier, generated, current, written = [], 0, 0, 0, 0, 0
    pos0, page_line_ends = {}, {}
    for i, k in enumerate(kinds):
        if k == SINK:
            p = position
            position += 1
        elif k == VISUAL:
            page = pages[i]
            if page not in pos0:  # the page's first token
                text_position = position
                ahead = current in pos0 and page > current
                position = max(position, frontier)
                pos0[page], page_line_ends[page] = position, []
            p = position
            position += 1
            if line_ends and tokens[i] == visual_line_end:
                page_line_ends[page].append(p)
            if i + 1 == len(kinds) or kinds[i + 1] != VISUAL or pages[i + 1] != page:  # the page's last
                frontier = max(frontier, position)
                position = text_position if ahead else pos0[page]
        else:
            if tokens[i] == page_break and generated > 0:
                current, written = current + 1, 0
                position = pos0.get(current, position)
            if line_ends and tokens[i] in line_ends:
                ends = page_line_ends.get(current, [])
                if written < len(ends):
                    position = ends[written] + 1
                written += 1
            p = position
            position += 1
            generated += 1
        out.append(p)
        frontier = max(frontier, p + 1)
    return out


def attention_mask(kinds, pages, mode, recent=128):
    """The runtime's pattern (docs/DECODING.md) for one sequence: kinds [T], pages [T] (page of a
    visual token; -1 otherwise). mode: "full" or "rswa". Returns [T, T] bool."""
    T = len(kinds)
    kinds = torch.as_tensor(kinds)
    pages = torch.as_tensor(pages)
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    causal = j <= i
    ki, kj = kinds[:, None], kinds[None, :]
    sink_row = (ki == SINK) & (kj == SINK)
    visual_row = (ki == VISUAL) & ((kj == SINK) | ((kj == VISUAL) & (pages[None, :] == pages[:, None])))
    if mode == "full":
        gen_row = ki == GEN
    else:
        gen_index = torch.cumsum((kinds == GEN).long(), 0) - 1  # index among generated tokens
        near = (gen_index[:, None] - gen_index[None, :]) < recent
        gen_row = (ki == GEN) & ((kj == SINK) | (kj == VISUAL) | ((kj == GEN) & near))
    return causal & (sink_row | visual_row | gen_row)


def save_safetensors(path, tensors, metadata=None):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        data = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def export(model, out_dir, pattern=None, line_batch=None):
    """The runtime's format: config.json + model.safetensors (docs/MODEL_FORMAT.md). `pattern`: the
    SR-SWA pattern (srswa.Pattern) the model was trained under, written as config.json's "srswa"
    so that the reader runs the model with it (its look-ahead included). `line_batch`: the
    front-end's lines per recognizer call that made its training features (front_end_line_batch)."""
    os.makedirs(out_dir, exist_ok=True)
    c = model.c
    t = {"embed_tokens.weight": model.embed_tokens.weight, "visual_proj.weight": model.visual_proj.weight,
         "visual_proj.bias": model.visual_proj.bias, "norm.weight": model.norm.weight}
    for i, l in enumerate(model.layers):
        for name in ["attn_norm", "mlp_norm"]:
            t[f"layers.{i}.{name}.weight"] = getattr(l, name).weight
        for name in ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]:
            t[f"layers.{i}.{name}.weight"] = getattr(l, name).weight
    if model.lm_head is not None:
        t["lm_head.weight"] = model.lm_head.weight
    if model.visual_evidence_gain is not None:
        t["visual_evidence_gain"] = model.visual_evidence_gain
    save_safetensors(os.path.join(out_dir, "model.safetensors"), t)
    config = json.loads(c.to_json())
    if pattern is not None:
        config["srswa"] = pattern.to_dict()
    if line_batch is not None:
        config["front_end_line_batch"] = line_batch
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        f.write(json.dumps(config, indent=2) + "\n")


def load_exported(model_dir):
    """A model from the runtime's format (config.json + model.safetensors, F32), for golden logits."""
    import numpy as np
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    cfg.pop("model_type", None)
    cfg.pop("srswa", None)  # how it runs, not what it is
    cfg.pop("front_end_line_batch", None)
    model = QuireDecoder(Config(**cfg))
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    state = {}
    for name, t in header.items():
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        state[name] = torch.from_numpy(np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).reshape(t["shape"]).copy())
    model.load_state_dict(state)
    return model.eval()
