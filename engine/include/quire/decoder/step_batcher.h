// Several threads' decoding sessions computed as one batch (a server's concurrent volumes): each
// thread drafts for its own session as stepDraft() does, and the drafts ready at once are computed
// together (DecodeSession::computeDrafts), each weight matrix read once a pass for all of them.
// Each session's text, logits and state are those it has alone, bit for bit.
//
// Sessions join and leave as their threads start and finish decoding pages (membership); a pass
// waits until every member has its draft ready, or until `gather` has passed since the first was,
// so a member busy elsewhere (its page's prefill, a slow callback) holds the others back at most
// that long. Threads that are not members are computed with whoever is ready, without waiting.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "quire/decoder/session.h"

namespace quire::decoder {

class StepBatcher {
public:
    explicit StepBatcher(std::chrono::microseconds gather = std::chrono::microseconds(2000));
    StepBatcher(const StepBatcher&) = delete;
    StepBatcher& operator=(const StepBatcher&) = delete;

    // A thread taking part while the handle lives (a page being decoded).
    class Membership {
    public:
        Membership() = default;
        explicit Membership(StepBatcher* b);
        Membership(Membership&& o) noexcept : m_batcher(o.m_batcher) { o.m_batcher = nullptr; }
        Membership& operator=(Membership&& o) noexcept;
        ~Membership();

    private:
        StepBatcher* m_batcher = nullptr;
    };
    Membership join() { return Membership(this); }

    // DecodeSession::stepDraft(), with the draft computed in a batch with the other threads'.
    // onStep runs on the calling thread. The session must not be used by another thread meanwhile.
    Result<int> stepDraft(DecodeSession& session, const std::vector<int>& inputs,
                          const std::function<bool(int, const StepResult&)>& onStep);

    struct Stats {
        int64_t passes = 0;     // batched computations
        int64_t drafts = 0;     // drafts computed in them (drafts / passes: the mean batch)
        int largest = 0;        // the most drafts one pass computed
        int members = 0;        // threads taking part now
    };
    Stats stats() const;

private:
    struct Request {
        DecodeSession* session = nullptr;
        bool done = false;
        Status status;
    };
    void leave();

    const std::chrono::microseconds m_gather;
    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    std::deque<Request*> m_queue;
    std::chrono::steady_clock::time_point m_firstQueued;
    bool m_running = false;
    Stats m_stats;
};

}  // namespace quire::decoder
