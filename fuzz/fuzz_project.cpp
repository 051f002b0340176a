// libFuzzer target: opening an arbitrary file as a project (import path) and reading it. It must
// refuse or read, never crash, and never write to a file it refused.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "quire/export/book.h"
#include "quire/store/project_store.h"
#include "scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = writeScratchFile(".quire", data, size);
    if (path.empty()) return 0;
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
