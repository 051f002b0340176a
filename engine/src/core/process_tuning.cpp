// Process-wide settings made once at start-up: the heap for large activations, OpenMP's threads;
// the names of the matrix kernels in use.
#include "quire/core/process_tuning.h"

#include "nn/gemm.h"

#include <cblas.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace quire {

void tuneHeapForLargeBuffers() {
#ifdef __GLIBC__
    if (const char* t = std::getenv("GLIBC_TUNABLES"); t && std::strstr(t, "glibc.malloc.")) return;
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

void runTesseractSingleThreaded(char** argv) {
    if (std::getenv("OMP_THREAD_LIMIT")) return;
    setenv("OMP_THREAD_LIMIT", "1", 1);
    execv("/proc/self/exe", argv);
}

std::string blasKernels() { return openblas_get_corename(); }

std::string productKernel() { return nn::cpu::gemmKernel(); }

}  // namespace quire
