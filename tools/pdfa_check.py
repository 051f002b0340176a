#!/usr/bin/env python3
"""Checks a PDF against the rules of PDF/A-2b (ISO 19005-2, level B) that a scan with a text layer
touches, as veraPDF would (veraPDF is not in Debian): the header, the trailer's ID, no encryption,
the XMP metadata (unfiltered, pdfaid part 2 / conformance B, agreeing with the document
information), an output intent with a valid RGB ICC profile (read by littlecms through Pillow),
every font embedded, no transparency, no forbidden filters, actions, scripts or embedded files.

    python3 tools/pdfa_check.py FILE.pdf     # prints each rule broken; exit 0 when none
"""
import base64
import io
import json
import re
import subprocess
import sys
import zlib


def objects(path):
    out = subprocess.run(["qpdf", "--json=2", "--json-key=qpdf", "--json-stream-data=inline", "--decode-level=none", path],
                         check=True, capture_output=True).stdout
    head, objs = json.loads(out)["qpdf"]
    return head, objs


def main(path):
    problems = []
    raw = open(path, "rb").read()
    m = re.match(rb"%PDF-1\.([0-7])\r?\n%([\x80-\xff]{4})", raw)
    if not m:
        problems.append("header: not %PDF-1.0..1.7 followed by a comment of four bytes above 127")
    if subprocess.run(["qpdf", "--check", path], capture_output=True).returncode != 0:
        problems.append("qpdf --check finds the file damaged")
    head, objs = objects(path)
    trailer = objs["trailer"]["value"]
    if "/Encrypt" in trailer:
        problems.append("the file is encrypted")
    if "/ID" not in trailer:
        problems.append("the trailer has no /ID")

    def get(ref):
        o = objs.get("obj:" + ref) if isinstance(ref, str) and ref.endswith(" R") else None
        return o if o is not None else {"value": ref}

    def value(ref):
        o = get(ref)
        return o["stream"]["dict"] if "stream" in o else o["value"]

    def data(ref):
        s = get(ref)["stream"]
        d = base64.b64decode(s.get("data", ""))
        return zlib.decompress(d) if s["dict"].get("/Filter") == "/FlateDecode" else d

    def text(v):
        return v[2:] if isinstance(v, str) and v[:2] in ("u:", "b:") else v

    root = value(trailer["/Root"])
    info = value(trailer["/Info"]) if "/Info" in trailer else {}
    # XMP metadata.
    if "/Metadata" not in root:
        problems.append("the catalogue has no /Metadata")
    else:
        meta = get(root["/Metadata"])["stream"]
        if "/Filter" in meta["dict"]:
            problems.append("the XMP metadata stream is filtered")
        xmp = data(root["/Metadata"]).decode("utf-8", "replace")
        if not re.search(r"<pdfaid:part>2</pdfaid:part>", xmp) or not re.search(r"<pdfaid:conformance>B</pdfaid:conformance>", xmp):
            problems.append("the XMP metadata does not say PDF/A-2 conformance B")
        pairs = [("/Title", r"<dc:title><rdf:Alt><rdf:li[^>]*>(.*?)</rdf:li>"), ("/Author", r"<dc:creator><rdf:Seq><rdf:li>(.*?)</rdf:li>"),
                 ("/Creator", r"<xmp:CreatorTool>(.*?)</xmp:CreatorTool>"), ("/Producer", r"<pdf:Producer>(.*?)</pdf:Producer>")]
        for key, pattern in pairs:
            found = re.search(pattern, xmp, re.S)
            unescaped = found and found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'").replace("&amp;", "&")
            if key in info and text(info[key]) != unescaped:
                problems.append(f"document information {key} '{text(info[key])}' is not the XMP's '{unescaped}'")
        for key, tag in (("/CreationDate", "xmp:CreateDate"), ("/ModDate", "xmp:ModifyDate")):
            found = re.search(f"<{tag}>(.*?)</{tag}>", xmp)
            if key in info:
                d = re.match(r"D:(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)Z", text(info[key]))
                want = d and "{}-{}-{}T{}:{}:{}Z".format(*d.groups())
                if not found or found.group(1) != want:
                    problems.append(f"document information {key} does not match the XMP's {tag}")
    # The output intent and its profile.
    intents = [value(i) for i in value(root.get("/OutputIntents", []))] if "/OutputIntents" in root else []
    pdfa = [i for i in intents if i.get("/S") == "/GTS_PDFA1"]
    if len(pdfa) != 1:
        problems.append("there is not exactly one /GTS_PDFA1 output intent")
    else:
        profile = data(pdfa[0]["/DestOutputProfile"])
        n = value(pdfa[0]["/DestOutputProfile"]).get("/N")
        if len(profile) < 132 or profile[36:40] != b"acsp" or int.from_bytes(profile[:4], "big") != len(profile):
            problems.append("the output intent's ICC profile is malformed")
        elif profile[16:20] != b"RGB " or n != 3 or profile[12:16] not in (b"mntr", b"prtr"):
            problems.append("the output intent's profile is not an RGB display or output profile with /N 3")
        else:
            try:
                from PIL import ImageCms
                ImageCms.getProfileDescription(ImageCms.ImageCmsProfile(io.BytesIO(profile)))
            except Exception as e:  # littlecms refused it
                problems.append(f"the output intent's ICC profile does not load: {e}")
    # Every object: fonts embedded, nothing transparent or forbidden.
    for key, obj in objs.items():
        if not key.startswith("obj:"):
            continue
        d = obj["stream"]["dict"] if "stream" in obj else obj.get("value")
        if not isinstance(d, dict):
            continue
        where = key[4:]
        if d.get("/Type") == "/FontDescriptor" and not any(k in d for k in ("/FontFile", "/FontFile2", "/FontFile3")):
            problems.append(f"{where}: font {d.get('/FontName')} is not embedded")
        if d.get("/Type") == "/Font" and d.get("/Subtype") in ("/Type1", "/TrueType", "/CIDFontType0", "/CIDFontType2") and "/FontDescriptor" not in d:
            problems.append(f"{where}: font {d.get('/BaseFont')} has no descriptor (not embedded)")
        if "/SMask" in d and d["/SMask"] != "/None":
            problems.append(f"{where}: a soft mask (transparency)")
        group = value(d["/Group"]) if "/Group" in d else {}
        if isinstance(group, dict) and group.get("/S") == "/Transparency":
            problems.append(f"{where}: a transparency group")
        for alpha in ("/CA", "/ca"):
            if alpha in d and d[alpha] != 1:
                problems.append(f"{where}: constant alpha {d[alpha]}")
        if d.get("/Filter") == "/LZWDecode" or (isinstance(d.get("/Filter"), list) and "/LZWDecode" in d["/Filter"]):
            problems.append(f"{where}: LZW compression")
        if d.get("/Interpolate") is True:
            problems.append(f"{where}: an image asks for interpolation")
        for forbidden in ("/JavaScript", "/JS", "/AA", "/EmbeddedFiles"):
            if forbidden in d:
                problems.append(f"{where}: {forbidden}")
    for p in problems:
        print(f"{path}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
