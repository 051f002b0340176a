#!/usr/bin/python3
"""Book-structure figures of page texts against the ground truth, beside CER (issue #29, item 4).

Reads a MANIFEST.tsv and one or more folders of page texts as `tools/eval/eval.py --hyp-dir` writes
them (`<set>_<page>.txt`), and reports per set, for pages in manifest order:

- CER as eval.py computes it (page-level text, running heads and folios included as the ground
  truth has them);
- running heads and folios: the ground truth's page furniture (below) and, in the texts, how many
  stand as a paragraph of their own, were dropped, or **leaked** into a paragraph of body text
  ("But Cortez COLONIAL FLORIDA. Ii was not");
- words hyphenated across a page break (the ground truth's page ends with "dis-" and the next
  page's body begins with the rest): how many the texts write whole ("distinguishable", or with
  the hyphen kept where the word is a compound), at the end of the page or the start of the next,
  and how many the book joins (those, and those whose page text ends with "dis-" before a next
  page beginning "tinguishable": the book's assembly joins such halves, engine/src/export/book.cpp);
- paragraph breaks inside pages: precision, recall and F1 of the texts' paragraph starts against
  the ground truth's (ground truth paragraphs are its lines; page furniture left out
  of both; each text's words aligned to the ground truth's, a start counted where it falls on a
  ground-truth start).

Page furniture, from the ground truth alone: a page's first paragraph when its letters recur as the
first paragraph of another page of the set (a running head) or when it is a bare number (a folio),
and its last paragraph when it is a bare number.

    tools/eval/structure.py ../shared/eval/MANIFEST.tsv --sets oldbooks_florida_1892 \\
        --hyp volume=/tmp/volume/quire_reader --hyp page=/tmp/page/quire_reader
"""
import argparse
import collections
import difflib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval as evaluation  # noqa: E402  (tools/eval/eval.py: the manifest and CER as it computes them)

FOLIO = re.compile(r"^[\divxlcIVXLC]{1,6}\.?$")


