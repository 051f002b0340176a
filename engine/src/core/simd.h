// QUIRE_CLONES: on x86-64 with GCC, a function is compiled twice, for AVX2 and for the baseline
// (SSE2), and the loader picks the AVX2 one where the CPU has it (target_clones). The package
// stays runnable on any x86-64 machine while the hot loops use 8-wide vectors where they can.
// No fused multiply-adds are enabled, so both clones compute the same values. Not under
// ThreadSanitizer: the loader calls the clones' resolvers before its runtime is up (a crash).
#pragma once
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define QUIRE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QUIRE_CLONES
#endif
