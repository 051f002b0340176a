#!/usr/bin/env bash
# What a refactor must leave unchanged, written to a folder: run it with the build before and the
# build after, then `diff -r BEFORE AFTER` (docs/ARCHITECTURE.md). It records
#   sample/      every export of the bundled sample volume (DOCX and PDF as their text),
#   features/    `quire-cli features` of the sample volume's pages (SHA-256 of each file),
#   decode.txt   `bench decode` checksums: SR-SWA, R-SWA, full, two threads, a batch of three,
#   hyp/         the page texts of every engine on ../shared/eval (tools/eval/eval.py --hyp-dir).
# Usage: tools/bench/behaviour_snapshot.sh BUILD_DIR OUT_DIR [--no-eval]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
out=$2
cli=$build/app/quire-cli
mkdir -p "$out"
out=$(cd "$out" && pwd)
export OMP_THREAD_LIMIT=1
# The sample from one fixed path, since exports and features record where their source was.
input=/tmp/quire-behaviour-snapshot
mkdir -p "$input"
cp "$here/resources/samples/sample_volume.pdf" "$input/sample_volume.pdf"

echo "behaviour-snapshot: sample volume exports"
rm -rf "$out/sample" "$out/sample.quire"*
"$cli" transcribe "$input/sample_volume.pdf" --project "$out/sample.quire" \
    --export md,docx,txt,hocr,alto,page,pdf --out "$out/sample" >/dev/null 2>"$out/sample.log"
(cd "$out/sample" && unzip -p book.docx word/document.xml >book.docx.xml && rm book.docx &&
 pdftotext -layout book.pdf book.pdf.txt && rm book.pdf)
# Paths and times differ between runs, not between builds: keep them out.
sed -i -E 's#<(fileName|sourceImageInformation)>[^<]*#<\1>#g; s#(Created|LastChange)>[^<]*#\1>#g' \
    "$out"/sample/book.alto/*.xml "$out"/sample/book.page/*.xml 2>/dev/null || true
rm -f "$out/sample.quire"*

echo "behaviour-snapshot: features"
rm -rf "$out/features.d"
"$cli" features "$input/sample_volume.pdf" --out "$out/features.d" >/dev/null 2>&1
(cd "$out/features.d" && sha256sum ./* ) >"$out/features.sha256"
rm -rf "$out/features.d"

echo "behaviour-snapshot: bench decode checksums"
{
  for mode in srswa rswa full; do
    printf '%s ' "$mode"; "$cli" bench decode --pages 12 --mode $mode --json | grep -o '"checksum":"[0-9a-f]*"'
  done
  printf 'srswa-threads2 '; "$cli" bench decode --pages 12 --mode srswa --threads 2 --json | grep -o '"checksum":"[0-9a-f]*"'
  printf 'srswa-batch3 '; "$cli" bench decode --pages 6 --mode srswa --batch 3 --json | grep -o '"checksum":"[0-9a-f]*"'
} >"$out/decode.txt"

if [ "${3:-}" != "--no-eval" ]; then
  echo "behaviour-snapshot: every engine on ../shared/eval"
  rm -rf "$out/hyp"
  /usr/bin/python3 "$here/tools/eval/eval.py" "$here/../shared/eval/MANIFEST.tsv" --quire-cli "$cli" \
      --engines tesseract,ppocr,reader --no-tesseract-cli --threads 2 --hyp-dir "$out/hyp" >"$out/eval.txt"
fi
echo "behaviour-snapshot: written to $out"
