// quire-server's jobs: submission, the bounded queue and its workers, state on disk, resume.
#include "job_board.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <random>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "board_job.h"
#include "memory_guard.h"
#include "quire/core/process_memory.h"
#include "quire/pipeline/transcriber.h"
#include "quire/reader/reader_sharing.h"
#include "quire/store/project_store.h"

namespace fs = std::filesystem;

namespace quire::server {

const char* jobStateName(JobState s) {
    switch (s) {
        case JobState::Queued: return "queued";
        case JobState::Running: return "running";
        case JobState::Done: return "done";
        case JobState::Failed: return "failed";
        case JobState::Cancelled: return "cancelled";
    }
    return "queued";
}

namespace {

JobState parseState(const QString& s) {
    if (s == "running") return JobState::Running;
    if (s == "done") return JobState::Done;
    if (s == "failed") return JobState::Failed;
    if (s == "cancelled") return JobState::Cancelled;
    return JobState::Queued;
}

std::string isoTime(std::time_t t) {
    char buf[32];
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string newJobId() {
    std::random_device rd;
    std::uniform_int_distribution<int> hex(0, 15);
    std::string id;
    for (int i = 0; i < 16; ++i) id += "0123456789abcdef"[hex(rd)];
    return id;
}

// An uploaded file's name as stored: its last component, letters, digits, '.', '-', '_' only,
// prefixed by its position (two uploads may share a name).
std::string storedName(size_t index, const std::string& name) {
    std::string base = fs::path(name).filename().string(), out;
    for (const char c : base) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
    while (!out.empty() && out.front() == '.') out.erase(out.begin());
    if (out.size() > 100) out = out.substr(out.size() - 100);
    return std::to_string(index + 1) + "-" + (out.empty() ? "upload" : out);
}

// A finished page as an event (GET /v1/jobs/{id}/events); `text` only where it is at hand.
std::string pageEventJson(const PageRecord& page, const std::string& failure, const std::string* text) {
    QJsonObject o{{"page", page.sequence}, {"status", pageStatusName(page.status)}, {"flagged", page.flagged},
                  {"confidence", page.meanConfidence}, {"failure", QString::fromStdString(failure)}};
    if (text) o["text"] = QString::fromStdString(*text);
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();
}

}  // namespace

bool finishedState(JobState s) { return s == JobState::Done || s == JobState::Failed || s == JobState::Cancelled; }

bool isJobId(const std::string& id) { return id.size() == 16 && id.find_first_not_of("0123456789abcdef") == std::string::npos; }

std::string consumerName(const std::string& role) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return std::string(host) + ":" + std::to_string(getpid()) + ":" + role;
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
    if (from.empty()) return;
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

JobBoard::JobBoard(ServerOptions options, RecognizerOptions engineDefaults, std::string pdfHelper, ServerMetrics& metrics)
    : m_options(std::move(options)), m_engineDefaults(std::move(engineDefaults)), m_pdfHelper(std::move(pdfHelper)),
      m_metrics(metrics) {
    if (m_options.batchReaders) m_readerSharing = std::make_shared<ReaderSharing>();
}

JobBoard::~JobBoard() { stop(); }

Status JobBoard::start() {
    std::error_code ec;
    fs::create_directories(jobsDir(), ec);
    if (ec || !fs::is_directory(jobsDir()))
        return Status(ErrorCode::Io, jobsDir().string() + ": cannot create the jobs folder (" + ec.message() + ")");
    if (access(jobsDir().c_str(), W_OK) != 0) return Status(ErrorCode::Io, jobsDir().string() + ": not writable");
    fs::remove_all(removingDir(), ec);  // jobs whose removal a stop interrupted
    // The default engine's model (Tesseract's English) must be there for the server to be ready.
    if (Status s = checkTesseractLanguages("eng", m_engineDefaults.tessdataDir); !s) m_modelsMissing = s.message();
    if (!m_options.redis.empty()) {
        auto q = RedisQueue::connect(m_options.redis, consumerName("front"));
        if (!q) return q.status();
        m_shared = std::move(*q);
    }
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(jobsDir(), ec))
        if (e.is_directory()) dirs.push_back(e.path());
    for (const auto& d : dirs)
        if (Status s = resume(d); !s) spdlog::warn("{}: not taken up: {}", d.string(), s.message());
    {
        std::lock_guard lock(m_mutex);
        // Queued jobs in the order they came; the ones that were running first.
        std::vector<std::shared_ptr<Job>> waiting;
        for (const auto& [id, job] : m_jobs)
            if (job->state == JobState::Queued && !m_shared) waiting.push_back(job);
        std::stable_sort(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) {
            return std::make_pair(a->done == 0, a->createdAt) < std::make_pair(b->done == 0, b->createdAt);
        });
        for (const auto& j : waiting) m_queue.push_back(j->id);
        if (!waiting.empty()) spdlog::info("took up {} unfinished job(s)", waiting.size());
        m_started = true;
    }
    // With a shared queue only --worker servers read; the others take jobs in and answer for them.
    if (!m_shared || m_options.worker)
        for (int i = 0; i < m_options.workers; ++i)
            m_workers.emplace_back([this, i] { m_shared ? redisWorker(i) : worker(); });
    m_janitor = std::thread([this] { cleanup(); });
    return Status::ok();
}

