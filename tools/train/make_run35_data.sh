#!/bin/bash
# Run 35's training documents (docs/RUNS_SRSWA.md): run 34's mixture made again by make_pages.py
# into OUT (default data/v35) — a held-out volume, 20-page volumes, volumes that end on a broken
# word, 3-page rehearsal documents, single and 3-page documents, broken single pages. train.py makes
# their visual tokens with the quire-cli it is given, i.e. with the front-end as built.
set -euo pipefail
out=${1:-data/v35}
here=$(dirname "$0")
mk() { /usr/bin/python3 "$here/make_pages.py" --out "$out/$1" "${@:2}"; }
if [ -e "$out" ]; then echo "make_run35_data.sh: $out exists; remove it or name another folder" >&2; exit 1; fi

# The held-out volume (run 29's arguments); its second document is left out, as in runs 29-34.
mk a_heldout --docs 2 --pages 6 --zh-share 0.5 --vocab-share 0.5 --zh-numbers-share 0.7 \
    --heads-share 0.5 --punct-share 0.5 --numbers-share 0.5 --seed 3291
# Rehearsal documents of 3 pages of 8 lines (run 12's kind); sorted after a_heldout, so the first
# four are held out with it (train.py holds out the first tenth).
mk b_rehearsal --docs 9 --zh-share 0.6 --vocab-share 0.5 --zh-numbers-share 0.7 --heads-share 0.7 \
    --punct-share 0.5 --numbers-share 0.5 --pages 3 --lines 8 --seed 3103
mk c_short1 --docs 8 --pages 1 --whole-volumes --end-on-hyphen-share 0.5 --zh-share 0.3 \
    --titles-share 0.6 --head-gap-share 0.5 --heads-share 0.5 --punct-share 0.5 --numbers-share 0.5 \
    --columns-share 0.2 --seed 3101
mk d_short3 --docs 8 --pages 3 --whole-volumes --end-on-hyphen-share 0.5 --zh-share 0.3 \
    --titles-share 0.6 --head-gap-share 0.5 --heads-share 0.5 --punct-share 0.5 --numbers-share 0.5 \
    --columns-share 0.2 --seed 3102
# Twenty-page volumes, half of the English ones cut where a page ends on a broken word.
mk h3211 --docs 12 --pages 20 --whole-volumes --end-on-hyphen-share 0.5 --zh-share 0.5 \
    --vocab-share 0.5 --zh-numbers-share 0.7 --heads-share 0.5 --columns-share 0.3 --punct-share 0.5 \
    --numbers-share 0.5 --head-gap-share 0.2 --seed 3211
mk e3212 --docs 3 --pages 20 --whole-volumes --end-on-hyphen-share 1 --zh-share 0 --heads-share 0.5 \
    --punct-share 0.5 --numbers-share 0.5 --head-gap-share 0.2 --columns-share 0.3 --seed 3212
# Single pages that end on a broken word with no page after them.
mk f_broken --docs 10 --pages 1 --lines 8 --end-on-hyphen-share 1 --zh-share 0 --heads-share 0.3 \
    --punct-share 0.5 --numbers-share 0.5 --seed 3201
mk g_broken --docs 4 --pages 1 --whole-volumes --end-on-hyphen-share 1 --zh-share 0 --titles-share 0.3 \
    --head-gap-share 0.5 --punct-share 0.5 --numbers-share 0.5 --columns-share 0.2 --seed 3202

# Out, as in runs 29-34: the held-out set's second document, and volumes shorter than 20 pages.
mkdir -p "$out-out"
mv "$out/a_heldout/doc0001" "$out-out/a_heldout_doc0001"
for d in "$out"/h3211/doc*; do
    n=$(ls "$d" | grep -c '^p[0-9]*\.png$' || true)
    if [ "$n" -lt 20 ]; then mv "$d" "$out-out/h3211_$(basename "$d")"; echo "left out: $d ($n pages)"; fi
done
echo "made $(find "$out" -name 'p*.png' | wc -l) pages in $(find "$out" -mindepth 2 -maxdepth 2 -type d | wc -l) documents under $out"
