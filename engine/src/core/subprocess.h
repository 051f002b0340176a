// Subprocess: a helper program the engine can stop. Work that may loop or exhaust memory on a
// hostile file (PDF opening and rendering) runs in one, under an address-space limit, and is
// killed at its deadline or when the run is cancelled.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "quire/core/status.h"

namespace quire {

class Subprocess {
public:
    using Clock = std::chrono::steady_clock;

    // Starts `program` (a path, or a name looked up in PATH) with `args`; its standard input and
    // output are one socket to this process, its standard error is discarded. A positive
    // `addressSpaceBytes` limits its memory (RLIMIT_AS).
    static Result<std::unique_ptr<Subprocess>> start(const std::string& program, const std::vector<std::string>& args,
                                                     long long addressSpaceBytes = 0);
    ~Subprocess();  // kills and reaps the child if it still runs
    Subprocess(const Subprocess&) = delete;
    Subprocess& operator=(const Subprocess&) = delete;

    Status send(const std::string& bytes);
    // Read up to a newline (not included) or exactly `n` bytes. They fail with DeadlineExceeded at
    // `deadline`, Cancelled when `*cancel` turns true (both kill the child), and with what became
    // of the child when it ends first.
    Result<std::string> readLine(Clock::time_point deadline, const std::atomic<bool>* cancel);
    Result<std::string> readExact(size_t n, Clock::time_point deadline, const std::atomic<bool>* cancel);

    void kill();
    bool running() const { return m_pid > 0; }
    // "exited with status 1", "killed by signal 9 (Killed)" after the child ended.
    const std::string& endDescription() const { return m_end; }

private:
    Subprocess() = default;
    Status fill(Clock::time_point deadline, const std::atomic<bool>* cancel);
    void reap(bool wait);

    pid_t m_pid = -1;
    int m_fd = -1;
    std::string m_buffer;
    std::string m_end;
};

}  // namespace quire
