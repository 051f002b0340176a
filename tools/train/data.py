"""Training data of the reader: visual tokens from the engine's own front-end (`quire-cli
features`), so training and inference see identical encoder outputs, and target token ids.

Vocabulary (docs/TRAINING.md): 0 unknown, 1 BOS, 2 EOS, 3 page break, 4 paragraph, 5 line break,
6 space, then the 6,623 characters of PP-OCR's key file in its order, then SKIP (6,630) and
LINE_JOIN (6,631), then EXTRA_CHARACTERS, letters and marks of German print that PP-OCR's keys lack
(6,632..6,640): 6,641. Models trained before the extra characters have 6,632 (the runtime reads both).

Visual tokens: one per character the front-end's CTC emitted, in its reading order, and one more
at the end of each line: the recognizer's 120-wide feature vector at the character's frame (zeros
for a line end), then the character's probability, a line-start flag, a line-end flag and the
line's vertical place on the page (0..1): 124 values. With them goes the token's id in this
vocabulary (the CTC hypothesis; restored spaces are SPACE, line ends LINE_BREAK), which models
with `visual_token_ids` embed and add to the projection (the runtime's ReaderEngine::visualTokens
builds the same).

What the reader writes for a page (`aligned_output`): its reading text, laid along the visual
tokens line by line — for each visual token of a line in turn the text it stands for (usually
itself), SKIP for one that is not reading text (running heads, folios, a line-end hyphen), extra
tokens where the front-end missed characters; and for each line's end token one line-end token:
LINE_BREAK where the lines join with a space, PARAGRAPH where a paragraph ends, LINE_JOIN where
they join with nothing (a hyphenated word, Chinese). Removing SKIP and LINE_JOIN and reading
LINE_BREAK as a space gives the reading text exactly. With line-aligned positions
(docs/DECODING.md) the text of each line starts at the position of the line's first visual
token, so the t-th token written on a line sits at the line's t-th visual token and a character
the front-end missed shifts the rest of its line only.
"""
import difflib
import functools
import json
import os
import struct
import subprocess
import sys

import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "eval"))
import eval as evaluation  # noqa: E402  (tools/eval/eval.py: the manifest and its language names)
from structure import FOLIO  # noqa: E402  (tools/eval/structure.py: a page number as printed)

BOS, EOS, PAGE_BREAK, PARAGRAPH, LINE_BREAK, SPACE = 1, 2, 3, 4, 5, 6
FIRST_CHAR = 7
KEY_COUNT = 6623
SKIP = FIRST_CHAR + KEY_COUNT
LINE_JOIN = SKIP + 1
FIRST_EXTRA = LINE_JOIN + 1
EXTRA_CHARACTERS = "\u00f6\u00d6\u00c4\u00df\u017f\u201e\u201a\u2013\u00ab"  # ö Ö Ä ß ſ „ ‚ – « (reader.h)
# Where a model that lacked them starts each extra character's embedding (train.init_from): the
# PP-OCR character it is read as, so the model's first reading of them is its old one.
EXTRA_BASES = "oOAss\",-\u00bb"
LINE_ENDS = (PARAGRAPH, LINE_BREAK, LINE_JOIN)  # what the reader writes at a line's end token
VISUAL_DIM = 124
EVIDENCE_VALUES = 3  # per visual token of models that read Tesseract's evidence
EVIDENCE_IDS = 2
# Languages whose pages carry no evidence (the runtime's ReaderRecognizer skips Tesseract for them):
# on generated Chinese pages chi_sim's glyphs are wrong where the front-end is right ten times as
# often as the other way round, and a model given them read worse (docs/RUNS.md, run 16).
NO_EVIDENCE_LANGUAGES = ("chi_sim",)


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
        self.index.update({c: FIRST_EXTRA + i for i, c in enumerate(EXTRA_CHARACTERS)})
        self.size = FIRST_EXTRA + len(EXTRA_CHARACTERS)

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

    def char_of(self, i):
        """The character of vocabulary id `i`; "" for ids that are not characters."""
        if FIRST_CHAR <= i < SKIP:
            return self.chars[i - FIRST_CHAR]
        return EXTRA_CHARACTERS[i - FIRST_EXTRA] if FIRST_EXTRA <= i < self.size else ""

    def decode(self, ids):
        out = []
        for i in ids:
            if i == PARAGRAPH:
                out.append("\n\n")
            elif i in (SPACE, LINE_BREAK):
                out.append(" ")
            else:
                out.append(self.char_of(i))
        return "".join(out)


