// The one-writer lock of a project file ("<project>.lock", flock), shared by the stores of one
// process.
#include "store/project_lock.h"

#include <fstream>
#include <map>
#include <mutex>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace quire {

// One writer process per project: an advisory lock on "<project>.lock", held while any store of
// this process has the project open for writing (several connections of one process share it).
// The kernel drops it when the process dies, so a killed run never leaves a stale lock; a clean
// close removes the file (unlinked while still locked: a process that opened it just before
// finds, once it has the lock, that the name no longer leads to its file, and tries again).
namespace {

struct ProcessLock {
    int fd = -1;
    int users = 0;
    std::string path;
};
std::mutex g_lockMutex;
std::map<std::string, ProcessLock> g_locks;

}  // namespace

Status lockProject(const fs::path& project) {
    std::error_code ec;
    const std::string key = fs::weakly_canonical(fs::absolute(project), ec).string();
    std::lock_guard guard(g_lockMutex);
    ProcessLock& l = g_locks[key];
    if (l.users > 0) {
        ++l.users;
        return Status::ok();
    }
    const std::string lockPath = project.string() + ".lock";
    int fd = -1;
    for (int attempt = 0; attempt < 8; ++attempt) {
        fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) break;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) break;
        struct stat held {}, named {};
        if (fstat(fd, &held) == 0 && ::stat(lockPath.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
            held.st_dev == named.st_dev)
            break;  // locked, and still the file of that name
        ::close(fd);  // its holder removed it as we took it: take the new one
        fd = -1;
    }
    if (fd < 0) {
        g_locks.erase(key);
        return Status::ok();  // cannot create a lock file (read-only folder): SQLite's own locking still applies
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char holder[256] = {};
        const ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        ::close(fd);
        g_locks.erase(key);
        std::string who = n > 0 ? std::string(holder, size_t(n)) : std::string("another process");
        while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
        return Status(ErrorCode::Unreadable, project.string() + ": the project is open in another Quire process (" +
                                                 who + "); close it there first, or open this one read-only");
    }
    char host[128] = {};
    gethostname(host, sizeof host - 1);
    std::ifstream comm("/proc/self/comm");
    std::string prog;
    std::getline(comm, prog);
    const std::string info = prog + " pid " + std::to_string(getpid()) + " on " + host + "\n";
    if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, info.data(), info.size(), 0);
    l.fd = fd;
    l.users = 1;
    l.path = lockPath;
    return Status::ok();
}

void unlockProject(const fs::path& project) {
    std::error_code ec;
    const std::string key = fs::weakly_canonical(fs::absolute(project), ec).string();
    std::lock_guard guard(g_lockMutex);
    auto it = g_locks.find(key);
    if (it == g_locks.end()) return;
    if (--it->second.users == 0) {
        ::unlink(it->second.path.c_str());  // while still locked (see ProcessLock)
        ::close(it->second.fd);
        g_locks.erase(it);
    }
}

}  // namespace quire
