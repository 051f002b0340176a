#!/usr/bin/env bash
# Captures the screenshots of the workbench's views in docs/ (light theme, offscreen): the sample
# volume transcribed into a scratch project, a page corrected by hand and read again with PP-OCR,
# then the window with the Find panel, Page History, Read Again, the page list's menu and page 1
# in regions drawn by hand.
# Needs a build (bash installer/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cli=./build/app/quire-cli
project="$work/sample.quire"
OMP_THREAD_LIMIT=1 "$cli" transcribe resources/samples/sample_volume.pdf --project "$project" > /dev/null 2>&1
# Page 2 corrected by hand (its first "the" made "The"), then read again: both stay versions.
"$cli" status --project "$project" --pages --json | /usr/bin/python3 -c '
import json, sys
text = json.load(sys.stdin)["pageList"][1]["text"]
open(sys.argv[1], "w").write(text.replace(" the ", " The ", 1))' "$work/page2.txt"
"$cli" correct --project "$project" --page 2 --text-file "$work/page2.txt" > /dev/null
OMP_THREAD_LIMIT=1 "$cli" transcribe --project "$project" --reread 2 --engine ppocr > /dev/null 2>&1
# Page 1 in regions drawn by hand: its heading, its body, the folio at its foot left out.
"$cli" regions --project "$project" --page 1 --set "360,300,1010,240:heading;160,570,1300,1720:text;600,2290,450,120:ignore" 2> /dev/null
OMP_THREAD_LIMIT=1 "$cli" transcribe --project "$project" --reread 1 > /dev/null 2>&1
# A fresh configuration: the window as a new user first sees it, not as this machine left it.
export XDG_CONFIG_HOME="$work/config"
shoot() {
    QT_QPA_PLATFORM=offscreen ./build/app/quire --project "$project" --theme light --screenshot "$@" 2> /dev/null
}
shoot docs/screenshot-find.png --page 2 --show find:records
shoot docs/screenshot-history.png --page 2 --show history
shoot docs/screenshot-reread.png --page 2 --show reread
shoot docs/screenshot-pages.png --page 2 --show pages
shoot docs/screenshot-regions.png --page 1 --show regions
ls -l docs/screenshot-*.png
