// Whole-book exports, corrections applied: Markdown, DOCX, plain text, hOCR 1.2, ALTO 4.4,
// PAGE XML 2019 and a searchable PDF (original scans with an invisible, word-fitted text layer).
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "quire/export/book.h"
#include "quire/store/project_store.h"

namespace quire {

enum class ExportFormat { Markdown, Docx, Text, Hocr, Alto, PageXml, Pdf };
const char* exportFormatName(ExportFormat f);
// "md,docx,txt,hocr,alto,page,pdf" (or "all").
Result<std::vector<ExportFormat>> parseExportFormats(const std::string& csv);

struct ExportOptions {
    std::filesystem::path outDir;
    std::string baseName = "book";
    // Document title, author and language (BCP 47) in DOCX, hOCR and PDF metadata; each defaults to
    // the project's properties (project_properties.h), the title then to the project file's name.
    std::string title, author, language;
    std::vector<ExportFormat> formats;
    // "[p. 12]" (or "[scan 13]" where no printed number was found) where each page begins, in
    // DOCX, Markdown and text, so a passage can be cited by the page of the printed book.
    bool pageMarkers = false;
    // The searchable PDF as PDF/A-2b (ISO 19005-2, level B) for long-term archiving: XMP metadata, an
    // sRGB output intent, every page an image (a source PDF's pages are rendered, not copied).
    bool pdfA = false;
    // Only the book's pages firstPage..lastPage (1-based, inclusive); 0, 0: every page.
    int firstPage = 0, lastPage = 0;
    std::filesystem::path dictionaryDir = "/usr/share/hunspell";  // hunspell dictionaries, for line-end hyphens
    std::function<void(int done, int total, const std::string& what)> onProgress;
    const std::atomic<bool>* cancel = nullptr;
};

// Writes every requested format; each file is written to a temporary name and renamed into place,
// so a failed or cancelled export never leaves a half-written file. Returns the paths written.
Result<std::vector<std::filesystem::path>> exportProject(ProjectStore& store, const ExportOptions& options);

// The metadata the exports carry.
struct DocumentInfo {
    std::string title, author, language;
};

// Individual writers (used by exportProject; exposed for the tests and the fuzz targets).
std::string toMarkdown(const Book& book, bool pageMarkers = false);
std::string toPlainText(const Book& book, bool pageMarkers = false);
Status writeDocx(const Book& book, const DocumentInfo& info, const std::filesystem::path& file, bool pageMarkers = false);
std::string toHocr(const std::vector<BookPageInput>& pages, const DocumentInfo& info);
std::string toAlto(const BookPageInput& page, int pageNumber, const BookPageInput* next);
std::string toPageXml(const BookPageInput& page);
// `info` goes into the document information (with Quire as producer and the time of writing);
// `pdfA`: PDF/A-2b (ExportOptions::pdfA).
Status writeSearchablePdf(const std::vector<BookPageInput>& pages, const std::filesystem::path& file, const DocumentInfo& info,
                          const std::function<void(int, int)>& progress, const std::atomic<bool>* cancel, bool pdfA = false);

// XML text with markup escaped and characters XML 1.0 forbids (controls, invalid UTF-8) dropped.
std::string xmlEscape(const std::string& s);

}  // namespace quire
