#!/usr/bin/python3
"""Checks that srswa.run's two ways of computing a volume agree: each page's text in one pass
(`together`, what training uses) and chunk by chunk as the runtime steps (the reference that
tests/tst_decoder_attention holds against DecodeSession). Same positions attended by every
generated token in every layer, the same logits, loss and gradients but for the order of float
sums; and the pass's times side by side.

    /usr/bin/python3 tools/train/srswa_check.py                       # the SR-SWA parity fixture
    /usr/bin/python3 tools/train/srswa_check.py --doc DATA/doc0000 --pages 3 \\
        --model resources/models/reader --config tools/train/configs/reader-srswa.json

The first replays tests/fixtures/reader_srswa (a small seeded model, eight pages fed a page
ahead, two gated pages, a refresh every three steps, the position frame moving) and also compares
with what the fixture recorded. The second takes a training document (its record3.npz, made by
train.py) and a model in the runtime's format, with the config's SR-SWA budgets. Exit 0 when
everything agrees, 1 otherwise; 77 where PyTorch is not installed (ctest counts it as skipped).
"""
import argparse
import json
import os
import sys
import time

try:
    import torch
except ImportError:
    print("srswa_check: PyTorch is not installed (bash tools/train/setup.sh)")
    sys.exit(77)
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import srswa  # noqa: E402
from model import GEN, SINK, VISUAL, load_exported  # noqa: E402

FIXTURE = os.path.join(HERE, "..", "..", "tests", "fixtures", "reader_srswa")


def fixture_sequence(path):
    """The fixture's volume in the order the runtime was fed it, its pattern and what it recorded."""
    with open(os.path.join(path, "case.json")) as f:
        case = json.load(f)
    dim = len(case["events"][0]["rows"][0]) - 1
    kinds, tokens, visual, pages = [], [], [], []
    for s in case["sinks"]:
        kinds.append(SINK), tokens.append(s), visual.append([0.0] * dim), pages.append(-1)
    for e in case["events"]:
        if "page" in e:
            for row in e["rows"]:
                kinds.append(VISUAL), tokens.append(int(row[-1])), visual.append(row[:-1]), pages.append(e["page"])
        else:
            kinds.append(GEN), tokens.append(e["token"]), visual.append([0.0] * dim), pages.append(-1)
    return kinds, tokens, np.asarray(visual, np.float32), pages, srswa.Pattern(**case["pattern"]), case


def document_sequence(doc, pages, look_ahead):
    """A training document's volume (train.build_sequence, no cut, `look_ahead` pages fed ahead) and
    its labels."""
    from train import build_sequence
    z = np.load(os.path.join(doc, "record3.npz"), allow_pickle=True)
    record = {k: list(z[k])[:pages] for k in ("visual", "ids", "targets")}
    kinds, tokens, vis, pages_of, labels = build_sequence(record, 10 ** 9, look_ahead)
    return kinds.tolist(), tokens.tolist(), vis.numpy(), pages_of, labels.numpy()


def compare(name, a, b, tol):
    """Largest difference of a and b relative to b's largest magnitude; prints it; whether within tol."""
    rel = float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))
    ok = rel <= tol
    print(f"  {name}: largest difference {rel:.2e} of the largest value ({'ok' if ok else 'OVER ' + str(tol)})")
    return ok


def check(model, pattern, seq, labels=None, fixture=None):
    kinds, tokens, visual, pages = seq
    ok = True
    runs, times = {}, {}
    for together in (False, True):
        t = time.time()
        with torch.no_grad():
            runs[together] = srswa.run(model, pattern, kinds, tokens, visual, pages, record=True, together=together)
        times[together] = time.time() - t
    (ra, la), (rb, lb) = runs[False], runs[True]
    same = all([sorted(x) for x in ra.attended[i]] == [sorted(x) for x in rb.attended[i]] for i in ra.gen_items)
    print(f"  attention: {'the same positions' if same else 'DIFFERENT positions'} for {len(ra.gen_items)} generated "
          f"tokens in {model.c.num_layers} layers; runs of text computed together {rb.stats.get('runs together', 0)}, "
          f"in {rb.stats.get('passes', 0)} passes, chunk by chunk {rb.stats.get('sequential runs', 0)}")
    ok = ok and same and ra.gen_items == rb.gen_items
    ok = compare("logits", lb, la, 1e-4) and ok
    print(f"  time without gradients, the positions recorded: chunk by chunk {times[False]:.1f} s, together {times[True]:.1f} s")
    if fixture is not None:
        recorded = torch.tensor(fixture["logits"])
        ok = compare("logits against the fixture (DecodeSession's)", lb, recorded, 1e-4) and ok
        pos = [[sorted(int(rb.pos[j]) for j in items) for items in rb.attended[i]] for i in rb.gen_items]
        expanded = [[[p + k for p, n in runs_ for k in range(n)] for runs_ in tok] for tok in fixture["attended"]]
        same = pos == expanded
        print(f"  positions against the fixture: {'the same' if same else 'DIFFERENT'}")
        ok = ok and same
    if labels is not None:
        grads, losses = {}, {}
        for together in (False, True):
            model.zero_grad()
            t = time.time()
            r, _ = srswa.run(model, pattern, kinds, tokens, visual, pages, labels=labels, together=together)
            times[together] = time.time() - t
            losses[together] = r.loss_sum
            grads[together] = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        print(f"  loss: chunk by chunk {losses[False]:.6f}, together {losses[True]:.6f}")
        ok = compare("loss", torch.tensor([losses[True]]), torch.tensor([losses[False]]), 1e-5) and ok
        ok = compare("gradients", grads[True], grads[False], 1e-4) and ok
        print(f"  time of a training pass (loss and gradients): chunk by chunk {times[False]:.1f} s, "
              f"together {times[True]:.1f} s ({times[False] / max(times[True], 1e-9):.1f}x)")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", help="a training document with record3.npz (else the parity fixture)")
    ap.add_argument("--pages", type=int, default=3, help="its first pages")
    ap.add_argument("--model", default=os.path.join(HERE, "..", "..", "resources", "models", "reader"))
    ap.add_argument("--config", default=os.path.join(HERE, "configs", "reader-srswa.json"),
                    help="the SR-SWA budgets (its training.srswa)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.doc:
        model = load_exported(args.model)
        with open(args.config) as f:
            pattern = srswa.Pattern(**json.load(f)["training"]["srswa"])
        kinds, tokens, visual, pages, labels = document_sequence(args.doc, args.pages, pattern.window_after)
        print(f"{args.doc}, {args.pages} pages, {len(kinds)} items, model {args.model}:")
        ok = check(model, pattern, (kinds, tokens, visual, pages), labels)
    else:
        model = load_exported(FIXTURE)
        kinds, tokens, visual, pages, pattern, case = fixture_sequence(FIXTURE)
        # Labels for a training pass: each generated token's next input (the last: the first sink).
        gen = [i for i, k in enumerate(kinds) if k == GEN]
        labels = np.full(len(kinds), -100, np.int64)
        for a, b in zip(gen, gen[1:] + [0]):
            labels[a] = tokens[b]
        print(f"the SR-SWA parity fixture ({FIXTURE}):")
        ok = check(model, pattern, (kinds, tokens, visual, pages), labels, case)
    print("srswa_check: " + ("the two agree" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
