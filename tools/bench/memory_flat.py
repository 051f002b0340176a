#!/usr/bin/python3
"""Peak memory of quire-cli against page count: transcribes generated volumes of N and 10·N pages
(multi-page TIFF, 150 dpi letter pages with ten lines of text each) and exports Markdown and a
searchable PDF, then prints the peak RSS of each run. Pages stream, so the two peaks should match.

    /usr/bin/python3 tools/bench/memory_flat.py --pages 200 2000 --threads 2
"""
import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

from PIL import Image, ImageDraw, ImageFont

WORDS = ("record register parish volume archive keeper index paper binding page ledger entry name "
         "date baptism marriage burial field boundary clerk hand ink margin folio copy").split()


def make_volume(path, pages, seed=7, size=(1275, 1650), number_at=(560, 80), text_at=(120, 200), lines=10,
                words=8):
    """An N-page multi-page TIFF at 150 dpi: a page number, then `lines` lines of `words` words.
    The defaults are letter pages (this benchmark's); tools/bench/reader_volume.py --light makes
    small ones."""
    rng = random.Random(seed)
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", 28)
    def page(n):
        img = Image.new("L", size, 255)
        d = ImageDraw.Draw(img)
        d.text(number_at, str(n), font=font, fill=0)
        for i in range(lines):
            line = " ".join(rng.choice(WORDS) for _ in range(words))
            d.text((text_at[0], text_at[1] + i * 48), line, font=font, fill=0)
        return img
    first = page(1)
    first.save(path, save_all=True, compression="tiff_deflate", dpi=(150, 150),
               append_images=(page(n) for n in range(2, pages + 1)))


def measure(cli, volume, project, out, threads):
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(cli, [cli, "transcribe", volume, "--project", project, "--threads", str(threads),
                       "--export", "md,pdf", "--out", out])
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"quire-cli failed on {volume}")
    return usage.ru_maxrss, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, nargs="+", default=[200, 2000])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quire-cli", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "app", "quire-cli"))
    ap.add_argument("--make", nargs=2, metavar=("FILE", "PAGES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make:
        make_volume(args.make[0], int(args.make[1]))
        return
    cli = os.path.abspath(args.quire_cli)
    with tempfile.TemporaryDirectory() as tmp:
        print("| pages | peak RSS (MiB) | seconds | pages/min |")
        print("|---|---|---|---|")
        for n in args.pages:
            vol = os.path.join(tmp, f"vol{n}.tif")
            # Generated in a child: a forked measurement would otherwise start with this process's
            # memory (PIL's pages) already counted in its peak RSS.
            subprocess.run([sys.executable, __file__, "--make", vol, str(n)], check=True)
            rss, secs = measure(cli, vol, os.path.join(tmp, f"p{n}.quire"), os.path.join(tmp, f"out{n}"), args.threads)
            print(f"| {n} | {rss / 1024:.1f} | {secs:.0f} | {n / secs * 60:.1f} |", flush=True)


if __name__ == "__main__":
    main()