def gt_paragraphs(text):
    """The ground truth's paragraphs: one a line (old-books: "one paragraph per line"; some pages
    also leave an empty line between them)."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def paragraphs(text):
    """A text's paragraphs: runs of non-empty lines between empty lines (Quire's page text),
    whitespace collapsed. A bare number on a line of its own at the top of the page (the first
    line of its first or second paragraph, or the second line of the first, under a head) or at its
    foot stands apart: the book takes such a folio out of the body (engine/src/export/book.cpp)."""
    blocks, cur = [], []
    for line in text.splitlines():
        if line.strip():
            cur.append(" ".join(line.split()))
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    for k in range(min(2, len(blocks))):
        if len(blocks[k]) > 1 and FOLIO.match(blocks[k][0]):
            blocks[k:k + 1] = [blocks[k][:1], blocks[k][1:]]
            break
    else:
        # A head with its folio on the next line of the same paragraph: the book takes both.
        if blocks and len(blocks[0]) > 1 and FOLIO.match(blocks[0][1]):
            blocks[0:1] = [blocks[0][:1], blocks[0][1:2]] + ([blocks[0][2:]] if len(blocks[0]) > 2 else [])
    if blocks and len(blocks[-1]) > 1 and FOLIO.match(blocks[-1][-1]):
        blocks[-1:] = [blocks[-1][:-1], blocks[-1][-1:]]
    return [" ".join(b) for b in blocks]


def letters(s):
    return re.sub(r"[^A-Za-z]+", " ", s).strip().upper()


def words(s):
    """Words for alignment: lower case, punctuation at either end stripped."""
    return [w for w in (re.sub(r"^\W+|\W+$", "", t).lower() for t in s.split()) if w]


def furniture(gt_pages):
    """Per page: (head, folio) of the ground truth (None where absent) and its body paragraphs."""
    firsts = [gt_paragraphs(t)[0] if gt_paragraphs(t) else "" for t in gt_pages]
    out = []
    for i, text in enumerate(gt_pages):
        paras = gt_paragraphs(text)
        head = folio = None
        if paras:
            first = paras[0]
            key = letters(first)
            recurs = key and any(letters(f) == key for j, f in enumerate(firsts) if j != i)
            if FOLIO.match(first):
                folio, paras = first, paras[1:]
            elif recurs and len(first.split()) <= 10:
                head, paras = first, paras[1:]
                # The folio stands at the head's edge ("… Version 3, 29 213", "10 BOOK OF TALES").
                ws = first.split()
                num = [w for w in (ws[-1], ws[0]) if FOLIO.match(w) and any(c.isdigit() for c in w)]
                folio = num[0] if num else None
        if paras and FOLIO.match(paras[-1]):
            folio, paras = paras[-1], paras[:-1]
        out.append((head, folio, paras))
    return out


def find_run(needle, hay):
    """Start of `needle` (a word list) in `hay` allowing one word in between, or -1."""
    n = len(needle)
    for s in range(len(hay)):
        if hay[s] != needle[0]:
            continue
        k, j = 1, s + 1
        skips = 0
        while k < n and j < len(hay):
            if hay[j] == needle[k]:
                k += 1
            elif skips == 0:
                skips += 1
            else:
                break
            j += 1
        if k == n:
            return s
    return -1


def furniture_fate(head, folio, hyp_paras):
    """'own' (a paragraph of its own), 'dropped' or 'leaked' for the head (letters) and the folio."""
    fates = {}
    if head and letters(head):
        # A head standing as a paragraph of its own is "own" even where its words also occur in the
        # body ("NOTICES" over a page that speaks of "copyright notices"): the page prints it once.
        needle = letters(head).lower().split()
        found = [len(hw) - len(needle) for hw in (letters(p).lower().split() for p in hyp_paras) if find_run(needle, hw) >= 0]
        fates["head"] = "dropped" if not found else "own" if min(found) <= 2 else "leaked"
    if folio:
        fate = "dropped"
        for p in hyp_paras:
            ws = p.split()
            if folio not in [re.sub(r"\W+$", "", w) for w in ws]:
                continue
            # Alone, or with the head's words (however long the head) and at most two others.
            others = [w for w in letters(p).split() if not head or w not in letters(head).split()]
            if len(ws) <= 6 or (head and len(others) <= 2):
                fate = "own" if fate == "dropped" else fate
            # A paragraph numbered as the page is ("9. You are not required …") has not leaked it.
            elif folio in [re.sub(r"\W+$", "", w) for w in ws[:2] + ws[-2:]] and not re.fullmatch(re.escape(folio) + r"[.)]", ws[0]):
                fate = "leaked"
        fates["folio"] = fate
    return fates


def paragraph_starts(paras):
    """Word indices where paragraphs 2.. start, and the word list."""
    ws, starts = [], []
    for p in paras:
        if ws:
            starts.append(len(ws))
        ws.extend(words(p))
    return ws, set(starts)


def paragraph_scores(gt_body, hyp_paras):
    """(true positives, hypothesis starts, ground-truth starts) of paragraph starts on one page."""
    gw, gs = paragraph_starts(gt_body)
    hw, hs = paragraph_starts(hyp_paras)
    # Each hypothesis word's ground-truth index: matching words, and a misread word in the place of
    # another ("1d" for "(d)", "fyou" for "you"): a break in the right place counts whatever its
    # first word reads.
    where = {}
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, hw, gw, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == j2 - j1):
            for k in range(i2 - i1):
                where[i1 + k] = j1 + k
        elif op == "replace":
            where[i1] = j1
    tp = 0
    for s in hs:
        if s in where and where[s] in gs:
            tp += 1
    return tp, len(hs), len(gs)


def body_paragraphs(paras, head, folio):
    """A text's paragraphs without the page furniture that stands alone."""
    return [p for p in paras if not (head and letters(p) == letters(head)) and not (folio and p.strip() == folio)]


