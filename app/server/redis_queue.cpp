// The shared job queue on a Redis stream (XADD, XREADGROUP, XAUTOCLAIM, XCLAIM, XACK), through hiredis.
#include "redis_queue.h"

#include <hiredis/hiredis.h>

#include <algorithm>

namespace quire::server {

void RedisQueue::FreeReply::operator()(redisReply* r) const { freeReplyObject(r); }

Result<std::unique_ptr<RedisQueue>> RedisQueue::connect(const std::string& address, const std::string& consumer) {
    const auto colon = address.rfind(':');
    int port = 0;
    try {
        port = colon == std::string::npos ? 0 : std::stoi(address.substr(colon + 1));
    } catch (...) {
    }
    if (colon == std::string::npos || port <= 0 || port > 65535)
        return Status(ErrorCode::InvalidArgument, "--redis takes HOST:PORT (got '" + address + "')");
    std::unique_ptr<RedisQueue> q(new RedisQueue());
    q->m_host = address.substr(0, colon);
    q->m_port = port;
    q->m_consumer = consumer;
    if (Status s = q->reconnect(); !s) return s;
    return q;
}

RedisQueue::~RedisQueue() {
    if (m_ctx) redisFree(m_ctx);
}

Status RedisQueue::reconnect() {
    if (m_ctx) redisFree(m_ctx);
    m_ctx = redisConnectWithTimeout(m_host.c_str(), m_port, timeval{5, 0});
    if (!m_ctx || m_ctx->err) {
        const std::string why = m_ctx ? m_ctx->errstr : "out of memory";
        return Status(ErrorCode::Unreadable, "Redis at " + m_host + ":" + std::to_string(m_port) + ": " + why);
    }
    // The group, created with its stream on first use (BUSYGROUP: another server made it first).
    Reply r(static_cast<redisReply*>(redisCommand(m_ctx, "XGROUP CREATE %s %s 0 MKSTREAM", kStream, kGroup)));
    if (!r) return Status(ErrorCode::Unreadable, "Redis: " + std::string(m_ctx->errstr));
    if (r->type == REDIS_REPLY_ERROR && std::string(r->str).rfind("BUSYGROUP", 0) != 0)
        return Status(ErrorCode::Unreadable, "Redis: " + std::string(r->str));
    return Status::ok();
}

template <typename... Args>
Result<RedisQueue::Reply> RedisQueue::command(const char* format, Args... args) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        Reply r(static_cast<redisReply*>(redisCommand(m_ctx, format, args...)));
        if (r) {
            if (r->type == REDIS_REPLY_ERROR) return Status(ErrorCode::Unreadable, std::string("Redis: ") + r->str);
            return r;
        }
        if (attempt == 0)
            if (Status s = reconnect(); !s) return s;
    }
    return Status(ErrorCode::Unreadable, std::string("Redis: ") + (m_ctx ? m_ctx->errstr : "no connection"));
}

namespace {

// An entry [id, [field, value, ...]]: its stream id and the job field.
std::optional<RedisQueue::Entry> entryOf(const redisReply* e) {
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 2 || e->element[1]->type != REDIS_REPLY_ARRAY) return std::nullopt;
    RedisQueue::Entry out;
    out.streamId = e->element[0]->str;
    const redisReply* fields = e->element[1];
    for (size_t i = 0; i + 1 < fields->elements; i += 2)
        if (std::string(fields->element[i]->str) == "job") out.jobId = fields->element[i + 1]->str;
    if (out.jobId.empty()) return std::nullopt;
    return out;
}

}  // namespace

Status RedisQueue::add(const std::string& jobId) {
    auto r = command("XADD %s * job %s", kStream, jobId.c_str());
    return r ? Status::ok() : r.status();
}

Result<std::optional<RedisQueue::Entry>> RedisQueue::next(int blockMs, int claimAfterMs) {
    {
        auto r = command("XAUTOCLAIM %s %s %s %d 0-0 COUNT 1", kStream, kGroup, m_consumer.c_str(), claimAfterMs);
        if (!r) return r.status();
        const redisReply* claimed = (*r)->type == REDIS_REPLY_ARRAY && (*r)->elements >= 2 ? (*r)->element[1] : nullptr;
        if (claimed && claimed->type == REDIS_REPLY_ARRAY && claimed->elements > 0)
            if (auto e = entryOf(claimed->element[0])) {
                e->reclaimed = true;
                return std::optional<Entry>(*e);
            }
    }
    auto r = command("XREADGROUP GROUP %s %s COUNT 1 BLOCK %d STREAMS %s >", kGroup, m_consumer.c_str(), blockMs, kStream);
    if (!r) return r.status();
    // [[stream, [entry]]] or nil when nothing came.
    if ((*r)->type != REDIS_REPLY_ARRAY || (*r)->elements == 0) return std::optional<Entry>();
    const redisReply* stream = (*r)->element[0];
    if (stream->type != REDIS_REPLY_ARRAY || stream->elements < 2 || stream->element[1]->elements == 0) return std::optional<Entry>();
    return entryOf(stream->element[1]->element[0]);
}

Status RedisQueue::touch(const std::string& streamId) {
    auto r = command("XCLAIM %s %s %s 0 %s JUSTID", kStream, kGroup, m_consumer.c_str(), streamId.c_str());
    return r ? Status::ok() : r.status();
}

Status RedisQueue::ack(const std::string& streamId) {
    if (auto r = command("XACK %s %s %s", kStream, kGroup, streamId.c_str()); !r) return r.status();
    auto d = command("XDEL %s %s", kStream, streamId.c_str());
    return d ? Status::ok() : d.status();
}

Result<long long> RedisQueue::waiting() {
    auto len = command("XLEN %s", kStream);
    if (!len) return len.status();
    auto pending = command("XPENDING %s %s", kStream, kGroup);
    if (!pending) return pending.status();
    const long long taken = (*pending)->type == REDIS_REPLY_ARRAY && (*pending)->elements > 0 ? (*pending)->element[0]->integer : 0;
    return std::max(0LL, (*len)->integer - taken);
}

}  // namespace quire::server
