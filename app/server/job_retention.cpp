// Retention (--retain-hours, --keep-inputs-hours): finished jobs, or their uploads, removed once
// old enough; a queued or running job never is.
#include "job_board.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "board_job.h"

namespace fs = std::filesystem;

namespace quire::server {

void JobBoard::cleanup() {
    // Looked at often enough that a job outlives its retention by at most a quarter of it (and a minute).
    const double shortest = std::min(m_options.retainHours > 0 ? m_options.retainHours : 1e9,
                                     m_options.keepInputsHours > 0 ? m_options.keepInputsHours : 1e9);
    const auto every = std::chrono::milliseconds(int64_t(std::clamp(shortest * 3600.0 / 4, 1.0, 60.0) * 1000));
    std::unique_lock lock(m_mutex);
    while (!m_stopping) {
        if (m_options.retainHours > 0 || m_options.keepInputsHours > 0) {
            std::vector<std::string> ids;
            for (const auto& [id, job] : m_jobs) ids.push_back(id);
            lock.unlock();
            const std::time_t now = std::time(nullptr);
            for (const auto& id : ids) {
                const auto job = fresh(id);  // with a shared queue, as its worker left it
                if (!job || !finishedState(job->state) || job->finishedAt <= 0) continue;
                const double hours = double(now - job->finishedAt) / 3600.0;
                if (m_options.retainHours > 0 && hours > m_options.retainHours) {
                    if (remove(id)) spdlog::info("job {} removed: finished more than {} hours ago", id, m_options.retainHours);
                } else if (m_options.keepInputsHours > 0 && hours > m_options.keepInputsHours) {
                    std::error_code ec;
                    if (fs::exists(job->dir / "inputs", ec)) {
                        std::lock_guard exporting(job->exportMutex);
                        fs::remove_all(job->dir / "inputs", ec);
                        spdlog::info("job {}: its uploads removed, {} hours after it finished", id, m_options.keepInputsHours);
                    }
                }
            }
            lock.lock();
        }
        m_changed.wait_for(lock, every, [&] { return m_stopping.load(); });
    }
}

}  // namespace quire::server
