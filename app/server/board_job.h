// A job as the JobBoard keeps it, and the helpers its files share (job_board.cpp, job_results.cpp,
// redis_worker.cpp, job_retention.cpp). Private to quire-server.
#pragma once

#include <atomic>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "job_board.h"

namespace quire::server {

bool finishedState(JobState s);
// A job's id as newJobId makes it: what may name a folder under DATA/jobs.
bool isJobId(const std::string& id);
// This process in the shared queue's consumer group: host, process id and `role`.
std::string consumerName(const std::string& role);
void replaceAll(std::string& s, const std::string& from, const std::string& to);

struct JobBoard::Job {
    std::string id;
    std::filesystem::path dir;
    JobRequest request;
    JobState state = JobState::Queued;
    std::time_t createdAt = 0, finishedAt = 0;
    std::string error;
    int pages = 0, done = 0, failed = 0, flagged = 0;
    double pagesPerMinute = 0, etaSeconds = -1;
    std::vector<std::string> events;
    std::atomic<bool> cancel{false};
    bool cancelledByUser = false;
    bool local = false;  // being read by this process
    std::mutex exportMutex;
    // Each input's path on the server and its name as the client gave it: what the client is shown.
    std::vector<std::pair<std::string, std::string>> shownAs;
    std::filesystem::path project() const { return dir / "job.quire"; }
    std::string shown(std::string text) const {
        for (const auto& [path, name] : shownAs) replaceAll(text, path, name);
        return text;
    }
};

}  // namespace quire::server
