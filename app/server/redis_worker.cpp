// A worker of the shared queue (--redis ... --worker): jobs taken from the Redis stream, kept this
// worker's by a heartbeat while they are read, acknowledged when finished.
#include "job_board.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "board_job.h"

namespace fs = std::filesystem;

namespace quire::server {

void JobBoard::redisWorker(int index) {
    const std::string consumer = consumerName(std::to_string(index));
    std::unique_ptr<RedisQueue> queue, beat;  // a connection each: hiredis contexts are not shared between threads
    auto pause = [&](int ms) {
        std::unique_lock lock(m_mutex);
        m_changed.wait_for(lock, std::chrono::milliseconds(ms), [&] { return m_stopping.load(); });
    };
    while (!m_stopping) {
        if (!queue || !beat) {
            auto q = RedisQueue::connect(m_options.redis, consumer);
            auto b = RedisQueue::connect(m_options.redis, consumer);
            if (!q || !b) {
                spdlog::warn("worker {}: {}", index, (!q ? q.status() : b.status()).message());
                pause(2000);
                continue;
            }
            queue = std::move(*q), beat = std::move(*b);
        }
        auto entry = queue->next(1000, m_options.claimAfterSeconds * 1000);
        if (!entry) {
            spdlog::warn("worker {}: {}", index, entry.status().message());
            queue.reset();
            pause(1000);
            continue;
        }
        if (!*entry) continue;
        const RedisQueue::Entry e = **entry;
        if (!isJobId(e.jobId)) {
            spdlog::warn("the queue holds '{}', not a job id; dropped", e.jobId.substr(0, 40));
            (void)queue->ack(e.streamId);
            continue;
        }
        auto loaded = load(jobsDir() / e.jobId);
        if (!loaded || !*loaded) {
            spdlog::warn("job {} from the queue: {}; dropped", e.jobId, loaded ? "no such job in the shared folder" : loaded.status().message());
            (void)queue->ack(e.streamId);
            continue;
        }
        const auto job = *loaded;
        if (finishedState(job->state) || job->request.sync) {
            (void)queue->ack(e.streamId);  // cancelled while it waited (or done, its acknowledgement lost)
            continue;
        }
        if (e.reclaimed) spdlog::info("job {}: taken over from a worker that stopped answering", job->id);
        {
            std::lock_guard lock(m_mutex);
            startRunning(job);
        }
        // While the job is read: the heartbeat that keeps it this worker's, and the front-end's cancel.
        std::atomic<bool> over{false};
        std::thread heartbeat([&] {
            const auto every = std::chrono::milliseconds(std::max(1, m_options.claimAfterSeconds) * 1000 / 3);
            auto last = std::chrono::steady_clock::now();
            while (!over) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                std::error_code ec;
                if (!job->cancel && fs::exists(job->dir / "cancel-requested", ec)) {
                    std::lock_guard lock(m_mutex);
                    job->cancelledByUser = true;
                    job->cancel = true;
                }
                if (std::chrono::steady_clock::now() - last >= every) {
                    if (Status s = beat->touch(e.streamId); !s) spdlog::warn("job {}: heartbeat: {}", job->id, s.message());
                    last = std::chrono::steady_clock::now();
                }
            }
        });
        runJob(job);
        over = true;
        heartbeat.join();
        // A job left unfinished by a stopping server stays pending: a worker takes it over later.
        if (stopRunning(job))
            if (Status s = queue->ack(e.streamId); !s) spdlog::warn("job {}: acknowledgement: {}", job->id, s.message());
    }
}

}  // namespace quire::server
