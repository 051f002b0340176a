// StepBatcher: drafts of several threads' sessions gathered and computed in one pass.
#include "quire/decoder/step_batcher.h"

#include <algorithm>

namespace quire::decoder {

StepBatcher::StepBatcher(std::chrono::microseconds gather) : m_gather(gather) {}

StepBatcher::Membership::Membership(StepBatcher* b) : m_batcher(b) {
    std::lock_guard lock(b->m_mutex);
    ++b->m_stats.members;
}

StepBatcher::Membership& StepBatcher::Membership::operator=(Membership&& o) noexcept {
    if (this != &o) {
        if (m_batcher) m_batcher->leave();
        m_batcher = o.m_batcher;
        o.m_batcher = nullptr;
    }
    return *this;
}

StepBatcher::Membership::~Membership() {
    if (m_batcher) m_batcher->leave();
}

void StepBatcher::leave() {
    std::lock_guard lock(m_mutex);
    --m_stats.members;
    m_changed.notify_all();  // a pass waiting for this member's draft need not
}

StepBatcher::Stats StepBatcher::stats() const {
    std::lock_guard lock(m_mutex);
    return m_stats;
}

Result<int> StepBatcher::stepDraft(DecodeSession& session, const std::vector<int>& inputs,
                                   const std::function<bool(int, const StepResult&)>& onStep) {
    if (Status s = session.beginDraft(inputs); !s) return s;
    Request mine;
    mine.session = &session;
    {
        std::unique_lock lock(m_mutex);
        if (m_queue.empty()) m_firstQueued = std::chrono::steady_clock::now();
        m_queue.push_back(&mine);
        m_changed.notify_all();
        while (!mine.done) {
            if (m_running) {  // another thread computes a pass; this draft goes in the next
                m_changed.wait(lock);
                continue;
            }
            // This thread computes the next pass, once every member's draft is ready or the
            // gathering time is up.
            const auto until = m_firstQueued + m_gather;
            const auto ready = [&] {
                return mine.done || m_running || int(m_queue.size()) >= std::max(m_stats.members, 1);
            };
            while (!ready() && std::chrono::steady_clock::now() < until) m_changed.wait_until(lock, until);
            if (mine.done || m_running) continue;
            std::vector<Request*> batch(m_queue.begin(), m_queue.end());
            m_queue.clear();
            m_running = true;
            lock.unlock();
            std::vector<DecodeSession*> sessions;
            for (Request* r : batch) sessions.push_back(r->session);
            const Status s = DecodeSession::computeDrafts(sessions);
            lock.lock();
            for (Request* r : batch) r->done = true, r->status = s;
            ++m_stats.passes;
            m_stats.drafts += int64_t(batch.size());
            m_stats.largest = std::max(m_stats.largest, int(batch.size()));
            m_running = false;
            if (!m_queue.empty()) m_firstQueued = std::chrono::steady_clock::now();
            m_changed.notify_all();
        }
    }
    if (!mine.status) {
        (void)session.endDraft(onStep);  // ends the begun draft (refused: not computed)
        return mine.status;
    }
    return session.endDraft(onStep);
}

}  // namespace quire::decoder
