#!/usr/bin/python3
"""Trains Quire's reader: the runtime's decoder family over the front-end's visual tokens, with the
attention pattern it runs with — the runtime's SR-SWA (tools/train/srswa.py) where the config's
"training" has "srswa" budgets, else R-SWA masks (tools/train/model.py) — on synthetic books
(tools/train/make_pages.py). One command, the same on a CPU and on a GPU:

    /usr/bin/python3 tools/train/train.py --config tools/train/configs/reader-small.json \\
        --data data/synth --out runs/reader-small [--resume] [--device cpu|cuda] [--workers 2]

Writes OUT/checkpoint.pt (model, optimiser, step, RNG states; --resume continues from it),
OUT/loss.tsv (step, training loss, held-out loss, held-out token accuracy, seconds), and
OUT/model/ (config.json + model.safetensors, the runtime's format, and character_counts.tsv: how
often each character was a training target, each character's count the larger of this run's
documents' and the --init model's file) at the end and at every checkpoint. Deterministic for a given seed, thread
count and number of workers.
"""
import argparse
import json
import os
import random
import sys
import time
from multiprocessing.pool import ThreadPool

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import (BOS, COUNTS_FILE, EOS, EVIDENCE_VALUES, EXTRA_BASES, FIRST_EXTRA, PAGE_BREAK, VISUAL_DIM, Vocab, character_counts, features_ready,  # noqa: E402
                  front_end_line_batch, merge_counts, prepare_document, read_counts, write_counts)
from model import GEN, SINK, VISUAL, Config, QuireDecoder, copy_init, export, load_exported  # noqa: E402
import srswa  # noqa: E402
from trainer import Trainer, evaluate, make_optimizer  # noqa: E402


def build_sequence(record, max_len, look_ahead=0):
    """One document as the runtime sees it: [BOS sink] [V0] [BOS y0...] [V1] [PB y1...] ... EOS,
    cut at max_len (teacher forcing makes a cut anywhere harmless; a cut page still brings its
    visual tokens, so most documents keep a page break). With look_ahead k each page is fed k
    pages before its text: [V0 .. Vk] [BOS y0...] [Vk+1] [PB y1...] ... A record with "evidence"
    gives each visual row its evidence ids after its values (as floats, the runtime's layout)."""
    pages = len(record["visual"])
    kinds, tokens, visual, pages_of, labels = [SINK], [BOS], [None], [-1], [-100]
    y = []
    for p in range(pages):
        y += list(record["targets"][p]) + [PAGE_BREAK if p + 1 < pages else EOS]
    inputs = [BOS] + y[:-1]
    page = 0

    def add_page(p):
        rows = record["visual"][p]
        if "evidence" in record:
            rows = np.concatenate([np.asarray(rows, np.float32), record["evidence"][p].astype(np.float32)], 1)
        for v, i in zip(rows, record["ids"][p]):
            kinds.append(VISUAL), tokens.append(int(i)), visual.append(v), pages_of.append(p), labels.append(-100)

    for p in range(min(pages, 1 + look_ahead)):
        add_page(p)
    for x, t in zip(inputs, y):
        if len(kinds) >= max_len:
            break
        if x == PAGE_BREAK:
            page += 1
            if page + look_ahead < pages:
                add_page(page + look_ahead)
        kinds.append(GEN), tokens.append(x), visual.append(None), pages_of.append(-1), labels.append(t)
    n = min(len(kinds), max_len)
    width = next(len(v) for v in visual if v is not None)
    vis = np.zeros((n, width), np.float32)
    for i in range(n):
        if visual[i] is not None:
            vis[i] = visual[i]
    return (torch.tensor(kinds[:n]), torch.tensor(tokens[:n]), torch.from_numpy(vis), pages_of[:n],
            torch.tensor(labels[:n]))


def find_documents(data, ready_only):
    """DATA/docNNNN or, for data made in batches, DATA/*/docNNNN, in sorted order."""
    docs = []
    for root, dirs, _ in os.walk(data, followlinks=True):
        docs += [os.path.join(root, d) for d in dirs if d.startswith("doc")]
        dirs[:] = [d for d in dirs if not d.startswith("doc")]
    docs.sort()
    return [d for d in docs if features_ready(d)] if ready_only else docs


def covered(docs, records, least):
    """The documents (and their records) whose features hold at least `least` visual tokens a
    target token; each other one named. A front-end that misses much of a page (Chinese columns
    read across a narrow gutter, docs/ACCURACY.md 2026-12-06) leaves the model targets it cannot
    see, and training on them teaches it to guess."""
    keep_docs, keep = [], []
    for d, r in zip(docs, records):
        v, t = sum(len(x) for x in r["visual"]), sum(len(x) for x in r["targets"])
        if t and v < least * t:
            print(f"{d}: left out: its features hold {v / t:.2f} visual tokens a target token "
                  f"(--min-coverage {least})", flush=True)
            continue
        keep_docs.append(d)
        keep.append(r)
    return keep_docs, keep


