// quire-server's counters in Prometheus' text exposition format (version 0.0.4).
#include "server_metrics.h"

#include <sstream>

namespace quire::server {

namespace {
constexpr auto kRateWindow = std::chrono::seconds(60);
}

void ServerMetrics::trim(std::chrono::steady_clock::time_point now) {
    while (!m_recentPages.empty() && now - m_recentPages.front().first > kRateWindow) m_recentPages.pop_front();
    while (!m_recentTokens.empty() && now - m_recentTokens.front().first > kRateWindow) m_recentTokens.pop_front();
}

void ServerMetrics::pageFinished(double seconds, bool failed, const std::string& failureKind) {
    std::lock_guard lock(m_mutex);
    const auto now = std::chrono::steady_clock::now();
    ++m_pages;
    m_pageSecondsSum += seconds;
    for (size_t i = 0; i < kBuckets.size(); ++i)
        if (seconds <= kBuckets[i]) ++m_bucketCounts[i];
    if (failed) ++m_errors[failureKind.empty() ? "engine" : failureKind];
    m_recentPages.emplace_back(now, 1);
    trim(now);
}

void ServerMetrics::tokensGenerated(int64_t n) {
    std::lock_guard lock(m_mutex);
    const auto now = std::chrono::steady_clock::now();
    m_tokens += n;
    m_recentTokens.emplace_back(now, n);
    trim(now);
}

void ServerMetrics::refused(const std::string& reason) {
    std::lock_guard lock(m_mutex);
    ++m_refusals[reason];
}

void ServerMetrics::runningJobs(int n) {
    std::lock_guard lock(m_mutex);
    m_running = n;
}

std::string ServerMetrics::prometheusText(const Snapshot& s) {
    std::lock_guard lock(m_mutex);
    const auto now = std::chrono::steady_clock::now();
    trim(now);
    std::ostringstream o;
    auto metric = [&](const char* name, const char* type, const char* help) {
        o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
    };
    metric("quire_queue_depth", "gauge", "Jobs waiting for a worker.");
    o << "quire_queue_depth " << s.queued << '\n';
    metric("quire_jobs", "gauge", "Jobs kept by this server, by state.");
    for (const auto& [state, n] : s.jobsByState) o << "quire_jobs{state=\"" << state << "\"} " << n << '\n';
    metric("quire_pages_in_flight", "gauge", "Pages of queued and running jobs not yet read.");
    o << "quire_pages_in_flight " << s.pagesInFlight << '\n';
    metric("quire_batch_size", "gauge", "Jobs being read at this moment.");
    o << "quire_batch_size " << s.running << '\n';
    metric("quire_decode_batch_members", "gauge", "Reader pages being decoded together in one batch now.");
    o << "quire_decode_batch_members " << s.decodeMembers << '\n';
    metric("quire_decode_batch_passes_total", "counter", "Decoder passes that computed reader jobs' drafts together.");
    o << "quire_decode_batch_passes_total " << s.decodePasses << '\n';
    metric("quire_decode_batch_drafts_total", "counter", "Drafts computed in those passes (÷ passes: the mean batch).");
    o << "quire_decode_batch_drafts_total " << s.decodeDrafts << '\n';
    int64_t pagesLastMinute = 0, tokensLastMinute = 0;
    for (const auto& p : m_recentPages) pagesLastMinute += p.second;
    for (const auto& t : m_recentTokens) tokensLastMinute += t.second;
    metric("quire_pages_per_second", "gauge", "Pages finished per second over the last minute.");
    o << "quire_pages_per_second " << double(pagesLastMinute) / 60.0 << '\n';
    metric("quire_tokens_per_second", "gauge", "Text tokens the reader wrote per second over the last minute.");
    o << "quire_tokens_per_second " << double(tokensLastMinute) / 60.0 << '\n';
    metric("quire_tokens_total", "counter", "Text tokens the reader wrote (characters, spaces, paragraph breaks).");
    o << "quire_tokens_total " << m_tokens << '\n';
    metric("quire_page_seconds", "histogram", "Time to read one page.");
    for (size_t i = 0; i < kBuckets.size(); ++i)
        o << "quire_page_seconds_bucket{le=\"" << kBuckets[i] << "\"} " << m_bucketCounts[i] << '\n';
    o << "quire_page_seconds_bucket{le=\"+Inf\"} " << m_pages << '\n';
    o << "quire_page_seconds_sum " << m_pageSecondsSum << '\n';
    o << "quire_page_seconds_count " << m_pages << '\n';
    metric("quire_page_errors_total", "counter", "Pages that failed, by kind (input: the file; engine: the recognizer).");
    for (const char* kind : {"input", "engine"}) o << "quire_page_errors_total{kind=\"" << kind << "\"} " << m_errors[kind] << '\n';
    metric("quire_requests_refused_total", "counter", "Requests refused, by reason.");
    for (const char* r : {"unauthorized", "queue_full", "queue_unavailable", "memory_guard", "too_large", "bad_input"})
        o << "quire_requests_refused_total{reason=\"" << r << "\"} " << m_refusals[r] << '\n';
    metric("quire_memory_resident_bytes", "gauge", "Resident memory of the server process.");
    o << "quire_memory_resident_bytes " << s.residentBytes << '\n';
    metric("quire_memory_guarded_bytes", "gauge", "Memory in use that the guard watches (memory=\"gpu\" or \"resident\").");
    o << "quire_memory_guarded_bytes{memory=\"" << (s.guardOnGpu ? "gpu" : "resident") << "\"} " << s.guardedUsedBytes << '\n';
    metric("quire_memory_guard_bytes", "gauge", "Memory in use above which new work is refused.");
    o << "quire_memory_guard_bytes " << s.guardBytes << '\n';
    metric("quire_memory_guard_active", "gauge", "1 while new work is refused for memory.");
    o << "quire_memory_guard_active " << (s.guardActive ? 1 : 0) << '\n';
    return o.str();
}

}  // namespace quire::server
