// Process-wide settings an application using the engine makes once, at the start of main().
#pragma once

#include <string>

namespace quire {

// The heap for large activations. PP-OCR's networks allocate and free tens of megabytes per
// node; glibc serves anything above its mmap threshold with a fresh mmap, so each such buffer
// costs the kernel's page faults, zeroing and munmap. This keeps them in the heap (mmap threshold
// 1 GB; freed memory returned to the system above 128 MB at the heap's top): faster, for more peak
// memory (the figures are in docs/BENCHMARKS.md). Left as it is where $GLIBC_TUNABLES sets
// malloc's own values, and on C libraries other than glibc.
void tuneHeapForLargeBuffers();

// One single-threaded Tesseract per worker: ~2.5x faster per page than Tesseract's OpenMP threads
// on the machines measured (README). OpenMP reads its limit when the library loads, before main,
// so where $OMP_THREAD_LIMIT is not set this sets it to 1 and starts the program again with
// `argv`; it returns only where it was set already (or the restart failed: then as it is).
void runTesseractSingleThreaded(char** argv);

// The matrix kernels OpenBLAS chose as it loaded ("Cooperlake", "Haswell"...: by the CPU, or by
// $OPENBLAS_CORETYPE), for benchmark records: they set the recognizer's speed.
std::string blasKernels();
// The kernel of the front-end's matrix products: "avx512" (Quire's own, where the CPU has it,
// whatever OpenBLAS chose) or "openblas".
std::string productKernel();

}  // namespace quire
