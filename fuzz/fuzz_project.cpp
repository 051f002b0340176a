// libFuzzer target: opening an arbitrary file as a project (import path) and reading it. It must
// refuse or read, never crash, and never write to a file it refused.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "quire/export/book.h"
#include "quire/store/project_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = "/tmp/quire-fuzz-" + std::to_string(getpid()) + ".quire";
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", ".lock"}) std::filesystem::remove(path + suffix, ec);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    auto store = quire::ProjectStore::open(path, quire::ProjectStore::Mode::ReadOnly);
    if (store) {
        (void)(*store)->counts();
        (void)(*store)->integrityCheck();
        (void)(*store)->lastRun();
        (void)(*store)->decoderState();
        auto pages = quire::loadBookPages(**store);
        if (pages) (void)quire::assembleBook(*pages);
    }
    return 0;
}
