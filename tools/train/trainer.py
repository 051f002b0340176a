"""The training loop of train.py: epoch orders, optimiser steps, held-out passes, the loss log and
checkpoints; with several workers, one forked rank each, stepping together with their mean gradient
(gloo on loopback), rank 0 evaluating, logging and saving."""
import datetime
import math
import os
import random
import socket
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from data import FIRST_EXTRA
from model import attention_mask
import srswa


def run_model(model, seq, recent, pattern=None):
    """Logits and labels of a sequence's generated tokens: under the runtime's SR-SWA (pattern,
    tools/train/srswa.py) or, without one, under R-SWA masks."""
    kinds, tokens, vis, pages_of, labels = seq
    if pattern is not None:
        _, logits = srswa.run(model, pattern, kinds.tolist(), tokens.tolist(), vis.numpy(), pages_of)
        return logits, labels[labels != -100]
    mask = attention_mask(kinds.tolist(), pages_of, "rswa", recent=recent)
    logits = model(tokens[None], vis[None], kinds[None], mask[None])[0]
    return logits, labels


def evaluate(model, seqs, recent, pattern=None):
    """Teacher-forced loss a token and token accuracy over the sequences."""
    model.eval()
    loss_sum, tokens, correct = 0.0, 0, 0
    with torch.no_grad():
        for seq in seqs:
            logits, labels = run_model(model, seq, recent, pattern)
            keep = labels != -100
            loss_sum += F.cross_entropy(logits[keep], labels[keep], reduction="sum").item()
            correct += (logits[keep].argmax(-1) == labels[keep]).sum().item()
            tokens += int(keep.sum())
    model.train()
    return loss_sum / max(1, tokens), correct / max(1, tokens)


def make_optimizer(model, train_cfg):
    """AdamW over the model. The evidence gains start at zero and scale embeddings whose entries are a
    few hundredths: at the fine-tuning rate they would take thousands of steps to matter, so they
    learn `evidence_lr_scale` times faster (the group's lr_scale, applied with the schedule) and are
    not decayed."""
    gains = [p for n, p in model.named_parameters() if n == "visual_evidence_gain"]
    groups = [{"params": [p for n, p in model.named_parameters() if n != "visual_evidence_gain"]}]
    if gains:
        groups.append({"params": gains, "lr_scale": train_cfg.get("evidence_lr_scale", 50.0), "weight_decay": 0.0})
    return torch.optim.AdamW(groups, lr=train_cfg["lr"], weight_decay=train_cfg.get("weight_decay", 0.01))


def extra_rows(model):
    """The embedding matrices (input, and output when untied) whose rows from FIRST_EXTRA on are the
    extra letters (data.EXTRA_CHARACTERS); empty for a model without them."""
    mats = [model.embed_tokens.weight] + ([model.lm_head.weight] if model.lm_head is not None else [])
    return [w for w in mats if w.shape[0] > FIRST_EXTRA]


def mean_gradient(model):
    """Data-parallel ranks (--workers): every gradient replaced by its mean over the ranks, the same
    on each, so their optimiser steps keep the models identical."""
    params = list(model.parameters())
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in params])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    at = 0
    for p in params:
        p.grad = flat[at:at + p.numel()].view_as(p).clone()
        at += p.numel()


def train_step(model, opt, lr, seq, recent, pattern, extra_scale=1.0, sync=None):
    """One optimiser step on one sequence at rate `lr` (each group's lr_scale times it); its loss.
    The extra letters' rows take `extra_scale` times AdamW's step: they start as their base letters'
    rows and, in the same tensor as every other letter, would move at the fine-tuning rate (run 18).
    `sync(model)`, where given, makes the gradients the ranks' mean before they are clipped."""
    for g in opt.param_groups:
        g["lr"] = lr * g.get("lr_scale", 1.0)
    opt.zero_grad()
    if pattern is not None:  # SR-SWA: a whole volume, backpropagated page by page (srswa.Run.flush)
        kinds, tokens, vis, pages_of, labels = seq
        r, _ = srswa.run(model, pattern, kinds.tolist(), tokens.tolist(), vis.numpy(), pages_of, labels=labels.numpy())
        loss_value = r.loss_sum / max(1, int((labels != -100).sum()))
    else:
        logits, labels = run_model(model, seq, recent)
        loss = F.cross_entropy(logits, labels, ignore_index=-100)
        loss.backward()
        loss_value = loss.item()
    if sync:
        sync(model)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    rows = extra_rows(model) if extra_scale != 1.0 else []
    before = [w.detach()[FIRST_EXTRA:].clone() for w in rows]
    opt.step()
    with torch.no_grad():
        for w, b in zip(rows, before):
            w[FIRST_EXTRA:] = b + extra_scale * (w[FIRST_EXTRA:] - b)
    return loss_value


def like_lengths(order, lengths, world):
    """An epoch's shuffled order regrouped so that the `world` documents of a step are of like length
    (a step waits for its longest): each run of 4 × world documents sorted by length and cut into
    steps, the steps shuffled again, a last short step at the end (the epoch loop leaves it)."""
    steps = []
    for k in range(0, len(order), 4 * world):
        run = sorted(order[k:k + 4 * world], key=lambda i: lengths[i])
        steps += [run[j:j + world] for j in range(0, len(run), world)]
    full = [s for s in steps if len(s) == world]
    random.shuffle(full)
    return [i for s in full for i in s] + [i for s in steps if len(s) < world for i in s]


