// SpillFile: an unlinked temporary file that pages' visual inputs are appended to and read from.
#include "decoder/spill_file.h"

#include "core/unnamed_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace quire::decoder {

SpillFile::~SpillFile() {
    if (m_fd >= 0) ::close(m_fd);
}

Result<int64_t> SpillFile::append(const float* data, size_t count) {
    if (m_fd < 0)
        if (Status s = open(); !s) return s;
    const int64_t at = m_size;
    const char* p = reinterpret_cast<const char*>(data);
    size_t left = count * sizeof(float);
    while (left > 0) {
        const ssize_t n = ::pwrite(m_fd, p, left, off_t(m_size));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Status(ErrorCode::Io, "decoder: cannot write its page spill file in " + m_dir + ": " + std::strerror(errno));
        p += n, left -= size_t(n), m_size += n;
    }
    return at;
}

Status SpillFile::read(int64_t at, float* out, size_t count) const {
    char* p = reinterpret_cast<char*>(out);
    size_t left = count * sizeof(float);
    while (left > 0) {
        const ssize_t n = m_fd < 0 ? -1 : ::pread(m_fd, p, left, off_t(at));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return Status(ErrorCode::Io, "decoder: cannot read back its page spill file in " + m_dir);
        p += n, left -= size_t(n), at += n;
    }
    return Status::ok();
}

Status SpillFile::open() {
    m_fd = openUnnamedFile(m_dir);
    if (m_fd < 0) return Status(ErrorCode::Io, "decoder: cannot make its page spill file in " + m_dir + ": " + std::strerror(errno));
    return Status::ok();
}

}  // namespace quire::decoder
