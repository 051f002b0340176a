#!/usr/bin/env python3
"""How much Tesseract's evidence could give the reader, token by token (issue #29, item 2).

For every page of generated documents whose features were written with `quire-cli features
--evidence` (into DOC/evidence), the page's visual tokens are laid along its reading text as the
training targets are (data.aligned_output's alignment), and at each character token the
front-end's character and the Tesseract glyph paired with it (line_evidence.h) are compared with
the character the reader must write there. Counted: tokens where each is right, where only
Tesseract is right (what the evidence can fix), where only the front-end is (what trusting it
blindly would break), and target characters the front-end missed that Tesseract read just before
the next token. Also the simplest rule, shown only as a reference: take Tesseract's glyph where its
confidence is higher than the front-end's probability. And the word spaces: target spaces the
front-end missed where Tesseract starts a word, and the front-end's spaces the target does not
have where Tesseract starts none.

    tools/eval/evidence_headroom.py DATA_DIR [DATA_DIR...]

Run on generated validation pages only (docs/ACCURACY.md): never on ../shared/eval.
"""
import difflib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
import data  # noqa: E402


def page_tokens(meta, vocab):
    """Per visual token (as data.page_visual_tokens orders them): (id, probability, Tesseract's id or
    None, its confidence 0..1, the ids Tesseract read just before it, whether Tesseract starts a
    word between the previous token and this one)."""
    out = []
    for line in meta["lines"]:
        if not line["char_frames"]:
            continue
        ev = line.get("tesseract")
        glyphs = ev["glyphs"] if ev else []
        for c, (prob, cls) in enumerate(zip(line["char_probs"], line["char_ids"])):
            g = ev["char_glyph"][c] if ev else -1
            tid = vocab.index.get(glyphs[g]["text"], 0) if g >= 0 else None
            tconf = glyphs[g]["confidence"] / 100.0 if g >= 0 else 0.0
            before = [vocab.index.get(ch, 0) for ch in (ev["char_before"][c] if ev else "")]
            brk = bool(ev and ev["char_break_before"][c])
            out.append((vocab.ctc_id(cls), prob, tid, tconf, before, brk))
        out.append((data.LINE_BREAK, 1.0, None, 0.0, [vocab.index.get(ch, 0) for ch in (ev["trailing"] if ev else "")],
                    False))
    return out


KEYS = ["tokens", "pp_right", "tess_right", "tess_none", "only_tess", "only_pp", "either", "rule_right", "unscored",
        "missed", "missed_supplied", "missed_spaces", "missed_spaces_broken", "extra_spaces", "extra_spaces_unbroken"]


def count_page(tokens, target, n):
    src = [data.SPACE if t[0] == data.LINE_BREAK else t[0] for t in tokens]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, src, target, autojunk=False).get_opcodes():
        if op == "insert":
            missed = [t for t in target[j1:j2] if t >= data.FIRST_CHAR]
            n["missed"] += len(missed)
            before = tokens[i1][4] if i1 < len(tokens) else []
            n["missed_supplied"] += sum(1 for t in missed if t in before)
            spaces = sum(1 for t in target[j1:j2] if t == data.SPACE)
            n["missed_spaces"] += spaces
            if spaces and i1 < len(tokens) and tokens[i1][5]:
                n["missed_spaces_broken"] += spaces
            continue
        if op == "delete":
            for k in range(i1, i2):
                if tokens[k][0] == data.SPACE:
                    n["extra_spaces"] += 1
                    n["extra_spaces_unbroken"] += not tokens[k][5]
        if op == "delete" or (op == "replace" and i2 - i1 != j2 - j1):
            n["unscored"] += sum(1 for k in range(i1, i2) if tokens[k][0] >= data.FIRST_CHAR)
            continue
        for k in range(i1, i2):
            pid, prob, tid, tconf = tokens[k][:4]
            want = target[j1 + k - i1]
            if pid < data.FIRST_CHAR or want < data.FIRST_CHAR:
                continue  # spaces and line ends
            n["tokens"] += 1
            pp, ts = pid == want, tid == want
            n["pp_right"] += pp
            n["tess_none"] += tid is None
            n["tess_right"] += ts
            n["only_tess"] += ts and not pp
            n["only_pp"] += pp and not ts and tid is not None
            n["either"] += pp or ts
            rule = tid if tid is not None and tid != pid and tconf > prob else pid
            n["rule_right"] += rule == want


