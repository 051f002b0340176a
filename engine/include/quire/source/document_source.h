// Scanned documents as streams of pages: a PDF, a (multi-page) TIFF, a single image, or a folder
// of page images in natural order. Pages are decoded one at a time on demand, so a volume of any
// length never sits in memory at once.
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "quire/source/page_image.h"
#include "quire/core/status.h"

namespace quire {

enum class SourceKind { Pdf, Tiff, Image, Folder };
const char* sourceKindName(SourceKind kind);

struct SourceOptions {
    int pdfDpi = 300;  // rendering resolution of PDF pages
    // Images above this are refused (decoded pages above it would cost gigabytes).
    long long maxPixels = 200'000'000;
    int maxSide = 32'000;
    // The quire-render program: PDFs are opened and rendered there, under `pdfHelperMemory` bytes of
    // address space, and it is killed when opening takes over `pdfOpenSeconds` or a page over
    // `pdfPageSeconds` (a page tree or drawing that loops). Empty: PDFs are read in this process.
    std::string pdfHelper;
    long long pdfHelperMemory = 3'000'000'000;
    int pdfOpenSeconds = 30, pdfPageSeconds = 60;
    // Waits inside a source (the helper, another renderer) end when this turns true.
    const std::atomic<bool>* cancel = nullptr;
};

class DocumentSource {
public:
    virtual ~DocumentSource() = default;
    virtual SourceKind kind() const = 0;
    virtual const std::filesystem::path& path() const = 0;
    virtual int pageCount() const = 0;
    // Decodes page `index` (0-based). Errors name the file and the page.
    virtual Result<PageImage> loadPage(int index) = 0;
    // The file a page comes from (the image file for folders, the document otherwise) and the
    // page's index inside that file.
    virtual std::filesystem::path pageFile(int index) const { (void)index; return path(); }
    virtual int pageIndexInFile(int index) const { return index; }
    // A PDF page's existing text layer, when it has one with visible characters.
    virtual std::optional<std::string> textLayer(int index) { (void)index; return std::nullopt; }
    // What opening repaired or assumed (a damaged PDF page tree read from a repaired copy), for the log.
    virtual std::string openNote() const { return {}; }

    // The source's identity: a file's SHA-256; for a folder, one over the names and hashes of its
    // page files in order (a changed, added or removed page changes it).
    Result<std::string> contentSha256() const;
    // Bytes on disk: the file, or a folder's page files together.
    int64_t sizeBytes() const;
};

// Detects the format from the file's content (not its name) and opens it.
Result<std::unique_ptr<DocumentSource>> openSource(const std::filesystem::path& path,
                                                   const SourceOptions& options = {});

// The quire-render helper installed in `programDir` (the folder of the running program), or empty
// when it is not there (PDFs are then read in-process).
std::string pdfHelperIn(const std::filesystem::path& programDir);

// Natural order: "p2" < "p10", case-insensitive.
bool naturalLess(const std::string& a, const std::string& b);

// The absolute path with symbolic links and ".." resolved where it exists (the path a project
// records for a source).
std::string canonicalPath(const std::filesystem::path& path);

// SHA-256 of a file's bytes, hex; streamed.
Result<std::string> fileSha256(const std::filesystem::path& path);

}  // namespace quire
