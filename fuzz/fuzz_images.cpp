// libFuzzer target: an arbitrary file opened as a page source by its content (PNG, JPEG, TIFF,
// BMP, or refused) and every page decoded, under a small pixel limit; the JPEG damage check runs
// on JPEGs. It must decode, fail the page or refuse, never crash.
#include <cstdint>
#include <cstdio>
#include <string>

#include "quire/source/document_source.h"
#include "scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = writeScratchFile(".img", data, size);
    if (path.empty()) return 0;
    quire::SourceOptions o;
    o.maxPixels = 4'000'000;
    o.maxSide = 8'000;
    auto src = quire::openSource(path, o);
    if (src)
        for (int i = 0; i < std::min(8, (*src)->pageCount()); ++i) (void)(*src)->loadPage(i);
    return 0;
}