def hyphen_joins(gt_a, gt_b, hyp_a, hyp_b):
    """For a page pair: None where the ground truth has no word hyphenated across the break, else
    (whether the texts write it whole, whether the book joins it). The book (engine/src/export/
    book.cpp) runs a paragraph on across the break and joins a word that ends the page with a
    hyphen to the next page's first word where that starts in lower case: so a text that keeps the
    hyphen at the page's end ("bind-" / "ing") is joined in the book as well. `hyp_a`, `hyp_b`:
    the texts' body paragraphs (furniture out)."""
    if not gt_a or not gt_b:
        return None
    last = gt_a[-1].split()[-1] if gt_a[-1].split() else ""
    if not re.match(r"^[A-Za-z]{2,}-$", last):
        return None
    first = gt_b[0].split()[0] if gt_b[0].split() else ""
    rest = re.sub(r"\W+$", "", first)
    if not rest or not rest[0].isalpha():
        return None
    whole = {(last[:-1] + rest).lower(), (last + rest).lower()}
    near = words(" ".join(hyp_a))[-5:] + words(" ".join(hyp_b))[:8]
    written = any(w in whole for w in near)
    ends = hyp_a[-1].split() if hyp_a else []
    starts = hyp_b[0].split() if hyp_b else []
    kept = (bool(ends) and bool(starts) and re.match(r"^\w*[A-Za-z]-$", ends[-1]) is not None and starts[0][:1].islower()
            and (ends[-1][:-1] + re.sub(r"\W+$", "", starts[0])).lower() in whole)
    return written, written or kept


def measure(rows, base, hyp_dir):
    sets = collections.OrderedDict()
    for r in rows:
        sets.setdefault(r["set"], []).append(r)
    out = {}
    for name, srows in sets.items():
        gts = [open(os.path.join(base, r["gt"]), encoding="utf-8").read() for r in srows]
        hyps = []
        for r in srows:
            f = os.path.join(hyp_dir, r["key"].replace("/", "_") + ".txt")
            hyps.append(open(f, encoding="utf-8").read() if os.path.exists(f) else "")
        cjk = srows[0]["language"] == "zh"
        errors = chars = 0
        for h, g in zip(hyps, gts):
            cer, _, n, _ = evaluation.score(h, g, cjk)
            errors += cer * n
            chars += n
        fates = collections.Counter()
        tp = hs = gs = 0
        joins = [0, 0, 0]  # written whole, joined in the book, words broken over a page break
        furn = furniture(gts)
        hyp_paras = [paragraphs(h) for h in hyps]
        # Furniture out of the text's paragraphs too, where it stands alone.
        bodies = [body_paragraphs(hyp_paras[i], head, folio) for i, (head, folio, _) in enumerate(furn)]
        for i, (head, folio, body) in enumerate(furn):
            for kind, fate in furniture_fate(head, folio, hyp_paras[i]).items():
                fates[(kind, fate)] += 1
            a, b, c = paragraph_scores(body, bodies[i])
            tp, hs, gs = tp + a, hs + b, gs + c
            if i + 1 < len(furn):
                j = hyphen_joins(body, furn[i + 1][2], bodies[i], bodies[i + 1])
                if j is not None:
                    joins[0] += int(j[0])
                    joins[1] += int(j[1])
                    joins[2] += 1
        p = tp / hs if hs else 0.0
        rcl = tp / gs if gs else 0.0
        out[name] = {"pages": len(srows), "errors": round(errors), "chars": chars, "cer": errors / max(1, chars),
                     "fates": fates, "joins": joins, "precision": p, "recall": rcl,
                     "f1": 2 * p * rcl / (p + rcl) if p + rcl else 0.0}
    return out


