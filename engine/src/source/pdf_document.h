// PdfDocument: one PDF checked with qpdf before QtPdf (PDFium) sees it, and rendered page by page.
// The check walks the page tree with a cycle guard and counts the real pages (a lying /Count or a
// loop gets a repaired copy), and finds pages that draw themselves; a page rendered blank although
// it draws images is rendered again with poppler, or comes back with a doubt.
#pragma once

#include <QPdfDocument>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "quire/core/status.h"
#include "quire/source/page_image.h"

namespace quire {

struct PdfPageInfo {
    double widthPt = 0, heightPt = 0;
    bool drawsImages = false;  // the page shows image XObjects or inline images
    std::string refusal;       // non-empty: the page is not rendered, for this reason
};

class PdfDocument {
public:
    ~PdfDocument();
    static Result<std::unique_ptr<PdfDocument>> open(const std::filesystem::path& path);

    int pageCount() const { return int(m_pages.size()); }
    const PdfPageInfo& page(int index) const { return m_pages.at(size_t(index)); }
    // What the check repaired ("the page tree ... ; read 1 page"), empty when nothing.
    const std::string& repairNote() const { return m_repairNote; }

    // Page `index` at `width` x `height` pixels, composited on white (BGR, or gray when rendered
    // by poppler); `page.doubt` says why the page must be looked at when it came back blank.
    Result<PageImage> render(int index, int width, int height, int dpi, const std::atomic<bool>* cancel);
    std::optional<std::string> textLayer(int index);

private:
    PdfDocument() = default;
    std::filesystem::path m_path;      // the file as given
    std::filesystem::path m_readPath;  // what QtPdf reads: the file, or a held descriptor's /proc name
    std::vector<int> m_held;           // descriptors of the repaired copy and of a file not named in UTF-8
    std::vector<PdfPageInfo> m_pages;
    std::string m_repairNote;
    QPdfDocument m_doc;
};

}  // namespace quire
