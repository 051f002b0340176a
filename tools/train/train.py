#!/usr/bin/python3
"""Trains Quire's reader: the runtime's decoder family over the front-end's visual tokens, with the
R-SWA attention pattern it runs with (tools/train/model.py), on synthetic books
(tools/train/make_pages.py). One command, the same on a CPU and on a GPU:

    /usr/bin/python3 tools/train/train.py --config tools/train/configs/reader-small.json \\
        --data data/synth --out runs/reader-small [--resume] [--device cpu|cuda]

Writes OUT/checkpoint.pt (model, optimiser, step, RNG states; --resume continues from it),
OUT/loss.tsv (step, training loss, held-out loss, held-out token accuracy, seconds), and
OUT/model/ (config.json + model.safetensors, the runtime's format) at the end and at every
checkpoint. Deterministic for a given seed and thread count.
"""
import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import BOS, EOS, PAGE_BREAK, VISUAL_DIM, Vocab, prepare_document  # noqa: E402
from model import GEN, SINK, VISUAL, Config, QuireDecoder, attention_mask, export  # noqa: E402


def build_sequence(record, max_len):
    """One document as the runtime sees it: [BOS sink] [V0] [BOS y0...] [V1] [PB y1...] ... EOS.
    Pages are dropped from the end until the sequence fits max_len."""
    pages = len(record["visual"])
    while True:
        kinds, tokens, visual, pages_of, labels = [SINK], [BOS], [None], [-1], [-100]
        y = []
        for p in range(pages):
            y += list(record["targets"][p]) + [PAGE_BREAK if p + 1 < pages else EOS]
        inputs = [BOS] + y[:-1]
        page = 0

        def add_page(p):
            for v in record["visual"][p]:
                kinds.append(VISUAL), tokens.append(0), visual.append(v), pages_of.append(p), labels.append(-100)

        add_page(0)
        for x, t in zip(inputs, y):
            if x == PAGE_BREAK:
                page += 1
                add_page(page)
            kinds.append(GEN), tokens.append(x), visual.append(None), pages_of.append(-1), labels.append(t)
        if len(kinds) <= max_len or pages == 1:
            break
        pages -= 1
    n = min(len(kinds), max_len)
    vis = np.zeros((n, VISUAL_DIM), np.float32)
    for i in range(n):
        if visual[i] is not None:
            vis[i] = visual[i]
    return (torch.tensor(kinds[:n]), torch.tensor(tokens[:n]), torch.from_numpy(vis), pages_of[:n],
            torch.tensor(labels[:n]))


def run_model(model, seq, recent):
    kinds, tokens, vis, pages_of, labels = seq
    mask = attention_mask(kinds.tolist(), pages_of, "rswa", recent=recent)
    logits = model(tokens[None], vis[None], kinds[None], mask[None])[0]
    return logits, labels


def evaluate(model, seqs, recent):
    model.eval()
    loss_sum, tokens, correct = 0.0, 0, 0
    with torch.no_grad():
        for seq in seqs:
            logits, labels = run_model(model, seq, recent)
            keep = labels != -100
            loss_sum += F.cross_entropy(logits[keep], labels[keep], reduction="sum").item()
            correct += (logits[keep].argmax(-1) == labels[keep]).sum().item()
            tokens += int(keep.sum())
    model.train()
    return loss_sum / max(1, tokens), correct / max(1, tokens)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--data", required=True, help="folder of make_pages.py documents")
    ap.add_argument("--out", required=True)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quire-cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "app", "quire-cli"))
    args = ap.parse_args()
    cfg = json.load(open(args.config))
    train_cfg = cfg["training"]
    torch.set_num_threads(args.threads)
    random.seed(train_cfg["seed"])
    np.random.seed(train_cfg["seed"])
    torch.manual_seed(train_cfg["seed"])
    os.makedirs(args.out, exist_ok=True)

    vocab = Vocab()
    docs = sorted(d for d in os.listdir(args.data) if d.startswith("doc"))
    t0 = time.time()
    records = []
    for d in docs:
        cache = os.path.join(args.data, d, "record.npz")
        if os.path.exists(cache):
            z = np.load(cache, allow_pickle=True)
            records.append({"visual": list(z["visual"]), "targets": list(z["targets"])})
            continue
        r = prepare_document(os.path.join(args.data, d), os.path.abspath(args.quire_cli), vocab)
        np.savez(cache, visual=np.array(r["visual"], dtype=object), targets=np.array(r["targets"], dtype=object))
        records.append(r)
    print(f"{len(records)} documents ready in {time.time() - t0:.0f} s", flush=True)
    held = max(1, len(records) // 20)
    max_len = train_cfg["max_len"]
    train_seqs = [build_sequence(r, max_len) for r in records[held:]]
    eval_seqs = [build_sequence(r, max_len) for r in records[:held]]

    mc = dict(cfg["model"])
    mc["vocab_size"], mc["visual_dim"] = vocab.size, VISUAL_DIM
    config = Config(**mc)
    model = QuireDecoder(config).to(args.device)
    opt = torch.optim.AdamW(model.parameters(), lr=train_cfg["lr"], weight_decay=train_cfg.get("weight_decay", 0.01))
    step = 0
    ckpt = os.path.join(args.out, "checkpoint.pt")
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

    total, warmup, recent = train_cfg["steps"], train_cfg["warmup"], train_cfg["recent_tokens"]
    log = open(os.path.join(args.out, "loss.tsv"), "a")
    if step == 0:
        log.write("step\ttrain_loss\theldout_loss\theldout_token_acc\tseconds\n")
    start, running = time.time(), []
    order = list(range(len(train_seqs)))
    while step < total:
        random.shuffle(order)
        for i in order:
            if step >= total:
                break
            lr = train_cfg["lr"] * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / total)))
            for g in opt.param_groups:
                g["lr"] = lr
            logits, labels = run_model(model, train_seqs[i], recent)
            loss = F.cross_entropy(logits, labels, ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            running.append(loss.item())
            step += 1
            if step % train_cfg["log_every"] == 0 or step == total:
                el, acc = evaluate(model, eval_seqs, recent)
                tl = sum(running) / len(running)
                running = []
                log.write(f"{step}\t{tl:.4f}\t{el:.4f}\t{acc:.4f}\t{time.time() - start:.0f}\n")
                log.flush()
                print(f"step {step}: train {tl:.3f}, held-out {el:.3f}, token acc {acc:.3f}, lr {lr:.2e}", flush=True)
            if step % train_cfg["checkpoint_every"] == 0 or step == total:
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step,
                            "py_rng": random.getstate(), "torch_rng": torch.get_rng_state()}, ckpt)
                export(model, os.path.join(args.out, "model"))
    print(f"done: {step} steps in {time.time() - start:.0f} s; model in {os.path.join(args.out, 'model')}")


if __name__ == "__main__":
    main()
