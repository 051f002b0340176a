#!/usr/bin/python3
"""The reader's context ablation (issue #29, item 4) in one command: a manifest's sets read by the
reader once with the volume's context and once with a fresh context at every page (quire-cli's
measurement setting QUIRE_READER_CONTEXT=volume|page), each an eval.py run, then both readings'
book-structure figures (structure.py) and how many fewer character errors the context makes.

    tools/eval/context_ablation.py data/heldout_licences/MANIFEST.tsv --out /tmp/ablation \\
        [--reader-model runs/r28/model] [--threads 2] [--sets a,b] [--quire-cli build/app/quire-cli]

Writes OUT/volume and OUT/page (eval.py's --hyp-dir, and its report as OUT/volume.log, OUT/page.log).
Exit 0 when both readings were made, 1 otherwise.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import eval as evaluation  # noqa: E402  (tools/eval/eval.py: the manifest)
import structure  # noqa: E402  (tools/eval/structure.py: character errors and the book's structure)

CONTEXTS = ("volume", "page")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("--out", required=True, help="folder for the two readings and their reports")
    ap.add_argument("--reader-model", help="the reader model folder (default: the installed reader)")
    ap.add_argument("--threads", type=int, default=1, help="eval.py's workers (a set is read whole by one)")
    ap.add_argument("--sets", default="", help="comma-separated sets (default: all)")
    ap.add_argument("--quire-cli", help="the quire-cli binary (default: eval.py's)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for ctx in CONTEXTS:
        cmd = [sys.executable, os.path.join(HERE, "eval.py"), args.manifest, "--engines", "reader",
               "--no-tesseract-cli", "--threads", str(args.threads), "--hyp-dir", os.path.join(args.out, ctx)]
        for flag, value in (("--reader-model", args.reader_model), ("--sets", args.sets), ("--quire-cli", args.quire_cli)):
            if value:
                cmd += [flag, value]
        print(f"reading with the {ctx}'s context ...", flush=True)
        proc = subprocess.run(cmd, env=dict(os.environ, QUIRE_READER_CONTEXT=ctx), capture_output=True, text=True)
        with open(os.path.join(args.out, ctx + ".log"), "w", encoding="utf-8") as f:
            f.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            print(f"context_ablation: eval.py failed with the {ctx}'s context ({proc.returncode}); "
                  f"its report: {os.path.join(args.out, ctx + '.log')}", file=sys.stderr)
            return 1
    rows = evaluation.read_manifest(args.manifest, args.sets)
    base = os.path.dirname(os.path.abspath(args.manifest))
    results = {ctx: structure.measure(rows, base, os.path.join(args.out, ctx, "quire", "reader")) for ctx in CONTEXTS}
    structure.print_table(results)
    errors = {ctx: sum(v["errors"] for v in results[ctx].values()) for ctx in CONTEXTS}
    fewer = 1 - errors["volume"] / max(1, errors["page"])
    print(f"\ncharacter errors: {errors['volume']} with the volume's context, {errors['page']} with a fresh "
          f"context each page: {fewer:.1%} fewer with the context")
    return 0


if __name__ == "__main__":
    sys.exit(main())
