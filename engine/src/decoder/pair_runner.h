// Two-way fork-join for the decoder's CPU path: a draft pass splits its attention by KV group and
// its LM head by rows into two halves, one on the calling thread and one on a helper thread the
// session keeps. The halves write disjoint outputs and compute exactly what one thread computes,
// so the text does not depend on the thread count.
//
// A fork is a few microseconds: both sides spin briefly before sleeping on the atomic (a draft's
// layers fork every ~100 µs; between drafts, while the sampler runs, the helper sleeps).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <thread>
#include <utility>

namespace quire::decoder {

class PairRunner {
public:
    // With `threads` below 2 there is no helper and run() calls both halves in turn.
    explicit PairRunner(int threads) {
        if (threads >= 2) m_helper = std::thread([this] { loop(); });
    }
    PairRunner(const PairRunner&) = delete;
    PairRunner& operator=(const PairRunner&) = delete;
    ~PairRunner() {
        if (!m_helper.joinable()) return;
        m_stop.store(true, std::memory_order_relaxed);
        m_posted.fetch_add(1, std::memory_order_release);
        m_posted.notify_one();
        m_helper.join();
    }

    int threads() const { return m_helper.joinable() ? 2 : 1; }

    // Calls part(0) on this thread and part(1) on the helper; returns when both returned. An
    // exception thrown by either (std::bad_alloc) is rethrown here, after both finished.
    template <typename F>
    void run(F&& part) {
        if (!m_helper.joinable()) {
            part(0);
            part(1);
            return;
        }
        using Fn = std::remove_reference_t<F>;
        m_ctx = const_cast<void*>(static_cast<const void*>(&part));
        m_call = [](void* ctx, int half) { (*static_cast<Fn*>(ctx))(half); };
        m_error = nullptr;
        const uint32_t ticket = m_posted.fetch_add(1, std::memory_order_release) + 1;
        m_posted.notify_one();
        std::exception_ptr mine;
        try {
            part(0);
        } catch (...) {
            mine = std::current_exception();
        }
        awaitChange(m_finished, ticket);
        if (mine) std::rethrow_exception(mine);
        if (m_error) std::rethrow_exception(m_error);
    }

private:
    // Waits until `a` holds `want` (spinning first; a fork is short).
    static void awaitChange(std::atomic<uint32_t>& a, uint32_t want) {
        for (int i = 0; i < 4000; ++i) {
            if (a.load(std::memory_order_acquire) == want) return;
            spinPause();
        }
        for (uint32_t seen; (seen = a.load(std::memory_order_acquire)) != want;) a.wait(seen, std::memory_order_acquire);
    }

    static void spinPause() {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }

    // How long the helper spins for the next fork before it sleeps: longer than the serial work
    // between a draft pass's forks (its sets of attended blocks), short against the time between
    // drafts' pages. A wake from sleep took tens of microseconds.
    static constexpr std::chrono::microseconds kSpin{300};

    void loop() {
        uint32_t done = 0;
        for (;;) {
            // Wait for the next ticket: spin a little (the next layer's fork comes soon), then sleep.
            uint32_t seen = m_posted.load(std::memory_order_acquire);
            const auto until = std::chrono::steady_clock::now() + kSpin;
            for (int i = 1; seen == done; ++i) {
                spinPause();
                seen = m_posted.load(std::memory_order_acquire);
                if (i % 64 == 0 && std::chrono::steady_clock::now() > until) break;
            }
            while (seen == done) {
                m_posted.wait(seen, std::memory_order_acquire);
                seen = m_posted.load(std::memory_order_acquire);
            }
            if (m_stop.load(std::memory_order_relaxed)) return;
            done = seen;
            try {
                m_call(m_ctx, 1);
            } catch (...) {
                m_error = std::current_exception();
            }
            m_finished.store(done, std::memory_order_release);
            m_finished.notify_one();
        }
    }

    std::thread m_helper;
    std::atomic<uint32_t> m_posted{0}, m_finished{0};
    std::atomic<bool> m_stop{false};
    void (*m_call)(void*, int) = nullptr;
    void* m_ctx = nullptr;
    std::exception_ptr m_error;
};

}  // namespace quire::decoder