void JobBoard::stop() {
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping) return;
        m_stopping = true;
        for (const auto& [id, job] : m_jobs)
            if (job->state == JobState::Running) job->cancel = true;
    }
    m_changed.notify_all();
    for (auto& w : m_workers) w.join();
    if (m_janitor.joinable()) m_janitor.join();
}

Result<std::shared_ptr<JobBoard::Job>> JobBoard::load(const fs::path& dir) const {
    QFile f(QString::fromStdString((dir / "job.json").string()));
    if (!f.open(QIODevice::ReadOnly)) return std::shared_ptr<Job>();
    const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
    if (o.value("id").toString().toStdString() != dir.filename().string())
        return Status(ErrorCode::Corrupt, "job.json does not name this job");
    auto job = std::make_shared<Job>();
    job->id = dir.filename().string();
    job->dir = dir;
    job->request.engine = o.value("engine").toString("tesseract").toStdString();
    job->request.languages = o.value("languages").toString("eng").toStdString();
    job->request.sync = o.value("sync").toBool();
    for (const auto& v : o.value("formats").toArray())
        if (auto f2 = parseExportFormats(v.toString().toStdString()); f2 && !f2->empty()) job->request.formats.push_back(f2->front());
    job->state = parseState(o.value("state").toString());
    job->createdAt = std::time_t(o.value("createdAt").toInteger());
    job->finishedAt = std::time_t(o.value("finishedAt").toInteger());
    job->error = o.value("error").toString().toStdString();
    for (const auto& v : o.value("inputs").toArray())
        job->shownAs.emplace_back(v.toObject().value("path").toString().toStdString(), v.toObject().value("name").toString().toStdString());
    auto store = ProjectStore::open(job->project(), ProjectStore::Mode::ReadOnly);
    if (!store) return store.status();
    auto pages = (*store)->pages();
    if (!pages) return pages.status();
    job->pages = int(pages->size());
    for (const auto& p : *pages) {
        if (p.status == PageStatus::Queued) continue;
        (p.status == PageStatus::Done ? job->done : job->failed) += 1;
        job->flagged += p.flagged ? 1 : 0;
        job->events.push_back(pageEventJson(p, job->shown(p.failure), nullptr));
    }
    return job;
}

Status JobBoard::resume(const fs::path& dir) {
    std::error_code ec;
    if (!fs::exists(dir / "job.json", ec)) {
        // A submission that never finished (killed while its inputs were checked): nothing was promised.
        fs::remove_all(dir, ec);
        return Status::ok();
    }
    auto job = load(dir);
    if (!job) return job.status();
    if ((*job)->request.sync) {
        // Its caller is gone with the server that answered it.
        fs::remove_all(dir, ec);
        return Status::ok();
    }
    if ((*job)->state == JobState::Running && !m_shared) (*job)->state = JobState::Queued;
    std::lock_guard lock(m_mutex);
    m_jobs[(*job)->id] = *job;
    return Status::ok();
}

