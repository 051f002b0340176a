// quire-server's command line: where it listens, where jobs live, who may call it, and the
// limits that keep it from taking more work than it can do.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "quire/core/status.h"

namespace quire::server {

struct ServerOptions {
    std::string host = "127.0.0.1";  // loopback unless --host says otherwise
    int port = 8080;
    std::filesystem::path dataDir;    // one folder per job under dataDir/jobs
    std::filesystem::path inputDir;   // files a job may name by `path` (empty: none)
    std::string token;                // the bearer token (never logged)
    std::filesystem::path tlsCert, tlsKey;
    size_t maxBodyBytes = size_t(512) << 20;
    int workers = 1;                  // jobs read at the same time
    int threadsPerJob = 0;            // 0: the cores shared among the workers
    // Reader jobs read at the same time decode as one batch (one model, drafts computed together:
    // ReaderSharing); --no-batch has each decode alone (for comparison).
    bool batchReaders = true;
    int maxQueuedJobs = 16;           // waiting jobs; beyond them 429
    int maxPagesInFlight = 20000;     // pages of queued and running jobs together; beyond them 429
    int syncMaxPages = 20;            // POST /v1/transcribe takes documents up to this many pages
    int syncWaitSeconds = 600;        // how long a synchronous call waits for its pages
    double memoryGuardShare = 0.85;   // memory over this share (the GPU's with --device cuda): new work refused
    std::string device = "cpu";       // where PP-OCR and the reader compute: "cpu" or "cuda" (a GPU)
    size_t gpuMemoryMiB = 0;          // with cuda: the most device memory one job's decoder may hold (0: all)
    double retainHours = 0;           // finished jobs removed after this long (0: kept)
    double keepInputsHours = 0;       // a finished job's uploads removed after this long (0: kept with the job)
    // Scale-out: jobs go to a Redis stream (redis_queue.h) instead of this process's queue; only
    // servers started with --worker read them. dataDir is then a folder every server shares.
    std::string redis;                // HOST:PORT; empty: the local queue
    bool worker = false;
    int claimAfterSeconds = 60;       // a job whose worker has not been heard of for this long is taken over
};

// Reads argv; the token comes from --token-file or `envToken` (QUIRE_SERVER_TOKEN, read by main).
// A bad value is an error naming the option and what it takes.
Result<ServerOptions> parseServerOptions(int argc, char** argv, const char* envToken);
extern const char* const kServerUsage;

}  // namespace quire::server
