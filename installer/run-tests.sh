#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install dependencies, build, run ctest; then
# the same unit, integration and GUI tests once more in an AddressSanitizer + UndefinedBehavior-
# Sanitizer build (any finding fails), and the decoder's two-thread tests under ThreadSanitizer.
# GPU-labelled tests skip themselves where no GPU is present.
# QUIRE_SKIP_SANITIZERS=1 and QUIRE_SKIP_FUZZ=1 leave those stages out (e.g. for a quick local run);
# then a short libFuzzer run of each fuzz target (fuzz/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/setup-deps.sh
bash installer/build.sh
(cd build && ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 1800)

if [ "${QUIRE_SKIP_SANITIZERS:-0}" != 1 ]; then
    echo "== sanitizer stage: ASan + UBSan build of the unit, integration and GUI tests"
    BUILD_DIR=build-asan QUIRE_CUDA=OFF CMAKE_EXTRA_ARGS="-DQUIRE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug" \
        bash installer/build.sh
    # tst_memory compares peak memory (meaningless under ASan's shadow memory); tst_hostile runs each
    # case under a 4 GB address-space limit, which cannot hold ASan's shadow reservation; tst_crash's
    # timing assumes the normal build. Leaks inside third-party libraries are in tests/lsan.supp.
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$(pwd)/../tests/lsan.supp" \
        ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 1800 -L "unit|integration|gui" -E "tst_memory|tst_crash|tst_hostile")
    echo "== sanitizer stage: ThreadSanitizer build of the decoder's two-thread draft passes and batches, and the step batcher"
    BUILD_DIR=build-tsan QUIRE_CUDA=OFF CMAKE_EXTRA_ARGS="-DQUIRE_TSAN=ON -DQUIRE_BUILD_GUI=OFF" \
        bash installer/build.sh --target tst_decoder_batch tst_step_batcher
    # tests/tsan.supp: a false report inside Qt Test's own watchdog thread (the file says why).
    TSAN_OPTIONS="halt_on_error=1 suppressions=$(pwd)/tests/tsan.supp" build-tsan/tests/tst_decoder_batch twoThreadsComputeWhatOneDoes twoThreadsPrefillWhatOneDoes draftStepsMatchPlainSteps \
        batchedStepsMatchSessionsAlone sharedDeviceTakesSessionsFromTwoThreads
    # Several threads' drafts computed in one pass (StepBatcher), sessions of two threads among them.
    TSAN_OPTIONS="halt_on_error=1 suppressions=$(pwd)/tests/tsan.supp" build-tsan/tests/tst_step_batcher
fi

if [ "${QUIRE_SKIP_FUZZ:-0}" != 1 ]; then
    echo "== fuzz stage: libFuzzer targets (safetensors loader, project import, exporters), ${FUZZ_SECONDS:-20}s each"
    bash fuzz/run.sh
fi
