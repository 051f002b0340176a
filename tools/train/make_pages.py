#!/usr/bin/python3
"""Synthetic scanned books for training Quire's reader: multi-page documents with book layouts and
scan degradations, and the clean reading text each page should yield.

Text the project may use: the King James Bible (Debian's bible-kjv, public domain) for English,
Debian's fortunes-zh (its Chinese fortunes, Tang and Song poems) for Chinese, with modern characters
by their frequency (Unihan's kHanyuPinlu, Debian's unicode-data) written into some clauses, and
(--de-share) Debian's fortunes-de (its quotations, GPL-2+) for German. Fonts: whatever of Debian's
DejaVu, Liberation, URW base35, EB Garamond, Linux Libertine, Gentium and Noto CJK are installed
(tools/train/setup.sh installs them), and for German in Fraktur (--fraktur-share) Berthold Mainzer
Fraktur (OFL, tools/train/fonts/), with the long s where Fraktur prints it.

Layouts: running heads that alternate between the book and the chapter title with the page
number at the outer edge, or a centred folio at the foot; justified or ragged paragraphs with or
without first-line indents; English words hyphenated at line ends (pyphen); paragraphs and
hyphenated words carried across page breaks; occasionally two columns, or (--columns-share) narrow
columns: two or three for Chinese, two for English. Degradations: skew, blur,
noise, JPEG, uneven light, a gutter shadow, bleed-through of the facing page, low resolution, and
(--colour-share) colour scans of aged paper.

Targets: the reading text of each page — headers and folios left out, line-end hyphens joined
(a word split over a page break belongs to the page where it starts), paragraphs separated by a
blank line; a paragraph that continues on the next page ends its page without one. ../shared/eval
is never used here.

    /usr/bin/python3 tools/train/make_pages.py --out data/synth --docs 20 --pages 6 --seed 1

Writes DIR/docNNNN/pNNN.png, pNNN.target.txt, and DIR/MANIFEST.tsv (the eval tool's format, with
the target as ground truth). Deterministic for a given seed.
"""
import argparse
import bz2
import functools
import glob
import io
import itertools
import os
import random
import re
import subprocess
import sys

import numpy as np
import pyphen
from PIL import Image, ImageDraw, ImageFilter, ImageFont

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "eval"))
import eval as evaluation  # noqa: E402  (tools/eval/eval.py: the manifest's columns)

LATIN_FONTS = [  # (regular, italic) globs; the first match of each is used
    ("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSerif-Italic.ttf"),
    ("/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf", "/usr/share/fonts/truetype/liberation2/LiberationSerif-Italic.ttf"),
    ("/usr/share/fonts/opentype/urw-base35/NimbusRoman-Regular.otf", "/usr/share/fonts/opentype/urw-base35/NimbusRoman-Italic.otf"),
    ("/usr/share/fonts/opentype/urw-base35/C059-Roman.otf", "/usr/share/fonts/opentype/urw-base35/C059-Italic.otf"),
    ("/usr/share/fonts/opentype/urw-base35/P052-Roman.otf", "/usr/share/fonts/opentype/urw-base35/P052-Italic.otf"),
    ("/usr/share/fonts/opentype/urw-base35/URWBookman-Light.otf", "/usr/share/fonts/opentype/urw-base35/URWBookman-LightItalic.otf"),
    ("/usr/share/fonts/opentype/ebgaramond/EBGaramond12-Regular.otf", "/usr/share/fonts/opentype/ebgaramond/EBGaramond12-Italic.otf"),
    ("/usr/share/fonts/opentype/linux-libertine/LinLibertine_R.otf", "/usr/share/fonts/opentype/linux-libertine/LinLibertine_RI.otf"),
    ("/usr/share/fonts/truetype/gentium/Gentium-R.ttf", "/usr/share/fonts/truetype/gentium/Gentium-I.ttf"),
]
FRAKTUR_FONT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fonts", "BertholdMainzerFraktur-UNZ1A.ttf")
CJK_FONTS = [("/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc", 2),
             ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2)]
NO_LINE_START = set("，。、；：？！）」』》〉”’,.;:?!)")


def available_latin():
    out = [(r, i if os.path.exists(i) else r) for r, i in LATIN_FONTS if os.path.exists(r)]
    if not out:
        raise SystemExit("no Latin fonts found: run tools/train/setup.sh")
    return out


def english_paragraphs(rng, chapters=4):
    """KJV chapters as paragraphs (verses joined), in a random stretch of the Bible: `chapters`
    chapters (four fill 5-10 full pages)."""
    books = ["Gen", "Exo", "Jos", "Jdg", "Rut", "1Sa", "2Sa", "1Ki", "Job", "Pro", "Ecc", "Isa", "Mat", "Luk",
             "Joh", "Act", "Rom"]
    book = rng.choice(books)
    start = rng.randint(1, 12)
    # Past four chapters the stretch runs on into the books after (a short book ends early).
    end = f"{book}{start + 3}:99" if chapters <= 4 else "Rev22:21"
    text = subprocess.run(["bible", "-f", f"{book}{start}:1-{end}"], capture_output=True, text=True).stdout
    paras, cur, seen = [], [], []
    for line in text.splitlines():
        m = re.match(r"^(\S+?\d+):\d+ (.*)$", line)
        if not m:
            continue
        if not seen or seen[-1] != m.group(1):
            if len(seen) == max(chapters, 4):
                break
            seen.append(m.group(1))
        cur.append(m.group(2).strip())
        if len(cur) >= rng.randint(2, 5):
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return paras, f"{book} {start}"


