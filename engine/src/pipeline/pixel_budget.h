// PixelBudget: how many decoded pixels the run's pages may hold at once, between the loader
// (which takes a page's pixels before handing it on) and the workers (which give them back when
// the page is read), so that several very large pages are never in the workers together.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace quire {

class PixelBudget {
public:
    explicit PixelBudget(int64_t limit) : m_limit(limit) {}
    // Waits until `pixels` fit; a page is always admitted when nothing is held, however large.
    // False when `stop` turned true or the budget was closed while waiting.
    bool acquire(int64_t pixels, const std::function<bool()>& stop) {
        std::unique_lock lock(m_mutex);
        while (!m_closed && m_held > 0 && m_held + pixels > m_limit) {
            if (stop && stop()) return false;
            m_freed.wait_for(lock, std::chrono::milliseconds(50));
        }
        if (m_closed) return false;
        m_held += pixels;
        return true;
    }
    void release(int64_t pixels) {
        std::lock_guard lock(m_mutex);
        m_held -= pixels;
        m_freed.notify_all();
    }
    void close() {
        std::lock_guard lock(m_mutex);
        m_closed = true;
        m_freed.notify_all();
    }

private:
    const int64_t m_limit;
    int64_t m_held = 0;
    bool m_closed = false;
    std::mutex m_mutex;
    std::condition_variable m_freed;
};

}  // namespace quire
