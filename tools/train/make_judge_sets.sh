#!/bin/bash
# The three generated held-out sets the SR-SWA runs' rule part 3 reads (docs/RUNS_SRSWA.md, run 27
# on), made again into OUT (default data/judge), scored as printed (--truth page): valen18 (23 full
# English pages), valzh18b (12 Chinese pages), test_cur (30 short pages, Chinese and English, narrow
# and wide columns). Same commands and seeds as docs/RUNS_GERMAN.md and docs/RUNS.md give them; the
# generator has changed since, so these are other pages than the earlier runs' figures were read on:
# measure the shipped model again beside a new one.
set -euo pipefail
out=${1:-data/judge}
mk() { /usr/bin/python3 "$(dirname "$0")/make_pages.py" --out "$out/$1" --truth page "${@:2}"; }
if [ -e "$out" ]; then echo "make_judge_sets.sh: $out exists; remove it or name another folder" >&2; exit 1; fi
mk valen18 --docs 8 --pages 3 --zh-share 0 --heads-share 0.5 --punct-share 0.5 --numbers-share 0.5 \
    --vocab-share 0.5 --seed 8201
mk valzh18b --docs 4 --pages 3 --zh-share 1 --zh-numbers-share 0.7 --seed 8301
mk test_cur --docs 10 --zh-share 0.6 --vocab-share 0.5 --zh-numbers-share 0.7 --heads-share 0.5 \
    --columns-share 0.5 --punct-share 0.5 --numbers-share 0.5 --pages 3 --lines 8 --seed 994
