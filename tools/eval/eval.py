#!/usr/bin/python3
"""Accuracy and speed of Quire against the `tesseract` command-line tool, in one run.

Reads a MANIFEST.tsv (columns: set page image gt language ...; an image "file.pdf#N" means page N
of a PDF), transcribes every page with quire-cli (one project per language) and with the tesseract
CLI (--psm 3, OMP_THREAD_LIMIT=1, the same number of parallel workers), and reports CER and WER per
page, per set and in total, plus pages per minute for each.

CER/WER: Levenshtein distance over the ground-truth length after Unicode NFC and whitespace
collapsing; for Chinese (language zh) all whitespace is removed and WER is not reported.
"""
import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
import unicodedata

import Levenshtein

LANG = {"en": "eng", "zh": "chi_sim", "de": "frk"}
# A manifest's columns, in order (read_manifest takes them from the file's first line).
MANIFEST_COLUMNS = ["set", "page", "image", "gt", "language", "source_repo", "source_path", "licence",
                    "source_commit", "gt_kind", "notes"]


def normalize(text, cjk):
    text = unicodedata.normalize("NFC", text)
    if cjk:
        return "".join(text.split())
    return " ".join(text.split())


def word_distance(hyp, gt):
    vocab = {}
    def enc(ws):
        return "".join(chr(0xF0000 + vocab.setdefault(w, len(vocab))) for w in ws)
    return Levenshtein.distance(enc(hyp.split()), enc(gt.split()))


def score(hyp, gt, cjk):
    h, g = normalize(hyp, cjk), normalize(gt, cjk)
    cer = Levenshtein.distance(h, g) / max(1, len(g))
    wer = None if cjk else word_distance(h, g) / max(1, len(g.split()))
    return cer, wer, len(g), (None if cjk else len(g.split()))


def bag_error(hyp, gt):
    """Order-free character error: the characters that one text has and the other lacks (as a
    multiset, whitespace ignored) over the ground truth's length. A lower bound of CER that does
    not count reading-order differences (columns, headers, footnotes, side bars)."""
    h = collections.Counter("".join(normalize(hyp, True)))
    g = collections.Counter("".join(normalize(gt, True)))
    return max(sum((h - g).values()), sum((g - h).values())), sum(g.values())


def split_image(image):
    path, _, page = image.partition("#")
    return path, (int(page) if page else 1)


def read_manifest(path, sets=""):
    """The manifest's rows as dicts (with "key" = set/page), only those of `sets` (comma-separated) if given."""
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            if not line.strip():
                continue
            r = dict(zip(header, line.rstrip("\n").split("\t")))
            if sets and r["set"] not in sets.split(","):
                continue
            r["key"] = f'{r["set"]}/{r["page"]}'
            rows.append(r)
    return rows