def learning_rate(train_cfg, step):
    """Linear warm-up, then a cosine from the config's lr down to a tenth of it at the last step."""
    total, warmup = train_cfg["steps"], train_cfg["warmup"]
    return train_cfg["lr"] * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / total)))


class Trainer:
    """Steps `model` through `train_seqs` from `step` to the config's `steps`, evaluating on
    `eval_seqs` every `log_every` steps (OUT/loss.tsv) and saving OUT/checkpoint.pt every
    `checkpoint_every` (then `export(model)`, which writes the exported model). `refresh`, where set,
    is (N, more): every N steps `more()` gives the sequences of documents that became ready."""

    def __init__(self, model, opt, train_cfg, pattern, out, train_seqs, eval_seqs, export, step=0, refresh=None):
        self.model, self.opt, self.cfg, self.pattern = model, opt, train_cfg, pattern
        self.train_seqs, self.eval_seqs, self.export, self.step, self.refresh = (
            train_seqs, eval_seqs, export, step, refresh)
        self.checkpoint = os.path.join(out, "checkpoint.pt")
        self.log_path = os.path.join(out, "loss.tsv")
        self.out = out

    def run(self, workers=1):
        """All the steps, in this process or in `workers` forked ranks."""
        rng_state = random.getstate()
        if workers == 1:
            self._rank(0, 1, rng_state, None)
            return
        if self.refresh:
            raise ValueError("--workers with --refresh-every: the ranks would have to agree on new documents")
        with socket.socket() as sock:  # a free loopback port for the ranks' rendezvous
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        torch.multiprocessing.start_processes(self._rank, args=(workers, rng_state, port), nprocs=workers,
                                              start_method="fork")

    def _rank(self, rank, world, rng_state, port):
        """The steps of rank `rank` of `world` (rank 0 logs, evaluates and saves)."""
        sync = None
        if world > 1:
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                    timeout=datetime.timedelta(hours=2))  # rank 0's held-out passes are long
            sync = mean_gradient
        random.setstate(rng_state)  # a forked child's `random` is reseeded: the epoch orders must agree
        lead = rank == 0
        log = open(self.log_path, "a") if lead else None
        if lead and self.step == 0:
            log.write("step\ttrain_loss\theldout_loss\theldout_token_acc\tseconds\n")
        start, running = time.time(), []
        total = self.cfg["steps"]
        while self.step < total:
            order = self.epoch_order(world)
            # A step takes `world` documents, one a rank; an epoch's last few that fill no step wait for the next.
            for first in range(0, len(order) - world + 1, world):
                if self.step >= total or self._refreshed():
                    break  # done, or new documents: a new epoch order that includes them
                loss = self._one_step(order[first + rank], sync, world)
                if lead:
                    running.append(loss)
                    self._report(log, running, start)
                if sync:
                    dist.barrier()  # the others wait while rank 0 evaluates and saves
        if lead:
            print(f"done: {self.step} steps in {time.time() - start:.0f} s; model in {os.path.join(self.out, 'model')}")
        if world > 1:
            dist.destroy_process_group()

    def epoch_order(self, world):
        """The training documents shuffled (the same order on every rank: each restored the parent's
        random state), in steps of like length with several ranks."""
        order = list(range(len(self.train_seqs)))
        random.shuffle(order)
        if world > 1:
            order = like_lengths(order, [len(seq[0]) for seq in self.train_seqs], world)
        return order

    def _refreshed(self):
        """With `refresh`, at its interval: True where documents that became ready were added."""
        if not self.refresh or not self.step or self.step % self.refresh[0]:
            return False
        new = self.refresh[1]()
        self.train_seqs += new
        return bool(new)

    def _one_step(self, i, sync, world):
        """Step `self.step` on training document i; the loss (the ranks' mean)."""
        lr = learning_rate(self.cfg, self.step)
        loss = train_step(self.model, self.opt, lr, self.train_seqs[i], self.cfg["recent_tokens"], self.pattern,
                          self.cfg.get("extra_letters_lr_scale", 1.0), sync)
        if sync:
            t = torch.tensor([loss], dtype=torch.float64)
            dist.all_reduce(t)
            loss = float(t) / world
        self.step += 1
        self.lr = lr
        return loss

    def _report(self, log, running, start):
        """At the log interval the held-out pass and a loss.tsv row; at the checkpoint interval the
        checkpoint and the exported model."""
        step, total = self.step, self.cfg["steps"]
        if step % self.cfg["log_every"] == 0 or step == total:
            el, acc = evaluate(self.model, self.eval_seqs, self.cfg["recent_tokens"], self.pattern)
            tl = sum(running) / len(running)
            running.clear()
            log.write(f"{step}\t{tl:.4f}\t{el:.4f}\t{acc:.4f}\t{time.time() - start:.0f}\n")
            log.flush()
            print(f"step {step}: train {tl:.3f}, held-out {el:.3f}, token acc {acc:.3f}, lr {self.lr:.2e}", flush=True)
        if step % self.cfg["checkpoint_every"] == 0 or step == total:
            # Written whole, then renamed: a run stopped while saving keeps its last checkpoint.
            torch.save({"model": self.model.state_dict(), "optimizer": self.opt.state_dict(), "step": step,
                        "py_rng": random.getstate(), "torch_rng": torch.get_rng_state()}, self.checkpoint + ".part")
            os.replace(self.checkpoint + ".part", self.checkpoint)
            self.export(self.model)
