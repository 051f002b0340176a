// Process-wide settings an application using the engine makes once, at the start of main().
#pragma once

namespace quire {

// The heap for large activations. PP-OCR's networks allocate and free tens of megabytes per
// node (a batch of line images through the recognizer); glibc serves anything above its mmap
// threshold (32 MB at most by default) with a fresh mmap, so each such buffer cost the kernel's
// page faults and zeroing, and its munmap: 2.6-2.7 s of system time in a 19.0-19.5 s reader run
// over four book pages. Kept in the heap (mmap threshold 1 GB; freed memory returned to the
// system above 128 MB at the heap's top) that run took 17.3-17.7 s (system 1.0 s) and PP-OCR's
// 8.7-9.4 s instead of 9.7-9.8 s, for more peak memory: 638 MB instead of 564 MB with the
// reader, 790-805 MB instead of 669 MB with PP-OCR's two workers (docs/BENCHMARKS.md,
// 2026-12-01 night). Left as it is where $GLIBC_TUNABLES sets malloc's own values, and on C
// libraries other than glibc.
void tuneHeapForLargeBuffers();

}  // namespace quire
