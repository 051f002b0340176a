// Freed activation buffers kept for reuse (quire/nn/buffer_cache.h).
#include "quire/nn/buffer_cache.h"

#include <bit>
#include <cstdint>
#include <list>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>

namespace quire::nn {
namespace {

// Below this a request goes to the heap as it is: glibc keeps small blocks in its arenas anyway.
constexpr size_t kCachedFrom = size_t(1) << 20;
// The most bytes of freed buffers kept, over all threads: 64 MB steadied the reader's front-end for
// 56-100 MB more peak RSS; 128 and 256 gained no speed (docs/BENCHMARKS.md, 2026-12-05).
constexpr size_t kHeldLimit = size_t(64) << 20;

struct Cache {
    std::mutex mutex;
    // Kept buffers, oldest first, and per size the positions of that size's buffers in `order`.
    std::list<std::pair<size_t, void*>> order;
    std::unordered_multimap<size_t, std::list<std::pair<size_t, void*>>::iterator> bySize;
    size_t held = 0;

    void freeOldestWhileOver(size_t limit) {
        while (held > limit && !order.empty()) {
            auto [size, p] = order.front();
            auto range = bySize.equal_range(size);
            for (auto it = range.first; it != range.second; ++it) {
                if (it->second == order.begin()) {
                    bySize.erase(it);
                    break;
                }
            }
            order.pop_front();
            held -= size;
            ::operator delete(p);
        }
    }
};

// Never destroyed: a tensor freed during static destruction may still come here. What it holds
// at exit stays reachable from this pointer (no leak report) and returns with the process.
Cache& cache() {
    static Cache* c = new Cache;
    return *c;
}

}  // namespace

size_t bufferCacheRoundedSize(size_t bytes) {
    if (bytes < kCachedFrom) return bytes;
    // The power of two at or below `bytes`, cut in eight steps; round up to the next step.
    const size_t top = std::bit_floor(bytes);
    const size_t step = top / 8;
    return (bytes + step - 1) / step * step;
}

void* bufferCacheAllocate(size_t bytes) {
    const size_t size = bufferCacheRoundedSize(bytes);
    if (size >= kCachedFrom) {
        Cache& c = cache();
        std::lock_guard lock(c.mutex);
        auto it = c.bySize.find(size);
        if (it != c.bySize.end()) {
            void* p = it->second->second;
            c.order.erase(it->second);
            c.bySize.erase(it);
            c.held -= size;
            return p;
        }
    }
    return ::operator new(size);
}

void bufferCacheFree(void* p, size_t bytes) noexcept {
    if (!p) return;
    const size_t size = bufferCacheRoundedSize(bytes);
    if (size < kCachedFrom || size > kHeldLimit) {
        ::operator delete(p);
        return;
    }
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    try {
        c.order.emplace_back(size, p);
        c.bySize.emplace(size, std::prev(c.order.end()));
    } catch (const std::bad_alloc&) {  // no room to note it: give it back instead
        if (!c.order.empty() && c.order.back().second == p) c.order.pop_back();
        ::operator delete(p);
        return;
    }
    c.held += size;
    c.freeOldestWhileOver(kHeldLimit);
}

size_t bufferCacheHeldBytes() {
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    return c.held;
}

void bufferCacheTrim() {
    Cache& c = cache();
    std::lock_guard lock(c.mutex);
    c.freeOldestWhileOver(0);
}

}  // namespace quire::nn
