#!/usr/bin/python3
"""Writes tests/fixtures/page_end_hyphen.png: the foot of a book page of project-written text whose
last line ends in a word broken over the page break ("bind-"), with the folio below it, for
tst_ppocr's aWordBrokenOverThePageKeepsItsHyphen. Needs Pillow and fonts-liberation2
(installer/setup-deps.sh):

    /usr/bin/python3 tests/make_page_end_hyphen_page.py
"""
import os

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/liberation2/LiberationSerif-Regular.ttf"
LINES = ["The sheets were folded and gathered, then sewn",
         "on cords; the boards were covered in calf, and",
         "the spine was lettered in gold by the same bind-"]

font = ImageFont.truetype(FONT, 42)
page = Image.new("L", (1100, 380), 255)
draw = ImageDraw.Draw(page)
for i, line in enumerate(LINES):
    draw.text((60, 40 + i * 58), line, font=font, fill=0)
draw.text((530, 300), "17", font=ImageFont.truetype(FONT, 32), fill=0)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "page_end_hyphen.png")
page.save(out, optimize=True)
print(out)