COUNTS_FILE = "character_counts.tsv"


def character_counts(records, vocab):
    """How many times each character is a training target in `records` (train.py's records)."""
    counts = {}
    for r in records:
        for page in r["targets"]:
            for i in page:
                ch = vocab.char_of(int(i))
                if ch:
                    counts[ch] = counts.get(ch, 0) + 1
    return counts


def read_counts(path):
    """A model's character_counts.tsv (header "character<TAB>count"); {} where there is none."""
    if not os.path.exists(path):
        return {}
    counts = {}
    with open(path, encoding="utf-8") as f:
        assert f.readline().rstrip("\n") == "character\tcount", path
        for line in f:
            ch, n = line.rstrip("\n").rsplit("\t", 1)
            counts[ch] = int(n)
    return counts


def write_counts(path, counts):
    """The runtime reads it beside the model (docs/MODEL_FORMAT.md): characters the model hardly saw
    get a stronger prior toward the front-end's reading (docs/DECODING.md)."""
    with open(path + ".part", "w", encoding="utf-8") as f:
        f.write("character\tcount\n")
        for ch, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            f.write(f"{ch}\t{n}\n")
    os.replace(path + ".part", path)


def merge_counts(a, b):
    """Counts of two sets of training documents, each character's larger: exact where one set holds
    the other (a fine-tuning run's data holds its starting point's, as in docs/TRAINING.md), a lower
    bound otherwise; a document trained on in two runs counts once."""
    out = dict(a)
    for ch, n in b.items():
        out[ch] = max(out.get(ch, 0), n)
    return out


def read_safetensors_header(f):
    """A safetensors file's JSON header (tensors and "__metadata__") and its length in bytes, read
    from the open file `f` at its start."""
    n = struct.unpack("<Q", f.read(8))[0]
    return json.loads(f.read(n)), n


def read_safetensors(path):
    with open(path, "rb") as f:
        header, n = read_safetensors_header(f)
        base = 8 + n
        f.seek(0)
        raw = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        tensors[name] = np.frombuffer(raw[base + a:base + b], dtype=np.float32).reshape(t["shape"])
    return tensors, meta


def page_visual_tokens(features_file, vocab, evidence=False):
    """Visual tokens of one page from a `quire-cli features` file: [n, 124] float32 and their
    vocabulary ids [n]. With `evidence` (a file written with --evidence; models with
    visual_evidence_ids): [n, 127] — three more values, Tesseract's confidence in its paired glyph
    (0..1), whether one is paired, whether Tesseract starts a word before the token — and a third
    array, [n, 2] int32: the paired glyph's id and the id of the first glyph Tesseract read just
    before the token that the front-end missed (-1: none; the runtime's ReaderEngine::visualTokens
    builds the same)."""
    tensors, meta = read_safetensors(features_file)
    page = json.loads(meta["quire.features"])
    dim = VISUAL_DIM + (EVIDENCE_VALUES if evidence else 0)
    rows, ids, ev_ids = [], [], []
    lines = page["lines"]
    height = max(1, page["height"])

    def glyph_id(text):
        return vocab.index.get(text, -1) if text else -1

    for k, line in enumerate(lines):
        feats = tensors.get(f"line{k}.features")
        if feats is None or not line["char_frames"]:
            continue
        n = len(line["char_frames"])
        y = (line["box"][1] + line["box"][3] / 2) / height
        ev = line.get("tesseract") if evidence else None
        if evidence and ev is None:
            raise ValueError(f"{features_file}: line {k} has no Tesseract evidence (features --evidence)")
        for c, (frame, prob, cls) in enumerate(zip(line["char_frames"], line["char_probs"], line["char_ids"])):
            v = np.zeros(dim, np.float32)
            v[:120] = feats[min(frame, len(feats) - 1)]
            v[120] = prob
            v[121] = 1.0 if c == 0 else 0.0
            v[122] = 1.0 if c == n - 1 else 0.0
            v[123] = y
            rows.append(v)
            ids.append(vocab.ctc_id(cls))
            if evidence:
                g = ev["char_glyph"][c]
                glyph = ev["glyphs"][g] if g >= 0 else None
                v[124] = glyph["confidence"] / 100.0 if glyph else 0.0
                v[125] = 1.0 if glyph else 0.0
                v[126] = 1.0 if ev["char_break_before"][c] else 0.0
                ev_ids.append((glyph_id(glyph["text"]) if glyph else -1, glyph_id(ev["char_before"][c][:1])))
        end = np.zeros(dim, np.float32)  # the line's end: where lines join
        end[120], end[122], end[123] = 1.0, 1.0, y
        rows.append(end)
        ids.append(LINE_BREAK)
        if evidence:
            ev_ids.append((-1, glyph_id(ev["trailing"][:1])))
    if not rows:
        rows.append(np.zeros(dim, np.float32))  # a blank page still has one (unknown) token
        ids.append(0)
        ev_ids.append((-1, -1))
    out = (np.stack(rows), np.array(ids, np.int32))
    return out + (np.array(ev_ids, np.int32).reshape(-1, 2),) if evidence else out


