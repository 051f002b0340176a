// AttemptLog: a first line with the out-of-memory killer's count, then one line per page
// ("<id>\n"), appended with one write() each.
#include "quire/store/attempt_log.h"

#include "core/oom_kills.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace quire {

Result<AttemptLog> AttemptLog::start(const std::filesystem::path& file) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return Status(ErrorCode::Io, file.string() + ": cannot write the pages in flight: " + std::strerror(errno));
    if (const auto oom = oomKillsSoFar()) {
        const std::string head = "# oom-kills " + std::to_string(oom->count) + " " + oom->source + "\n";
        if (::write(fd, head.data(), head.size()) != ssize_t(head.size())) {
            ::close(fd);
            return Status(ErrorCode::Io, file.string() + ": cannot write the pages in flight: " + std::strerror(errno));
        }
    }
    return AttemptLog(fd);
}

bool AttemptLog::oomKillsSince(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string hash, key, source;
    int64_t then = 0;
    if (!(in >> hash >> key >> then) || hash != "#" || key != "oom-kills") return false;
    std::getline(in, source);
    while (!source.empty() && source.front() == ' ') source.erase(source.begin());
    const auto now = oomKillsIn(source);
    return now && *now > then;
}

std::vector<int64_t> AttemptLog::read(const std::filesystem::path& file) {
    std::vector<int64_t> ids;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("#", 0) == 0) continue;  // the first line's out-of-memory count
        try {
            ids.push_back(std::stoll(line));
        } catch (const std::exception&) {
            // a line cut by the crash: the page before it is listed already
        }
    }
    return ids;
}

AttemptLog::~AttemptLog() {
    if (m_fd >= 0) ::close(m_fd);
}

Status AttemptLog::mark(int64_t pageId) {
    const std::string line = std::to_string(pageId) + "\n";
    if (::write(m_fd, line.data(), line.size()) != ssize_t(line.size()))
        return Status(ErrorCode::Io, std::string("cannot note the page in flight: ") + std::strerror(errno));
    return Status::ok();
}

}  // namespace quire