def file_paragraphs(rng, path):
    """A plain-text file's paragraphs (blank-line separated, whitespace collapsed), from a random
    paragraph on; the chapter title is its first paragraph, cut to 40 characters."""
    with open(path, encoding="utf-8", errors="replace") as f:
        paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", f.read()) if p.strip()]
    start = rng.randrange(max(1, len(paras) // 3))
    return paras[start:], paras[0][:40].rstrip()


GERMAN_SOURCE = "/usr/share/games/fortunes/de/zitate.u8"


@functools.lru_cache(maxsize=None)
def german_quotes():
    """fortunes-de's quotations of four words or more, without their "-- author" lines (read once
    a run)."""
    if not os.path.exists(GERMAN_SOURCE):
        raise SystemExit(f"{GERMAN_SOURCE}: not installed (run tools/train/setup.sh)")
    with open(GERMAN_SOURCE, encoding="utf-8") as f:
        quotes = [" ".join(line for line in q.strip().splitlines() if not line.strip().startswith("--")).split()
                  for q in f.read().split("\n%\n")]
    return tuple(" ".join(q) for q in quotes if len(q) >= 4)


def german_paragraphs(rng, count=40):
    """`count` paragraphs of two to five of fortunes-de's quotations, from a random place in the
    file (on from its start again at its end)."""
    quotes = german_quotes()
    start = rng.randrange(len(quotes) - 200)
    paras, k = [], start
    while len(paras) < count:
        n = rng.randint(2, 5)
        paras.append(" ".join(quotes[(k + j) % len(quotes)] for j in range(n)))
        k += n
    return paras, rng.choice(["Gedanken", "Sprüche und Meinungen", "Vom Leben", "Aus dem Lesebuch"])


def long_s(text):
    """German text as Fraktur prints it: s inside a word is the long s (ſ); a word's last s and
    one before a hyphen stay round. (Compounds' inner round s, "Haus-tür", are not told apart.)"""
    return re.sub(r"s(?=[^\W\d_])", "ſ", text)


SPEECH = re.compile(r"\b(said|saith|answered|cried|spake|say)( unto [^,;:.]+)?, ")
QUOTES = [("\u201c", "\u201d"), ('"', '"'), ("\u2018", "\u2019"), ("'", "'")]
DASHES = ["\u2014", " \u2014 ", "--", " -- ", "---"]


def punctuate(paras, rng):
    """The punctuation of later printed books, project-written onto the KJV (which has no quotation
    marks or dashes): speech in quotation marks (curly or straight, double or single), some ", and"
    and "; " as dashes, curly apostrophes. The reader must have seen these characters to write
    them; the front-end reads them (ppocr_keys_v1 has them)."""
    open_q, close_q = rng.choice(QUOTES)
    dash = rng.choice(DASHES)
    curly = rng.random() < 0.5
    out = []
    for p in paras:
        res, pos = "", 0
        for m in SPEECH.finditer(p):  # the quotation runs to the end of its sentence
            if m.start() < pos:
                continue
            end = re.search(r"[.?!:;](?=\s|$)", p[m.end():])
            stop = m.end() + (end.end() if end else len(p) - m.end())
            res += p[pos:m.end()] + open_q + p[m.end():stop] + close_q
            pos = stop
        p = res + p[pos:]
        p = re.sub(r", and ", lambda m: dash + "and " if rng.random() < 0.25 else m.group(0), p)
        p = re.sub(r"; ", lambda m: dash if rng.random() < 0.2 else m.group(0), p)
        if curly:
            p = p.replace("'s ", "\u2019s ")
        out.append(p)
    return out


NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                "twelve": 12, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "thousand": 1000}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
ROMAN = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii"]


def number_snippet(rng, book):
    """One of the ways figures stand in running text."""
    y = rng.randint(1500, 2025)
    kind = rng.randrange(12)
    if kind == 0:
        return f"({book} {rng.randint(1, 50)}:{rng.randint(1, 40)})"
    if kind == 1:
        return rng.choice(["(see p. {})", "(p. {})", "(pp. {}-{})", "(ib. p. {})"]).format(rng.randint(2, 600), rng.randint(2, 99))
    if kind == 2:
        return rng.choice(["in the year {}", "in {}", "about {}", "A.D. {}"]).format(y)
    if kind == 3:
        return f"on {rng.choice(MONTHS)} {rng.randint(1, 31)}, {y}"
    if kind == 4:
        return rng.choice(["No. {}", "Fig. {}", "Plate {}", "Art. {}", "Sec. {}", "§ {}"]).format(rng.randint(1, 120))
    if kind == 5:
        return rng.choice(["${}.{:02d}", "${:,}", "{} dollars"]).format(rng.randint(1, 9000), rng.randint(0, 99))
    if kind == 6:
        return rng.choice(["{} ft. {} in.", "{} miles", "{} lbs.", "{}°", "{} per cent.", "{}%"]).format(
            rng.randint(1, 400), rng.randint(1, 11))
    if kind == 7:
        v, page = rng.randint(1, 999), rng.randint(100, 1600)
        return f"{v} {rng.choice(['F.2d', 'F.3d', 'U.S.', 'S. Ct.'])} {page}, {page + rng.randint(1, 40)} " \
               f"({rng.randint(1, 11)}{rng.choice(['st', 'nd', 'rd', 'th'])} Cir. {y})"
    if kind == 8:
        return f"vol. {rng.choice(ROMAN)}. p. {rng.randint(1, 500)}"
    if kind == 9:
        clock = rng.choice(["a.m.", "p.m.", "o'clock"])
        return f"{rng.randint(1, 12)}:{rng.randint(0, 59):02d} {clock}"
    if kind == 10:
        return f"{rng.randint(1, 31):02d}/{rng.randint(1, 12):02d}/{y % 100:02d}"
    return f"{rng.randint(1, 99)}-{rng.choice(['cv', 'cr', 'mc'])}-{rng.randint(1, 99999):05d}"


def numerals(paras, rng, book):
    """Figures as later books, papers and filings print them, project-written onto the KJV (whose
    numbers are words, and whose verse numbers the generator drops): some number words as figures,
    enumerations "(1) … (2) …", and references, years, dates, sums, measures and citations after
    some commas and sentence ends. A reader trained on the KJV alone had seen figures only as folios,
    which it learns to drop, so it dropped them in running text too."""
    out = []
    for p in paras:
        p = re.sub(r"\b(" + "|".join(NUMBER_WORDS) + r")\b",
                   lambda m: str(NUMBER_WORDS[m.group(1)]) if rng.random() < 0.5 else m.group(0), p)
        if rng.random() < 0.3:  # an enumeration over the paragraph's clauses
            style = rng.choice(["({})", "{}.", "({})", "{})"])
            letters = rng.random() < 0.3
            parts = re.split(r"(?<=[;:]) ", p)
            if len(parts) > 1:
                p = " ".join(style.format(chr(96 + k) if letters else k) + " " + part if k > 0 else part
                             for k, part in enumerate(parts))
        pieces = re.split(r"(?<=[,.;]) ", p)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(pieces))
            snippet = number_snippet(rng, book)
            end = pieces[k][-1:]
            if end in (",", ".", ";"):
                pieces[k] = pieces[k][:-1] + " " + snippet + ("" if snippet.endswith(".") and end == "." else end)
            else:
                pieces[k] += " " + snippet
        out.append(" ".join(pieces))
    return out


