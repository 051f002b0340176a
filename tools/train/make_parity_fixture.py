#!/usr/bin/python3
"""Golden logits from the PyTorch reader (tools/train/model.py) for tests/tst_decoder_attention: a small
seeded model exported in the runtime's format, one sequence (sinks, two pages of visual tokens,
generated tokens with a page break), and the logits at every generated step under full attention
and R-SWA (a ring of 4, so eviction happens). The C++ runtime must reproduce them.
With --visual-token-ids the model embeds an id carried by each visual token (the CTC hypothesis
in Quire's reader); the case's page rows then end with that id.

    /usr/bin/python3 tools/train/make_parity_fixture.py tests/fixtures/reader_parity
    /usr/bin/python3 tools/train/make_parity_fixture.py --visual-token-ids tests/fixtures/reader_parity_ids
    /usr/bin/python3 tools/train/make_parity_fixture.py --visual-token-ids --page-aligned-positions \
        tests/fixtures/reader_parity_aligned
    /usr/bin/python3 tools/train/make_parity_fixture.py --visual-token-ids --page-aligned-positions \
        --line-aligned-positions tests/fixtures/reader_parity_lines
    /usr/bin/python3 tools/train/make_parity_fixture.py --visual-token-ids --page-aligned-positions \
        --line-aligned-positions --evidence tests/fixtures/reader_parity_evidence
With line-aligned positions (and for a trained model that has them) some visual tokens are line
ends and some generated tokens write line ends, so the positions jump as they do in a real page.
With --evidence each visual token also carries two evidence ids after its id (visual_evidence_ids:
Tesseract's paired glyph and the glyph before it), some of them -1 (none).
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import GEN, SINK, VISUAL, Config, QuireDecoder, attention_mask, export, load_exported, parity_weights  # noqa: E402

# --trained DIR: golden logits of an exported (trained) model instead of a seeded one; the fixture
# then holds no weights, only the case, with each step's logits at a fixed set of ids.
trained = sys.argv[sys.argv.index("--trained") + 1] if "--trained" in sys.argv else None
with_ids = "--visual-token-ids" in sys.argv[1:]
aligned = "--page-aligned-positions" in sys.argv[1:]
lines = "--line-aligned-positions" in sys.argv[1:]
evidence = 2 if "--evidence" in sys.argv[1:] else 0
out = [a for a in sys.argv[1:] if not a.startswith("--") and a != trained][0]
os.makedirs(out, exist_ok=True)
torch.manual_seed(7)
c = Config(vocab_size=64, hidden_size=32, num_layers=2, num_heads=4, num_kv_heads=2, head_dim=8,
           intermediate_size=48, visual_dim=12, max_position_embeddings=4096, visual_token_ids=with_ids,
           page_aligned_positions=aligned, line_end_token_ids=[4, 5] if lines else [],
           visual_line_end_token_id=6 if lines else -1, visual_evidence_ids=evidence)
if trained:
    model = load_exported(trained)
    c = model.c
    with_ids, evidence = c.visual_token_ids, c.visual_evidence_ids
else:
    model = parity_weights(QuireDecoder(c))
    export(model, out)

V, vocab = c.visual_dim, c.vocab_size
sinks = [1, 5, 6] if not trained else [1]
pages = [torch.randn(7, V) * (2.7 if trained else 1), torch.randn(5, V) * (2.7 if trained else 1)]
page_ids = [torch.randint(0, vocab, (7,)), torch.randint(0, vocab, (5,))] if with_ids else [
    torch.zeros(7, dtype=torch.long), torch.zeros(5, dtype=torch.long)]
# Generated inputs: page 0's text, then the page break (page 1 is fed before it), page 1's text.
gen0 = [9, 10, 11, 12, 13, 14]
gen1 = [3, 20, 21, 22, 23, 24, 25]
if c.line_end_token_ids:  # lines of 3, 3 and 1 visual tokens on page 0, 2 and 3 on page 1
    page_ids[0][[2, 5]] = c.visual_line_end_token_id
    page_ids[1][1] = c.visual_line_end_token_id
    gen0[2], gen0[4] = c.line_end_token_ids[0], c.line_end_token_ids[-1]
    gen1[2] = c.line_end_token_ids[0]
if evidence:  # ids drawn from the vocabulary, about a third of them -1 (none)
    for k, p in enumerate(pages):
        ev = torch.randint(0, vocab, (len(p), evidence)).float()
        ev[torch.rand(len(p), evidence) < 0.35] = -1
        pages[k] = torch.cat([p, ev], 1)
items = [(SINK, t, None, -1) for t in sinks]
items += [(VISUAL, int(i), v, 0) for v, i in zip(pages[0], page_ids[0])]
items += [(GEN, t, None, -1) for t in gen0]
items += [(VISUAL, int(i), v, 1) for v, i in zip(pages[1], page_ids[1])]
items += [(GEN, t, None, -1) for t in gen1]
kinds = torch.tensor([k for k, _, _, _ in items])
tokens = torch.tensor([t for _, t, _, _ in items])
visual = torch.stack([v if v is not None else torch.zeros(V + evidence) for _, _, v, _ in items])
page_of = [p for _, _, _, p in items]
# A row: its features, its id (with ids), its evidence ids — the runtime's layout.
rows = [[r[:V] + ([float(i)] if with_ids else []) + r[V:] for r, i in zip(p.tolist(), ids.tolist())]
        for p, ids in zip(pages, page_ids)]
case = {"sinks": sinks, "pages": rows, "gen0": gen0, "gen1": gen1, "recent": 4, "logits": {}}
watch = sorted(set(range(0, vocab, max(1, vocab // 48))) | set(gen0 + gen1)) if trained else None
if trained:
    case["ids"] = watch
for mode in ["full", "rswa"]:
    mask = attention_mask(kinds.tolist(), page_of, mode, recent=4)
    with torch.no_grad():
        logits = model(tokens[None], visual[None], kinds[None], mask[None])[0]
    case["logits"][mode] = [(logits[i][watch] if trained else logits[i]).tolist() for i in range(len(items))
                            if kinds[i] == GEN]
with open(os.path.join(out, "case.json"), "w") as f:
    json.dump(case, f)
print(f"wrote {out}: {sum(p.numel() for p in model.parameters())} parameters, {len(case['logits']['full'])} steps")
if trained:
    print("the case's logits are at ids", len(watch))
