#!/usr/bin/python3
"""Training documents from real scans with PAGE-XML ground truth (an OCR-D ground-truth repository:
one folder per work, OCR-D-IMG/*.tif and OCR-D-GT-PAGE/*.xml), in make_pages.py's layout, so that
data.py and train.py read them as they read generated volumes.

A training document is --pages-per-doc pages of one work (one by default); a held-out work is one
document, read as a volume. A page's target is its reading text as the reader is taught to write
it (make_pages.py's rules): regions in the PAGE reading order, running heads, folios, catchwords
and signature marks left out, a region a paragraph, lines joined by a space, a line-end hyphen
(- ⸗ ¬ =) joined — but a page's last hyphen is kept, as the reader's page-end rule writes it: the
rest of the word is on a page the model has not yet seen. Characters the reader's vocabulary
lacks are written as the letters they stand for where Unicode or a table says so (ﬁ → fi,
aͤ → ä, æ → ae, ꝛ → r, MUFI's ligatures); a page with more than 1 % of characters still outside it
is left out (Greek, Hebrew, symbols) and counted. A page's language is frk where most of its
glyphs are set in Fraktur or Schwabacher, deu where most are not, --unstyled where none is named.

Works are split into training and held-out documents by a hash of the work's name (--held-out-every),
so the split does not depend on which works a checkout has.

    /usr/bin/python3 tools/train/page_xml_pages.py --gt GT/data --out data/vd/train --held-out DIR/valvd
"""
import argparse
import hashlib
import os
import re
import sys
import unicodedata
import xml.etree.ElementTree as ET

from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402

LEFT_OUT = {"header", "page-number", "catch-word", "signature-mark"}
LINE_END_HYPHENS = "-\u2e17\u00ac="
FRAKTUR_FACES = ("fraktur", "schwabacher", "textura", "gotico")
# Letters OCR-D transcribes that Unicode does not decompose into the vocabulary's letters.
SPELLED = {"\u00e6": "ae", "\u00c6": "AE", "\u0153": "oe", "\u0152": "OE", "\ua75b": "r", "\u2e17": "-",
           "\u2010": "-", "\u2015": "\u2014", "\u0131": "i", "\u0142": "l", "\u00a0": " ",
           # MUFI's private-use ligatures and e-above vowels, as the letters they print
           "\uf502": "ch", "\ueada": "\u017ft", "\ueba2": "\u017fi", "\ueba6": "\u017f\u017f",
           "\ueba7": "\u017f\u017fi", "\ueba5": "\u017fp", "\uf4f9": "ll", "\ueec4": "ck", "\ueedc": "tz",
           "\ueec5": "ct", "\ue42c": "\u00e4", "\uf500": "\u00e4", "\ue644": "\u00f6", "\ue72b": "\u00fc"}
COMBINING_E = "\u0364"  # a small e above a vowel: the old umlaut


def local(tag):
    return tag.rsplit("}", 1)[-1]


def children(node, name):
    return [c for c in node if local(c.tag) == name]


def unicode_of(node):
    """The text of a node's own first TextEquiv (the lowest index), or None."""
    equivs = children(node, "TextEquiv")
    if not equivs:
        return None
    equivs.sort(key=lambda e: int(e.get("index", "0") or 0))
    u = children(equivs[0], "Unicode")
    return (u[0].text or "") if u else None


def line_text(line):
    text = unicode_of(line)
    if text is None:
        text = " ".join(t for t in (unicode_of(w) for w in children(line, "Word")) if t)
    return text.strip()


def reading_order(page):
    """Region ids in the page's reading order (nested groups flattened), or None."""
    for ro in page.iter():
        if local(ro.tag) == "ReadingOrder":
            ids = []

            def walk(group):
                refs = sorted((c for c in group if local(c.tag).startswith(("RegionRef", "OrderedGroup",
                                                                            "UnorderedGroup"))),
                              key=lambda c: int(c.get("index", "0") or 0))
                for c in refs:
                    ids.append(c.get("regionRef"))  # a group may name a region of its own
                    if not local(c.tag).startswith("RegionRef"):
                        walk(c)
            walk(ro)
            return [i for i in ids if i]
    return None