LATIN_TERMS = ["GDP", "CPI", "ROE", "ROA", "PMI", "IPO", "CEO", "AI", "App", "PDF", "USB", "Wi-Fi", "DNA", "NBA",
               "B2B", "5G", "Q1", "Q2", "Q3", "Q4", "H1", "PE", "PB", "EPS", "A股", "H股", "Linux", "Debian"]


def chinese_figure(rng):
    """One of the ways figures and Latin letters stand in modern Chinese text."""
    y, m, d = rng.randint(1900, 2030), rng.randint(1, 12), rng.randint(1, 31)
    pad = rng.random() < 0.4
    kind = rng.randrange(10)
    if kind == 0:
        return f"{y}年{m:02d}月{d:02d}日" if pad else rng.choice([f"{y}年{m}月{d}日", f"{y}年", f"{m}月{d}日", f"{y}年{m}月"])
    if kind == 1:
        if rng.random() < 0.5:
            return rng.choice(["{:.2f}亿元", "{:.2f}元", "{:.1f}万元"]).format(rng.uniform(0.1, 9999))
        return rng.choice(["{}元", "{}万元", "人民币{}元", "约{}万人"]).format(rng.randint(1, 99999))
    if kind == 2:
        return rng.choice(["{:.1f}%", "{:.2f}%", "增长{:.1f}%", "同比下降{:.1f}%", "占{:.0f}%"]).format(rng.uniform(0.1, 99.9))
    if kind == 3:
        return f"（{rng.randint(0, 999999):06d}.{rng.choice(['SH', 'SZ', 'HK', 'BJ'])}）"
    if kind == 4:
        return rng.choice(LATIN_TERMS) + rng.choice(["", "", "值", "指数", "为{:.1f}".format(rng.uniform(0, 50))])
    if kind == 5:
        word = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9)))
        return rng.choice([f"www.{word}.com", f"www.{word}.com.cn", f"{word}@{word[:4]}.com.cn", f"http://{word}.org"])
    if kind == 6:
        return rng.choice(["第{}章", "第{}条", "第{}页", "第{}期", "{}个", "{}人", "{}次", "{}年代"]).format(rng.randint(1, 300))
    if kind == 7:
        return f"{rng.randint(1, 24):02d}:{rng.randint(0, 59):02d}" if rng.random() < 0.5 else f"{rng.randint(10, 999)}-{rng.randint(1000000, 99999999)}"
    if kind == 8:
        return "（{}）".format(rng.choice(["图{}", "表{}", "见第{}页", "注{}", "{}"]).format(rng.randint(1, 99)))
    return f"{rng.randint(1, 9999):,}" if rng.random() < 0.3 else str(rng.randint(1, 99999))


def chinese_numerals(paras, rng):
    """Figures, dates, sums, codes and Latin terms written after some Chinese commas, project-made:
    the fortunes hold few, and a reader that had seen almost none in Chinese text skipped a
    report's dates and stock codes or wrote other characters over them."""
    out = []
    for p in paras:
        pieces = p.split("，")
        for _ in range(rng.randint(0, 2)):
            k = rng.randrange(len(pieces))
            pieces[k] += chinese_figure(rng)
        out.append("，".join(pieces))
    return out


CN_NUMBERS = "一二三四五六七八九十"
ZH_NUMBERINGS = ["", "{cn}、", "（{cn}）", "{n}.", "{n}、", "第{cn}章 ", "第{cn}节 ", "{n}.{m} "]
EN_NUMBERINGS = ["", "", "CHAPTER {r}. ", "{n}. ", "({a}) ", "§ {n}. ", "Part {r}: ", "{n}.{m} "]


def heading(p, rng, lang, n, numbering):
    """A short line made from a paragraph's opening words, numbered as item or section n."""
    if lang == "zh":
        m = CLAUSE.match(p)
        text = m.group(0)[:rng.randint(2, 12)] if m else p[:6]
    else:
        text = " ".join(re.sub(r"[^\w\s'-]", "", p).split()[:rng.randint(2, 7)])
        text = rng.choice([text, text.title(), text.upper()])
    return numbering.format(cn=CN_NUMBERS[(n - 1) % 10], n=n, m=rng.randint(1, 9), r=ROMAN[(n - 1) % 12].upper(),
                            a=chr(97 + (n - 1) % 26)) + text


def opening_title(paras, rng, lang, title):
    """A chapter's title for the page that opens it: the book's title or the text's opening words
    made a heading, often in capitals."""
    text = title if rng.random() < 0.3 else heading(paras[0], rng, lang, 1, "")
    if lang != "zh" and rng.random() < 0.5:
        text = text.upper()
    return text


