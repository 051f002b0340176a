// CrashMarker: while a run reads pages, a crash signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT)
// leaves a marker file beside the project before the process dies, so the next run knows the
// pages in flight crashed it, and a kill, a cancel or the power going off does not count.
#pragma once

#include <filesystem>

namespace quire {

class CrashMarker {
public:
    // Arms the handlers for `marker` (one marker at a time in a process; a second is not armed).
    explicit CrashMarker(const std::filesystem::path& marker);
    ~CrashMarker();  // the handlers that were there before come back
    CrashMarker(const CrashMarker&) = delete;
    CrashMarker& operator=(const CrashMarker&) = delete;

private:
    bool m_armed = false;
};

}  // namespace quire
