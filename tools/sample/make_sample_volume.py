#!/usr/bin/python3
"""Generates Quire's bundled sample volume: a scanned-looking multi-page PDF with ground truth.

The text (tools/sample/volume_text.md) was written for the project. The layout is book-like:
chapters open on a new page, running headers alternate between the book title and the chapter
title with the page number at the outer edge, paragraphs are indented and justified, long words are
hyphenated (pyphen), and at least one paragraph and one hyphenated word run across a page break.
Each page is then degraded like a scan: skew, uneven lighting, paper tint, blur, noise, JPEG.

Outputs (in --out, default resources/samples):
  sample_volume.pdf           the volume (200 dpi grayscale JPEG pages)
  sample_volume.gt/NNNN.gt.txt  each page's text as printed, lines in reading order
  sample_volume.book.md       the clean reading text (no headers, hyphens joined, paragraphs kept)
  MANIFEST.tsv                pages in the format of ../shared/eval/MANIFEST.tsv
Deterministic for a given --seed.
"""
import argparse
import os
import random
import re
import sys

import numpy as np
import pyphen
from PIL import Image, ImageDraw, ImageFilter, ImageFont

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "eval"))
import eval as evaluation  # noqa: E402  (tools/eval/eval.py: the manifest's columns)

DPI = 200
PAGE_W, PAGE_H = int(5.5 * DPI), int(8.5 * DPI)
MARGIN_X, MARGIN_TOP, MARGIN_BOTTOM = 150, 150, 140
FONT_DIR = "/usr/share/fonts/truetype/liberation2"
BOOK_TITLE = "NOTES ON THE KEEPING OF RECORDS"


def load_font(name, size):
    for d in (FONT_DIR, "/usr/share/fonts/truetype/liberation", "/usr/share/fonts/truetype/dejavu"):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return ImageFont.truetype(p, size)
    return ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", size)


BODY = load_font("LiberationSerif-Regular.ttf", 44)
HEAD = load_font("LiberationSerif-Bold.ttf", 46)
RUNNING = load_font("LiberationSerif-Italic.ttf", 30)
LEADING = 66
TEXT_W = PAGE_W - 2 * MARGIN_X
INDENT = 50
HYPH = pyphen.Pyphen(lang="en_US")


def parse(path):
    """Chapters: list of (heading lines, paragraphs)."""
    chapters, heading, paras = [], [], []
    for block in open(path, encoding="utf-8").read().split("\n\n"):
        block = block.strip()
        if not block:
            continue
        lines = block.split("\n")
        if all(l.startswith("# ") for l in lines):
            if paras:
                chapters.append((heading, paras))
                heading, paras = [], []
            heading = [l[2:] for l in lines]
        else:
            paras.append(" ".join(lines))
    chapters.append((heading, paras))
    return chapters


def width(text, font=BODY):
    return font.getlength(text)


def break_paragraph(words, first_indent, force_hyphen_at=None):
    """Greedy line breaking with hyphenation. Returns lines as (words, hyphenated_end)."""
    lines, cur, i = [], [], 0
    words = list(words)
    while i < len(words):
        avail = TEXT_W - (first_indent if not lines else 0)
        trial = " ".join(cur + [words[i]])
        force = force_hyphen_at is not None and len(lines) == force_hyphen_at
        forced = force and cur and width(" ".join(cur)) > 0.4 * avail and re.fullmatch(r"[A-Za-z]{6,}[,.;:]?", words[i])
        if width(trial) <= avail and not forced:
            cur.append(words[i])
            i += 1
            continue
        # Try to hyphenate words[i] so its first part fits.
        word = words[i]
        split_done = False
        if re.fullmatch(r"[A-Za-z]{6,}[,.;:]?", word):
            core = word.rstrip(",.;:")
            for pos in sorted(HYPH.positions(core), reverse=True):
                if pos < 3 or len(core) - pos < 3:
                    continue
                head = core[:pos] + "-"
                if width(" ".join(cur + [head])) <= avail:
                    lines.append((cur + [head], True))
                    words[i] = word[pos:]
                    cur = []
                    split_done = True
                    break
        if not split_done:
            if not cur:  # a single over-long word
                cur.append(word)
                i += 1
            lines.append((cur, False))
            cur = []
    if cur:
        lines.append((cur, False))
    return lines