def headings(paras, rng, lang):
    """Short paragraphs between some paragraphs: section headings, and now and then a list of short
    items, with the numbering books and reports print. Real pages have many short lines that end
    without a full stop (titles, list items, table cells); generated pages had short lines only at
    paragraph ends, after a full stop, and the reader wrote "。" at the end of a real report's short
    lines."""
    numberings = ZH_NUMBERINGS if lang == "zh" else EN_NUMBERINGS
    sections = rng.choice(numberings)
    out, section = [], 0
    for k, p in enumerate(paras):
        if k and rng.random() < 0.3:
            section += 1
            out.append(heading(p, rng, lang, section, sections))
        elif k and rng.random() < 0.1:
            items = rng.choice(numberings)
            out += [heading(q, rng, lang, 1 + i, items) for i, q in enumerate(paras[k:k + rng.randint(2, 5)])]
        out.append(p)
    return out


BOX_DRAWING = re.compile("[\u2500-\u257f]")
CHINESE_SOURCES = ["/usr/share/games/fortunes/chinese.u8", "/usr/share/games/fortunes/tang300.u8",
                   "/usr/share/games/fortunes/song100.u8"]


def chinese_paragraphs(rng, count=60):
    """Up to `count` entries of one source, shuffled, as paragraphs."""
    # A source in proportion to its size (the fortunes: 304k Han characters, mostly modern prose;
    # Tang poems 23k; Song lyrics 7k). Chosen uniformly, the two small books of verse made two
    # thirds of the Chinese pages, and the reader learned their metre: on modern pages it wrote
    # "，" after every few characters in place of ones the front-end had right (run 9).
    sizes = [os.path.getsize(f) for f in CHINESE_SOURCES]
    src = rng.choices(CHINESE_SOURCES, weights=sizes)[0]
    raw = open(src, encoding="utf-8", errors="ignore").read()
    raw = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    entries = [e.strip() for e in raw.split("\n%\n") if e.strip()]
    rng.shuffle(entries)
    paras = []
    for e in entries[:count]:
        # Lines with box drawing (U+2500-U+257F) left out: the fortunes' tables are drawn in
        # characters, and their runs of "─" taught the reader to loop on them (run 19).
        lines = [l.strip() for l in e.splitlines()
                 if l.strip() and not l.strip().startswith("--") and not BOX_DRAWING.search(l)]
        text = "".join(lines)
        text = re.sub(r"\s+", "", text)
        # Full-width digits and Latin letters as ASCII (how modern Chinese books print years).
        text = "".join(chr(ord(c) - 0xFEE0) if "\uff10" <= c <= "\uff5a" and c.isalnum() else c for c in text)
        if len(text) >= 8:
            paras.append(text)
    return paras, os.path.basename(src).split(".")[0]


UNIHAN = "/usr/share/unicode/Unihan_{}.txt.bz2"
_modern = None


def unihan(part, field):
    """(character, value) of each entry of one Unihan field (Debian's unicode-data)."""
    with bz2.open(UNIHAN.format(part), "rt", encoding="utf-8") as f:
        for line in f:
            if f"\t{field}\t" in line:
                code, _, value = line.rstrip("\n").split("\t")
                yield chr(int(code[2:], 16)), value


def modern_characters():
    """The characters of modern written (simplified) Chinese and their cumulative drawing weights:
    Unihan's kHanyuPinlu (counts from the Xiandai Hanyu Pinlu Cidian; Debian's unicode-data),
    summed over a character's readings and flattened (count ** 0.5) so that the less common ones
    come up too, less the traditional forms it also lists (a character whose kSimplifiedVariant is
    another one: 們, 學 …). Read once."""
    global _modern
    if _modern is None:
        traditional = {c for c, v in unihan("Variants", "kSimplifiedVariant")
                       if f"U+{ord(c):04X}" not in v.split()}
        chars, counts = [], []
        for c, value in unihan("Readings", "kHanyuPinlu"):
            if c not in traditional:
                chars.append(c)
                counts.append(sum(int(n) for n in re.findall(r"\((\d+)\)", value)))
        _modern = chars, list(itertools.accumulate(c ** 0.5 for c in counts))
    return _modern


CLAUSE = re.compile(r"[^，。；：！？、]+")


def vocabulary(paras, rng):
    """Modern characters written into the fortunes: some clauses (between punctuation marks) are
    replaced by as many characters drawn by their modern frequency (modern_characters). The fortunes hold 5,742 distinct characters, but a modern
    book's common ones thinly (研 7 times in 304k): a reader writes only what it has learned to
    write, and run 10 dropped or replaced such characters where the front-end had them right."""
    chars, cumulative = modern_characters()
    return [CLAUSE.sub(lambda m: "".join(rng.choices(chars, cum_weights=cumulative, k=len(m.group(0))))
                       if rng.random() < 0.25 else m.group(0), p) for p in paras]