def normalise(text, vocab):
    """Text in the vocabulary's letters where Unicode or SPELLED says how; the rest as it was."""
    text = unicodedata.normalize("NFC", text)
    out = []
    for ch in text:
        if ch == COMBINING_E and out:
            composed = unicodedata.normalize("NFC", out[-1] + "\u0308")
            out[-1] = composed if len(composed) == 1 else out[-1]
            continue
        if ch in vocab.index or ch.isspace():
            out.append(ch)
            continue
        if ch in SPELLED:
            out.append(SPELLED[ch])
            continue
        compat = unicodedata.normalize("NFKC", ch)
        if compat != ch and all(c in vocab.index for c in compat):
            out.append(compat)
            continue
        base = unicodedata.normalize("NFD", ch)
        if unicodedata.combining(ch):
            continue  # a mark the vocabulary cannot carry on its letter
        out.append(base[0] if base[0] in vocab.index else ch)
    return "".join(out)


def join_lines(lines):
    """A region's lines as one paragraph: a line-end hyphen joins the next line's word."""
    text = ""
    for line in lines:
        if not line:
            continue
        if text and text[-1] in LINE_END_HYPHENS and len(text) > 1 and text[-2].isalpha():
            text = text[:-1] + line
        else:
            text = (text + " " + line) if text else line
    return text


def page_reading(xml_path, vocab, unstyled="deu"):
    """(reading text, language, characters outside the vocabulary, characters, image file); the
    language is `unstyled` where the ground truth names no typeface."""
    root = ET.parse(xml_path).getroot()
    page = next(c for c in root.iter() if local(c.tag) == "Page")
    regions = {r.get("id"): r for r in page.iter() if local(r.tag) == "TextRegion"}
    order = [i for i in (reading_order(page) or []) if i in regions]
    order += [i for i in regions if i not in order]  # regions the reading order leaves out, in file order
    paragraphs, drop = [], ""
    fraktur = other = 0
    for rid in order:
        region = regions[rid]
        kind = region.get("type", "paragraph")
        for style in region.iter():
            if local(style.tag) == "TextStyle" and style.get("fontFamily"):
                face = style.get("fontFamily").lower()
                if any(f in face for f in FRAKTUR_FACES):
                    fraktur += 1
                else:
                    other += 1
        if kind in LEFT_OUT:
            continue
        text = join_lines([normalise(line_text(ln), vocab) for ln in children(region, "TextLine")])
        if kind == "drop-capital":
            drop += text.strip()
            continue
        if text:
            paragraphs.append(drop + text)
            drop = ""
    if drop:
        paragraphs.append(drop)
    reading = "\n\n".join(" ".join(p.split()) for p in paragraphs)
    chars = [c for c in reading if not c.isspace()]
    unknown = sum(1 for c in chars if c not in vocab.index)
    lang = unstyled if fraktur == other == 0 else "frk" if fraktur > other else "deu"
    return reading, lang, unknown, len(chars), page.get("imageFilename")


