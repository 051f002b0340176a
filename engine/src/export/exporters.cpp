// exportProject: the formats by name, each written under a temporary name and renamed into place.
#include "quire/export/exporters.h"
#include "quire/store/project_properties.h"
#include "quire/text/dictionary.h"

#include <QString>
#include <QStringList>

#include <cstdio>
#include <fstream>

namespace fs = std::filesystem;

namespace quire {

const char* exportFormatName(ExportFormat f) {
    switch (f) {
        case ExportFormat::Markdown: return "md";
        case ExportFormat::Docx: return "docx";
        case ExportFormat::Text: return "txt";
        case ExportFormat::Hocr: return "hocr";
        case ExportFormat::Alto: return "alto";
        case ExportFormat::PageXml: return "page";
        case ExportFormat::Pdf: return "pdf";
    }
    return "?";
}

Result<std::vector<ExportFormat>> parseExportFormats(const std::string& csv) {
    static const std::vector<ExportFormat> all = {ExportFormat::Markdown, ExportFormat::Docx, ExportFormat::Text,
                                                  ExportFormat::Hocr, ExportFormat::Alto, ExportFormat::PageXml,
                                                  ExportFormat::Pdf};
    std::vector<ExportFormat> out;
    for (const QString& item : QString::fromStdString(csv).split(',', Qt::SkipEmptyParts)) {
        const std::string name = item.trimmed().toLower().toStdString();
        if (name == "all") return all;
        bool found = false;
        for (ExportFormat f : all)
            if (name == exportFormatName(f) || (name == "markdown" && f == ExportFormat::Markdown) ||
                (name == "text" && f == ExportFormat::Text) || (name == "pagexml" && f == ExportFormat::PageXml)) {
                if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
                found = true;
            }
        if (!found)
            return Status(ErrorCode::InvalidArgument,
                          "unknown export format '" + name + "' (choose from md, docx, txt, hocr, alto, page, pdf, all)");
    }
    if (out.empty()) return Status(ErrorCode::InvalidArgument, "no export format given");
    return out;
}

namespace {

// Write to "<name>.partial", then rename: readers never see a half-written export.
Status writeAtomically(const fs::path& file, const std::function<Status(const fs::path&)>& write) {
    const fs::path tmp = file.string() + ".partial";
    Status s = write(tmp);
    std::error_code ec;
    if (!s) {
        fs::remove_all(tmp, ec);
        return s;
    }
    fs::rename(tmp, file, ec);
    if (ec) {
        fs::remove_all(tmp, ec);
        return Status(ErrorCode::Io, file.string() + ": cannot write: " + ec.message());
    }
    return Status::ok();
}

Status writeText(const fs::path& file, const std::string& data) {
    return writeAtomically(file, [&](const fs::path& tmp) {
        std::ofstream out(tmp, std::ios::binary);
        if (!out) return Status(ErrorCode::Io, file.string() + ": cannot create file");
        out.write(data.data(), std::streamsize(data.size()));
        out.close();
        if (!out) return Status(ErrorCode::Io, file.string() + ": write failed (disk full?)");
        return Status::ok();
    });
}

Status writeFolder(const fs::path& dir, const std::vector<std::pair<std::string, std::string>>& files) {
    return writeAtomically(dir, [&](const fs::path& tmp) {
        std::error_code ec;
        fs::remove_all(tmp, ec);
        fs::create_directories(tmp, ec);
        if (ec) return Status(ErrorCode::Io, tmp.string() + ": " + ec.message());
        for (const auto& [name, data] : files) {
            std::ofstream out(tmp / name, std::ios::binary);
            out.write(data.data(), std::streamsize(data.size()));
            if (!out) return Status(ErrorCode::Io, (dir / name).string() + ": write failed (disk full?)");
        }
        fs::remove_all(dir, ec);  // replace an earlier export of the same name
        return Status::ok();
    });
}

std::string pageFileName(int n, const char* ext) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04d.%s", n, ext);
    return buf;
}

}  // namespace