def run_quire(cli, rows, base, threads, lang, workdir, dpi, engine, reader_model=None, extra=()):
    project = os.path.join(workdir, f"eval-{lang}-{engine}.quire")
    files = []
    for r in rows:
        p, _ = split_image(r["image"])
        full = os.path.join(base, p)
        if full not in files:
            files.append(full)
    start = time.monotonic()
    proc = subprocess.run([cli, "transcribe", *files, "--project", project, "--lang", lang, "--threads",
                           str(threads), "--dpi", str(dpi), "--engine", engine, "--json", *extra]
                          + (["--reader-model", reader_model] if reader_model else []), capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if proc.returncode not in (0, 3):
        sys.exit(f"quire-cli failed ({proc.returncode}): {proc.stderr}")
    kernels = "?"  # OpenBLAS's kernels and the front-end's product in the run (they set its speed)
    for line in proc.stdout.splitlines():
        if '"event":"summary"' in line:
            summary = json.loads(line)
            kernels = f"OpenBLAS {summary.get('matrixKernels', '?')}, front-end products {summary.get('productKernel', '?')}"
    status = subprocess.run([cli, "status", "--project", project, "--json", "--pages"], capture_output=True, text=True)
    pages = json.loads(status.stdout)["pageList"]
    by_key = {(os.path.realpath(p["file"]), p["filePage"]): p.get("text", "") for p in pages}
    out = {}
    for r in rows:
        p, n = split_image(r["image"])
        out[r["key"]] = by_key.get((os.path.realpath(os.path.join(base, p)), n), "")
    return out, elapsed, kernels


def tesseract_page(image, page, lang, tmp, dpi):
    src = image
    if image.lower().endswith(".pdf"):
        prefix = os.path.join(tmp, f"pdf-{os.getpid()}-{page}-{abs(hash(image))}")
        subprocess.run(["pdftoppm", "-r", str(dpi), "-gray", "-f", str(page), "-l", str(page), "-png", image, prefix],
                       check=True)
        src = next(os.path.join(tmp, f) for f in os.listdir(tmp) if f.startswith(os.path.basename(prefix)))
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    proc = subprocess.run(["tesseract", src, "-", "-l", lang, "--psm", "3"], capture_output=True, text=True, env=env)
    return proc.stdout


def run_tesseract(rows, base, threads, lang, workdir, dpi):
    start = time.monotonic()
    out = {}
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        futures = {}
        for r in rows:
            p, n = split_image(r["image"])
            futures[pool.submit(tesseract_page, os.path.join(base, p), n, lang, workdir, dpi)] = r["key"]
        for f in concurrent.futures.as_completed(futures):
            out[futures[f]] = f.result()
    return out, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("--quire-cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "app", "quire-cli"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--dpi", type=int, default=300, help="rendering resolution for PDF pages (both engines)")
    ap.add_argument("--sets", default="", help="comma-separated sets to include (default: all)")
    ap.add_argument("--engines", default="tesseract",
                    help="comma-separated quire-cli recognizers to measure side by side (tesseract,ppocr,reader,auto)")
    ap.add_argument("--reader-model", help="the reader model folder, for --engines reader")
    ap.add_argument("--no-tesseract-cli", action="store_true")
    ap.add_argument("--quire-args", default="", help="more quire-cli transcribe options, space-separated (e.g. --no-deskew)")
    ap.add_argument("--markdown", help="also write the tables as Markdown to this file")
    ap.add_argument("--hyp-dir", help="write each engine's page texts here")
    args = ap.parse_args()

    base = os.path.dirname(os.path.abspath(args.manifest))
    rows = read_manifest(args.manifest, args.sets)
    by_lang = collections.defaultdict(list)
    for r in rows:
        by_lang[r["language"]].append(r)

    quire_engines = [e for e in args.engines.split(",") if e]
    label = {e: ("quire" if quire_engines == ["tesseract"] else f"quire/{e}") for e in quire_engines}
    engines = [label[e] for e in quire_engines] + ([] if args.no_tesseract_cli else ["tesseract-cli"])
    hyps = {e: {} for e in engines}
    seconds = collections.Counter()
    kernels = set()  # the matrix kernels of each quire-cli run
    with tempfile.TemporaryDirectory() as tmp:
        for lang, lrows in by_lang.items():
            tl = LANG.get(lang, lang)
            for e in quire_engines:
                h, t, k = run_quire(os.path.abspath(args.quire_cli), lrows, base, args.threads, tl, tmp, args.dpi, e,
                                    args.reader_model, args.quire_args.split())
                hyps[label[e]].update(h)
                seconds[label[e]] += t
                kernels.add(k)
            if "tesseract-cli" in hyps:
                h, t = run_tesseract(lrows, base, args.threads, tl, tmp, args.dpi)
                hyps["tesseract-cli"].update(h)
                seconds["tesseract-cli"] += t

    lines = []
    def emit(s=""):
        print(s)
        lines.append(s)

    emit("| set | page | " + " | ".join(f"{e} CER | {e} WER" for e in engines) + " |")
    emit("|---|---|" + "---|---|" * len(engines))
    # (engine, group) -> cer_edits, chars, wer_edits, words, order-free edits, non-space chars
    agg = collections.defaultdict(lambda: [0.0, 0, 0.0, 0, 0, 0])
    for r in rows:
        cjk = r["language"] == "zh"
        gt = open(os.path.join(base, r["gt"]), encoding="utf-8").read()
        cells = []
        for e in engines:
            cer, wer, nchars, nwords = score(hyps[e].get(r["key"], ""), gt, cjk)
            cells.append(f"{cer * 100:.2f}% | " + ("n/a" if wer is None else f"{wer * 100:.2f}%"))
            bag, nbag = bag_error(hyps[e].get(r["key"], ""), gt)
            for g in (r["set"], f"all {r['language']}", "all"):
                a = agg[(e, g)]
                a[4] += bag
                a[5] += nbag
                a[0] += cer * nchars
                a[1] += nchars
                if wer is not None:
                    a[2] += wer * nwords
                    a[3] += nwords
        emit(f"| {r['set']} | {r['page']} | " + " | ".join(cells) + " |")
        if args.hyp_dir:
            for e in engines:
                d = os.path.join(args.hyp_dir, e)
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, r["key"].replace("/", "_") + ".txt"), "w", encoding="utf-8") as f:
                    f.write(hyps[e].get(r["key"], ""))
    emit()
    groups = list(dict.fromkeys([r["set"] for r in rows] + [f"all {r['language']}" for r in rows] + ["all"]))
    emit("| set | pages | " + " | ".join(f"{e} CER | {e} WER | {e} order-free CER" for e in engines) + " |")
    emit("|---|---|" + "---|---|---|" * len(engines))
    for g in groups:
        n = sum(1 for r in rows if g == "all" or r["set"] == g or g == f"all {r['language']}")
        cells = []
        for e in engines:
            c, nc, w, nw, b, nb = agg[(e, g)]
            cells.append(f"{c / max(1, nc) * 100:.2f}% | " + (f"{w / nw * 100:.2f}%" if nw else "n/a") +
                         f" | {b / max(1, nb) * 100:.2f}%")
        emit(f"| {g} | {n} | " + " | ".join(cells) + " |")
    emit()
    for e in engines:
        emit(f"{e}: {len(rows)} pages in {seconds[e]:.1f} s with {args.threads} worker(s) = "
             f"{len(rows) / seconds[e] * 60:.1f} pages/min")
    if kernels:
        emit(f"matrix kernels (quire-cli): {'; '.join(sorted(kernels))}")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