def main(argv):
    vocab = data.Vocab()
    total = dict.fromkeys(KEYS, 0)
    print("| set | pages | character tokens | front-end right | Tesseract right (none paired) | only Tesseract right | "
          "only the front-end right | either right | confidence rule right | not laid one to one | "
          "missed characters (Tesseract has them) | missed spaces (Tesseract starts a word there) | "
          "extra spaces (Tesseract starts none there) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for root in argv:
        n = dict.fromkeys(KEYS, 0)
        pages = 0
        for doc in sorted(d for d in os.listdir(root) if d.startswith("doc")):
            ev_dir = os.path.join(root, doc, "evidence")
            if not os.path.isdir(ev_dir):
                continue
            pngs = sorted(f for f in os.listdir(os.path.join(root, doc)) if f.endswith(".png"))
            for k, png in enumerate(pngs):
                feat = os.path.join(ev_dir, f"page-{k + 1:05d}.safetensors")
                if not os.path.exists(feat):
                    continue
                _, meta = data.read_safetensors(feat)
                with open(os.path.join(root, doc, png.replace(".png", ".target.txt")), encoding="utf-8") as f:
                    target = vocab.encode(f.read())
                count_page(page_tokens(json.loads(meta["quire.features"]), vocab), target, n)
                pages += 1
        for k in KEYS:
            total[k] += n[k]
        row(os.path.basename(os.path.normpath(root)), pages, n)
    if len(argv) > 1:
        row("all", "", total)


def row(name, pages, n):
    t = max(1, n["tokens"])

    def pct(k):
        return f"{100.0 * n[k] / t:.2f} %"

    print(f"| {name} | {pages} | {n['tokens']:,} | {pct('pp_right')} | {pct('tess_right')} ({pct('tess_none')}) | "
          f"{n['only_tess']:,} | {n['only_pp']:,} | {pct('either')} | {pct('rule_right')} | {n['unscored']:,} | "
          f"{n['missed']:,} ({n['missed_supplied']:,}) | {n['missed_spaces']:,} ({n['missed_spaces_broken']:,}) | "
          f"{n['extra_spaces']:,} ({n['extra_spaces_unbroken']:,}) |")


def self_test():
    """A hand-made line: the front-end reads "the cot st" for "the cat sat", Tesseract "the cat sat"
    with its "a" of "sat" unpaired (read just before the last "t"); then "the catsat" and "th e" for
    the spaces."""
    vocab = data.Vocab()
    enc = {ch: vocab.index[ch] for ch in "thecaos"}
    tokens = []
    for ch, tess in zip("the cot st", "the cat st"):
        if ch == " ":
            tokens.append((data.SPACE, 0.9, None, 0.0, [], True))
        else:
            tokens.append((enc[ch], 0.5 if ch == "o" else 0.99, enc[tess], 0.9, [], False))
    tokens[-1] = (enc["t"], 0.99, enc["t"], 0.9, [enc["a"]], False)
    tokens.append((data.LINE_BREAK, 1.0, None, 0.0, [], False))
    n = dict.fromkeys(KEYS, 0)
    count_page(tokens, vocab.encode("the cat sat"), n)
    want = dict.fromkeys(KEYS, 0)
    want.update(tokens=8, pp_right=7, tess_right=8, only_tess=1, either=8, rule_right=8, missed=1, missed_supplied=1)
    assert n == want, n
    # Spaces: "the catsat" with Tesseract's word break before the second "s"; "th e" where
    # Tesseract reads one word.
    line = [(enc[ch] if ch != " " else data.SPACE, 0.99, None, 0.0, [], k == 7) for k, ch in enumerate("the catsat")]
    line += [(data.SPACE, 0.9, None, 0.0, [], False)]
    line += [(enc[ch] if ch != " " else data.SPACE, 0.99, None, 0.0, [], False) for ch in "th e"]
    line += [(data.LINE_BREAK, 1.0, None, 0.0, [], False)]
    n = dict.fromkeys(KEYS, 0)
    count_page(line, vocab.encode("the cat sat the"), n)
    assert (n["missed_spaces"], n["missed_spaces_broken"], n["extra_spaces"], n["extra_spaces_unbroken"]) == (1, 1, 1, 1), n
    print("evidence counts: ok")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) < 2:
        sys.exit(__doc__)
    else:
        main(sys.argv[1:])
