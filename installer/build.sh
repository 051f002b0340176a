#!/usr/bin/env bash
# Configures and builds Quire into ./build (Release with debug info, ccache when present);
# arguments go to `cmake --build` (e.g. --target tst_decoder).
# CUDA: built when nvcc is found (QUIRE_CUDA=AUTO); override with QUIRE_CUDA=ON|OFF in the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUIRE_CUDA="${QUIRE_CUDA:-AUTO}" \
      -DQUIRE_SHARED_DIR="$(pwd)/../shared" ${CMAKE_EXTRA_ARGS:-}
cmake --build "$BUILD_DIR" -j "$JOBS" "$@"