def natural(name):
    """Sort key: 2_x before 10_x (eScriptorium's page names are not zero-padded)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def held_out(work, every):
    return int(hashlib.sha256(work.encode()).hexdigest(), 16) % every == 0


SAMPLE = """<?xml version="1.0" encoding="UTF-8"?>
<PcGts xmlns="http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15"><Page imageFilename="OCR-D-IMG/p.tif">
<ReadingOrder><OrderedGroup id="g"><RegionRefIndexed regionRef="r4" index="4"/>
<RegionRefIndexed regionRef="r0" index="0"/><RegionRefIndexed regionRef="r1" index="1"/>
<RegionRefIndexed regionRef="r2" index="2"/></OrderedGroup></ReadingOrder>
<TextRegion id="r2" type="paragraph"><TextStyle fontFamily="Fraktur"/>
<TextLine id="l2"><TextEquiv index="1"><Unicode>wrong</Unicode></TextEquiv>
<TextEquiv index="0"><Unicode>ie Kir\uf502e i\ueada gro\u2e17</Unicode></TextEquiv></TextLine>
<TextLine id="l3"><Word id="w1"><TextEquiv><Unicode>\u00dfe</Unicode></TextEquiv></Word>
<Word id="w2"><TextEquiv><Unicode>Sa\uf502e,</Unicode></TextEquiv></Word></TextLine>
<TextLine id="l4"><TextEquiv><Unicode>\ufb01nde\u0131 ma\u00e6 a\u0364 Hal\u2640</Unicode></TextEquiv></TextLine>
</TextRegion>
<TextRegion id="r0" type="header"><TextStyle fontFamily="Antiqua"/><TextLine id="l0"><TextEquiv>
<Unicode>12 Die Kirche</Unicode></TextEquiv></TextLine></TextRegion>
<TextRegion id="r1" type="drop-capital">
<TextLine id="l1"><TextEquiv><Unicode>D</Unicode></TextEquiv></TextLine></TextRegion>
<TextRegion id="r4" type="paragraph"><TextStyle fontFamily="Fraktur"/><TextLine id="l5"><TextEquiv>
<Unicode>Ende.</Unicode></TextEquiv></TextLine></TextRegion>
<TextRegion id="r5" type="page-number">
<TextLine id="l6"><TextEquiv><Unicode>12</Unicode></TextEquiv></TextLine></TextRegion>
<TextRegion id="r6" type="paragraph">
<TextLine id="l7"><TextEquiv><Unicode>Nachtrag</Unicode></TextEquiv></TextLine></TextRegion>
</Page></PcGts>"""


def self_test():
    """The target rules on a hand-made page, and a two-work repository through main()."""
    import tempfile
    vocab = data.Vocab()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "p.xml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(SAMPLE)
        reading, lang, unknown, n, image = page_reading(path, vocab)
        # Reading order, the head and folio left out, the drop capital joined, the first of the
        # TextEquivs, words where a line has no text of its own, "gro⸗ ße" joined, MUFI ligatures
        # spelled, ﬁ, ı, æ and a-with-e-above written in the vocabulary's letters, ♀ left as it is;
        # the region the reading order leaves out comes last.
        want = "Die Kirche iſt große Sache, findei maae ä Hal\u2640\n\nEnde.\n\nNachtrag"
        assert reading == want, repr(reading)
        assert (lang, unknown, image) == ("frk", 1, "OCR-D-IMG/p.tif"), (lang, unknown, image)
        assert held_out("work", 6) == held_out("work", 6)
        assert sorted(["10_b.xml", "2_a.xml", "1_c.xml"], key=natural) == ["1_c.xml", "2_a.xml", "10_b.xml"]
        with open(path, "w", encoding="utf-8") as f:
            f.write(SAMPLE.replace('<TextStyle fontFamily="Fraktur"/>', "").replace('fontFamily="Antiqua"', ""))
        assert page_reading(path, vocab)[1] == "deu" and page_reading(path, vocab, "frk")[1] == "frk"
        with open(path, "w", encoding="utf-8") as f:
            f.write(SAMPLE)
        for work in ("AbcDef_1", "GhiJkl_2"):
            os.makedirs(os.path.join(tmp, "gt", work, "OCR-D-GT-PAGE"))
            os.makedirs(os.path.join(tmp, "gt", work, "OCR-D-IMG"))
            for k in (1, 2):
                with open(os.path.join(tmp, "gt", work, "OCR-D-GT-PAGE", f"g{k}.xml"), "w", encoding="utf-8") as f:
                    f.write(SAMPLE.replace("\u2640", "s"))
                Image.new("L", (200, 100), 255).save(os.path.join(tmp, "gt", work, "OCR-D-IMG", "p.tif"))
        argv = ["--gt", os.path.join(tmp, "gt"), "--out", os.path.join(tmp, "train"),
                "--held-out", os.path.join(tmp, "valid"), "--held-out-every", "1"]
        main(argv)  # every work held out: whole, under its own name
        rows = open(os.path.join(tmp, "valid", "MANIFEST.tsv"), encoding="utf-8").read().splitlines()
        assert len(rows) == 5 and rows[1].split("\t")[2:5] == ["AbcDef_1/p001.png", "AbcDef_1/p001.target.txt", "frk"]
        argv[-1] = "1000000"
        main(argv)  # neither name hashes to a multiple of 1,000,000: none held out, one page a document
        docs = sorted(d for d in os.listdir(os.path.join(tmp, "train")) if d.startswith("doc"))
        assert docs == ["doc0000", "doc0001", "doc0002", "doc0003"], docs
        with open(os.path.join(tmp, "train", "doc0003", "p001.target.txt"), encoding="utf-8") as f:
            assert f.read() == want.replace("\u2640", "s") + "\n"
    print("page_xml_pages: ok")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--self-test"]:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gt", required=True, help="the repository's data folder (one folder per work)")
    ap.add_argument("--out", required=True, help="training documents go here (docNNNN/, MANIFEST.tsv)")
    ap.add_argument("--held-out", required=True, help="held-out pages go here, as an eval.py manifest")
    ap.add_argument("--held-out-every", type=int, default=6, help="one work in this many is held out")
    ap.add_argument("--pages-per-doc", type=int, default=1,
                    help="a training document's pages (a full page of old print nearly fills the training's "
                    "2,048 tokens; held-out works stay whole, read as volumes)")
    ap.add_argument("--unstyled", default="deu", choices=["deu", "frk"],
                    help="the language of pages whose ground truth names no typeface")
    ap.add_argument("--source", default="OCR-D/OCR-D-GT-VD-SBB", help="the repository, for the manifests")
    ap.add_argument("--licence", default="CC-BY-SA-4.0")
    args = ap.parse_args(argv)
    vocab = data.Vocab()
    manifests = {}  # folder → its rows
    stats = {"pages": 0, "left_out": 0, "held_out_pages": 0, "works": 0}
    doc = 0
    for work in sorted(os.listdir(args.gt)):
        gt_dir = os.path.join(args.gt, work, "OCR-D-GT-PAGE")
        if not os.path.isdir(gt_dir):
            continue
        valid = held_out(work, args.held_out_every)
        base = args.held_out if valid else args.out
        pages = []
        for name in sorted(os.listdir(gt_dir), key=natural):
            if not name.endswith(".xml"):
                continue
            reading, lang, unknown, n, image = page_reading(os.path.join(gt_dir, name), vocab, args.unstyled)
            image_path = os.path.join(args.gt, work, image or "")
            if (not reading or not os.path.isfile(image_path) or os.path.getsize(image_path) < 1000
                    or unknown > 0.01 * n):
                stats["left_out"] += 1
                continue
            pages.append((reading, lang, image_path, name))
        if not pages:
            continue
        stats["works"] += 1
        per_doc = len(pages) if valid else args.pages_per_doc
        for k, (reading, lang, image_path, name) in enumerate(pages):
            if k % per_doc == 0:  # a new document: the work itself when held out
                folder = work if valid else f"doc{doc:04d}"
                doc += not valid
                os.makedirs(os.path.join(base, folder), exist_ok=True)
            stem = f"p{k % per_doc + 1:03d}"
            with Image.open(image_path) as im:
                page = im.convert("L") if im.mode not in ("1", "L") else im.copy()
                dpi = im.info.get("dpi", (300, 300))
            page.info.pop("icc_profile", None)  # a colour profile on a grey page only draws warnings
            page.save(os.path.join(base, folder, stem + ".png"), dpi=dpi)
            with open(os.path.join(base, folder, stem + ".target.txt"), "w", encoding="utf-8") as f:
                f.write(reading + "\n")
            source = f"data/{work}/{os.path.relpath(image_path, os.path.join(args.gt, work))} ; " \
                     f"data/{work}/OCR-D-GT-PAGE/{name}"
            manifests.setdefault(base, []).append(
                [work, stem, f"{folder}/{stem}.png", f"{folder}/{stem}.target.txt", lang, args.source, source,
                 args.licence, "-", "reading", "held out" if valid else "training"])
            stats["pages"] += 1
            stats["held_out_pages"] += valid
    for base, rows in manifests.items():
        with open(os.path.join(base, "MANIFEST.tsv"), "w", encoding="utf-8") as f:
            f.write("".join("\t".join(r) + "\n" for r in [data.evaluation.MANIFEST_COLUMNS] + rows))
    print(f"{stats['works']} works, {stats['pages']} pages ({stats['held_out_pages']} held out), "
          f"{stats['left_out']} left out (no image, no text, or over 1 % outside the vocabulary)")


if __name__ == "__main__":
    main()