std::shared_ptr<JobBoard::Job> JobBoard::fresh(const std::string& id) {
    std::shared_ptr<Job> job;
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_jobs.find(id);
        if (it != m_jobs.end()) job = it->second;
        if (!m_shared || (job && (job->local || finishedState(job->state)))) return job;
    }
    // Another server may be reading it (or may have taken it in): what its folder says now.
    if (!isJobId(id)) return job;
    auto now = load(jobsDir() / id);
    if (!now || !*now) return job;
    std::lock_guard lock(m_mutex);
    if (!job) return m_jobs[id] = *now;
    if (job->local) return job;
    job->state = (*now)->state, job->finishedAt = (*now)->finishedAt, job->error = (*now)->error;
    job->pages = (*now)->pages, job->done = (*now)->done, job->failed = (*now)->failed, job->flagged = (*now)->flagged;
    if ((*now)->events.size() > job->events.size()) job->events = (*now)->events;
    return job;
}

Status JobBoard::persist(const Job& job) const {
    QJsonArray formats, inputs;
    for (const auto f : job.request.formats) formats.append(exportFormatName(f));
    for (const auto& [path, name] : job.shownAs)
        inputs.append(QJsonObject{{"path", QString::fromStdString(path)}, {"name", QString::fromStdString(name)}});
    const QJsonObject o{{"id", QString::fromStdString(job.id)},
                        {"inputs", inputs},
                        {"state", jobStateName(job.state)},
                        {"engine", QString::fromStdString(job.request.engine)},
                        {"languages", QString::fromStdString(job.request.languages)},
                        {"formats", formats},
                        {"sync", job.request.sync},
                        {"createdAt", qint64(job.createdAt)},
                        {"finishedAt", qint64(job.finishedAt)},
                        {"error", QString::fromStdString(job.error)}};
    QSaveFile f(QString::fromStdString((job.dir / "job.json").string()));
    if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(o).toJson()) < 0 || !f.commit())
        return Status(ErrorCode::Io, (job.dir / "job.json").string() + ": cannot write the job's state");
    return Status::ok();
}

std::optional<Refusal> JobBoard::admission() const {
    if (m_stopping) return Refusal{503, "shutting_down", "the server is shutting down", 10};
    const GuardedMemory memory = guardedMemory(m_options.device);
    if (memory.over(m_options.memoryGuardShare))
        return Refusal{503, "memory_guard",
                       std::string(memory.gpu ? "the GPU's memory is" : "the server holds") + " more than " +
                           std::to_string(int(m_options.memoryGuardShare * 100)) +
                           (memory.gpu ? "% in use" : "% of the machine's memory") + "; try again later",
                       30};
    const long long waiting = queueDepth();
    if (waiting < 0) return Refusal{503, "queue_unavailable", "the shared queue (Redis) does not answer", 10};
    if (waiting >= m_options.maxQueuedJobs)
        return Refusal{429, "queue_full", "the queue is full (" + std::to_string(waiting) + " jobs waiting)", 10};
    return std::nullopt;
}

long long JobBoard::queueDepth() const {
    if (m_shared) {
        std::lock_guard lock(m_sharedMutex);
        auto n = m_shared->waiting();
        return n ? *n : -1;
    }
    std::lock_guard lock(m_mutex);
    return (long long)m_queue.size();
}

