// What quire-server counts, and its Prometheus text (GET /metrics).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

namespace quire::server {

// The figures that change while jobs run; the ones read at the moment of a scrape (queue depth,
// jobs by state, memory) are passed to prometheusText.
class ServerMetrics {
public:
    void pageFinished(double seconds, bool failed, const std::string& failureKind);
    void tokensGenerated(int64_t n);
    void refused(const std::string& reason);  // queue_full, queue_unavailable, memory_guard, unauthorized, too_large, bad_input
    void runningJobs(int n);

    struct Snapshot {
        int queued = 0, running = 0;
        std::map<std::string, int> jobsByState;
        int64_t residentBytes = 0;
        int64_t guardedUsedBytes = 0, guardBytes = 0;  // the memory the guard watches (the GPU's or this process's)
        bool guardOnGpu = false, guardActive = false;
        int64_t pagesInFlight = 0;
        // Reader jobs decoding as one batch (decoder::StepBatcher): passes computed, drafts in them,
        // and the pages being decoded together now.
        int64_t decodePasses = 0, decodeDrafts = 0;
        int decodeMembers = 0;
    };
    std::string prometheusText(const Snapshot& now);

private:
    static constexpr std::array<double, 9> kBuckets = {0.5, 1, 2, 5, 10, 20, 30, 60, 120};
    std::mutex m_mutex;
    std::array<int64_t, kBuckets.size()> m_bucketCounts{};
    int64_t m_pages = 0;
    double m_pageSecondsSum = 0;
    int64_t m_tokens = 0;
    int m_running = 0;
    std::map<std::string, int64_t> m_errors, m_refusals;
    // Finish times of recent pages and token counts, for the rates over the last minute.
    std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> m_recentPages, m_recentTokens;
    void trim(std::chrono::steady_clock::time_point now);
};

}  // namespace quire::server
