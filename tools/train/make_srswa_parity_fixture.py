#!/usr/bin/python3
"""The SR-SWA parity fixture for tests/tst_decoder_attention: a small seeded model of the reader's family
(visual token ids, line-aligned positions) and one volume of eight pages fed with one page of
look-ahead, replayed by tools/train/srswa.py under small budgets (two gated pages of one block, a
refresh every three steps, a ring of twelve, positions far past the trained range so the frame
moves), with the positions each generated token attends to in every layer and its logits.
DecodeSession must attend exactly those positions and compute the same logits.

    /usr/bin/python3 tools/train/make_srswa_parity_fixture.py tests/fixtures/reader_srswa
"""
import json
import os
import random
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import GEN, SINK, VISUAL, Config, QuireDecoder, export, parity_weights  # noqa: E402
from srswa import Pattern, run  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(11)
rng = random.Random(11)
c = Config(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
           intermediate_size=48, visual_dim=12, max_position_embeddings=64, visual_token_ids=True,
           page_aligned_positions=True, line_end_token_ids=[4, 5], visual_line_end_token_id=6)
model = parity_weights(QuireDecoder(c))
export(model, out)
pattern = Pattern(window_before=0, window_after=1, gated_pages=2, blocks_per_gated_page=1, gate_refresh_steps=3,
                  gate_query_tokens=4, gate_hold=0.05, recent=12)

PAGES = 8
sinks = [1, 7, 8]
page_rows, texts = [], []
for pg in range(PAGES):
    n = rng.randint(20, 45)
    ids = [6 if t % 7 == 6 else rng.randrange(7, 64) for t in range(n)]
    feats = torch.randn(n, c.visual_dim)
    page_rows.append([[round(x, 5) for x in feats[t].tolist()] + [float(ids[t])] for t in range(n)])
    text = [4 if t % 6 == 5 else rng.randrange(7, 64) for t in range(rng.randint(10, 30))]
    texts.append(([1] if pg == 0 else [3]) + text)  # BOS starts the first page's text, a page break the others'

# The order the runtime is fed: sinks, pages 0 and 1, page 0's text, page 2, page 1's text, ...
kinds, tokens, visual, pages, events = [], [], [], [], []
for s in sinks:
    kinds.append(SINK), tokens.append(s), visual.append([0.0] * c.visual_dim), pages.append(-1)


def feed_page(pg):
    events.append({"page": pg, "rows": page_rows[pg]})
    for row in page_rows[pg]:
        kinds.append(VISUAL), tokens.append(int(row[-1])), visual.append(row[:-1]), pages.append(pg)


feed_page(0)
for pg in range(PAGES):
    if pg + 1 < PAGES:
        feed_page(pg + 1)
    for t in texts[pg]:
        events.append({"token": t})
        kinds.append(GEN), tokens.append(t), visual.append([0.0] * c.visual_dim), pages.append(-1)

with torch.no_grad():
    r, logits = run(model, pattern, kinds, tokens, visual, pages, record=True)


def runs(sorted_positions):
    """[first, count] runs of consecutive positions (a position attended twice, a visual and a
    generated token, starts a new run)."""
    out = []
    for p in sorted_positions:
        if out and p == out[-1][0] + out[-1][1]:
            out[-1][1] += 1
        else:
            out.append([p, 1])
    return out


attended = [[runs(sorted(int(r.pos[j]) for j in items)) for items in r.attended[i]] for i in r.gen_items]
logits = [[float(f"{x:.7g}") for x in lg.tolist()] for lg in logits]
with open(os.path.join(out, "case.json"), "w") as f:
    json.dump({"sinks": sinks, "pattern": pattern.to_dict(), "events": events, "attended": attended,
               "logits": logits}, f)
framed = sum(1 for i in r.gen_items if max(r.pos[r.attended[i][0]]) - min(r.pos[r.attended[i][0]]) >= 64)
print(f"{len(r.gen_items)} generated steps, {sum(len(p) for p in page_rows)} visual tokens, {framed} steps framed, "
      f"positions up to {max(r.pos)}")
