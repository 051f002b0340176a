// BoundedQueue: a blocking FIFO with a capacity, between the pipeline's threads.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace quire {

// A blocking FIFO with a capacity, so producers cannot run ahead of consumers (memory stays flat).
template <typename T>
class BoundedQueue {
public:
    explicit BoundedQueue(size_t capacity) : m_capacity(capacity) {}
    // False when the queue was closed.
    bool push(T item) {
        std::unique_lock lock(m_mutex);
        m_notFull.wait(lock, [&] { return m_closed || m_items.size() < m_capacity; });
        if (m_closed) return false;
        m_items.push_back(std::move(item));
        m_notEmpty.notify_one();
        return true;
    }
    // Empty when closed and drained.
    std::optional<T> pop() {
        std::unique_lock lock(m_mutex);
        m_notEmpty.wait(lock, [&] { return m_closed || !m_items.empty(); });
        if (m_items.empty()) return std::nullopt;
        T item = std::move(m_items.front());
        m_items.pop_front();
        m_notFull.notify_one();
        return item;
    }
    void close() {
        std::lock_guard lock(m_mutex);
        m_closed = true;
        m_notEmpty.notify_all();
        m_notFull.notify_all();
    }

private:
    size_t m_capacity;
    std::deque<T> m_items;
    bool m_closed = false;
    std::mutex m_mutex;
    std::condition_variable m_notEmpty, m_notFull;
};

}  // namespace quire
