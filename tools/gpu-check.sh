#!/usr/bin/env bash
# The GPU machine's check, in one run under ten minutes. That machine has nvcc, CMake and ninja but
# not Qt, OpenCV or OpenBLAS, so it builds cuda/ on its own and runs its gpu-labelled checks (every
# CUDA op against its CPU reference, the decoder's and the PP-OCR front-end's; the decoder's whole
# step, graph-captured and layer by layer, against plain loops); then, when carried, the engine's
# own CUDA decode session against its CPU session and `bench decode` on both
# (tools/gpu/decoder_device_check, packed by tools/gpu-carry.sh), or the PP-OCR front-end against
# its CPU path (tools/gpu/ppocr_device_check, gpu-carry.sh ppocr); then the step's benchmark. The
# report goes under $OUT (./gpu-report elsewhere); docs/BENCHMARKS.md says how to read it.
#
#   here first:  bash tools/gpu-carry.sh   (packs the engine's CUDA session check, ~45 s)
#   device run:  bash tools/gpu-check.sh   (carry [".gpu-carry"]; a second run may carry [".gpu-carry-ppocr"])
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
timeout 200 cmake -S cuda -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 &&
    timeout 200 cmake --build build-cuda -j "$(nproc)" >> "$OUT/build.log" 2>&1 || status=1
if [ $status -eq 0 ]; then
    # The gpu-labelled checks of cuda/ (what `ctest -L gpu` runs there), each once, with output.
    timeout 120 ./build-cuda/cuda_ops_check > "$OUT/cuda-ops.txt" 2>&1 || status=1
    timeout 120 ./build-cuda/nn_ops_check > "$OUT/nn-ops.txt" 2>&1 || status=1
    timeout 120 ./build-cuda/decoder_step_check > "$OUT/decoder-step.txt" 2>&1 || status=1
fi
# A program packed on the development machine (tools/gpu-carry.sh), unpacked and run with its own
# libraries first and this machine's cuBLAS: runCarried PACK SECONDS OUTFILE PROGRAM [ARGS...].
# Its output is flushed line by line, so a run cut by the timeout still reports what it did.
runCarried() {
    local pack=$1 seconds=$2 out=$3 cublas
    shift 3
    [ -f "$pack" ] || return 0
    rm -rf /tmp/quire-carry && tar -C /tmp -xJf "$pack"
    cublas=$(dirname "$(find /usr /opt -name 'libcublas.so.13' 2>/dev/null | head -1)" 2>/dev/null)
    LD_LIBRARY_PATH=/tmp/quire-carry/lib:/usr/local/cuda/lib64:${cublas:-/usr/local/cuda/lib64} \
        timeout "$seconds" "$@" > "$out" 2>&1 || status=1
}
# The engine's own CUDA session against the CPU session step by step, and bench decode on both
# (bash tools/gpu-carry.sh, then carry .gpu-carry).
runCarried .gpu-carry/decoder.tar.xz 300 "$OUT/decoder-session.txt" /tmp/quire-carry/decoder_device_check ${QUIRE_GPU_CHECK_ARGS:-}
# The engine's PP-OCR front-end on the GPU against the CPU (bash tools/gpu-carry.sh ppocr, then
# carry .gpu-carry-ppocr: too large to travel with the decoder's pack in one run).
runCarried .gpu-carry-ppocr/ppocr.tar.xz 240 "$OUT/ppocr-session.txt" /tmp/quire-carry/ppocr_device_check /tmp/quire-carry/ppocr
# Speed of the step alone: JSON lines per shape, mode and page (docs/BENCHMARKS.md says how to read them).
if [ -x ./build-cuda/decoder_step_bench ]; then
    timeout 120 ./build-cuda/decoder_step_bench > "$OUT/decoder-bench.jsonl" 2>&1 || status=1
fi
echo "exit $status" >> "$OUT/machine.txt"
cat "$OUT/machine.txt" "$OUT/cuda-ops.txt" "$OUT/nn-ops.txt" "$OUT/decoder-step.txt" "$OUT/decoder-session.txt" "$OUT/ppocr-session.txt" "$OUT/decoder-bench.jsonl" 2>/dev/null
exit $status