class Style:
    def __init__(self, rng, lang, dpi, max_lines=0, columns_share=0.0, head_gap_share=0.0, fraktur=False):
        self.lang, self.dpi = lang, dpi
        scale = dpi / 300
        self.page_w, self.page_h = int(rng.choice([5.5, 6, 6.5]) * dpi), int(rng.choice([8.5, 9, 9.5]) * dpi)
        self.margin_x, self.margin_top, self.margin_bottom = int(0.75 * dpi), int(0.7 * dpi), int(0.7 * dpi)
        size = int(rng.uniform(34, 46) * scale)
        if lang == "zh":
            path, index = rng.choice([f for f in CJK_FONTS if os.path.exists(f[0])])
            self.body = ImageFont.truetype(path, size, index=index)
            self.running = ImageFont.truetype(path, int(size * 0.75), index=index)
        elif fraktur:
            self.body = ImageFont.truetype(FRAKTUR_FONT, size)
            self.running = ImageFont.truetype(FRAKTUR_FONT, int(size * 0.75))
        else:
            reg, ital = rng.choice(available_latin())
            self.body = ImageFont.truetype(reg, size)
            self.running = ImageFont.truetype(ital, int(size * 0.72))
        self.leading = int(size * rng.uniform(1.3, 1.6))
        self.indent = int(size * rng.choice([0, 1.2, 2])) if lang != "zh" else size * 2
        self.justify = rng.random() < 0.8
        self.columns = 2 if (lang != "zh" and rng.random() < 0.12) else 1
        # Narrow columns as magazines and papers set them: Chinese in two or three (8-20 characters
        # a line), English in two. No draw without the option: earlier seeds make the same pages.
        if columns_share > 0 and rng.random() < columns_share:
            self.columns = rng.choice([2, 3]) if lang == "zh" else 2
        self.gutter = int(0.3 * dpi)
        self.head_style = rng.choice(["running", "running", "folio"])
        # The text's top below the running head's, in leadings: a blank line's white between them
        # as many old books set it. No draw without the option: earlier seeds make the same pages.
        self.head_gap = 1.2
        if head_gap_share > 0 and rng.random() < head_gap_share:
            self.head_gap = rng.uniform(2.0, 2.6)
        text_w = self.page_w - 2 * self.margin_x
        self.col_w = (text_w - self.gutter * (self.columns - 1)) // self.columns
        self.lines_per_col = (self.page_h - self.margin_top - self.margin_bottom - int(self.head_gap * self.leading)) // self.leading
        if max_lines and self.lines_per_col > max_lines:  # short pages: cheaper training sequences
            self.lines_per_col = max_lines
            self.page_h = self.margin_top + self.margin_bottom + int(self.head_gap * self.leading) + max_lines * self.leading


def width(font, s):
    return font.getlength(s)


ENGLISH_HYPHENABLE = re.compile(r"[A-Za-z]{6,}[,.;:]?")
GERMAN_HYPHENABLE = re.compile(r"[^\W\d_]{6,}[,.;:]?")  # umlauts, ß and ſ too


def break_english(words, st, hyph, first_indent, hyphenable=ENGLISH_HYPHENABLE):
    """Greedy breaking with hyphenation: [(text, hyphenated_end)]."""
    lines, cur, i, words = [], [], 0, list(words)
    while i < len(words):
        avail = st.col_w - (first_indent if not lines else 0)
        if width(st.body, " ".join(cur + [words[i]])) <= avail:
            cur.append(words[i])
            i += 1
            continue
        word, done = words[i], False
        if hyphenable.fullmatch(word):
            core = word.rstrip(",.;:")
            for pos in sorted(hyph.positions(core.replace("ſ", "s")), reverse=True):
                if pos >= 3 and len(core) - pos >= 3 and width(st.body, " ".join(cur + [core[:pos] + "-"])) <= avail:
                    lines.append((cur + [core[:pos] + "-"], True))
                    words[i] = word[pos:]
                    cur, done = [], True
                    break
        if not done:
            if not cur:
                cur, i = [word], i + 1
            lines.append((cur, False))
            cur = []
    if cur:
        lines.append((cur, False))
    return [(" ".join(ws), hy) for ws, hy in lines]


def break_chinese(text, st, first_indent):
    lines, cur = [], ""
    for ch in text:
        avail = st.col_w - (first_indent if not lines else 0)
        if width(st.body, cur + ch) > avail and cur and ch not in NO_LINE_START:
            lines.append((cur, False))
            cur = ""
        cur += ch
    if cur:
        lines.append((cur, False))
    return lines


def layout(paras, st, rng, pages_wanted):
    """Fills pages with lines: each line (text, first_of_para, last_of_para, hyphenated)."""
    hyph = pyphen.Pyphen(lang="de_DE" if st.lang == "de" else "en_US")
    slots = st.lines_per_col * st.columns
    pages, cur = [], []
    for para in paras:
        if st.lang == "zh":
            lines = break_chinese(para, st, st.indent)
        elif st.lang == "de":
            lines = break_english(para.split(), st, hyph, st.indent, GERMAN_HYPHENABLE)
        else:
            lines = break_english(para.split(), st, hyph, st.indent)
        for k, (text, hy) in enumerate(lines):
            if len(cur) == slots:
                pages.append(cur)
                cur = []
                if len(pages) == pages_wanted:
                    return pages
            cur.append((text, k == 0, k == len(lines) - 1, hy))
    if cur and len(pages) < pages_wanted:
        pages.append(cur)
    return pages


