// The job queue shared by quire-servers on many machines: a Redis stream with a consumer group.
// A front-end adds job ids; each worker reads new ones, keeps its entry alive while it reads the
// job (a heartbeat resets the entry's idle time), and acknowledges it when the job is over. An
// entry idle longer than the claim time belongs to a worker that died: the next worker to ask
// claims it and resumes the job from its project.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "quire/core/status.h"

struct redisContext;
struct redisReply;

namespace quire::server {

class RedisQueue {
public:
    struct Entry {
        std::string streamId, jobId;
        bool reclaimed = false;  // taken over from a worker that stopped answering
    };

    // "HOST:PORT"; `consumer` names this worker in the group (host and process id).
    static Result<std::unique_ptr<RedisQueue>> connect(const std::string& address, const std::string& consumer);
    ~RedisQueue();

    Status add(const std::string& jobId);
    // A dead worker's entry idle for claimAfterMs or more, else a new one; waits up to blockMs.
    Result<std::optional<Entry>> next(int blockMs, int claimAfterMs);
    Status touch(const std::string& streamId);  // heartbeat: resets the entry's idle time
    Status ack(const std::string& streamId);    // done with it: acknowledged and deleted
    // Entries not yet taken by any worker.
    Result<long long> waiting();

    static constexpr const char* kStream = "quire:jobs";
    static constexpr const char* kGroup = "quire-workers";

private:
    struct FreeReply {
        void operator()(redisReply* r) const;
    };
    using Reply = std::unique_ptr<redisReply, FreeReply>;

    RedisQueue() = default;
    Status reconnect();
    // A command's reply (never an error reply), reconnecting once when the connection was lost.
    template <typename... Args>
    Result<Reply> command(const char* format, Args... args);
    std::string m_host, m_consumer;
    int m_port = 0;
    redisContext* m_ctx = nullptr;
};

}  // namespace quire::server