def align_line(src, target):
    """`target` laid along one line's visual ids `src` (no line end): SKIP for visual tokens that
    stand for nothing, extra tokens where the front-end missed characters."""
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, src, target, autojunk=False).get_opcodes():
        if op == "delete":
            out += [SKIP] * (i2 - i1)
        else:
            out += target[j1:j2]
            if op == "replace" and i2 - i1 > j2 - j1:
                out += [SKIP] * (i2 - i1 - (j2 - j1))
    return out


def aligned_output(visual_ids, target):
    """The tokens the reader writes for a page (module docstring): `target` laid along the visual
    tokens, one line-end token per visual line end. Without SKIP and LINE_JOIN, and with
    LINE_BREAK read as SPACE, it is `target` exactly."""
    # Where each visual line end falls in the target: align the page once, a line end matched as
    # the space that usually joins lines.
    src = [SPACE if i == LINE_BREAK else int(i) for i in visual_ids]
    at = [0] * (len(src) + 1)  # at[i]: the target index that src[i] aligns to (or would)
    ops = difflib.SequenceMatcher(None, src, target, autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in ops:
        for i in range(i1, i2):
            at[i] = j1 + min(i - i1, j2 - j1) if op in ("equal", "replace") else j1
    at[len(src)] = len(target)
    out, start, line = [], 0, []
    for i, v in enumerate(visual_ids):
        if v != LINE_BREAK:
            line.append(int(v))
            continue
        # The next line's text starts where its first visual token aligns; what the front-end
        # missed at this line's end (a final full stop) stays on this line.
        nxt = max(start, at[i + 1])
        if nxt > start and target[nxt - 1] in (SPACE, PARAGRAPH):
            out += align_line(line, target[start:nxt - 1])
            out.append(LINE_BREAK if target[nxt - 1] == SPACE else PARAGRAPH)
        else:
            out += align_line(line, target[start:nxt])
            out.append(LINE_JOIN)
        start = nxt
        line = []
    out += align_line(line, target[start:])  # text past the last line end (the front-end missed lines)
    return out


def reading_ids(out):
    """What a written token sequence reads as: SKIP and LINE_JOIN dropped, LINE_BREAK a space."""
    return [SPACE if o == LINE_BREAK else o for o in out if o not in (SKIP, LINE_JOIN)]


def features_line_batch(doc_dir):
    """The front-end's lines per recognizer call that made a document's features (`quire-cli
    features` writes it into each page's metadata since 2026-12-05 evening; before, always 8)."""
    feat_dir = os.path.join(doc_dir, "features")
    first = sorted(f for f in os.listdir(feat_dir) if f.endswith(".safetensors"))[0]
    with open(os.path.join(feat_dir, first), "rb") as f:  # the header only, not the tensors
        meta = read_safetensors_header(f)[0].get("__metadata__", {})
    return json.loads(meta["quire.features"]).get("line_batch", 8)


def front_end_line_batch(doc_dirs):
    """The one line batch of these documents' features, which a model trained on them must be read
    with (its config's front_end_line_batch); a ValueError where they differ."""
    seen = {}
    for d in doc_dirs:
        seen.setdefault(features_line_batch(d), d)
    if len(seen) > 1:
        raise ValueError("features made with different line batches: " +
                         ", ".join(f"{b} ({d})" for b, d in sorted(seen.items())) +
                         "; compute them again with one (quire-cli features, QUIRE_PPOCR_REC_BATCH)")
    return next(iter(seen), 1)


def features_ready(doc_dir):
    pages = [f for f in os.listdir(doc_dir) if f.endswith(".png")]
    feat_dir = os.path.join(doc_dir, "features")
    return os.path.isdir(feat_dir) and len(os.listdir(feat_dir)) == len(pages)


@functools.lru_cache(maxsize=None)
def manifest_languages(manifest):
    """A make_pages.py batch's MANIFEST.tsv (read once): image → its language as a Tesseract name,
    as tools/eval/eval.py reads them (de → frk)."""
    return {r["image"]: evaluation.LANG.get(r["language"], r["language"])
            for r in evaluation.read_manifest(manifest) if r.get("language")}


def document_language(doc_dir, first_page):
    """A generated document's language as a Tesseract name: its row in the batch's MANIFEST.tsv
    (make_pages.py), else Chinese where its first page's text has CJK characters, else English."""
    manifest = os.path.join(os.path.dirname(os.path.abspath(doc_dir)), "MANIFEST.tsv")
    image = os.path.basename(os.path.abspath(doc_dir)) + "/" + first_page
    if os.path.exists(manifest) and image in manifest_languages(manifest):
        return manifest_languages(manifest)[image]
    with open(os.path.join(doc_dir, first_page.replace(".png", ".target.txt")), encoding="utf-8") as f:
        return "chi_sim" if any("\u4e00" <= ch <= "\u9fff" for ch in f.read()) else "eng"


def target_as_printed(target, page):
    """The reading text (pNNN.target.txt) with the page's running head and folio as printed
    (pNNN.page.txt, a paragraph a line), each a paragraph of its own: the page's first line where
    the reading text does not begin with it, its last where that is a bare number the reading text
    does not end with. The rest stays the reading text's (a word broken over the page break whole
    where it begins), so a model trained on it writes the page as printed, which the book
    (engine/src/export/book.cpp) takes the running heads and folios out of."""
    lines = [" ".join(line.split()) for line in page.splitlines() if line.strip()]
    paras = [" ".join(p.split()) for p in target.strip().split("\n\n") if p.strip()]
    if not lines:
        return target

    def same(line, para):  # the same paragraph, but for a broken word's half at the page's top
        return difflib.SequenceMatcher(None, line[:120], para[:120], autojunk=False).ratio() >= 0.6

    out = target.strip()
    if not paras or not same(lines[0], paras[0]):
        out = lines[0] + ("\n\n" + out if out else "")
    if len(lines) > 1 and FOLIO.match(lines[-1]) and (not paras or paras[-1] != lines[-1]):
        out += "\n\n" + lines[-1]
    return out


def prepare_document(doc_dir, quire_cli, vocab, evidence=False, as_printed=False):
    """Runs the front-end on a generated document's pages and returns its training record; with
    `evidence`, Tesseract's evidence too (features --evidence; the record gains "evidence"); with
    `as_printed`, targets with the pages' running heads and folios (target_as_printed)."""
    pages = sorted(f for f in os.listdir(doc_dir) if f.endswith(".png"))
    feat_dir = os.path.join(doc_dir, "features")
    # The language picks the front-end's reading order as `transcribe --lang` does, and the
    # Tesseract model of the evidence (frk for Fraktur).
    lang = document_language(doc_dir, pages[0])
    if not features_ready(doc_dir):
        subprocess.run([quire_cli, "features", *[os.path.join(doc_dir, p) for p in pages], "--out", feat_dir,
                        "--lang", lang] + (["--evidence"] if evidence else []), check=True, capture_output=True)
    record = {"visual": [], "ids": [], "targets": []}
    if evidence:
        record["evidence"] = []
    for k, p in enumerate(pages):
        got = page_visual_tokens(os.path.join(feat_dir, f"page-{k + 1:05d}.safetensors"), vocab, evidence)
        v, ids = got[:2]
        if evidence and lang in NO_EVIDENCE_LANGUAGES:  # laid out as "none", as the runtime does
            v[:, VISUAL_DIM:] = 0
            got[2][:] = -1
        record["visual"].append(v.astype(np.float16))
        record["ids"].append(ids)
        if evidence:
            record["evidence"].append(got[2])
        with open(os.path.join(doc_dir, p.replace(".png", ".target.txt")), encoding="utf-8") as f:
            text = f.read()
        if as_printed:
            with open(os.path.join(doc_dir, p.replace(".png", ".page.txt")), encoding="utf-8") as f:
                text = target_as_printed(text, f.read())
        record["targets"].append(aligned_output(ids, vocab.encode(text)))
    return record


def self_test():
    """The writing rule on a hand-made page: running head and folio skipped, a line-end hyphen
    joined, a misread letter dropped, lines joined by spaces; read back, exactly the target."""
    v = Vocab()

    def enc(s):
        return [SPACE if c == " " else v.index[c] for c in s]

    visual = (enc("THE BIBLE 12") + [LINE_BREAK] + enc("the exam-") + [LINE_BREAK] + enc("ple is gooed") +
              [LINE_BREAK] + enc("end.") + [LINE_BREAK])
    target = v.encode("the example is good end.")
    out = aligned_output(visual, target)
    assert reading_ids(out) == target, out
    assert len(out) == len(visual), (len(out), len(visual))  # one written token per visual token here
    shown = "".join({SKIP: "~", LINE_JOIN: "+", LINE_BREAK: "|"}.get(o) or v.decode([o]) or "?" for o in out)
    assert shown == "~~~~~~~~~~~~+the exam~+ple is goo~d|end.+", shown
    # Characters the front-end missed are written where they belong; only their line runs ahead.
    out = aligned_output(enc("a bc") + [LINE_BREAK] + enc("de") + [LINE_BREAK], v.encode("a bxc de"))
    assert reading_ids(out) == v.encode("a bxc de")
    shown = "".join({SKIP: "~", LINE_JOIN: "+", LINE_BREAK: "|"}.get(o) or v.decode([o]) or "?" for o in out)
    assert shown == "a bxc|de+", shown
    # Chinese lines join with nothing; a paragraph end is kept.
    out = aligned_output(enc("天地") + [LINE_BREAK] + enc("玄黄") + [LINE_BREAK] + enc("宇宙") + [LINE_BREAK],
                         v.encode("天地玄黄\n\n宇宙"))
    assert out == enc("天地") + [LINE_JOIN] + enc("玄黄") + [PARAGRAPH] + enc("宇宙") + [LINE_JOIN], out
    print("aligned_output: ok")
    # Training counts: targets counted by character, merged with another model's, written and read back.
    import tempfile
    counts = character_counts([{"targets": [v.encode("ab a"), v.encode("天 a")]}], v)
    assert counts == {"a": 3, "b": 1, "天": 1}, counts
    # German print's letters PP-OCR lacks come after LINE_JOIN, and read back.
    assert v.encode("ſüß") == [FIRST_EXTRA + 4, v.index["ü"], FIRST_EXTRA + 3] and v.decode(v.encode("„Öl“")) == "„Öl“"
    assert character_counts([{"targets": [v.encode("ßß")]}], v) == {"ß": 2} and v.size == 6641
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, COUNTS_FILE)
        write_counts(path, merge_counts(counts, {" ": 2, "b": 4, "a": 1}))
        assert open(path, encoding="utf-8").readline() == "character\tcount\n"
        assert read_counts(path) == {"a": 3, "b": 4, "天": 1, " ": 2}, read_counts(path)
        assert read_counts(os.path.join(tmp, "none.tsv")) == {}
    print("character counts: ok")
    # The page as printed: the head (and a foot's folio) added as paragraphs; a word broken over the
    # page break stays whole where it begins; a chapter's title, already reading text, not doubled.
    body = "with them, and shalt be turned.\n\nAnd it was so."
    assert target_as_printed(body, "1Sa 6 93\nesy with them, and shalt be turned.\nAnd it was so.") == \
        "1Sa 6 93\n\n" + body
    assert target_as_printed(body, "esy with them, and shalt be turned.\nAnd it was so.\n93") == body + "\n\n93"
    assert target_as_printed("CHAPTER II\n\nIt began.", "CHAPTER II\nIt began.") == "CHAPTER II\n\nIt began."
    assert target_as_printed("", "12 A HEAD") == "12 A HEAD"
    print("targets as printed: ok")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--self-test"]:
        self_test()
