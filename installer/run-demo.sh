#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install dependencies, build, and transcribe the bundled
# sample volume headless, writing Markdown, DOCX and a searchable PDF to out/sample/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/setup-deps.sh
bash installer/build.sh
rm -f out/sample.quire out/sample.quire-wal out/sample.quire-shm
mkdir -p out
./build/app/quire-cli transcribe resources/samples/sample_volume.pdf --project out/sample.quire \
    --lang eng --export md,docx,pdf --out out/sample
./build/app/quire-cli status --project out/sample.quire
echo "Done: out/sample/book.md, out/sample/book.docx, out/sample/book.pdf"
