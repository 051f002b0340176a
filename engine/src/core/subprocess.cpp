// Subprocess: fork and exec with one socket for the child's standard input and output, reads
// with a deadline and a cancel flag, and a description of how the child ended.
#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace quire {

Result<std::unique_ptr<Subprocess>> Subprocess::start(const std::string& program, const std::vector<std::string>& args,
                                                      long long addressSpaceBytes) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return Status(ErrorCode::Internal, "cannot start " + program + ": " + std::strerror(errno));
    const int devNull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    // Everything the child needs is prepared before fork: between fork and exec only
    // async-signal-safe calls are allowed in a process with threads.
    std::vector<std::string> argvStrings{program};
    argvStrings.insert(argvStrings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argvStrings) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
        const int e = errno;
        close(sv[0]), close(sv[1]);
        if (devNull >= 0) close(devNull);
        return Status(ErrorCode::Internal, "cannot start " + program + ": " + std::strerror(e));
    }
    if (pid == 0) {
        dup2(sv[1], 0);
        dup2(sv[1], 1);
        if (devNull >= 0) dup2(devNull, 2);
        if (addressSpaceBytes > 0) {
            const rlimit lim{rlim_t(addressSpaceBytes), rlim_t(addressSpaceBytes)};
            setrlimit(RLIMIT_AS, &lim);
        }
        const rlimit noCore{0, 0};  // a helper killed by a hostile page leaves no core file behind
        setrlimit(RLIMIT_CORE, &noCore);
        // Killed with the thread that started it: a helper looping on a hostile file must not
        // outlive a run that was killed.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (program.find('/') != std::string::npos) execv(argv[0], argv.data());
        else execvp(argv[0], argv.data());
        _exit(127);
    }
    close(sv[1]);
    if (devNull >= 0) close(devNull);
    auto p = std::unique_ptr<Subprocess>(new Subprocess);
    p->m_pid = pid;
    p->m_fd = sv[0];
    return p;
}

Subprocess::~Subprocess() {
    kill();
    if (m_fd >= 0) close(m_fd);
}

void Subprocess::kill() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    reap(true);
}

void Subprocess::reap(bool wait) {
    if (m_pid <= 0) return;
    int st = 0;
    const pid_t r = waitpid(m_pid, &st, wait ? 0 : WNOHANG);
    if (r != m_pid) return;
    m_pid = -1;
    if (WIFEXITED(st)) {
        m_end = WEXITSTATUS(st) == 127 ? "could not be started (exit 127)" : "exited with status " + std::to_string(WEXITSTATUS(st));
    } else if (WIFSIGNALED(st)) {
        m_end = "was ended by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
    }
}

Status Subprocess::send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
        const ssize_t n = ::send(m_fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            reap(true);
            return Status(ErrorCode::Engine, "the helper " + (m_end.empty() ? std::string("stopped listening") : m_end));
        }
        off += size_t(n);
    }
    return Status::ok();
}

// Reads what is available into the buffer, waiting in short slices so that a cancel is seen
// within a tenth of a second.
Status Subprocess::fill(Clock::time_point deadline, const std::atomic<bool>* cancel) {
    for (;;) {
        if (cancel && cancel->load()) {
            kill();
            return Status(ErrorCode::Cancelled, "cancelled");
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            kill();
            return Status(ErrorCode::TimedOut, "timed out");
        }
        pollfd pfd{m_fd, POLLIN, 0};
        const int r = poll(&pfd, 1, int(std::min<long long>(left, 100)));
        if (r < 0 && errno != EINTR) return Status(ErrorCode::Internal, std::string("poll: ") + std::strerror(errno));
        if (r <= 0) continue;
        char buf[1 << 16];
        const ssize_t n = ::recv(m_fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            reap(true);
            return Status(ErrorCode::Engine, m_end.empty() ? "closed its output" : m_end);
        }
        m_buffer.append(buf, size_t(n));
        return Status::ok();
    }
}

Result<std::string> Subprocess::readLine(Clock::time_point deadline, const std::atomic<bool>* cancel) {
    for (;;) {
        const size_t nl = m_buffer.find('\n');
        if (nl != std::string::npos) {
            std::string line = m_buffer.substr(0, nl);
            m_buffer.erase(0, nl + 1);
            return line;
        }
        if (Status s = fill(deadline, cancel); !s) return s;
    }
}

Result<std::string> Subprocess::readExact(size_t n, Clock::time_point deadline, const std::atomic<bool>* cancel) {
    while (m_buffer.size() < n)
        if (Status s = fill(deadline, cancel); !s) return s;
    std::string out = m_buffer.substr(0, n);
    m_buffer.erase(0, n);
    return out;
}

}  // namespace quire