def layout(chapters, force_page):
    """Returns pages: list of dicts with header, items [(kind, text_or_words, ...)]."""
    body_lines_per_page = (PAGE_H - MARGIN_TOP - MARGIN_BOTTOM - 60) // LEADING
    pages = []
    for ci, (heading, paras) in enumerate(chapters):
        page = {"chapter": heading[-1], "items": [], "opening": True}
        pages.append(page)
        used = 3  # headings take about three body lines
        page["items"].append(("heading", heading))
        for pi, para in enumerate(paras):
            words = para.split()
            # Lines that would land on the last line of the page chosen to carry a forced hyphen.
            force_line = None
            if len(pages) == force_page + 1:
                force_line = body_lines_per_page - used - 1
                if force_line < 0 or force_line > 40:
                    force_line = None
            lines = break_paragraph(words, INDENT, force_line)
            for li, (ws, hy) in enumerate(lines):
                if used >= body_lines_per_page:
                    page = {"chapter": heading[-1], "items": [], "opening": False}
                    pages.append(page)
                    used = 0
                last = li == len(lines) - 1
                page["items"].append(("line", ws, li == 0, last, hy))
                used += 1
    return pages


def render_page(page, number):
    img = Image.new("L", (PAGE_W, PAGE_H), 255)
    d = ImageDraw.Draw(img)
    printed = []
    y = MARGIN_TOP
    if not page["opening"]:
        title = BOOK_TITLE if number % 2 == 0 else page["chapter"].upper()
        num = str(number)
        if number % 2 == 0:
            d.text((MARGIN_X, y), num, font=RUNNING, fill=0)
            d.text(((PAGE_W - width(title, RUNNING)) / 2, y), title, font=RUNNING, fill=0)
            printed.append(f"{num} {title}")
        else:
            d.text(((PAGE_W - width(title, RUNNING)) / 2, y), title, font=RUNNING, fill=0)
            d.text((PAGE_W - MARGIN_X - width(num, RUNNING), y), num, font=RUNNING, fill=0)
            printed.append(f"{title} {num}")
        y += 80
    for item in page["items"]:
        if item[0] == "heading":
            y += 60
            for h in item[1]:
                d.text(((PAGE_W - width(h, HEAD)) / 2, y), h, font=HEAD, fill=0)
                printed.append(h)
                y += 70
            y += 40
            continue
        _, ws, first, last, hy = item
        x0 = MARGIN_X + (INDENT if first else 0)
        avail = TEXT_W - (INDENT if first else 0)
        if last or len(ws) == 1:
            d.text((x0, y), " ".join(ws), font=BODY, fill=0)
        else:  # justify
            total = sum(width(w) for w in ws)
            gap = (avail - total) / (len(ws) - 1)
            x = x0
            for w in ws:
                d.text((x, y), w, font=BODY, fill=0)
                x += width(w) + gap
        printed.append(" ".join(ws))
        y += LEADING
    if page["opening"]:  # chapter openings carry the page number at the foot
        num = str(number)
        d.text(((PAGE_W - width(num, RUNNING)) / 2, PAGE_H - MARGIN_BOTTOM + 30), num, font=RUNNING, fill=0)
        printed.append(num)
    return img, printed