Result<JobView> JobBoard::submit(const std::vector<JobInput>& inputs, const JobRequest& request,
                                 std::optional<Refusal>* refused) {
    if (inputs.empty()) return Status(ErrorCode::InvalidArgument, "no input: send one or more 'file' parts or a 'path' field");
    auto job = std::make_shared<Job>();
    job->id = newJobId();
    job->dir = jobsDir() / job->id;
    job->request = request;
    job->createdAt = std::time(nullptr);
    std::error_code ec;
    fs::create_directories(job->dir / "inputs", ec);
    if (ec) return Status(ErrorCode::Io, "cannot create the job's folder (" + ec.message() + ")");
    auto discard = [&](Status s) {
        fs::remove_all(job->dir, ec);
        return s;
    };
    // Messages name the file as the client knows it, never the server's folders.
    auto& shownAs = job->shownAs;
    TranscribeParams p;
    p.source.pdfHelper = m_pdfHelper;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const JobInput& in = inputs[i];
        if (!in.path.empty()) {
            p.inputs.push_back(in.path);
            shownAs.emplace_back(in.path.string(), in.name);
            continue;
        }
        const fs::path stored = job->dir / "inputs" / storedName(i, in.name);
        std::ofstream out(stored, std::ios::binary);
        out.write(in.bytes.data(), std::streamsize(in.bytes.size()));
        out.close();
        if (!out) return discard(Status(ErrorCode::Io, "cannot store the upload " + in.name + " (disk full?)"));
        p.inputs.push_back(stored);
        shownAs.emplace_back(stored.string(), in.name);
    }
    int pages = 0;
    {
        auto store = ProjectStore::open(job->project(), ProjectStore::Mode::OpenOrCreate);
        if (!store) return discard(store.status());
        if (Status s = registerInputs(**store, p); !s) {
            std::string message = job->shown(s.message());
            replaceAll(message, (job->dir / "inputs").string() + "/", "");
            return discard(Status(s.code(), message));
        }
        auto counts = (*store)->counts();
        if (!counts) return discard(counts.status());
        pages = counts->pages;
    }
    if (request.sync && pages > m_options.syncMaxPages)
        return discard(Status(ErrorCode::TooLarge, std::to_string(pages) + " pages: a synchronous call reads at most " +
                                                       std::to_string(m_options.syncMaxPages) + "; send it to POST /v1/jobs"));
    std::lock_guard lock(m_mutex);
    int64_t inFlight = 0;
    for (const auto& [id, j] : m_jobs)
        if (!finishedState(j->state)) inFlight += j->pages - j->done - j->failed;
    std::string full;
    if (inFlight + pages > m_options.maxPagesInFlight)
        full = "the server has " + std::to_string(inFlight) + " pages waiting; this job's " + std::to_string(pages) +
               " would pass its limit of " + std::to_string(m_options.maxPagesInFlight);
    else if (!m_shared && int(m_queue.size()) >= m_options.maxQueuedJobs)
        full = "the queue is full (" + std::to_string(m_queue.size()) + " jobs waiting)";
    if (!full.empty()) {
        *refused = Refusal{429, "queue_full", full, 10};
        return discard(Status(ErrorCode::Internal, full));
    }
    job->pages = pages;
    if (Status s = persist(*job); !s) return discard(s);
    if (m_shared) {
        std::lock_guard shared(m_sharedMutex);
        if (Status s = m_shared->add(job->id); !s) {
            *refused = Refusal{503, "queue_unavailable", "the shared queue (Redis) does not answer: " + s.message(), 10};
            return discard(s);
        }
    } else {
        m_queue.push_back(job->id);
    }
    m_jobs[job->id] = job;
    m_changed.notify_all();
    return viewOf(*job);
}

JobView JobBoard::viewOf(const Job& job) const {
    JobView v;
    v.id = job.id;
    v.state = job.state;
    v.request = job.request;
    v.created = isoTime(job.createdAt);
    if (job.finishedAt) v.finished = isoTime(job.finishedAt);
    v.error = job.error;
    v.pages = job.pages, v.done = job.done, v.failed = job.failed, v.flagged = job.flagged;
    v.pagesPerMinute = job.pagesPerMinute, v.etaSeconds = job.etaSeconds;
    const auto at = std::find(m_queue.begin(), m_queue.end(), job.id);
    v.queuePosition = at == m_queue.end() ? 0 : int(at - m_queue.begin()) + 1;
    return v;
}

std::optional<JobView> JobBoard::view(const std::string& id) {
    const auto job = fresh(id);
    if (!job) return std::nullopt;
    std::lock_guard lock(m_mutex);
    return viewOf(*job);
}

std::vector<JobView> JobBoard::list() {
    std::vector<std::string> ids;
    {
        std::lock_guard lock(m_mutex);
        for (const auto& [id, job] : m_jobs) ids.push_back(id);
    }
    std::vector<JobView> out;
    for (const auto& id : ids)
        if (auto v = view(id)) out.push_back(*v);
    return out;
}

bool JobBoard::cancel(const std::string& id) {
    const auto found = fresh(id);
    if (!found) return false;
    std::unique_lock lock(m_mutex);
    Job& job = *found;
    if (m_shared && !job.local && !finishedState(job.state)) {
        // Read (or about to be read) by a worker elsewhere: it looks for this file while it reads.
        std::ofstream(job.dir / "cancel-requested").put('\n');
        if (job.state != JobState::Queued) return true;
    }
    if (job.state == JobState::Queued) {
        m_queue.erase(std::remove(m_queue.begin(), m_queue.end(), id), m_queue.end());
        job.state = JobState::Cancelled;
        job.finishedAt = std::time(nullptr);
        (void)persist(job);
    } else if (job.state == JobState::Running) {
        job.cancelledByUser = true;
        job.cancel = true;
    }
    m_changed.notify_all();
    return true;
}

