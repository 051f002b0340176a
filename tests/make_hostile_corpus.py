#!/usr/bin/python3
"""Generates the hostile-input corpus for tests/tst_hostile into a folder, with a MANIFEST
listing each case and what quire-cli must answer: 'error' (exit 2, a message naming the file),
'ok' (exit 0) or 'ok-or-error' (a repaired or refused file: either, but never a crash or a hang).

    /usr/bin/python3 tests/make_hostile_corpus.py OUT_DIR SAMPLE_PDF
"""
import io
import os
import struct
import subprocess
import sys
import urllib.parse
import zlib

import numpy as np
from PIL import Image, ImageDraw, TiffImagePlugin


def text_page(w=1200, h=500, text="A hostile input that should still be read."):
    img = Image.new("L", (w, h), 255)
    ImageDraw.Draw(img).text((40, 40), text, fill=0)
    return img


def pdf(objects, extra_trailer=""):
    """A PDF from object bodies (1-based), with a correct xref."""
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for o in offsets:
        out += f"{o:010d} 00000 n \n".encode()
    out += f"trailer << /Size {len(objects) + 1} /Root 1 0 R {extra_trailer}>>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def many_pages_pdf(n):
    kids = " ".join(f"{3 + i} 0 R" for i in range(n))
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode()]
    content = 3 + n
    for _ in range(n):
        objs.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] /Contents {content} 0 R >>".encode())
    stream = b"BT /F1 12 Tf 10 30 Td (x) Tj ET"
    objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    return pdf(objs)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def huge_png(side=30000):
    row = b"\x00" + b"\xff" * (side // 8)
    comp = zlib.compressobj(9)
    data = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    ihdr = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", data) + png_chunk(b"IEND", b"")


def big_text_page(w=1700, h=2200, lines=None, font_size=44):
    """A page of real-looking text lines (a TrueType font when one is installed)."""
    from PIL import ImageFont
    lines = lines or ["The quick brown fox jumps over", "the lazy dog near the river bank",
                      "while seven wise owls watch in", "silence from the old oak tree."]
    try:
        font = ImageFont.truetype("DejaVuSerif.ttf", font_size)
    except OSError:
        font = ImageFont.load_default()
    img = Image.new("L", (w, h), 255)
    d = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        d.text((120, 200 + i * int(font_size * 1.8)), line, fill=0, font=font)
    return img


def pdf_stream(dict_body, data):
    return b"<< " + dict_body + b" /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def image_pdf(filter_name, data, w, h, bpc=1, colorspace=b"/DeviceGray", extra=b""):
    """One page showing one image XObject stored with the given filter."""
    content = b"q %d 0 0 %d 0 0 cm /Im1 Do Q" % (w * 72 // 300, h * 72 // 300)
    return pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /XObject << /Im1 5 0 R >> >> "
                b"/Contents 4 0 R >>" % (w * 72 // 300, h * 72 // 300),
                pdf_stream(b"", content),
                pdf_stream(b"/Type /XObject /Subtype /Image /Width %d /Height %d /BitsPerComponent %d /ColorSpace %s "
                           b"/Filter /%s %s" % (w, h, bpc, colorspace, filter_name, extra), data)])


def jbig2_mmr(img):
    """An embedded JBIG2 stream (page information + one immediate lossless generic region coded with
    MMR), the bitmap's G4 data taken from libtiff; ink is 1 in both."""
    bits = img.point(lambda v: 255 if v < 128 else 0).convert("1")
    b = io.BytesIO()
    TiffImagePlugin.STRIP_SIZE = 1 << 30  # one strip: one G4 stream for the whole bitmap
    bits.save(b, "TIFF", compression="group4")
    t = Image.open(io.BytesIO(b.getvalue()))
    off = t.tag_v2[273][0] if isinstance(t.tag_v2[273], tuple) else t.tag_v2[273]
    n = t.tag_v2[279][0] if isinstance(t.tag_v2[279], tuple) else t.tag_v2[279]
    g4 = b.getvalue()[off:off + n]
    w, h = img.size

    def segment(number, kind, data):
        return struct.pack(">IBBBI", number, kind, 0, 1, len(data)) + data

    page_info = struct.pack(">IIIIBH", w, h, 0, 0, 0, 0)
    region = struct.pack(">IIIIB", w, h, 0, 0, 0) + bytes([1]) + g4  # generic region flags: MMR
    return segment(0, 48, page_info) + segment(1, 38, region)


def save(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, fmt, **kw)
    return b.getvalue()


def main():
    out, sample = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    sample_bytes = open(sample, "rb").read()
    cases = []

    def write(name, data, expect):
        with open(os.path.join(out.encode(), os.fsencode(name)), "wb") as f:
            f.write(data)
        cases.append((name, expect))

    # PDFs
    write("truncated.pdf", sample_bytes[: len(sample_bytes) // 3], "ok-or-error")
    bad_xref = sample_bytes.replace(b"startxref", b"startxref\n999999999\n%", 1)
    write("bad-xref.pdf", bad_xref, "ok-or-error")
    enc = os.path.join(out, "encrypted.pdf")
    subprocess.run(["qpdf", "--encrypt", "secret", "owner", "256", "--", sample, enc], check=True)
    cases.append(("encrypted.pdf", "error"))
    write("zero-pages.pdf", pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]), "error")
    write("huge-page-box.pdf", pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 2000000 2000000] >>"]), "error")
    write("thousand-pages.pdf", many_pages_pdf(1000), "ok")
    # Images
    page = text_page()
    png = save(page, "PNG")
    write("truncated.png", png[: len(png) // 2], "error")
    jpg = save(page.convert("RGB"), "JPEG", quality=80)
    write("truncated.jpg", jpg[: len(jpg) // 2], "error")
    tif = save(page, "TIFF")
    write("truncated.tif", tif[: len(tif) // 3], "error")
    write("one-pixel.png", save(Image.new("L", (1, 1), 255), "PNG"), "ok")
    write("huge-30000.png", huge_png(), "error")
    arr = (np.asarray(page).astype(np.uint16) * 257)
    write("sixteen-bit.png", save(Image.fromarray(arr), "PNG"), "ok")
    write("cmyk.jpg", save(page.convert("CMYK"), "JPEG", quality=85), "ok")
    write("palette.png", save(page.convert("P"), "PNG"), "ok")
    frames = [text_page(text=f"Frame {i}") for i in range(3)]
    b = io.BytesIO()
    frames[0].save(b, "GIF", save_all=True, append_images=frames[1:])
    write("animated.gif", b.getvalue(), "error")
    b = io.BytesIO()
    frames[0].save(b, "PNG", save_all=True, append_images=frames[1:])
    write("animated.png", b.getvalue(), "ok")

    # Round two (reliability issue): loops, lies, explosions, blanks and odd pixels.
    catalog = b"<< /Type /Catalog /Pages 2 0 R >>"
    text_content = pdf_stream(b"", b"BT /F1 24 Tf 72 700 Td (Self reference) Tj ET")
    page3 = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>"
    write("pages-tree-contains-itself.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 2 >>", page3,
                                                 text_content]), "ok-or-error")
    write("pages-tree-cycle.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 3 >>", page3, text_content,
                                       b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>"]), "ok-or-error")
    write("count-lies-million.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1000000 >>", page3,
                                         text_content]), "ok-pages:1")
    form = pdf_stream(b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /XObject << /Fm1 5 0 R >> >>",
                      b"q 0.5 0 0 0.5 10 10 cm /Fm1 Do Q /Fm1 Do")
    write("form-draws-itself.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                                        b"/Resources << /XObject << /Fm1 5 0 R >> >> /Contents 4 0 R >>",
                                        pdf_stream(b"", b"/Fm1 Do"), form]), "failed")
    write("banner-2000x1pt.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                      b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 2000 1] >>"]), "failed-or-blank")
    for w, h in [(5000, 1), (1, 32000), (32000, 1)]:
        write(f"aspect-{w}x{h}.png", save(Image.new("L", (w, h), 255), "PNG"), "failed-or-blank")
    words = big_text_page()
    write("jbig2-mmr-scan.pdf", image_pdf(b"JBIG2Decode", jbig2_mmr(words), words.width, words.height), "text:quick")
    rnd = np.random.default_rng(7)
    write("jbig2-random.pdf", image_pdf(b"JBIG2Decode", rnd.integers(0, 256, 5000, dtype=np.uint8).tobytes(), 1700, 2200),
          "failed-or-flagged")
    full = save(words.convert("RGB"), "JPEG", quality=85)
    write("jpeg-cut-with-end.jpg", full[: len(full) // 2] + b"\xff\xd9", "failed-or-flagged")

    # More structure and format oddities, each with its expected answer.
    pdf_page = lambda extra: pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                  b"<< /Type /Page /Parent 2 0 R " + extra + b" /Contents 4 0 R >>", text_content])
    write("pdf-no-mediabox.pdf", pdf_page(b""), "ok-or-error")
    write("pdf-negative-mediabox.pdf", pdf_page(b"/MediaBox [0 0 -612 -792]"), "ok-or-error")
    write("pdf-rotate-90.pdf", pdf_page(b"/MediaBox [0 0 612 792] /Rotate 90"), "ok")
    write("pdf-rotate-odd.pdf", pdf_page(b"/MediaBox [0 0 612 792] /Rotate 45"), "ok")
    write("pdf-kids-not-array.pdf", pdf([catalog, b"<< /Type /Pages /Kids 3 0 R /Count 1 >>", page3, text_content]), "ok-or-error")
    write("pdf-count-not-number.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count (one) >>", page3, text_content]), "ok-pages:1")
    write("pdf-contents-missing-object.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                                  b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 99 0 R >>"]), "ok-or-error")
    write("pdf-stream-length-lies.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page3,
                                             b"<< /Length 99999999 >>\nstream\nBT /F1 24 Tf 72 700 Td (x) Tj ET\nendstream"]), "ok-or-error")
    write("pdf-header-only.pdf", b"%PDF-1.7\n", "error")
    write("pdf-same-page-twice.pdf", pdf([catalog, b"<< /Type /Pages /Kids [3 0 R 3 0 R] /Count 2 >>", page3, text_content]), "ok-or-error")
    write("pdf-deep-tree.pdf", pdf([catalog] + [f"<< /Type /Pages /Kids [{i + 3} 0 R] /Count 1 >>".encode() for i in range(200)] +
                                   [b"<< /Type /Page /MediaBox [0 0 612 792] /Contents 203 0 R >>", text_content]), "ok-or-error")
    write("text-named.pdf", b"This is not a PDF at all, only words.\n" * 20, "error")
    # Images
    row_page = big_text_page()
    write("sixteen-bit.tif", save(Image.fromarray(np.asarray(row_page).astype(np.uint16) * 257), "TIFF"), "text:quick")
    write("one-bit.png", save(row_page.convert("1"), "PNG"), "text:quick")
    write("progressive.jpg", save(row_page.convert("RGB"), "JPEG", quality=85, progressive=True), "text:quick")
    write("one-bit.bmp", save(row_page.convert("1"), "BMP"), "text:quick")
    tif_pages = io.BytesIO()
    row_page.save(tif_pages, "TIFF", save_all=True, append_images=[row_page.rotate(180)], compression="tiff_deflate")
    two = tif_pages.getvalue()
    write("tiff-second-page-cut.tif", two[: len(two) - 2000], "ok-or-error")
    write("gif-named.png", save(row_page, "GIF"), "error")
    write("webp.webp", save(row_page.convert("RGB"), "WEBP"), "error")
    ihdr_zero = png[:16] + struct.pack(">II", 0, 0) + png[24:]
    write("png-zero-size.png", ihdr_zero, "error")
    jpeg_bad_dims = bytearray(save(Image.new("L", (40, 40), 255), "JPEG"))
    sof = jpeg_bad_dims.find(b"\xff\xc0")
    jpeg_bad_dims[sof + 5:sof + 9] = b"\xff\xff\xff\xff"
    write("jpeg-65535-square.jpg", bytes(jpeg_bad_dims), "ok-or-error")
    # Transparency: ink drawn as opaque pixels over a fully transparent (black) background.
    alpha = words.point(lambda v: 255 - v)
    rgba = Image.merge("RGBA", [Image.new("L", words.size, 0)] * 3 + [alpha])
    write("transparent-rgba.png", save(rgba, "PNG"), "text:quick")
    write("transparent-grey-alpha.png", save(Image.merge("LA", [Image.new("L", words.size, 0), alpha]), "PNG"), "text:quick")
    pal = Image.new("P", words.size, 0)
    pal.putpalette([0, 0, 0, 0, 0, 0] + [0] * 762)
    pal.paste(1, mask=words.point(lambda v: 255 if v < 128 else 0).convert("1"))
    write("transparent-palette.png", save(pal, "PNG", transparency=0), "text:quick")
    write("white-on-black.png", save(words.point(lambda v: 255 - v), "PNG"), "text:quick")
    write("upside-down.png", save(words.rotate(180), "PNG"), "text:quick")
    write("rotated-90.png", save(words.rotate(90, expand=True), "PNG"), "text:quick")
    write("rotated-270.png", save(words.rotate(270, expand=True), "PNG"), "text:quick")
    # Two pages just under the 200-megapixel limit in one folder: read one at a time (the run's
    # pixel budget), under the test's 4 GB address-space limit.
    big = os.path.join(out, "two-large-pages")
    os.makedirs(big, exist_ok=True)
    for i in (1, 2):
        page = Image.new("L", (14000, 14000), 255)
        ImageDraw.Draw(page).text((200, 200), f"large page {i}", fill=0)
        page.save(os.path.join(big, f"p{i}.png"), compress_level=1)
    cases.append(("two-large-pages", "ok"))
    write(b"latin1-name-\xe9t\xe9.png".decode("utf-8", "surrogateescape"), png, "ok")
    write("name with\nnewline.png", png, "ok")
    # Odd paths
    write("página 日本語 with spaces.png", png, "ok")
    write(("long-" * 48) + "name.png", png, "ok")
    loop = os.path.join(out, "loop.png")
    if os.path.lexists(loop):
        os.remove(loop)
    os.symlink("loop.png", loop)
    cases.append(("loop.png", "error"))
    # One case a line: EXPECT<TAB>NAME, the name's bytes percent-encoded where they are not printable ASCII.
    # Not a case: the good page each case's project takes afterwards.
    with open(os.path.join(out, "good-page.png"), "wb") as f:
        f.write(save(big_text_page(1100, 420, ["A good page read afterwards", "with zebras and walnuts."]), "PNG"))
    with open(os.path.join(out, "MANIFEST"), "w", encoding="ascii") as f:
        for name, expect in cases:
            f.write(f"{expect}\t{urllib.parse.quote_from_bytes(os.fsencode(name), safe=' /-_.')}\n")
    print(f"{len(cases)} cases in {out}")


if __name__ == "__main__":
    main()