def degrade(img, rng):
    a = np.asarray(img).astype(np.float32)
    # Paper tint and ink that is not quite black.
    a = 40 + a * (225 - 40) / 255.0
    img = Image.fromarray(a.clip(0, 255).astype(np.uint8))
    img = img.rotate(rng.uniform(-1.6, 1.6), resample=Image.BICUBIC, fillcolor=225)
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.6, 1.1)))
    a = np.asarray(img).astype(np.float32)
    h, w = a.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    # Uneven lighting: a darker corner and a shadow along the gutter.
    cx, cy = rng.choice([0, w]), rng.choice([0, h])
    dist = np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2) / np.hypot(w, h)
    light = 0.72 + 0.28 * dist
    gutter = 1.0 - 0.18 * np.exp(-((xx - (0 if rng.random() < 0.5 else w)) / (0.06 * w)) ** 2)
    a = a * light * gutter
    a += rng.normal(0, 6, a.shape)
    # Specks of dirt.
    for _ in range(rng.randint(20, 60)):
        x, y = rng.randrange(w), rng.randrange(h)
        a[max(0, y - 1):y + 2, max(0, x - 1):x + 2] *= 0.4
    return Image.fromarray(a.clip(0, 255).astype(np.uint8))


def clean_text(chapters):
    out = []
    for heading, paras in chapters:
        out.append("# " + " ".join(heading))
        out.extend(paras)
    return "\n\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--text", default=os.path.join(here, "volume_text.md"))
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "resources", "samples"))
    ap.add_argument("--seed", type=int, default=1784)
    ap.add_argument("--force-hyphen-page", type=int, default=2, help="0-based page ending in a hyphen")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    np_rng = np.random.default_rng(args.seed)
    rng.normal = lambda mu, sigma, shape: np_rng.normal(mu, sigma, shape)

    chapters = parse(args.text)
    # The volume must show what the engine has to handle across page breaks: try pages in turn
    # until one ends inside a paragraph on a hyphenated word.
    for force_page in range(args.force_hyphen_page, 12):
        pages = layout(chapters, force_page)
        crossings = [i for i in range(len(pages) - 1)
                     if pages[i]["items"][-1][0] == "line" and not pages[i]["items"][-1][3]]
        hyph = [i for i in crossings if pages[i]["items"][-1][4]]
        if hyph:
            break
    assert len(pages) >= 8, f"only {len(pages)} pages"
    assert crossings, "no paragraph runs across a page break"
    assert hyph, "no hyphenated word across a page break"

    os.makedirs(args.out, exist_ok=True)
    gt_dir = os.path.join(args.out, "sample_volume.gt")
    os.makedirs(gt_dir, exist_ok=True)
    images, manifest = [], []
    for n, page in enumerate(pages, start=1):
        img, printed = render_page(page, n)
        images.append(degrade(img, rng))
        name = f"{n:04d}.gt.txt"
        with open(os.path.join(gt_dir, name), "w", encoding="utf-8") as f:
            f.write("\n".join(printed) + "\n")
        manifest.append(["sample_volume", f"p{n:04d}", f"sample_volume.pdf#{n}", f"sample_volume.gt/{name}", "en",
                         "quire (generated)", "tools/sample/make_sample_volume.py", "project-written text",
                         "-", "plaintext", "synthetic scan"])
    pdf = os.path.join(args.out, "sample_volume.pdf")
    images[0].save(pdf, save_all=True, append_images=images[1:], resolution=DPI, quality=60)
    with open(os.path.join(args.out, "sample_volume.book.md"), "w", encoding="utf-8") as f:
        f.write(clean_text(chapters))
    with open(os.path.join(args.out, "MANIFEST.tsv"), "w", encoding="utf-8") as f:
        for row in [evaluation.MANIFEST_COLUMNS] + manifest:
            f.write("\t".join(row) + "\n")
    print(f"{pdf}: {len(pages)} pages, {os.path.getsize(pdf) // 1024} KiB; paragraph crossings after pages "
          f"{[i + 1 for i in crossings]}, hyphenated across pages {[i + 1 for i in hyph]}")


if __name__ == "__main__":
    main()