def held_out_count(documents):
    """How many of the first documents are held out: a fixed set while data grows."""
    return min(20, max(1, documents // 10))


def load_records(docs, loaded, quire_cli, vocab, jobs=1, evidence=False, as_printed=False):
    """Training records of the documents not in `loaded` (cached in DOC/record3.npz; with
    Tesseract's evidence record3e.npz, with targets as printed record3p.npz or record3pe.npz); the
    front-end runs on `jobs` documents at once (each is a quire-cli process)."""
    todo = [d for d in docs if d not in loaded]
    loaded.update(todo)
    keys = ["visual", "ids", "targets"] + (["evidence"] if evidence else [])

    def one(d):
        # visual tokens with line ends, line-aligned outputs
        cache = os.path.join(d, "record3" + ("p" if as_printed else "") + ("e" if evidence else "") + ".npz")
        if os.path.exists(cache):
            z = np.load(cache, allow_pickle=True)
            return {k: list(z[k]) for k in keys}
        r = prepare_document(d, quire_cli, vocab, evidence, as_printed)
        with open(cache + ".part", "wb") as f:  # renamed when whole: a killed run leaves no torn cache
            np.savez(f, **{k: object_array(r[k]) for k in keys})
        os.replace(cache + ".part", cache)
        return r

    if jobs <= 1:
        return [one(d) for d in todo]
    with ThreadPool(jobs) as pool:
        return pool.map(one, todo, chunksize=1)


def object_array(items):
    """A 1-D object array of per-page arrays (np.array would stack pages of equal length)."""
    a = np.empty(len(items), dtype=object)
    for i, x in enumerate(items):
        a[i] = np.asarray(x)
    return a


def init_from(model, path):
    """The weights of a checkpoint or an exported model folder; a tensor whose shape changed keeps its
    overlapping part, projector columns the start did not have (Tesseract's evidence) start at zero,
    and the extra characters of a vocabulary that gained them start as their base letters
    (data.EXTRA_BASES: ö as o, ß as s), so the model starts as the one it came from."""
    own = model.state_dict()
    with torch.no_grad():
        init = load_exported(path).state_dict() if os.path.isdir(path) else torch.load(path)["model"]
        for name, t in init.items():
            if name in own:
                view = own[name][tuple(slice(0, min(a, b)) for a, b in zip(own[name].shape, t.shape))]
                view.copy_(t[tuple(slice(0, s) for s in view.shape)])
                if name == "visual_proj.weight":
                    own[name][:, t.shape[1]:] = 0
                if name in ("embed_tokens.weight", "lm_head.weight") and t.shape[0] == FIRST_EXTRA < own[name].shape[0]:
                    vocab = Vocab()
                    for k, base in enumerate(EXTRA_BASES[:own[name].shape[0] - FIRST_EXTRA]):
                        own[name][FIRST_EXTRA + k] = t[vocab.index[base]]


def parse_args():
    """The command line, and the config with its --set overrides applied."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--data", required=True, help="folder of make_pages.py documents")
    ap.add_argument("--out", required=True)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ready-only", action="store_true",
                    help="use only documents whose features exist (another process is still computing the rest)")
    ap.add_argument("--init", help="start from this checkpoint's weights, or an exported model folder such as "
                    "resources/models/reader (tensors whose shape changed "
                    "keep their overlapping part, e.g. an embedding that gained tokens)")
    ap.add_argument("--copy-init", action="store_true",
                    help="start as a copier of the front-end's hypothesis (model.copy_init; needs line- or "
                    "page-aligned positions and visual token ids)")
    ap.add_argument("--min-coverage", type=float, default=0.0,
                    help="leave out documents whose features hold fewer visual tokens than this share of "
                    "their target tokens (0.9 for run 28: the front-end missed a fifth of some pages)")
    ap.add_argument("--workers", type=int, default=1,
                    help="data-parallel processes (forked, one thread each with --threads 1): each step takes "
                    "one document a worker and steps with their mean gradient")
    ap.add_argument("--jobs", type=int, default=1,
                    help="documents whose features are computed at once (quire-cli processes) before training")
    ap.add_argument("--refresh-every", type=int, default=0,
                    help="with --ready-only: every N steps, add the documents that became ready")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override one of the config's training values (a JSON value), e.g. --set steps=200; "
                    "the run's settings are written to OUT/training.json")
    ap.add_argument("--quire-cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "app", "quire-cli"))
    args = ap.parse_args()
    cfg = json.load(open(args.config))
    train_cfg = cfg["training"]
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or key not in train_cfg:
            ap.error(f"--set {item}: not KEY=VALUE with a KEY of {args.config}'s training section")
        train_cfg[key] = json.loads(value)
    if args.workers > 1 and args.refresh_every:
        ap.error("--workers with --refresh-every: the ranks would have to agree on new documents")
    return args, cfg


def main():
    args, cfg = parse_args()
    train_cfg = cfg["training"]
    torch.set_num_threads(args.threads)
    random.seed(train_cfg["seed"])
    np.random.seed(train_cfg["seed"])
    torch.manual_seed(train_cfg["seed"])
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump({"config": args.config, "training": train_cfg}, f, indent=2)

    vocab = Vocab()
    quire_cli = os.path.abspath(args.quire_cli)
    t0 = time.time()
    loaded = set()
    # Models with visual_evidence_ids read Tesseract's evidence beside each visual token.
    evidence = cfg["model"].get("visual_evidence_ids", 0) > 0
    # "targets": "as_printed" in the training config: the pages' running heads and folios written
    # as printed (data.target_as_printed); "reading" (the default): the reading text alone.
    as_printed = train_cfg.get("targets", "reading") == "as_printed"
    docs = find_documents(args.data, args.ready_only)
    records = load_records(docs, loaded, quire_cli, vocab, args.jobs, evidence, as_printed)
    _, records = covered(docs, records, args.min_coverage)
    # The reader runs a model with the front-end's line batch its features were made with.
    line_batch = front_end_line_batch(docs)
    print(f"{len(records)} documents ready in {time.time() - t0:.0f} s; features made {line_batch} line(s) a call",
          flush=True)
    held = held_out_count(len(records))
    max_len = train_cfg["max_len"]
    # "srswa" in the training config: the runtime's SR-SWA budgets (srswa.Pattern), the window's
    # look-ahead pages fed before a page's text as the runtime is fed.
    pattern = srswa.Pattern(**train_cfg["srswa"]) if "srswa" in train_cfg else None
    look_ahead = pattern.window_after if pattern else 0
    train_seqs = [build_sequence(r, max_len, look_ahead) for r in records[held:]]
    eval_seqs = [build_sequence(r, max_len, look_ahead) for r in records[:held]]
    # How often the model saw each character, its starting point's training included: written beside
    # the exported model, where the runtime trusts the front-end more on characters it hardly saw.
    init_counts = {}
    if args.init:
        init_dir = args.init if os.path.isdir(args.init) else os.path.join(os.path.dirname(args.init), "model")
        init_counts = read_counts(os.path.join(init_dir, COUNTS_FILE))
    train_records = records[held:]
    counts = merge_counts(init_counts, character_counts(train_records, vocab))

    mc = dict(cfg["model"])
    mc["vocab_size"], mc["visual_dim"] = vocab.size, VISUAL_DIM + (EVIDENCE_VALUES if evidence else 0)
    config = Config(**mc)
    model = QuireDecoder(config).to(args.device)
    opt = make_optimizer(model, train_cfg)
    step = 0
    ckpt = os.path.join(args.out, "checkpoint.pt")
    if args.copy_init and not (args.resume and os.path.exists(ckpt)):
        gap = copy_init(model)
        el, acc = evaluate(model, eval_seqs, train_cfg["recent_tokens"], pattern)
        print(f"copy initialisation (rotary gap {gap:.3f}): held-out loss {el:.3f}, token acc {acc:.3f}", flush=True)
    if args.init and not (args.resume and os.path.exists(ckpt)):
        init_from(model, args.init)
        print(f"initialised from {args.init}", flush=True)
    if args.resume and os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step = state["step"]
        random.setstate(state["py_rng"])
        torch.set_rng_state(state["torch_rng"])
        print(f"resumed at step {step}", flush=True)
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params / 1e6:.2f} M parameters; {len(train_seqs)} training, {len(eval_seqs)} held-out documents",
          flush=True)

    def more_sequences():
        """--refresh-every: the sequences of documents that became ready since (their counts added)."""
        nonlocal counts
        more = [d for d in find_documents(args.data, True) if d not in loaded]
        new = load_records(more, loaded, quire_cli, vocab, evidence=evidence, as_printed=as_printed)
        more, new = covered(more, new, args.min_coverage)
        if not new:
            return []
        front_end_line_batch(docs[:1] + more)  # a ValueError where theirs is not the run's
        train_records.extend(new)
        counts = merge_counts(init_counts, character_counts(train_records, vocab))
        print(f"step {trainer.step}: {len(new)} more documents, {len(train_seqs) + len(new)} in training", flush=True)
        return [build_sequence(r, max_len, look_ahead) for r in new]

    def export_model(model):
        export(model, os.path.join(args.out, "model"), pattern, line_batch)
        write_counts(os.path.join(args.out, "model", COUNTS_FILE), counts)

    trainer = Trainer(model, opt, train_cfg, pattern, args.out, train_seqs, eval_seqs, export_model, step,
                      (args.refresh_every, more_sequences) if args.refresh_every else None)
    trainer.run(args.workers)


if __name__ == "__main__":
    main()
