// CrashMarker: the handler only does what is async-signal-safe (open, write, close, sigaction,
// raise), then hands the signal to the handler that was there before (a sanitizer's, or the
// default one, which ends the process).
#include "crash_marker.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace quire {

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
char g_path[4096];
struct sigaction g_previous[sizeof kSignals / sizeof kSignals[0]];
std::atomic<bool> g_taken{false};

void onCrash(int sig) {
    const int fd = ::open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        static const char kText[] = "the engine crashed while reading pages\n";
        (void)!::write(fd, kText, sizeof kText - 1);
        ::close(fd);
    }
    for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i)
        if (kSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
    raise(sig);
}

}  // namespace

CrashMarker::CrashMarker(const std::filesystem::path& marker) {
    const std::string p = marker.string();
    if (p.size() >= sizeof g_path || g_taken.exchange(true)) return;
    std::memcpy(g_path, p.c_str(), p.size() + 1);
    struct sigaction sa{};
    sa.sa_handler = onCrash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_NODEFER;
    for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
    m_armed = true;
}

CrashMarker::~CrashMarker() {
    if (!m_armed) return;
    for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
    g_taken = false;
}

}  // namespace quire