std::optional<JobView> JobBoard::waitFinished(const std::string& id, int seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    for (;;) {
        const auto job = fresh(id);
        if (!job) return std::nullopt;
        std::unique_lock lock(m_mutex);
        // Another server's progress is seen by looking again each second.
        const auto next = m_shared ? std::min(until, std::chrono::steady_clock::now() + std::chrono::seconds(1)) : until;
        m_changed.wait_until(lock, next, [&] { return finishedState(job->state) || m_stopping; });
        if (finishedState(job->state) || m_stopping || std::chrono::steady_clock::now() >= until) return viewOf(*job);
    }
}

std::vector<std::string> JobBoard::events(const std::string& id, size_t from, int waitMs, bool* finished, bool* found) {
    const auto job = fresh(id);
    *found = job != nullptr;
    *finished = true;
    if (!job) return {};
    std::unique_lock lock(m_mutex);
    m_changed.wait_for(lock, std::chrono::milliseconds(waitMs),
                       [&] { return job->events.size() > from || finishedState(job->state) || m_stopping; });
    *finished = finishedState(job->state) || m_stopping;
    if (job->events.size() > from) *finished = false;
    return std::vector<std::string>(job->events.begin() + std::ptrdiff_t(std::min(from, job->events.size())), job->events.end());
}

bool JobBoard::remove(const std::string& id) {
    std::shared_ptr<Job> job;
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_jobs.find(id);
        if (it == m_jobs.end() || !finishedState(it->second->state)) return false;
        job = it->second;
    }
    // The folder leaves jobs/ in one rename, in the same step as the job leaves the list: nobody
    // sees a listed job without its folder, or a folder half removed (a restart clears removing/).
    std::lock_guard exporting(job->exportMutex);
    const fs::path gone = removingDir() / id;
    std::error_code ec;
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_jobs.find(id);
        if (it == m_jobs.end() || it->second != job) return false;
        m_jobs.erase(it);
        fs::create_directories(removingDir(), ec);
        fs::remove_all(gone, ec);
        fs::rename(job->dir, gone, ec);
    }
    fs::remove_all(ec ? job->dir : gone, ec);
    return true;
}

void JobBoard::worker() {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(m_mutex);
            m_changed.wait(lock, [&] { return m_stopping || !m_queue.empty(); });
            if (m_stopping) return;
            job = m_jobs.at(m_queue.front());
            m_queue.pop_front();
            startRunning(job);
        }
        runJob(job);
        (void)stopRunning(job);
    }
}

void JobBoard::startRunning(const std::shared_ptr<Job>& job) {
    job->state = JobState::Running;
    job->local = true;
    (void)persist(*job);
    m_jobs[job->id] = job;
    m_metrics.runningJobs(++m_running);
}

bool JobBoard::stopRunning(const std::shared_ptr<Job>& job) {
    std::lock_guard lock(m_mutex);
    job->local = false;
    m_metrics.runningJobs(--m_running);
    m_changed.notify_all();
    return finishedState(job->state);
}