def self_test():
    """The figures on a made-up three-page book: a text that keeps the structure, one that breaks it."""
    gt = ["BOOK OF TALES 9\n\nThe first paragraph ends here.\nA second one runs to the page's end and is hyphen-",
          "10 BOOK OF TALES\n\nated across it. Then it goes on.\nA third paragraph.",
          "BOOK OF TALES 11\n\nThe last page holds one paragraph."]
    good = ["BOOK OF TALES 9\n\nThe first paragraph ends here.\n\nA second one runs to the page's end and is\nhyphenated",
            "10 BOOK OF TALES\n\nacross it. Then it goes on.\n\nA third paragraph.",
            "The last page holds one paragraph."]
    bad = ["The first paragraph ends here. A second one runs to the page's end and is hyphen",
           "BOOK OF TALES ated across it. Then it goes on. A third paragraph. 10",
           "BOOK OF TALES 11\n\nThe last page holds one paragraph."]
    furn = furniture(gt)
    assert [f[0] for f in furn] == ["BOOK OF TALES 9", "10 BOOK OF TALES", "BOOK OF TALES 11"], furn
    assert [f[1] for f in furn] == ["9", "10", "11"], furn
    def figures(texts):
        fates = collections.Counter()
        tp = hs = gs = 0
        for i, (head, folio, body) in enumerate(furn):
            paras = paragraphs(texts[i])
            for kind, fate in furniture_fate(head, folio, paras).items():
                fates[(kind, fate)] += 1
            hp = [q for q in paras if letters(q) != letters(head)]
            a, b, c = paragraph_scores(body, hp)
            tp, hs, gs = tp + a, hs + b, gs + c
        joined = hyphen_joins(furn[0][2], furn[1][2], body_paragraphs(paragraphs(texts[0]), *furn[0][:2]),
                              body_paragraphs(paragraphs(texts[1]), *furn[1][:2]))
        return fates, (tp, hs, gs), joined
    fates, para, joined = figures(good)
    assert fates[("head", "own")] == 2 and fates[("head", "dropped")] == 1 and fates[("head", "leaked")] == 0, fates
    assert para == (2, 2, 2), para
    assert joined == (True, True), joined
    fates, para, joined = figures(bad)
    assert fates[("head", "leaked")] == 1 and fates[("folio", "leaked")] == 1, fates
    assert para == (0, 0, 2), para
    assert joined == (False, False), joined
    # A paragraph numbered as the page is numbered is no leaked folio; the bare number is.
    numbered = "You are not required to accept this License, since you have not signed it."
    assert furniture_fate(None, "9", ["9. " + numbered])["folio"] == "dropped"
    assert furniture_fate(None, "9", ["9 " + numbered])["folio"] == "leaked"
    # A head of more than five words with its folio, as a paragraph of their own, is not a leak.
    long_head = "GNU GENERAL PUBLIC LICENSE Version 3, 29"
    assert furniture_fate(long_head, "29", [long_head, "The body text of the page runs on for a while."]) == \
        {"head": "own", "folio": "own"}
    assert furniture_fate(long_head, "29", [long_head + " The body text of the page runs on."])["head"] == "leaked"
    # A one-word head in its place, its word also in the body: not a leak; with the body, a leak.
    assert furniture_fate("96 NOTICES", None, ["96", "NOTICES", "Any copyright notices of the work are kept."])["head"] == "own"
    assert furniture_fate("96 NOTICES", None, ["96", "NOTICES You may convey a covered work."])["head"] == "leaked"
    # The hyphen kept at the page's end: not whole in the page texts, joined in the book.
    kept = [good[0].replace("is\nhyphenated", "is hyphen-"), good[1].replace("across it", "ated across it"), good[2]]
    assert figures(kept)[2] == (False, True), figures(kept)[2]
    # The folio read on a line of its own after the head, above the word's rest: joined in the book.
    apart = [kept[0], "BOOK OF TALES\n\n10\nated across it. Then it goes on.\n\nA third paragraph.", good[2]]
    assert paragraphs(apart[1])[:3] == ["BOOK OF TALES", "10", "ated across it. Then it goes on."], paragraphs(apart[1])
    under = "BOOK OF TALES\n10\nated across it. Then it goes on.\n\nA third paragraph."
    assert paragraphs(under)[:3] == ["BOOK OF TALES", "10", "ated across it. Then it goes on."], paragraphs(under)
    assert figures(apart)[2] == (False, True), figures(apart)[2]
    assert furniture(["A HEAD OF 3, 29 213\n\nText.", "A HEAD OF 3, 29 214\n\nMore."])[0][1] == "213"
    # A paragraph break in its place whose first word is misread counts; one a word early does not.
    assert paragraph_scores(["First one.", "(d) if the work is"], ["First one.", "1d if the work is"]) == (1, 1, 1)
    assert paragraph_scores(["First one.", "(d) if the work is"], ["First one. 1d", "if the work is"]) == (0, 1, 1)
    # A hyphen kept before a capital (a new sentence, not the word's rest) is not a join.
    capital = [kept[0], kept[1].replace("ated across it", "Ated across it"), good[2]]
    assert figures(capital)[2] == (False, False), figures(capital)[2]
    print("structure.py self-test: ok")


