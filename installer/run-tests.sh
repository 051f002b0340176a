#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install dependencies, build, run ctest.
# GPU-labelled tests skip themselves where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/setup-deps.sh
bash installer/build.sh
cd build
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 1800
