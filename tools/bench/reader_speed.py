#!/usr/bin/python3
"""The reader's decoding speed with and without draft verification, side by side in one run: the
same pages transcribed by `quire-cli --engine reader` with QUIRE_READER_DRAFT=0 (one token per
pass) and with drafts, and by `--engine ppocr` (the front-end alone, which the reader runs first).
Checks that both reader runs export the same text, and prints seconds per page for each; the
reader's decoding time is its run minus the front-end's.

    /usr/bin/python3 tools/bench/reader_speed.py ../shared/eval/oldbooks_landseer_1823/b02*.png
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cli, pages, tmp, name, engine, env_extra):
    env = dict(os.environ, **env_extra)
    project = os.path.join(tmp, name + ".quire")
    out = os.path.join(tmp, name)
    start = time.monotonic()
    proc = subprocess.run([cli, "transcribe", *pages, "--project", project, "--engine", engine, "--threads", "1",
                           "--export", "txt", "--out", out], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 3):  # 3: finished with failed pages
        sys.exit(f"quire-cli failed ({proc.returncode}): {proc.stderr}")
    seconds = time.monotonic() - start
    with open(os.path.join(out, "book.txt"), encoding="utf-8") as f:
        return seconds, f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pages", nargs="+")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "quire-cli"))
    args = ap.parse_args()
    n = len(args.pages)
    with tempfile.TemporaryDirectory() as tmp:
        front, _ = run(args.cli, args.pages, tmp, "ppocr", "ppocr", {})
        plain, plain_text = run(args.cli, args.pages, tmp, "plain", "reader", {"QUIRE_READER_DRAFT": "0"})
        draft, draft_text = run(args.cli, args.pages, tmp, "draft", "reader", {})
    same = plain_text == draft_text
    print(f"{n} pages, one worker")
    print(f"| run | s/page | decoding s/page |")
    print(f"|---|---|---|")
    print(f"| front-end alone (ppocr) | {front / n:.2f} | — |")
    print(f"| reader, one token per pass | {plain / n:.2f} | {(plain - front) / n:.2f} |")
    print(f"| reader, drafts | {draft / n:.2f} | {(draft - front) / n:.2f} |")
    print(f"decoding speed-up {(plain - front) / max(draft - front, 1e-9):.2f}x; same text: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
