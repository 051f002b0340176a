"""Training data of the reader: visual tokens from the engine's own front-end (`quire-cli
features`), so training and inference see identical encoder outputs, and target token ids.

Vocabulary (docs/TRAINING.md): 0 unknown, 1 BOS, 2 EOS, 3 page break, 4 paragraph, 5 line break,
6 space, then the 6,623 characters of PP-OCR's key file in its order, then SKIP (6,630): 6,631.

Visual tokens: one per character the front-end's CTC emitted, in its reading order, and one more
at the end of each line: the recognizer's 120-wide feature vector at the character's frame (zeros
for a line end), then the character's probability, a line-start flag, a line-end flag and the
line's vertical place on the page (0..1): 124 values. With them goes the token's id in this
vocabulary (the CTC hypothesis; restored spaces are SPACE, line ends LINE_BREAK), which models
with `visual_token_ids` embed and add to the projection (the runtime's ReaderEngine::visualTokens
builds the same).

What the reader writes for a page (`aligned_output`): its reading text, laid along the visual
tokens — for each visual token in turn the text it stands for (usually itself; a line end becomes
the space or paragraph that joins the lines), SKIP for one that is not reading text (running
heads, folios, a line-end hyphen), and extra tokens where the front-end missed characters.
Removing SKIP gives the reading text exactly; the t-th token written mostly belongs to the t-th
visual token, which page-aligned positions put at the same place.
"""
import difflib
import json
import os
import struct
import subprocess

import numpy as np

BOS, EOS, PAGE_BREAK, PARAGRAPH, LINE_BREAK, SPACE = 1, 2, 3, 4, 5, 6
FIRST_CHAR = 7
KEY_COUNT = 6623
SKIP = FIRST_CHAR + KEY_COUNT
VISUAL_DIM = 124


def models_dir():
    d = os.environ.get("QUIRE_PPOCR_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "quire/models/ppocr-v4")
    return d


class Vocab:
    def __init__(self, keys_file=None):
        keys_file = keys_file or os.path.join(models_dir(), "ppocr_keys_v1.txt")
        with open(keys_file, encoding="utf-8") as f:
            self.chars = [l.rstrip("\r\n") for l in f]
        assert len(self.chars) == KEY_COUNT, keys_file
        self.index = {c: FIRST_CHAR + i for i, c in enumerate(self.chars)}
        self.size = SKIP + 1

    def ctc_id(self, ctc_class):
        """A front-end class id (1..6624, the last being the space) in this vocabulary."""
        if ctc_class <= 0 or ctc_class > KEY_COUNT + 1:
            return 0
        return SPACE if ctc_class == KEY_COUNT + 1 else FIRST_CHAR + ctc_class - 1

    def encode(self, text):
        """Reading text → ids: paragraphs (blank lines) become PARAGRAPH, whitespace SPACE."""
        ids = []
        for k, para in enumerate(text.strip().split("\n\n")):
            if k:
                ids.append(PARAGRAPH)
            words = para.split()
            for j, w in enumerate(words):
                if j:
                    ids.append(SPACE)
                ids.extend(self.index.get(ch, 0) for ch in w)
        return ids

    def decode(self, ids):
        out = []
        for i in ids:
            if i == PARAGRAPH:
                out.append("\n\n")
            elif i in (SPACE, LINE_BREAK):
                out.append(" ")
            elif FIRST_CHAR <= i < SKIP:
                out.append(self.chars[i - FIRST_CHAR])
        return "".join(out)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        f.seek(0)
        raw = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        tensors[name] = np.frombuffer(raw[base + a:base + b], dtype=np.float32).reshape(t["shape"])
    return tensors, meta


def page_visual_tokens(features_file, vocab):
    """Visual tokens of one page from a `quire-cli features` file: [n, 124] float32 and their
    vocabulary ids [n]."""
    tensors, meta = read_safetensors(features_file)
    page = json.loads(meta["quire.features"])
    rows, ids = [], []
    lines = page["lines"]
    height = max(1, page["height"])
    for k, line in enumerate(lines):
        feats = tensors.get(f"line{k}.features")
        if feats is None or not line["char_frames"]:
            continue
        n = len(line["char_frames"])
        y = (line["box"][1] + line["box"][3] / 2) / height
        for c, (frame, prob, cls) in enumerate(zip(line["char_frames"], line["char_probs"], line["char_ids"])):
            v = np.zeros(VISUAL_DIM, np.float32)
            v[:120] = feats[min(frame, len(feats) - 1)]
            v[120] = prob
            v[121] = 1.0 if c == 0 else 0.0
            v[122] = 1.0 if c == n - 1 else 0.0
            v[123] = y
            rows.append(v)
            ids.append(vocab.ctc_id(cls))
        end = np.zeros(VISUAL_DIM, np.float32)  # the line's end: where lines join
        end[120], end[122], end[123] = 1.0, 1.0, y
        rows.append(end)
        ids.append(LINE_BREAK)
    if not rows:
        rows.append(np.zeros(VISUAL_DIM, np.float32))  # a blank page still has one (unknown) token
        ids.append(0)
    return np.stack(rows), np.array(ids, np.int32)


def aligned_output(visual_ids, target):
    """The tokens the reader writes for a page (module docstring): `target` laid along the visual
    tokens. Without SKIP it is `target` exactly."""
    # A line end stands for the space or paragraph that joins lines: match it as a space.
    src = [SPACE if i == LINE_BREAK else int(i) for i in visual_ids]
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, src, target, autojunk=False).get_opcodes():
        if op == "delete":
            out += [SKIP] * (i2 - i1)
        else:
            out += target[j1:j2]
            if op == "replace" and i2 - i1 > j2 - j1:
                out += [SKIP] * (i2 - i1 - (j2 - j1))
    return out


