#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for FUZZ_SECONDS (default 20;
# the CI stage). A longer campaign: FUZZ_SECONDS=3600 bash fuzz/run.sh; FUZZ_TARGETS="pdf images"
# picks targets. Crashes are written to
# fuzz/findings/ and fail the run; each finding becomes a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-20}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUIRE_FUZZ=ON \
    -DQUIRE_CUDA=OFF -DQUIRE_BUILD_GUI=OFF -DQUIRE_BUILD_TESTS=OFF > /dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_safetensors fuzz_project fuzz_exporters fuzz_onnx fuzz_decoder_state fuzz_pdf fuzz_images quire-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The targets' scratch files and anything the engine writes to the temporary folder stay in $work.
mkdir -p "$work/tmp"
export TMPDIR="$work/tmp"
mkdir -p fuzz/findings "$work/safetensors" "$work/project" "$work/exporters" "$work/onnx" "$work/decoder_state" "$work/pdf" "$work/images"
cp fuzz/corpus/safetensors/* "$work/safetensors/"
cp fuzz/corpus/exporters/* "$work/exporters/"
cp fuzz/corpus/onnx/* "$work/onnx/"
cp fuzz/corpus/pdf/* "$work/pdf/"
cp fuzz/corpus/images/* "$work/images/"
# Seeds made now, so they always match the current formats: a small valid safetensors file and a
# real project.
/usr/bin/python3 - "$work/safetensors/seed" <<'PY'
import json, struct, sys
hdr = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
       "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}, "__metadata__": {"k": "v"}}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + struct.pack("<4f", 1, 2, 3, 4) + b"\x80\x3f\x00\x40\x40\x40")
PY
printf 'character\tcount\na\t40\n\xe7\xa0\x94\t3\n \t7\n' > "$work/safetensors/counts"  # a reader's character_counts.tsv
# ONNX seeds: small graphs written with libonnx's Python binding, covering the operators the
# PP-OCR graphs use (the real models are too large for libFuzzer's input sizes).
/usr/bin/python3 fuzz/make_onnx_seeds.py "$work/onnx"
/usr/bin/python3 -c "from PIL import Image, ImageDraw; i=Image.new('L',(400,120),255); ImageDraw.Draw(i).text((10,40),'seed page',fill=0); i.save('$work/seed.png')"
OMP_THREAD_LIMIT=1 ./build-fuzz/app/quire-cli transcribe "$work/seed.png" --project "$work/project/seed.quire" > /dev/null 2>&1
rm -f "$work/project/"*.lock "$work/project/"*-wal "$work/project/"*-shm
cp fuzz/corpus/decoder_state/* "$work/decoder_state/" 2> /dev/null || true
status=0
for t in ${FUZZ_TARGETS:-safetensors project exporters onnx decoder_state pdf images}; do
    echo "== fuzz_$t for ${SECONDS_EACH}s"
    # fuzz_decoder_state writes a real saved state as its seed (always the current format).
    # -timeout and -rss_limit_mb: a loop or a memory explosion is a finding too.
    QUIRE_FUZZ_SEED_DIR="$work/decoder_state" ASAN_OPTIONS=detect_leaks=0 ./build-fuzz/fuzz/fuzz_$t -max_total_time="$SECONDS_EACH" -max_len=65536 \
        -timeout=30 -rss_limit_mb=3000 -print_final_stats=1 -artifact_prefix=fuzz/findings/$t- "$work/$t" 2>&1 \
        | grep -E "^#[0-9]+ +DONE|ERROR|SUMMARY|crash|Done|stat::number_of_executed_units|stat::peak_rss_mb|cov: " | tail -4 || true
    # Crashes, leaks, timeouts and out-of-memory inputs fail the run (any one kind is enough); slow
    # units are kept to look at.
    found=$(find fuzz/findings -maxdepth 1 -type f \( -name "$t-crash-*" -o -name "$t-leak-*" -o -name "$t-timeout-*" \
        -o -name "$t-oom-*" \) | sort)
    if [ -n "$found" ]; then
        echo "fuzz_$t: findings (each becomes a regression input, then is removed from fuzz/findings):"
        echo "$found" | sed 's/^/  /'
        status=1
    fi
done
exit $status