def render(page_lines, number, st, title, chapter, opening=None, centred=True):
    """A page; `opening`: the title of a chapter the page opens, where the running head would stand
    (centred or at the margin), with no head or folio."""
    img = Image.new("L", (st.page_w, st.page_h), 255)
    d = ImageDraw.Draw(img)
    y0 = st.margin_top
    if opening:
        tw = width(st.body, opening)
        d.text(((st.page_w - tw) / 2 if centred else st.margin_x, y0), opening, font=st.body, fill=0)
        y0 += st.leading
    elif st.head_style == "running":
        head = title if number % 2 == 0 else chapter
        num = str(number)
        hw = width(st.running, head)
        d.text(((st.page_w - hw) / 2, y0), head, font=st.running, fill=0)
        x_num = st.margin_x if number % 2 == 0 else st.page_w - st.margin_x - width(st.running, num)
        d.text((x_num, y0), num, font=st.running, fill=0)
    else:
        num = str(number)
        d.text(((st.page_w - width(st.running, num)) / 2, st.page_h - st.margin_bottom + st.leading // 2), num,
               font=st.running, fill=0)
    y0 += int(st.head_gap * st.leading)
    for k, (text, first, last, _hy) in enumerate(page_lines):
        col, row = divmod(k, st.lines_per_col)
        x = st.margin_x + col * (st.col_w + st.gutter) + (st.indent if first else 0)
        y = y0 + row * st.leading
        avail = st.col_w - (st.indent if first else 0)
        if st.justify and not last and st.lang != "zh" and " " in text:
            words = text.split(" ")
            gap = (avail - sum(width(st.body, w) for w in words)) / (len(words) - 1)
            for w in words:
                d.text((x, y), w, font=st.body, fill=0)
                x += width(st.body, w) + gap
        elif st.justify and not last and st.lang == "zh" and len(text) > 1:
            gap = (avail - width(st.body, text)) / (len(text) - 1)
            for ch in text:
                d.text((x, y), ch, font=st.body, fill=0)
                x += width(st.body, ch) + gap
        else:
            d.text((x, y), text, font=st.body, fill=0)
    return img


def page_targets(pages, lang, opening=None, page_end_hyphen="join"):
    """Reading text per page: hyphens joined, paragraphs separated by a blank line; a chapter's
    `opening` title is the first page's first paragraph (a running head is left out, a title is
    text). A word split over a page break goes whole to the page where it starts ("join", for a
    model that reads the next page ahead), or stays as printed, its hyphen ending the page and its
    rest starting the next ("keep", for one that does not: the rest is not yet in its view); on the
    last page, whose rest no page holds, it stays as printed in both."""
    sep = "" if lang == "zh" else " "
    targets, skip_first_word = [], False
    for i, lines in enumerate(pages):
        out, para, join = [], "", False
        for k, (text, first, last, hy) in enumerate(lines):
            if k == 0 and skip_first_word:
                text = text.partition(" ")[2]
                skip_first_word = False
                if not text:
                    if last:
                        out.append(para)
                        para = ""
                    continue
            if first and para:
                out.append(para)
                para = ""
            page_end = hy and k == len(lines) - 1
            # A word broken at the end of the last page (a volume cut in its text) has no rest to
            # join: it keeps its hyphen, as printed, in either mode.
            last_page = i + 1 == len(pages) or not pages[i + 1]
            piece = text[:-1] if hy and not (page_end and (page_end_hyphen == "keep" or last_page)) else text
            para += piece if (join or not para) else sep + piece
            join = hy
            if page_end and page_end_hyphen == "join" and not last_page:
                para += pages[i + 1][0][0].partition(" ")[0]
                skip_first_word, join = True, False
            if last:
                out.append(para)
                para = ""
        if para:
            out.append(para)
        if opening and i == 0:
            out.insert(0, opening)
        targets.append("\n\n".join(out))
    return targets


def page_texts(pages, lang, st, numbers, title, chapter, opening=None):
    """Each page as printed, in the old-book ground truth's form (../shared/eval's oldbooks sets):
    the running head with its page number as one line (or the folio as the last), then one line a
    paragraph, hyphens inside the page joined and a word split over the page break left split
    ("dis-" ending the page, the rest starting the next)."""
    sep = "" if lang == "zh" else " "
    out = []
    for i, lines in enumerate(pages):
        paras, para, join = [], "", False
        for k, (text, first, last, hy) in enumerate(lines):
            if first and para:
                paras.append(para)
                para = ""
            piece = text[:-1] if hy and k < len(lines) - 1 else text
            para += piece if (join or not para) else sep + piece
            join = hy
            if last:
                paras.append(para)
                para = ""
        if para:
            paras.append(para)
        n = numbers[i]
        if opening and i == 0:
            paras.insert(0, opening)
        elif st.head_style == "running":
            head = title if n % 2 == 0 else chapter
            paras.insert(0, f"{n} {head}" if n % 2 == 0 else f"{head} {n}")
        else:
            paras.append(str(n))
        out.append("\n".join(paras))
    return out


def degrade(img, rng, nrng, facing, dpi_out, tint=None):
    """The page as scanned: the facing page's bleed-through, ink and paper levels, a skew, blur,
    uneven light, a gutter's shadow, noise, the resolution, JPEG. With `tint` (the paper's red,
    green and blue against white) a colour scan of aged paper, returned in RGB."""
    a = np.asarray(img).astype(np.float32)
    if facing is not None and rng.random() < 0.4:  # bleed-through of the facing page
        back = np.asarray(facing.transpose(Image.FLIP_LEFT_RIGHT).resize(img.size)).astype(np.float32)
        a = np.minimum(a, 255 - (255 - back) * rng.uniform(0.08, 0.2))
    ink, paper = rng.uniform(10, 60), rng.uniform(200, 245)
    a = ink + a * (paper - ink) / 255.0
    img = Image.fromarray(a.clip(0, 255).astype(np.uint8))
    img = img.rotate(rng.uniform(-2.0, 2.0), resample=Image.BICUBIC, fillcolor=int(paper))
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.3)))
    a = np.asarray(img).astype(np.float32)
    h, w = a.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    cx, cy = rng.choice([0, w]), rng.choice([0, h])
    light = 1.0 - rng.uniform(0, 0.3) * (1 - np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2) / np.hypot(w, h))
    gutter = 1.0 - rng.uniform(0, 0.2) * np.exp(-((xx - (0 if rng.random() < 0.5 else w)) / (0.06 * w)) ** 2)
    a = a * light * gutter + nrng.normal(0, rng.uniform(2, 9), a.shape)
    img = Image.fromarray(a.clip(0, 255).astype(np.uint8))
    if dpi_out != 300:
        img = img.resize((int(w * dpi_out / 300), int(h * dpi_out / 300)), Image.LANCZOS)
    if tint is not None:  # each channel scaled: yellowed paper, the ink browned with it; chroma noise
        a = np.asarray(img).astype(np.float32)[:, :, None] * np.asarray(tint, np.float32)
        a = a + nrng.normal(0, rng.uniform(1, 4), a.shape)
        img = Image.fromarray(a.clip(0, 255).astype(np.uint8), "RGB")
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=rng.randint(35, 92))
    return Image.open(io.BytesIO(buf.getvalue())).convert("L" if tint is None else "RGB")


