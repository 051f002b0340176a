#!/usr/bin/python3
"""A reader model's figures for the SR-SWA runs' rule (docs/RUNS_SRSWA.md, run 34 on) in one
command, each set read as one volume by `quire-cli` through tools/eval/eval.py:

1. and 2. the held-out licence volumes (data/heldout_licences), with the volume's context and with
   a fresh one each page (context_ablation.py), the page as printed;
3. the three generated held-out sets of tools/train/make_judge_sets.sh (data/judge), as printed;
4. the four old-book sets of ../shared/eval with and without the context (a confirmation only);
and the fresh held-out sets data/heldout_page_en and _zh (a confirmation only).

    tools/eval/judge_reader.py --reader-model runs/r35/model --out /tmp/judge35 [--threads 1]
        [--parts 1,3,4,5] [--quire-cli build/app/quire-cli]

Prints one line a part with its character errors (and writes them to OUT/figures.json). Read two
models with the same build, one after the other, and compare the lines. Exit 0 when every part read.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import structure  # noqa: E402  (tools/eval/structure.py: character errors as eval.py counts them)
import eval as evaluation  # noqa: E402

OLD_BOOKS = "oldbooks_corset_1868,oldbooks_enchanter_1920,oldbooks_florida_1892,oldbooks_landseer_1823"


def errors(manifest, hyp_dir, sets=""):
    """Character errors of the reader's page texts in `hyp_dir` against `manifest`'s ground truth."""
    rows = evaluation.read_manifest(manifest, sets)
    base = os.path.dirname(os.path.abspath(manifest))
    return sum(v["errors"] for v in structure.measure(rows, base, hyp_dir).values())


def run(cmd, log):
    with open(log, "w", encoding="utf-8") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader-model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--parts", default="1,3,4,5", help="1 (with 2): licence volumes; 3: data/judge; "
                    "4: the old books; 5: data/heldout_page_en and _zh")
    ap.add_argument("--quire-cli", default=os.path.join(ROOT, "build", "app", "quire-cli"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    parts = set(args.parts.split(","))
    common = ["--reader-model", args.reader_model, "--threads", str(args.threads), "--quire-cli", args.quire_cli]
    data = os.path.join(ROOT, "data")
    figures, ok = {}, True

    def ablation(name, manifest, sets=""):
        out = os.path.join(args.out, name)
        cmd = [sys.executable, os.path.join(HERE, "context_ablation.py"), manifest, "--out", out] + common
        if not run(cmd + (["--sets", sets] if sets else []), out + ".log"):
            return None
        return [errors(manifest, os.path.join(out, ctx, "quire", "reader"), sets) for ctx in ("volume", "page")]

    def reading(name, manifest):
        out = os.path.join(args.out, name)
        cmd = [sys.executable, os.path.join(HERE, "eval.py"), manifest, "--engines", "reader", "--no-tesseract-cli",
               "--hyp-dir", out] + common
        return errors(manifest, os.path.join(out, "quire", "reader")) if run(cmd, out + ".log") else None

    if "1" in parts:
        figures["licence volumes, with / without the context"] = ablation(
            "licences", os.path.join(data, "heldout_licences", "MANIFEST.tsv"))
    if "3" in parts:
        figures["data/judge valen18, valzh18b, test_cur"] = [
            reading(s, os.path.join(data, "judge", s, "MANIFEST.tsv")) for s in ("valen18", "valzh18b", "test_cur")]
    if "4" in parts:
        figures["old books, with / without the context"] = ablation(
            "oldbooks", os.path.join(ROOT, "..", "shared", "eval", "MANIFEST.tsv"), OLD_BOOKS)
    if "5" in parts:
        figures["heldout_page_en, heldout_page_zh"] = [
            reading(s, os.path.join(data, s, "MANIFEST.tsv")) for s in ("heldout_page_en", "heldout_page_zh")]
    for name, value in figures.items():
        got = value if isinstance(value, list) else [value]
        ok = ok and value is not None and None not in got
        total = sum(got) if value is not None and None not in got else None
        print(f"{name}: {value} (sum {total})")
    with open(os.path.join(args.out, "figures.json"), "w", encoding="utf-8") as f:
        json.dump({"reader_model": args.reader_model, "figures": figures}, f, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