void JobBoard::runJob(const std::shared_ptr<Job>& job) {
    spdlog::info("job {} started: {} page(s), {} done before", job->id, job->pages, job->done);
    auto store = ProjectStore::open(job->project(), ProjectStore::Mode::OpenExisting);
    TranscribeParams p;
    p.recognizer = m_engineDefaults;
    p.recognizer.engine = chooseEngine(job->request.engine, job->request.languages, nullptr, m_engineDefaults.readerModel);
    p.recognizer.languages = job->request.languages;
    p.recognizer.device = m_options.device;
    p.recognizer.deviceMemoryMiB = m_options.gpuMemoryMiB;
    p.recognizer.readerSharing = m_readerSharing;
    p.source.pdfHelper = m_pdfHelper;
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    p.threads = m_options.threadsPerJob > 0 ? m_options.threadsPerJob : std::max(1, cores / m_options.workers);
    p.cancel = &job->cancel;
    std::mutex startsMutex;
    std::map<int64_t, std::chrono::steady_clock::time_point> starts;
    p.onPageStarted = [&](int64_t pageId) {
        std::lock_guard lock(startsMutex);
        starts[pageId] = std::chrono::steady_clock::now();
    };
    p.onText = [&](int64_t, const std::string&) { m_metrics.tokensGenerated(1); };
    p.onLog = [&](const std::string& m) { spdlog::info("job {}: {}", job->id, m); };
    p.onPage = [&](const PageEvent& e) {
        double seconds = 0;
        {
            std::lock_guard lock(startsMutex);
            if (auto it = starts.find(e.page.id); it != starts.end()) {
                seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->second).count();
                starts.erase(it);
            }
        }
        const bool failed = e.page.status == PageStatus::Failed;
        m_metrics.pageFinished(seconds, failed, e.page.failureKind);
        std::string event = pageEventJson(e.page, job->shown(e.failure), &e.text);
        std::lock_guard lock(m_mutex);
        job->events.push_back(std::move(event));
        m_changed.notify_all();
    };
    p.onProgress = [&](const RunProgress& r) {
        std::lock_guard lock(m_mutex);
        job->pages = r.total, job->done = r.done, job->failed = r.failed, job->flagged = r.flagged;
        job->pagesPerMinute = r.pagesPerMinute, job->etaSeconds = r.etaSeconds;
    };
    Result<RunSummary> summary = store ? runTranscription(**store, p) : Result<RunSummary>(store.status());
    if (store) store->reset();  // the project is closed before the job is called finished
    {
        std::lock_guard lock(m_mutex);
        if (summary && summary->cancelled && !job->cancelledByUser) return;  // a stopping server: resumes at the next start
        if (!summary) {
            job->state = JobState::Failed;
            job->error = job->shown(summary.status().message());
            spdlog::warn("job {} failed: {}", job->id, job->error);
        } else {
            job->state = summary->cancelled ? JobState::Cancelled : JobState::Done;
            job->pages = summary->total, job->done = summary->done, job->failed = summary->failed, job->flagged = summary->flagged;
            job->etaSeconds = 0;
        }
        job->finishedAt = std::time(nullptr);
        if (Status s = persist(*job); !s) spdlog::warn("job {}: {}", job->id, s.message());
    }
    if (job->state == JobState::Done)
        for (const auto f : job->request.formats)
            if (auto written = exportFile(job->id, f); !written)
                spdlog::warn("job {}: export {}: {}", job->id, exportFormatName(f), written.status().message());
    spdlog::info("job {} {}: {} of {} pages done, {} failed", job->id, jobStateName(job->state), job->done, job->pages, job->failed);
    if (job->request.sync && job->state == JobState::Cancelled) remove(job->id);  // its caller was answered 504 and left
}

ServerMetrics::Snapshot JobBoard::snapshot() const {
    ServerMetrics::Snapshot s;
    s.residentBytes = residentBytes();
    const GuardedMemory memory = guardedMemory(m_options.device);
    s.guardOnGpu = memory.gpu;
    s.guardedUsedBytes = memory.usedBytes;
    s.guardBytes = memory.guardBytes(m_options.memoryGuardShare);
    s.guardActive = memory.over(m_options.memoryGuardShare);
    if (m_readerSharing) {
        const auto b = m_readerSharing->batcher().stats();
        s.decodePasses = b.passes, s.decodeDrafts = b.drafts, s.decodeMembers = b.members;
    }
    std::unique_lock lock(m_mutex);
    for (const char* state : {"queued", "running", "done", "failed", "cancelled"}) s.jobsByState[state] = 0;
    for (const auto& [id, job] : m_jobs) {
        ++s.jobsByState[jobStateName(job->state)];
        if (!finishedState(job->state)) s.pagesInFlight += job->pages - job->done - job->failed;
    }
    s.running = m_running;
    lock.unlock();
    s.queued = int(std::max(0LL, queueDepth()));
    return s;
}

std::string JobBoard::unreadiness() const {
    {
        std::lock_guard lock(m_mutex);
        if (!m_started) return "starting";
    }
    if (!m_modelsMissing.empty()) return m_modelsMissing;
    if (auto refusal = admission()) return refusal->message;
    return {};
}

}  // namespace quire::server
