// SpillFile: the visual inputs of the pages a decode session was fed, in an unlinked temporary
// file, so that a page that left the SR-SWA window can be computed again when the page gate picks
// it while host memory does not grow with the volume. The file goes when the session does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "quire/core/status.h"

namespace quire::decoder {

class SpillFile {
public:
    SpillFile() = default;
    SpillFile(const SpillFile&) = delete;
    SpillFile& operator=(const SpillFile&) = delete;
    ~SpillFile();

    // Appends `count` floats; returns the byte offset they start at. The file is made on first use
    // under $TMPDIR (the platform's convention for scratch files), else /tmp.
    Result<int64_t> append(const float* data, size_t count);
    // Reads back `count` floats written at byte offset `at`.
    Status read(int64_t at, float* out, size_t count) const;
    int64_t size() const { return m_size; }

private:
    Status open();

    int m_fd = -1;
    int64_t m_size = 0;
    std::string m_dir;
};

}  // namespace quire::decoder
