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
import zlib

import numpy as np
from PIL import Image, ImageDraw


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
        with open(os.path.join(out, name), "wb") as f:
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
    # Odd paths
    write("página 日本語 with spaces.png", png, "ok")
    write(("long-" * 48) + "name.png", png, "ok")
    loop = os.path.join(out, "loop.png")
    if os.path.lexists(loop):
        os.remove(loop)
    os.symlink("loop.png", loop)
    cases.append(("loop.png", "error"))
    with open(os.path.join(out, "MANIFEST"), "w", encoding="utf-8") as f:
        for name, expect in cases:
            f.write(f"{expect}\t{name}\n")
    print(f"{len(cases)} cases in {out}")


if __name__ == "__main__":
    main()