def main():
    if "--self-test" in sys.argv:
        return self_test()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("--sets", default="")
    ap.add_argument("--hyp", action="append", required=True, help="LABEL=FOLDER of page texts (eval.py --hyp-dir's engine folder)")
    args = ap.parse_args()
    base = os.path.dirname(os.path.abspath(args.manifest))
    rows = evaluation.read_manifest(args.manifest, args.sets)
    results = {}
    for spec in args.hyp:
        label, _, folder = spec.partition("=")
        results[label] = measure(rows, base, folder)
    print_table(results)


def print_table(results):
    """The figures of measure() for each label ({label: measure's result}), set by set and all."""
    print("| set | texts | pages | character errors | CER | heads own / dropped / leaked | folios own / dropped / leaked "
          "| page-break hyphens whole / joined in the book | paragraph P | R | F1 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    sets = list(next(iter(results.values())).keys())
    for name in sets + ["all"]:
        for label, res in results.items():
            if name == "all":
                agg = {"pages": 0, "errors": 0, "chars": 0, "fates": collections.Counter(), "joins": [0, 0, 0]}
                for v in res.values():
                    agg["pages"] += v["pages"]
                    agg["errors"] += v["errors"]
                    agg["chars"] += v["chars"]
                    agg["fates"] += v["fates"]
                    agg["joins"] = [a + b for a, b in zip(agg["joins"], v["joins"])]
                v = agg
                v["cer"] = v["errors"] / max(1, v["chars"])
                # Paragraph figures for all sets: the mean of the sets' (each set weighs the same).
                v["precision"] = sum(x["precision"] for x in res.values()) / len(res)
                v["recall"] = sum(x["recall"] for x in res.values()) / len(res)
                v["f1"] = sum(x["f1"] for x in res.values()) / len(res)
            else:
                v = res[name]
            f = v["fates"]
            heads = f"{f[('head', 'own')]} / {f[('head', 'dropped')]} / {f[('head', 'leaked')]}"
            folios = f"{f[('folio', 'own')]} / {f[('folio', 'dropped')]} / {f[('folio', 'leaked')]}"
            joins = f"{v['joins'][0]} / {v['joins'][1]} of {v['joins'][2]}"
            print(f"| {name} | {label} | {v['pages']} | {v['errors']} | {100 * v['cer']:.2f}% | {heads} | {folios} | {joins} "
                  f"| {v['precision']:.2f} | {v['recall']:.2f} | {v['f1']:.2f} |")


if __name__ == "__main__":
    main()
