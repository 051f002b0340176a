// A process-wide cache of freed activation buffers for the neural front-end. glibc gives large
// blocks back to the system on free (and each thread has its own arena), so a recogniser that
// runs line after line on several threads faulted its buffers in anew every call; buffers of a
// megabyte or more are kept here for reuse instead, up to a shared limit (docs/BENCHMARKS.md).
#pragma once

#include <cstddef>

namespace quire::nn {

// Bytes a request of `bytes` is served with: small requests unchanged, large ones rounded up to
// one of eight sizes per doubling, so that buffers of nearby sizes can stand in for each other.
size_t bufferCacheRoundedSize(size_t bytes);

// Memory of bufferCacheRoundedSize(bytes) bytes: a cached buffer of that size when one is free,
// else a new one (operator new). Thread-safe.
void* bufferCacheAllocate(size_t bytes);

// Gives back what bufferCacheAllocate(bytes) returned: a large buffer is kept for reuse, and the
// oldest kept ones are freed while the cache holds more than its limit. Thread-safe.
void bufferCacheFree(void* p, size_t bytes) noexcept;

// Bytes the cache holds now (for tests).
size_t bufferCacheHeldBytes();

// Frees every kept buffer (for tests; the memory returns to the system).
void bufferCacheTrim();

}  // namespace quire::nn
