#!/usr/bin/env bash
# The GPU machine's check, in one run under ten minutes: builds the CUDA library on its own (the
# machine has nvcc, CMake and ninja, but not Qt or OpenCV), runs the gpu-labelled op checks (every
# CUDA op against its CPU reference: the decoder's and the PP-OCR front-end's; the decoder's whole
# step, graph-captured and layer by layer, against plain loops), then the step's benchmark, and
# writes a report
# under $OUT (./gpu-report elsewhere).
#
#   device run:  bash tools/gpu-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(pwd)/gpu-report}
mkdir -p "$OUT"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    nvcc --version | tail -1
} > "$OUT/machine.txt"
status=0
timeout 300 cmake -S cuda -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 &&
    timeout 300 cmake --build build-cuda -j "$(nproc)" >> "$OUT/build.log" 2>&1 || status=1
if [ $status -eq 0 ]; then
    (cd build-cuda && timeout 240 ctest -L gpu --output-on-failure) > "$OUT/gpu-tests.log" 2>&1 || status=1
    ./build-cuda/cuda_ops_check > "$OUT/cuda-ops.txt" 2>&1 || status=1
    ./build-cuda/nn_ops_check > "$OUT/nn-ops.txt" 2>&1 || status=1
    ./build-cuda/decoder_step_check > "$OUT/decoder-step.txt" 2>&1 || status=1
    # Speed: JSON lines per shape, mode and page (docs/BENCHMARKS.md says how to read them).
    timeout 240 ./build-cuda/decoder_step_bench > "$OUT/decoder-bench.jsonl" 2>&1 || status=1
fi
echo "exit $status" >> "$OUT/machine.txt"
cat "$OUT/machine.txt" "$OUT/cuda-ops.txt" "$OUT/nn-ops.txt" "$OUT/decoder-step.txt" "$OUT/decoder-bench.jsonl" 2>/dev/null
exit $status
