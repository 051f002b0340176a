#!/usr/bin/env bash
# Packs what the GPU machine needs to run the engine's own CUDA paths (the decode session and the
# PP-OCR front-end): it has nvcc, CMake and the CUDA libraries, but not Qt, OpenCV, Tesseract or
# OpenBLAS, and nothing can be installed there. So tools/gpu/decoder_device_check is built here
# and packed with every shared library it uses except glibc and cuBLAS (which the GPU machine
# has), and with the PP-OCR model files. tools/gpu-check.sh unpacks and runs it when the pack is
# there.
#
#   bash tools/gpu-carry.sh          # the decode session: .gpu-carry/decoder.tar.xz (21 MB)
#   bash tools/gpu-carry.sh ppocr    # the front-end: .gpu-carry-ppocr/ppocr.tar.xz (48 MB, models
#                                    # included; with the repository it fills a run's 64 MiB alone)
#   device run, carry [".gpu-carry"] or [".gpu-carry-ppocr"]:  bash tools/gpu-check.sh
# (both folders are ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
what=${1:-decoder}
case "$what" in
    decoder) target=decoder_device_check; out=.gpu-carry/decoder.tar.xz ;;
    ppocr) target=ppocr_device_check; out=.gpu-carry-ppocr/ppocr.tar.xz ;;
    *) echo "usage: bash tools/gpu-carry.sh [decoder|ppocr]" >&2; exit 2 ;;
esac
cmake --build "$build" --target "$target"
bin="$build/tools/gpu/$target"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/quire-carry/lib"
cp "$bin" "$stage/quire-carry/"
strip --strip-unneeded "$stage/quire-carry/$target"  # its debug information is most of it
ldd "$bin" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    case "$name" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcublas*|libcuda*) continue ;;
    esac
    cp -L "$path" "$stage/quire-carry/lib/$name"
done
# The PP-OCR model files the setup script installed (the GPU machine cannot fetch them).
ppocr=none
if [ "$what" = ppocr ]; then
    ppocr=""
    for d in "${QUIRE_PPOCR_DIR:-}" "$build/models/ppocr-v4" "${XDG_DATA_HOME:-$HOME/.local/share}/quire/models/ppocr-v4"; do
        if [ -n "$d" ] && [ -f "$d/ch_PP-OCRv4_rec_infer.onnx" ]; then ppocr=$d; break; fi
    done
fi
if [ "$ppocr" = none ]; then
    :
elif [ -n "$ppocr" ]; then
    mkdir -p "$stage/quire-carry/ppocr"
    cp "$ppocr"/ch_PP-OCRv4_det_infer.onnx "$ppocr"/ch_PP-OCRv4_rec_infer.onnx "$ppocr"/ppocr_keys_v1.txt "$stage/quire-carry/ppocr/"
else
    echo "gpu-carry: no PP-OCR models found (bash installer/setup-deps.sh installs them)" >&2
    exit 1
fi
mkdir -p "$(dirname "$out")"
XZ_OPT=-9e tar -C "$stage" -cJf "$out" quire-carry
ls -la "$out"
