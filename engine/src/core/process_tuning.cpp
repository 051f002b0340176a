// The heap settings for large activations (tuneHeapForLargeBuffers), made once at start-up.
#include "quire/core/process_tuning.h"

#include <cstdlib>
#include <cstring>

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

}  // namespace quire
