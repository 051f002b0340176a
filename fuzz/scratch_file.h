// The file a fuzz target writes each input to before opening it by name: one per process, in the
// temporary folder (fuzz/run.sh gives the targets one of their own and removes it), written anew
// for each input with any SQLite companions of the last one removed.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

// The scratch file's name, or empty when it cannot be written.
inline std::string writeScratchFile(const char* suffix, const uint8_t* data, size_t size) {
    std::error_code ec;
    static const std::string path =
        (std::filesystem::temp_directory_path(ec) / ("quire-fuzz-" + std::to_string(getpid()) + suffix)).string();
    for (const char* companion : {"-wal", "-shm", ".lock"}) std::filesystem::remove(path + companion, ec);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return {};
    const bool written = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && written ? path : std::string();
}
