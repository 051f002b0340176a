#!/usr/bin/python3
"""Generated test pages of the layouts that cost Tesseract's layout analysis its reading order:
narrow justified columns (wide word gaps), a page of two columns under a full-width heading and
paragraph, and a plain single column; slightly skewed, as scans are. Text from the bundled sample
(tools/sample/volume_text.md), fonts from Debian's Liberation and DejaVu (installer/setup-deps.sh).

    /usr/bin/python3 tests/make_layout_pages.py OUT_DIR

Writes OUT_DIR/<name>.png (300 dpi) and <name>.gt.txt (the text in reading order: the heading,
then the first column top to bottom, then the second). Deterministic.
"""
import os
import random
import sys

from PIL import Image, ImageDraw, ImageFont

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(HERE, "..", "tools", "sample", "volume_text.md")
FONTS = ["/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf",
         "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"]
FRAKTUR = os.path.join(HERE, "..", "tools", "train", "fonts", "BertholdMainzerFraktur-UNZ1A.ttf")
DPI = 300


def words():
    with open(TEXT, encoding="utf-8") as f:
        body = [line for line in f.read().splitlines() if line and not line.startswith("#")]
    return " ".join(body).split()


def take_lines(ws, pos, font, width, rows):
    """Greedy line breaking of ws[pos:]: at most `rows` lines (the last one short only where the
    words ran out); returns them and the position after them."""
    lines, cur = [], []
    while len(lines) < rows and pos < len(ws):
        if cur and font.getlength(" ".join(cur + [ws[pos]])) > width:
            lines.append(cur)
            cur = []
        else:
            cur.append(ws[pos])
            pos += 1
    if cur and len(lines) < rows:  # the words ran out
        return lines + [cur], pos
    return lines, pos - len(cur)


def draw_lines(draw, lines, font, x, y, width, leading, justify_last=False):
    for i, line in enumerate(lines):
        last = i == len(lines) - 1 and not justify_last
        if len(line) == 1 or last:
            draw.text((x, y), " ".join(line), font=font, fill=0)
        else:
            ink = sum(font.getlength(w) for w in line)
            gap = (width - ink) / (len(line) - 1)
            cx = x
            for w in line:
                draw.text((cx, y), w, font=font, fill=0)
                cx += font.getlength(w) + gap
        y += leading
    return y


def page(name, out, rng, ws, columns, heading, font_path, size, skew):
    w, h = int(6.5 * DPI), int(9.5 * DPI)
    img = Image.new("L", (w, h), 255)
    d = ImageDraw.Draw(img)
    font = ImageFont.truetype(font_path, size)
    leading = int(size * 1.35)
    margin, top = int(0.7 * DPI), int(0.75 * DPI)
    text_w = w - 2 * margin
    truth = []
    y = top
    pos = rng.randrange(0, len(ws) // 3)  # ws holds the text three times over
    if heading:
        big = ImageFont.truetype(font_path, int(size * 1.6))
        title = "THE KEEPING OF REGISTERS"
        d.text(((w - big.getlength(title)) / 2, y), title, font=big, fill=0)
        truth.append(title)
        y += int(size * 3)
        intro, _ = take_lines(ws[pos:pos + 45], 0, font, text_w, len(ws))
        y = draw_lines(d, intro, font, margin, y, text_w, leading) + leading
        truth += [" ".join(line) for line in intro]
        pos += 45
    gutter = int(0.28 * DPI)
    col_w = (text_w - gutter * (columns - 1)) // columns
    rows = (h - y - top) // leading
    for c in range(columns):
        lines, pos = take_lines(ws, pos, font, col_w, rows)
        draw_lines(d, lines, font, margin + c * (col_w + gutter), y, col_w, leading, justify_last=True)
        truth += [" ".join(line) for line in lines]
    img = img.rotate(skew, resample=Image.BICUBIC, fillcolor=255)
    img.save(os.path.join(out, name + ".png"), dpi=(DPI, DPI))
    with open(os.path.join(out, name + ".gt.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(truth) + "\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    ws = words() * 3
    rng = random.Random(7)
    if sys.argv[2:] == ["--fraktur"]:  # one page in Fraktur type (the repository's OFL font), alone
        page("fraktur_mainzer", out, rng, ws, 1, False, FRAKTUR, 40, 0.7)
        return
    page("columns_liberation", out, rng, ws, 2, False, FONTS[0], 40, 1.1)
    page("columns_dejavu", out, rng, ws, 2, False, FONTS[1], 36, -0.8)
    page("mixed_liberation", out, rng, ws, 2, True, FONTS[0], 38, 0.6)
    page("single_dejavu", out, rng, ws, 1, False, FONTS[1], 38, -1.3)


if __name__ == "__main__":
    main()