def features_ready(doc_dir):
    pages = [f for f in os.listdir(doc_dir) if f.endswith(".png")]
    feat_dir = os.path.join(doc_dir, "features")
    return os.path.isdir(feat_dir) and len(os.listdir(feat_dir)) == len(pages)


def prepare_document(doc_dir, quire_cli, vocab):
    """Runs the front-end on a generated document's pages and returns its training record."""
    pages = sorted(f for f in os.listdir(doc_dir) if f.endswith(".png"))
    feat_dir = os.path.join(doc_dir, "features")
    if not features_ready(doc_dir):
        subprocess.run([quire_cli, "features", *[os.path.join(doc_dir, p) for p in pages], "--out", feat_dir],
                       check=True, capture_output=True)
    record = {"visual": [], "ids": [], "targets": []}
    for k, p in enumerate(pages):
        v, ids = page_visual_tokens(os.path.join(feat_dir, f"page-{k + 1:05d}.safetensors"), vocab)
        record["visual"].append(v.astype(np.float16))
        record["ids"].append(ids)
        with open(os.path.join(doc_dir, p.replace(".png", ".target.txt")), encoding="utf-8") as f:
            record["targets"].append(aligned_output(ids, vocab.encode(f.read())))
    return record


def self_test():
    """The writing rule on a hand-made page: running head and folio skipped, a line-end hyphen
    joined, a misread letter dropped, lines joined by spaces; without SKIP, exactly the target."""
    v = Vocab()

    def enc(s):
        return [SPACE if c == " " else v.index[c] for c in s]

    visual = (enc("THE BIBLE 12") + [LINE_BREAK] + enc("the exam-") + [LINE_BREAK] + enc("ple is gooed") +
              [LINE_BREAK])
    target = v.encode("the example is good")
    out = aligned_output(visual, target)
    assert [o for o in out if o != SKIP] == target, out
    assert len(out) == len(visual), (len(out), len(visual))  # one written token per visual token here
    shown = "".join("~" if o == SKIP else (v.decode([o]) or "?") for o in out)
    assert shown == "~~~~~~~~~~~~~the exam~~ple is goo~d~", shown
    # Characters the front-end missed are written where they belong (the text runs one ahead).
    out = aligned_output(enc("a bc"), v.encode("a bxc"))
    assert [o for o in out if o != SKIP] == v.encode("a bxc")
    print("aligned_output: ok")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--self-test"]:
        self_test()
