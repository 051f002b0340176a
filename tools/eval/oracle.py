#!/usr/bin/python3
"""Headroom of combining two recognisers line by line: the line-level oracle CER.

Transcribes every page of a MANIFEST.tsv (tools/eval/eval.py's format) with Quire's Tesseract path
and its PP-OCR front-end, reads each engine's lines with their boxes from the hOCR export, and pairs
each line of one engine with the other's lines lying on it (boxes overlapping: half the lower
height vertically, a third of the narrower width horizontally). The oracle starts from one engine's
page and, line by line in reading order, takes the other's reading of the line wherever that lowers
the page's edit distance to the ground truth; of the two bases, the better is reported: about the
best a chooser of whole lines could do with these two readings, in the base engine's line order and
without a line the base missed. No rule is drawn from it: it says how much a reader that weighs
both engines' evidence could gain by choosing lines.

    /usr/bin/python3 tools/eval/oracle.py ../shared/eval/MANIFEST.tsv [--sets a,b] [--markdown F]

CER as eval.py computes it (NFC, whitespace collapsed, removed for Chinese), all three from the
hOCR texts (an export leaves out specks, words with no letter or digit below confidence 60).
"""
import argparse
import collections
import html
import json
import importlib
import os
import re
import subprocess
import sys
import tempfile

import Levenshtein

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ev = importlib.import_module("eval")

PAGE = re.compile(r'<div class="ocr_page"[^>]*>(.*?)(?=<div class="ocr_page"|</body>)', re.S)
LINE = re.compile(r'<span class="ocr_line"[^>]*title="bbox (\d+) (\d+) (\d+) (\d+)[^"]*">(.*?)</span>\s*(?=<span class="ocr_line"|</p>)', re.S)
WORD = re.compile(r'<span class="ocrx_word"[^>]*>(.*?)</span>', re.S)


def hocr_pages(path):
    """Each page's lines as (x0, y0, x1, y1, text), in reading order, in the export's page order."""
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    pages = []
    for page in PAGE.finditer(doc):
        lines = []
        for m in LINE.finditer(page.group(1)):
            words = [html.unescape(re.sub(r"<[^>]+>", "", w)) for w in WORD.findall(m.group(5))]
            lines.append((*map(int, m.group(1, 2, 3, 4)), " ".join(words)))
        pages.append(lines)
    return pages


def transcribe(cli, files, lang, engine, workdir):
    project = os.path.join(workdir, f"oracle-{lang}-{engine}.quire")
    proc = subprocess.run([cli, "transcribe", *files, "--project", project, "--lang", lang, "--engine", engine,
                           "--json"], capture_output=True, text=True)
    if proc.returncode not in (0, 3):
        sys.exit(f"quire-cli failed ({proc.returncode}): {proc.stderr}")
    out = os.path.join(workdir, f"out-{lang}-{engine}")
    subprocess.run([cli, "export", "--project", project, "--format", "hocr", "--out", out], check=True,
                   capture_output=True)
    status = subprocess.run([cli, "status", "--project", project, "--json", "--pages"], capture_output=True, text=True)
    order = [(os.path.realpath(p["file"]), p["filePage"]) for p in json.loads(status.stdout)["pageList"]]
    return dict(zip(order, hocr_pages(os.path.join(out, "book.hocr"))))


def on_line(t, p):
    vert = min(t[3], p[3]) - max(t[1], p[1])
    horiz = min(t[2], p[2]) - max(t[0], p[0])
    return vert >= 0.5 * min(t[3] - t[1], p[3] - p[1]) and horiz >= 0.33 * min(t[2] - t[0], p[2] - p[0])


def page_text(lines):
    return "\n".join(lines)


def oracle(tess, ppocr, gt, cjk):
    """(distance, ground-truth length, lines taken from PP-OCR, lines paired)."""
    chosen = [t[4] for t in tess]
    others = []
    for t in tess:
        parts = sorted((p for p in ppocr if on_line(t, p)), key=lambda p: p[0])
        others.append(" ".join(p[4] for p in parts) if parts else None)
    g = ev.normalize(gt, cjk)
    best = Levenshtein.distance(ev.normalize(page_text(chosen), cjk), g)
    taken = 0
    for i, alt in enumerate(others):
        if alt is None or alt == chosen[i]:
            continue
        trial = chosen[:i] + [alt] + chosen[i + 1:]
        d = Levenshtein.distance(ev.normalize(page_text(trial), cjk), g)
        if d < best:
            best, chosen, taken = d, trial, taken + 1
    return best, len(g), taken, sum(o is not None for o in others)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("--quire-cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "app", "quire-cli"))
    ap.add_argument("--sets", default="")
    ap.add_argument("--markdown", help="also write the table as Markdown to this file")
    args = ap.parse_args()
    base = os.path.dirname(os.path.abspath(args.manifest))
    rows = ev.read_manifest(args.manifest, args.sets)
    by_lang = collections.defaultdict(list)
    for r in rows:
        by_lang[r["language"]].append(r)
    totals = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0])  # set -> tess, ppocr, oracle errors, chars, taken, paired
    cli = os.path.abspath(args.quire_cli)
    with tempfile.TemporaryDirectory() as tmp:
        for lang, lrows in by_lang.items():
            tl = ev.LANG.get(lang, lang)
            files = []
            for r in lrows:
                p = os.path.join(base, ev.split_image(r["image"])[0])
                if p not in files:
                    files.append(p)
            tess = transcribe(cli, files, tl, "tesseract", tmp)
            pp = transcribe(cli, files, tl, "ppocr", tmp)
            cjk = lang == "zh"
            for r in lrows:
                p, n = ev.split_image(r["image"])
                key = (os.path.realpath(os.path.join(base, p)), n)
                with open(os.path.join(base, r["gt"]), encoding="utf-8") as f:
                    gt = f.read()
                t, q = tess.get(key, []), pp.get(key, [])
                g = ev.normalize(gt, cjk)
                dt = Levenshtein.distance(ev.normalize(page_text([x[4] for x in t]), cjk), g)
                dp = Levenshtein.distance(ev.normalize(page_text([x[4] for x in q]), cjk), g)
                # Either engine's page as the base, the other's lines as the alternatives: the better.
                do, n_chars, taken, paired = min(oracle(t, q, gt, cjk), oracle(q, t, gt, cjk))
                for k in (r["set"], f"all {lang}"):
                    acc = totals[k]
                    for i, v in enumerate((dt, dp, do, n_chars, taken, paired)):
                        acc[i] += v
    out = ["| set | characters | Tesseract CER | PP-OCR CER | line oracle CER | lines taken from the other engine / paired |",
           "|---|---|---|---|---|---|"]
    for k in sorted(totals, key=lambda k: (k.startswith("all"), k)):
        dt, dp, do, n, taken, paired = totals[k]
        out.append(f"| {k} | {n} | {100 * dt / max(1, n):.2f}% | {100 * dp / max(1, n):.2f}% | "
                   f"{100 * do / max(1, n):.2f}% | {taken} / {paired} |")
    print("\n".join(out))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
