// The jobs of one quire-server: each a folder under DATA/jobs/<id> holding its inputs, its
// SQLite project (the engine's store: every finished page committed as it comes) and job.json
// (its state). A bounded queue feeds a fixed number of workers; a server killed and started again
// takes up queued and running jobs where their projects stopped.
#pragma once

#include <atomic>
#include <QJsonArray>

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "quire/core/status.h"
#include "quire/export/exporters.h"
#include "quire/recognizers/recognizer.h"
#include "redis_queue.h"
#include "server_metrics.h"
#include "server_options.h"

namespace quire::server {

enum class JobState { Queued, Running, Done, Failed, Cancelled };
const char* jobStateName(JobState s);

// What a caller asks for: the engine and languages, and the exports to write when the job is done.
struct JobRequest {
    std::string engine = "tesseract";
    std::string languages = "eng";
    std::vector<ExportFormat> formats;
    bool sync = false;  // a synchronous call's job: removed once answered (and at a restart)
};

// One input of a job: an uploaded file (its name as the client gave it, and its bytes) or a file
// under the server's input folder.
struct JobInput {
    std::string name;
    std::string bytes;
    std::filesystem::path path;  // set for a `path` input (then bytes is empty)
};

struct JobView {
    std::string id;
    JobState state = JobState::Queued;
    JobRequest request;
    std::string created, finished;  // UTC, ISO 8601
    std::string error;              // why a failed job failed
    int pages = 0, done = 0, failed = 0, flagged = 0;
    double pagesPerMinute = 0, etaSeconds = -1;
    int queuePosition = 0;          // 1 = next; 0 when not queued
};

// Why new work is refused now: the HTTP status (429, 503), the metric's reason and when to retry.
struct Refusal {
    int httpStatus = 503;
    std::string reason, message;
    int retryAfterSeconds = 5;
};

class JobBoard {
public:
    // `engineDefaults`: model locations; `pdfHelper`: the quire-render program.
    JobBoard(ServerOptions options, RecognizerOptions engineDefaults, std::string pdfHelper, ServerMetrics& metrics);
    ~JobBoard();  // stops: running jobs stay "running" in job.json and resume at the next start

    // Takes up the jobs found under DATA/jobs and starts the workers.
    Status start();
    void stop();

    // Refusal of new work at this moment (queue full, memory guard); nothing when it is accepted.
    std::optional<Refusal> admission() const;
    // A new job from its inputs: each is checked (opened) before the job is queued; a file that
    // cannot be read is an input error naming it, and nothing is kept. When the queue or the pages
    // in flight are over their limits, `refused` says so (and an error is returned).
    Result<JobView> submit(const std::vector<JobInput>& inputs, const JobRequest& request, std::optional<Refusal>* refused);

    std::optional<JobView> view(const std::string& id);
    std::vector<JobView> list();
    // Cancels a queued or running job (its finished pages are kept). False when there is no such job.
    bool cancel(const std::string& id);
    // Waits until the job has finished (done, failed, cancelled) or `seconds` pass.
    std::optional<JobView> waitFinished(const std::string& id, int seconds);
    // Page events (JSON objects, one per finished page) from index `from`; waits up to `waitMs`
    // for one when there is none yet. `finished`: the job is over and no more will come.
    std::vector<std::string> events(const std::string& id, size_t from, int waitMs, bool* finished, bool* found);
    // Removes a job's folder (sync jobs once answered). False while it runs.
    bool remove(const std::string& id);

    // Pages first..last (1-based, book order) as JSON objects, read with one opening of the
    // project: each one's text (corrections applied) and lines of words with boxes and confidences.
    Result<QJsonArray> pagesJson(const std::string& id, int first, int last);
    // The export file of a finished job, written on first request (ALTO and PAGE: a zip of the
    // per-page files).
    Result<std::filesystem::path> exportFile(const std::string& id, ExportFormat format);

    ServerMetrics::Snapshot snapshot() const;
    // Why the server is not ready for work (starting, a model missing, new work refused); empty when it is.
    std::string unreadiness() const;

private:
    struct Job;
    void worker();
    void redisWorker(int index);
    void runJob(const std::shared_ptr<Job>& job);
    // A worker takes a job (under m_mutex) and gives it back (true when the job is over).
    void startRunning(const std::shared_ptr<Job>& job);
    bool stopRunning(const std::shared_ptr<Job>& job);
    Status persist(const Job& job) const;
    // A job as its folder has it (job.json, its project's pages); nullptr for a folder that holds
    // no job (a submission cut short, an answered sync call's leftovers: both removed).
    Result<std::shared_ptr<Job>> load(const std::filesystem::path& dir) const;
    Status resume(const std::filesystem::path& dir);
    // With a shared queue, a job read by another server: its state and pages from its folder.
    std::shared_ptr<Job> fresh(const std::string& id);
    void cleanup();
    JobView viewOf(const Job& job) const;
    long long queueDepth() const;  // jobs waiting for a worker; -1 when the shared queue does not answer
    std::filesystem::path jobsDir() const { return m_options.dataDir / "jobs"; }
    std::filesystem::path removingDir() const { return m_options.dataDir / "removing"; }

    ServerOptions m_options;
    RecognizerOptions m_engineDefaults;
    std::shared_ptr<ReaderSharing> m_readerSharing;  // the reader jobs' batch (null with --no-batch)
    std::string m_pdfHelper;
    ServerMetrics& m_metrics;
    mutable std::mutex m_mutex;
    std::condition_variable m_changed;
    std::map<std::string, std::shared_ptr<Job>> m_jobs;
    std::deque<std::string> m_queue;
    std::vector<std::thread> m_workers;
    std::thread m_janitor;
    std::unique_ptr<RedisQueue> m_shared;  // the front-end's connection (submit, queue depth)
    mutable std::mutex m_sharedMutex;
    std::atomic<bool> m_stopping{false};
    bool m_started = false;
    std::string m_modelsMissing;
    int m_running = 0;
};

}  // namespace quire::server