def self_test():
    """The target rules on hand-made pages (no fonts needed): run by ctest."""
    pages = [
        [("In the begin-", True, False, True), ("ning was the", False, False, False), ("word, and the", False, False, False),
         ("word was with God. And the light shi-", False, False, True)],
        [("neth in darkness.", False, True, False), ("A new para-", True, False, True), ("graph ends.", False, True, False)],
        [("Last one", True, True, False)],
    ]
    got = page_targets(pages, "en")
    want = ["In the beginning was the word, and the word was with God. And the light shineth",
            "in darkness.\n\nA new paragraph ends.", "Last one"]
    assert got == want, got
    got = page_targets(pages, "en", page_end_hyphen="keep")
    want = ["In the beginning was the word, and the word was with God. And the light shi-",
            "neth in darkness.\n\nA new paragraph ends.", "Last one"]
    assert got == want, got
    # The page as printed: heads with their numbers, a word split over the page break left split.
    running, foot = type("St", (), {"head_style": "running"}), type("St", (), {"head_style": "foot"})
    got = page_texts(pages, "en", running, [12, 13, 14], "THE BOOK", "CHAPTER ONE")
    want = ["12 THE BOOK\nIn the beginning was the word, and the word was with God. And the light shi-",
            "CHAPTER ONE 13\nneth in darkness.\nA new paragraph ends.", "14 THE BOOK\nLast one"]
    assert got == want, got
    assert page_texts(pages[2:], "en", foot, [7], "T", "C") == ["Last one\n7"]
    # A chapter's opening title: the first page's first paragraph, in the reading text and as printed.
    assert page_targets(pages[2:], "en", "CHAPTER ONE") == ["CHAPTER ONE\n\nLast one"]
    assert page_texts(pages[2:], "en", running, [7], "T", "C", "CHAPTER ONE") == ["CHAPTER ONE\nLast one"]
    # The last page ends in a broken word: its hyphen stays (no next page holds the rest).
    cut = pages[:1]
    assert page_targets(cut, "en") == ["In the beginning was the word, and the word was with God. And the light shi-"]
    zh = [[("第一行", True, False, False), ("接着", False, True, False)], [("新段", True, True, False)]]
    assert page_targets(zh, "zh") == ["第一行接着", "新段"], page_targets(zh, "zh")
    # Fraktur's long s: inside a word, not at its end nor before a hyphen.
    assert long_s("Das ist des Wassers Maß, sagt Haus-Kunst.") == "Das iſt des Waſſers Maß, ſagt Haus-Kunſt.", \
        long_s("Das ist des Wassers Maß, sagt Haus-Kunst.")
    print("make_pages self-test: ok")


