// libFuzzer target: opening an arbitrary file as a PDF (qpdf's page-tree check and repair, then
// QtPdf) and rendering its first pages small, in-process. In Quire this runs inside quire-render,
// killed at its deadline; here libFuzzer's -timeout and -rss_limit_mb are that watchdog, so a loop
// or an explosion is a finding.
#include <QCoreApplication>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "quire/source/document_source.h"
#include "scratch_file.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    static QCoreApplication app(*argc, *argv);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = writeScratchFile(".pdf", data, size);
    if (path.empty()) return 0;
    quire::SourceOptions o;
    o.pdfDpi = 36;  // small renders: the fuzzer looks for crashes, not for text
    o.maxPixels = 4'000'000;
    auto src = quire::openSource(path, o);
    if (src)
        for (int i = 0; i < std::min(3, (*src)->pageCount()); ++i) {
            (void)(*src)->loadPage(i);
            (void)(*src)->textLayer(i);
        }
    return 0;
}
