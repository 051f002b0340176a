#!/usr/bin/env bash
# Packs what the GPU machine needs to run the engine's own CUDA decode session: it has nvcc,
# CMake and the CUDA libraries, but not Qt or OpenBLAS, and nothing can be installed there. So
# tools/gpu/decoder_device_check is built here and packed with the shared libraries it uses
# (Qt Core and its ICU, OpenBLAS and its Fortran runtime, libstdc++), except glibc and cuBLAS,
# which the GPU machine has. tools/gpu-check.sh unpacks and runs it when the pack is there.
#
#   bash tools/gpu-carry.sh            # writes .gpu-carry/decoder.tar.xz (ignored by git)
#   device run, carry [".gpu-carry"]:  bash tools/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmake --build "$build" --target decoder_device_check
bin="$build/tools/gpu/decoder_device_check"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/quire-carry/lib"
cp "$bin" "$stage/quire-carry/"
ldd "$bin" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
    case "$name" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcublas*|libcuda*) continue ;;
    esac
    cp -L "$path" "$stage/quire-carry/lib/$name"
done
mkdir -p .gpu-carry
tar -C "$stage" -cJf .gpu-carry/decoder.tar.xz quire-carry
ls -la .gpu-carry/decoder.tar.xz