def parse_args():
    """The command line (--out required unless --self-test)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--self-test", action="store_true", help="check the target rules and exit")
    ap.add_argument("--out")
    ap.add_argument("--docs", type=int, default=10)
    ap.add_argument("--pages", type=int, default=6, help="pages per document")
    ap.add_argument("--zh-share", type=float, default=0.4, help="share of Chinese documents")
    ap.add_argument("--de-share", type=float, default=0.0, help="share of German documents (of those not Chinese)")
    ap.add_argument("--fraktur-share", type=float, default=0.5,
                    help="share of the German documents set in Fraktur (the manifest's language 'de', read with "
                    "Tesseract's frk, as ../shared/eval's Fraktur pages; 'deu' for the others)")
    ap.add_argument("--lines", type=int, default=0, help="at most this many lines per column (0: a full page)")
    ap.add_argument("--whole-volumes", action="store_true",
                    help="draw text for every one of --pages full pages (English runs on through the chapters "
                    "and books after; without it a document's text fills 3-10 full pages)")
    ap.add_argument("--end-on-hyphen-share", type=float, default=0.0,
                    help="share of English and German documents cut like a partial scan after the first page "
                    "from the --pages'th on that ends in a word broken over the page (up to 24 pages more)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dpi-out", type=int, default=0,
                    help="every page scanned at this resolution (default: 300, 200 or 150 drawn per document)")
    ap.add_argument("--colour-share", type=float, default=0.0,
                    help="share of documents scanned in colour on aged paper (yellowed, the ink browned with "
                    "it; RGB pages), as archives scan old books")
    ap.add_argument("--punct-share", type=float, default=0.0,
                    help="share of English documents given quotation marks and dashes (punctuate)")
    ap.add_argument("--numbers-share", type=float, default=0.0,
                    help="share of English documents given figures in the text (numerals)")
    ap.add_argument("--vocab-share", type=float, default=0.0,
                    help="share of Chinese documents given modern characters by frequency (vocabulary)")
    ap.add_argument("--zh-numbers-share", type=float, default=0.0,
                    help="share of Chinese documents given figures and Latin terms (chinese_numerals)")
    ap.add_argument("--heads-share", type=float, default=0.0,
                    help="share of documents given short heading and list-item paragraphs (headings)")
    ap.add_argument("--columns-share", type=float, default=0.0,
                    help="share of documents set in narrow columns (Chinese two or three, English two)")
    ap.add_argument("--head-gap-share", type=float, default=0.0,
                    help="share of documents whose running head stands a blank line's white above the text")
    ap.add_argument("--titles-share", type=float, default=0.0,
                    help="share of documents whose first page opens a chapter: its title (a heading line, "
                    "centred or not) where the running head stands, kept in the target")
    ap.add_argument("--text", nargs="+", help="English documents from these plain-text files (one a document, in "
                    "turn) instead of the King James Bible: held-out volumes from text never trained on")
    ap.add_argument("--page-end-hyphen", choices=["join", "keep"], default="join",
                    help="a word split over a page break: whole on the page where it starts (join: for "
                         "training with look-ahead), or as printed, 'bind-' ending the page (keep: without)")
    ap.add_argument("--truth", choices=["reading", "page"], default="reading",
                    help="the manifest's ground truth: the reading text (pNNN.target.txt) or the page as printed, "
                    "running heads and folios included (pNNN.page.txt; tools/eval/structure.py's form)")
    args = ap.parse_args()
    if not args.self_test and not args.out:
        ap.error("--out is required")
    return args


def main():
    args = parse_args()
    if args.self_test:
        return self_test()
    rng = random.Random(args.seed)
    nrng = np.random.default_rng(args.seed)
    os.makedirs(args.out, exist_ok=True)
    manifest = ["\t".join(evaluation.MANIFEST_COLUMNS)]
    for doc in range(args.docs):
        lang = "zh" if rng.random() < args.zh_share else "en"
        # (no draw at all without the option: earlier seeds make the same documents)
        fraktur = False
        if lang == "en" and args.de_share > 0 and rng.random() < args.de_share:
            lang, fraktur = "de", rng.random() < args.fraktur_share
        if args.text:
            lang = "en"
        # A volume that ends as a partial scan may: on a word broken over its last page, whose rest no
        # page holds (no draw at all without the option: earlier seeds make the same documents).
        cut_on_hyphen = lang != "zh" and args.end_on_hyphen_share > 0 and rng.random() < args.end_on_hyphen_share
        wanted = args.pages + (24 if cut_on_hyphen else 0)
        if args.text:
            paras, chapter = file_paragraphs(rng, args.text[doc % len(args.text)])
        else:
            # Whole volumes draw text in proportion to their pages; other documents as before (the
            # same seeds make the same documents).
            more = args.whole_volumes
            paras, chapter = (chinese_paragraphs(rng, 15 * wanted if more else 60) if lang == "zh"
                              else german_paragraphs(rng, 10 * wanted if more else 40) if lang == "de"
                              else english_paragraphs(rng, 2 * wanted if more else 4))
        if lang == "en" and rng.random() < args.punct_share:
            paras = punctuate(paras, rng)
        if lang == "en" and rng.random() < args.numbers_share:
            paras = numerals(paras, rng, chapter.split()[0])
        # (no draw at all without the option: earlier seeds make the same documents)
        if lang == "zh" and args.vocab_share > 0 and rng.random() < args.vocab_share:
            paras = vocabulary(paras, rng)
        if lang == "zh" and args.zh_numbers_share > 0 and rng.random() < args.zh_numbers_share:
            paras = chinese_numerals(paras, rng)
        if args.heads_share > 0 and rng.random() < args.heads_share:
            paras = headings(paras, rng, lang)
        if lang == "zh":
            title = "唐詩宋詞選讀" if chapter != "chinese" else rng.choice(["格言与随笔", "社区语录", "读书札记"])
        elif args.text:
            title = rng.choice(["COLLECTED LICENCES", "TERMS AND CONDITIONS", "NOTICES"])
        elif lang == "de":
            title = rng.choice(["Gedanken und Sprüche", "Deutsches Lesebuch", "Auswahl"])
        else:
            title = rng.choice(["THE HOLY BIBLE", "AUTHORIZED VERSION", "SCRIPTURE READINGS"])
        if fraktur:  # printed with the long s, and read so ("as printed", as ../shared/eval's Fraktur truth)
            paras, title, chapter = [long_s(p) for p in paras], long_s(title), long_s(chapter)
        # (no draw at all without the option: earlier seeds make the same documents)
        opening, centred = None, True
        if args.titles_share > 0 and rng.random() < args.titles_share:
            opening, centred = opening_title(paras, rng, lang, title), rng.random() < 0.7
        st = Style(rng, lang, 300, args.lines, args.columns_share, args.head_gap_share, fraktur)
        # A title wider than the text column is cut at a word.
        while opening and width(st.body, opening) > st.page_w - 2 * st.margin_x and " " in opening.strip():
            opening = opening.rsplit(" ", 1)[0]
        pages = layout(paras, st, rng, wanted)
        if cut_on_hyphen:
            broken = [k for k in range(args.pages - 1, len(pages)) if pages[k] and pages[k][-1][3]]
            pages = pages[:broken[0] + 1] if broken else pages[:args.pages]
        targets = page_targets(pages, lang, opening, args.page_end_hyphen)
        ddir = os.path.join(args.out, f"doc{doc:04d}")
        os.makedirs(ddir, exist_ok=True)
        first = rng.randint(1, 300)
        printed = page_texts(pages, lang, st, [first + k for k in range(len(pages))], title, chapter, opening)
        prev = None
        dpi_out = rng.choice([300, 300, 200, 150])
        if args.dpi_out:  # after the draw: the other pages of a seed stay as they were
            dpi_out = args.dpi_out
        # (no draw at all without the option: earlier seeds make the same documents)
        tint = None
        if args.colour_share > 0 and rng.random() < args.colour_share:
            tint = (rng.uniform(0.97, 1.0), rng.uniform(0.88, 0.97), rng.uniform(0.68, 0.88))
        for k, lines in enumerate(pages):
            clean = render(lines, first + k, st, title, chapter, opening if k == 0 else None, centred)
            img = degrade(clean, rng, nrng, prev, dpi_out, tint)
            prev = clean
            name = f"p{k + 1:03d}"
            img.save(os.path.join(ddir, name + ".png"), dpi=(dpi_out, dpi_out))
            with open(os.path.join(ddir, name + ".target.txt"), "w", encoding="utf-8") as f:
                f.write(targets[k] + "\n")
            with open(os.path.join(ddir, name + ".page.txt"), "w", encoding="utf-8") as f:
                f.write(printed[k] + "\n")
            truth = f"doc{doc:04d}/{name}.{'target' if args.truth == 'reading' else 'page'}.txt"
            language = ("de" if fraktur else "deu") if lang == "de" else lang
            manifest.append(f"synth_doc{doc:04d}\t{name}\tdoc{doc:04d}/{name}.png\t{truth}\t{language}\t"
                            f"quire\ttools/train/make_pages.py\tproject-generated\t-\t{args.truth}\tseed {args.seed}")
    with open(os.path.join(args.out, "MANIFEST.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
