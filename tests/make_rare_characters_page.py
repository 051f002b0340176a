#!/usr/bin/python3
"""Writes tests/fixtures/rare_characters_zh.png: three lines of project-written Chinese whose
characters 陕 沪 橱 柿 棺 侄 寅 the shipped reader never saw in training (its character_counts.tsv),
for tst_ppocr's rareCharactersFollowTheFrontEnd. Needs Pillow and fonts-noto-cjk (tools/train/setup.sh):

    /usr/bin/python3 tests/make_rare_characters_page.py
"""
import os

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"
LINES = ["那年秋天，他从陕西回到沪上，", "在橱窗前看见棕色的柿子和一只", "旧棺木，想起侄子寅时出门的事。"]

font = ImageFont.truetype(FONT, 44, index=2)  # the collection's Simplified Chinese face
page = Image.new("L", (1000, 330), 255)
draw = ImageDraw.Draw(page)
for i, line in enumerate(LINES):
    draw.text((60, 40 + i * 90), line, font=font, fill=0)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "rare_characters_zh.png")
page.save(out, optimize=True)
print(out)
