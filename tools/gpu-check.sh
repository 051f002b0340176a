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
#   here first:  bash tools/gpu-carry.sh && bash tools/gpu-carry.sh ppocr
#   device run:  bash tools/gpu-check.sh         (carry [".gpu-carry"]), then at once, while the
#                bash tools/gpu-check.sh ppocr   machine is still warm (carry [".gpu-carry-ppocr"]):
#                the two packs and the repository exceed one run's 64 MiB together; the second run
#                runs the front-end's pack alone)
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-decoder}
case "$what" in decoder|ppocr) ;; *) echo "usage: bash tools/gpu-check.sh [decoder|ppocr]" >&2; exit 2 ;; esac
OUT=${OUT:-$(pwd)/gpu-report}
mkdir -p "$OUT"
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1
    nvcc --version | tail -1
} > "$OUT/machine.txt"
status=0
# Machine code for the lent GPU's own architecture only (9.0 on an H200: "90"), which halves nvcc's
# time against cuda/'s default of 80 and 90; PTX-only builds would run without Hopper's instructions.
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
if [ "$what" = decoder ]; then
    timeout 200 cmake -S cuda -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release ${arch:+-DCMAKE_CUDA_ARCHITECTURES=$arch} > "$OUT/build.log" 2>&1 &&
        timeout 200 cmake --build build-cuda -j "$(nproc)" >> "$OUT/build.log" 2>&1 || status=1
fi
if [ "$what" = decoder ] && [ $status -eq 0 ]; then
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
[ "$what" = decoder ] && runCarried .gpu-carry/decoder.tar.xz 300 "$OUT/decoder-session.txt" /tmp/quire-carry/decoder_device_check ${QUIRE_GPU_CHECK_ARGS:-}
# The engine's PP-OCR front-end on the GPU against the CPU (bash tools/gpu-carry.sh ppocr, then
# carry .gpu-carry-ppocr: too large to travel with the decoder's pack in one run).
[ "$what" = ppocr ] && runCarried .gpu-carry-ppocr/ppocr.tar.xz 240 "$OUT/ppocr-session.txt" /tmp/quire-carry/ppocr_device_check /tmp/quire-carry/ppocr
# Speed of the step alone: JSON lines per shape, mode and page (docs/BENCHMARKS.md says how to read them).
if [ "$what" = decoder ] && [ -x ./build-cuda/decoder_step_bench ]; then
    timeout 120 ./build-cuda/decoder_step_bench > "$OUT/decoder-bench.jsonl" 2>&1 || status=1
fi
echo "exit $status" >> "$OUT/machine.txt"
cat "$OUT/machine.txt" "$OUT/cuda-ops.txt" "$OUT/nn-ops.txt" "$OUT/decoder-step.txt" "$OUT/decoder-session.txt" "$OUT/ppocr-session.txt" "$OUT/decoder-bench.jsonl" 2>/dev/null
exit $status