Result<std::vector<fs::path>> exportProject(ProjectStore& store, const ExportOptions& options) {
    std::error_code ec;
    fs::create_directories(options.outDir, ec);
    if (ec || !fs::is_directory(options.outDir))
        return Status(ErrorCode::Io, options.outDir.string() + ": cannot create the output folder" +
                                         (ec ? ": " + ec.message() : std::string()));
    {
        const fs::path probe = options.outDir / ".quire-write-test";
        std::ofstream t(probe);
        if (!t) return Status(ErrorCode::Io, options.outDir.string() + ": the output folder is not writable");
        t.close();
        fs::remove(probe, ec);
    }
    auto pages = loadBookPages(store);
    if (!pages) return pages.status();
    if (options.firstPage > 0 || options.lastPage > 0) {
        const int n = int(pages->size());
        const int first = std::max(options.firstPage, 1), last = options.lastPage > 0 ? options.lastPage : n;
        if (first > last || last > n)
            return Status(ErrorCode::InvalidArgument, "pages " + std::to_string(first) + "-" + std::to_string(last) +
                                                          " are not in the book (it has " + std::to_string(n) + " pages)");
        pages->erase(pages->begin() + last, pages->end());
        pages->erase(pages->begin(), pages->begin() + (first - 1));
    }
    // The dictionaries of the languages the pages were read in, and the project's own words.
    std::string languages;
    for (const auto& p : *pages)
        if (!p.layout.language.empty() && ("+" + languages + "+").find("+" + p.layout.language + "+") == std::string::npos)
            languages += (languages.empty() ? "" : "+") + p.layout.language;
    Dictionary dictionary = Dictionary::forLanguages(languages, options.dictionaryDir);
    if (auto words = store.projectWords())
        for (const auto& w : *words) dictionary.addWord(w);
    Book book = assembleBook(*pages, &dictionary);
    // The running heads, footers and folios the book found go to the page-by-page formats; the
    // project is only read.
    for (size_t i = 0; i < pages->size(); ++i) {
        auto& p = (*pages)[i].page;
        const auto& f = book.furniture[i];
        p.header = f.header, p.footer = f.footer, p.pageNumber = f.pageNumber;
    }
    auto properties = loadProperties(store);
    if (!properties) return properties.status();
    DocumentInfo info{options.title.empty() ? properties->title : options.title,
                      options.author.empty() ? properties->author : options.author,
                      options.language.empty() ? properties->language : options.language};
    if (info.title.empty()) info.title = store.path().stem().string();
    if (info.language.empty()) info.language = languageTagOf(languages);
    std::vector<fs::path> written;
    const int total = int(options.formats.size());
    int done = 0;
    for (ExportFormat f : options.formats) {
        if (options.cancel && options.cancel->load()) return Status(ErrorCode::Cancelled, "export cancelled");
        if (options.onProgress) options.onProgress(done, total, exportFormatName(f));
        const fs::path base = options.outDir / options.baseName;
        Status s;
        fs::path target;
        switch (f) {
            case ExportFormat::Markdown:
                target = base.string() + ".md";
                s = writeText(target, toMarkdown(book, options.pageMarkers));
                break;
            case ExportFormat::Text:
                target = base.string() + ".txt";
                s = writeText(target, toPlainText(book, options.pageMarkers));
                break;
            case ExportFormat::Docx:
                target = base.string() + ".docx";
                s = writeAtomically(target, [&](const fs::path& tmp) { return writeDocx(book, info, tmp, options.pageMarkers); });
                break;
            case ExportFormat::Hocr:
                target = base.string() + ".hocr";
                s = writeText(target, toHocr(*pages, info));
                break;
            case ExportFormat::Alto: {
                target = base.string() + ".alto";
                std::vector<std::pair<std::string, std::string>> files;
                // Files named by the page's place in the book, so a range exports the same names.
                for (size_t i = 0; i < pages->size(); ++i)
                    files.emplace_back(pageFileName(book.sequences[i], "xml"),
                                       toAlto((*pages)[i], book.sequences[i], i + 1 < pages->size() ? &(*pages)[i + 1] : nullptr));
                s = writeFolder(target, files);
                break;
            }
            case ExportFormat::PageXml: {
                target = base.string() + ".page";
                std::vector<std::pair<std::string, std::string>> files;
                for (size_t i = 0; i < pages->size(); ++i)
                    files.emplace_back(pageFileName(book.sequences[i], "xml"), toPageXml((*pages)[i]));
                s = writeFolder(target, files);
                break;
            }
            case ExportFormat::Pdf:
                target = base.string() + ".pdf";
                s = writeAtomically(target, [&](const fs::path& tmp) {
                    return writeSearchablePdf(*pages, tmp, info, nullptr, options.cancel, options.pdfA);
                });
                break;
        }
        if (!s) return s;
        written.push_back(target);
        ++done;
    }
    if (options.onProgress) options.onProgress(done, total, "done");
    return written;
}

}  // namespace quire
