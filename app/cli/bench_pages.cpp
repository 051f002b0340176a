// Real pages' visual tokens for the decode benchmark, through the reader's own front-end.
#include "bench_pages.h"

#include <QCoreApplication>

#include "quire/preprocess/preprocess.h"
#include "quire/reader/reader.h"
#include "quire/source/document_source.h"

namespace quire::cli {

Result<std::vector<std::vector<float>>> readerPageInputs(const std::string& volume, const std::string& modelDir,
                                                         bool withIds, int dpi) {
    ReaderOptions ro;
    ro.modelDir = modelDir;
    auto engine = ReaderEngine::load(ro);
    if (!engine) return engine.status();
    SourceOptions so;
    so.pdfDpi = dpi;
    so.pdfHelper = pdfHelperIn(QCoreApplication::applicationDirPath().toStdString());
    auto src = openSource(volume, so);
    if (!src) return src.status();
    std::vector<std::vector<float>> pages;
    for (int p = 0; p < (*src)->pageCount(); ++p) {
        auto img = (*src)->loadPage(p);
        if (!img) return img.status();
        for (auto& region : preprocessPage(img->image, PreprocessParams{}).regions) {
            auto read = (*engine)->encode(region.image);
            if (!read) return Status(read.status().code(), volume + " page " + std::to_string(p + 1) + ": " + read.status().message());
            pages.push_back(withIds ? (*engine)->modelInputs(*read) : ReaderEngine::visualTokens(*read));
        }
    }
    if (pages.empty()) return Status(ErrorCode::InvalidArgument, volume + ": no pages");
    return pages;
}

}  // namespace quire::cli
