// PDF sources: the rendering size of a page (huge page boxes at a lower resolution), a source
// that reads the PDF in this process, and one that asks quire-render and kills it at its deadline.
#include "pdf_source.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "../core/subprocess.h"
#include "pdf_document.h"

namespace fs = std::filesystem;

namespace quire {

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // sanitizers reserve terabytes of address space: no RLIMIT_AS
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct RenderSize {
    int width = 0, height = 0;
    double dpi = 0;
    std::string note;
};

// The page at the options' resolution, or lower while it is above the pixel limits.
Result<RenderSize> renderSize(const std::string& where, double wPt, double hPt, const SourceOptions& o) {
    if (!(wPt > 0 && hPt > 0)) return Status(ErrorCode::Corrupt, where + ": page has no size");
    RenderSize r;
    r.dpi = o.pdfDpi;
    auto px = [&](double d) {
        r.width = int(wPt * d / 72.0 + 0.5);
        r.height = int(hPt * d / 72.0 + 0.5);
    };
    auto tooLarge = [&] { return r.width > o.maxSide || r.height > o.maxSide || (long long)r.width * r.height > o.maxPixels; };
    px(r.dpi);
    while (tooLarge() && r.dpi > 10) px(r.dpi *= 0.8);
    if (tooLarge())
        return Status(ErrorCode::TooLarge, where + ": the page box (" + std::to_string(int(wPt)) + "x" + std::to_string(int(hPt)) +
                                               " pt) is too large to render even at 10 dpi");
    if (r.dpi < o.pdfDpi)
        r.note = "page box " + std::to_string(int(wPt)) + "x" + std::to_string(int(hPt)) + " pt is very large; rendered at " +
                 std::to_string(int(r.dpi)) + " dpi";
    if (r.width < 1 || r.height < 1)
        return Status(ErrorCode::Corrupt, where + ": the page is too small to render (" + std::to_string(int(wPt)) + "x" +
                                              std::to_string(int(hPt)) + " pt is under one pixel at " + std::to_string(int(r.dpi)) + " dpi)");
    return r;
}

std::string pageWhere(const fs::path& p, int index) { return p.string() + " page " + std::to_string(index + 1); }

// ---- in this process ----
class InProcessPdfSource : public DocumentSource {
public:
    InProcessPdfSource(fs::path p, SourceOptions o, std::unique_ptr<PdfDocument> doc)
        : m_path(std::move(p)), m_opt(o), m_doc(std::move(doc)) {}
    SourceKind kind() const override { return SourceKind::Pdf; }
    const fs::path& path() const override { return m_path; }
    int pageCount() const override { return m_doc->pageCount(); }
    std::string openNote() const override { return m_doc->repairNote(); }
    Result<PageImage> loadPage(int index) override {
        if (index < 0 || index >= pageCount()) return Status(ErrorCode::InvalidArgument, m_path.string() + ": no page " + std::to_string(index + 1));
        const PdfPageInfo& info = m_doc->page(index);
        auto size = renderSize(pageWhere(m_path, index), info.widthPt, info.heightPt, m_opt);
        if (!size) return size.status();
        auto page = m_doc->render(index, size->width, size->height, int(size->dpi + 0.5), m_opt.cancel);
        if (page && page->note.empty()) page->note = size->note;
        return page;
    }
    std::optional<std::string> textLayer(int index) override { return m_doc->textLayer(index); }

private:
    fs::path m_path;
    SourceOptions m_opt;
    std::unique_ptr<PdfDocument> m_doc;
};

// ---- through quire-render ----
class HelperPdfSource : public DocumentSource {
public:
    static Result<std::unique_ptr<DocumentSource>> open(const fs::path& p, const SourceOptions& o) {
        auto src = std::unique_ptr<HelperPdfSource>(new HelperPdfSource(p, o));
        if (Status s = src->startHelper(); !s) return s;
        return std::unique_ptr<DocumentSource>(std::move(src));
    }
    SourceKind kind() const override { return SourceKind::Pdf; }
    const fs::path& path() const override { return m_path; }
    int pageCount() const override { return int(m_pages.size()); }
    std::string openNote() const override { return m_note; }

    Result<PageImage> loadPage(int index) override {
        const std::string where = pageWhere(m_path, index);
        if (index < 0 || index >= pageCount()) return Status(ErrorCode::InvalidArgument, m_path.string() + ": no page " + std::to_string(index + 1));
        const PdfPageInfo& info = m_pages[size_t(index)];
        if (!info.refusal.empty()) return Status(ErrorCode::Corrupt, where + ": " + info.refusal);
        auto size = renderSize(where, info.widthPt, info.heightPt, m_opt);
        if (!size) return size.status();
        if (!m_helper || !m_helper->running())
            if (Status s = startHelper(); !s) return Status(s.code(), where + ": the PDF could not be opened again: " + s.message());
        const auto deadline = Subprocess::Clock::now() + std::chrono::seconds(m_opt.pdfPageSeconds);
        const int dpi = int(size->dpi + 0.5);
        if (Status s = m_helper->send("render " + std::to_string(index) + " " + std::to_string(size->width) + " " +
                                      std::to_string(size->height) + " " + std::to_string(dpi) + "\n");
            !s)
            return helperFailed(where, s);
        auto header = m_helper->readLine(deadline, m_opt.cancel);
        if (!header) return helperFailed(where, header.status());
        std::istringstream words(*header);
        std::string verb;
        words >> verb;
        if (verb == "error") return readError(words, deadline);
        size_t w = 0, h = 0, channels = 0, doubtLen = 0, noteLen = 0;
        if (verb != "image" || !(words >> w >> h >> channels >> doubtLen >> noteLen) || (channels != 1 && channels != 3) ||
            w == 0 || h == 0 || (long long)w * (long long)h > m_opt.maxPixels * 2)
            return helperFailed(where, Status(ErrorCode::Internal, "answered '" + header->substr(0, 80) + "'"));
        auto doubt = m_helper->readExact(doubtLen, deadline, m_opt.cancel);
        auto note = doubt ? m_helper->readExact(noteLen, deadline, m_opt.cancel) : Result<std::string>(doubt.status());
        auto pixels = note ? m_helper->readExact(w * h * channels, deadline, m_opt.cancel) : Result<std::string>(note.status());
        if (!pixels) return helperFailed(where, pixels.status());
        PageImage page;
        page.image = cv::Mat(int(h), int(w), channels == 3 ? CV_8UC3 : CV_8UC1);
        std::memcpy(page.image.data, pixels->data(), pixels->size());
        page.dpi = dpi;
        page.doubt = *doubt;
        page.note = note->empty() ? size->note : *note;
        return page;
    }

    std::optional<std::string> textLayer(int index) override {
        if (!m_helper || !m_helper->running()) return std::nullopt;
        const auto deadline = Subprocess::Clock::now() + std::chrono::seconds(m_opt.pdfPageSeconds);
        if (!m_helper->send("text " + std::to_string(index) + "\n")) return std::nullopt;
        auto header = m_helper->readLine(deadline, m_opt.cancel);
        size_t len = 0;
        if (!header || std::sscanf(header->c_str(), "text %zu", &len) != 1) return std::nullopt;
        auto text = m_helper->readExact(len, deadline, m_opt.cancel);
        return text ? std::optional<std::string>(*text) : std::nullopt;
    }

private:
    HelperPdfSource(fs::path p, SourceOptions o) : m_path(std::move(p)), m_opt(std::move(o)) {}

    Status startHelper() {
        auto helper = Subprocess::start(m_opt.pdfHelper, {m_path.string()}, kSanitized ? 0 : m_opt.pdfHelperMemory);
        if (!helper) return helper.status();
        m_helper = std::move(*helper);
        const auto deadline = Subprocess::Clock::now() + std::chrono::seconds(m_opt.pdfOpenSeconds);
        auto header = m_helper->readLine(deadline, m_opt.cancel);
        if (!header) return openFailed(header.status());
        std::istringstream words(*header);
        std::string verb;
        size_t pages = 0, noteLen = 0;
        words >> verb;
        if (verb == "error") return readError(words, deadline).status();
        if (verb != "ok" || !(words >> pages >> noteLen)) return openFailed(Status(ErrorCode::Internal, "answered '" + header->substr(0, 80) + "'"));
        auto note = m_helper->readExact(noteLen, deadline, m_opt.cancel);
        if (!note) return openFailed(note.status());
        std::vector<PdfPageInfo> infos;
        for (size_t i = 0; i < pages; ++i) {
            auto line = m_helper->readLine(deadline, m_opt.cancel);
            if (!line) return openFailed(line.status());
            PdfPageInfo info;
            int images = 0;
            size_t refusalLen = 0;
            if (std::sscanf(line->c_str(), "%lf %lf %d %zu", &info.widthPt, &info.heightPt, &images, &refusalLen) != 4)
                return openFailed(Status(ErrorCode::Internal, "answered '" + line->substr(0, 80) + "'"));
            auto refusal = m_helper->readExact(refusalLen, deadline, m_opt.cancel);
            if (!refusal) return openFailed(refusal.status());
            info.drawsImages = images != 0;
            info.refusal = *refusal;
            infos.push_back(std::move(info));
        }
        if (!m_pages.empty() && infos.size() != m_pages.size())
            return Status(ErrorCode::Corrupt, m_path.string() + ": the PDF changed while it was read");
        m_pages = std::move(infos);
        m_note = *note;
        return Status::ok();
    }

    Result<PageImage> readError(std::istringstream& words, Subprocess::Clock::time_point deadline) {
        std::string code;
        size_t len = 0;
        words >> code >> len;
        auto message = m_helper->readExact(len, deadline, m_opt.cancel);
        if (!message) return Status(message.status().code(), m_path.string() + ": the PDF renderer " + message.status().message());
        return Status(errorCodeFromName(code), *message);
    }

    Status openFailed(const Status& s) {
        m_helper.reset();
        if (s.code() == ErrorCode::Cancelled) return s;
        if (s.code() == ErrorCode::TimedOut)
            return Status(ErrorCode::TimedOut, m_path.string() + ": opening the PDF did not finish within " + std::to_string(m_opt.pdfOpenSeconds) +
                                                   " s (its structure may loop); refused");
        return Status(ErrorCode::Corrupt, m_path.string() + ": the PDF renderer (" + m_opt.pdfHelper + ") " + s.message() +
                                              " while opening the file; the file is damaged or hostile");
    }

    Result<PageImage> helperFailed(const std::string& where, const Status& s) {
        m_helper.reset();  // the next page starts a fresh helper
        if (s.code() == ErrorCode::Cancelled) return s;
        if (s.code() == ErrorCode::TimedOut)
            return Status(ErrorCode::TimedOut, where + ": rendering did not finish within " + std::to_string(m_opt.pdfPageSeconds) +
                                                   " s (the page may loop); skipped");
        return Status(ErrorCode::Corrupt, where + ": the PDF renderer " + s.message() + " on this page" +
                                              (kSanitized ? std::string() : " (its limit is " + std::to_string(m_opt.pdfHelperMemory / 1'000'000) + " MB)") +
                                              "; skipped");
    }

    fs::path m_path;
    SourceOptions m_opt;
    std::unique_ptr<Subprocess> m_helper;
    std::vector<PdfPageInfo> m_pages;
    std::string m_note;
};

}  // namespace

Result<std::unique_ptr<DocumentSource>> openPdf(const fs::path& path, const SourceOptions& options) {
    if (!options.pdfHelper.empty()) return HelperPdfSource::open(path, options);
    auto doc = PdfDocument::open(path);
    if (!doc) return doc.status();
    return std::unique_ptr<DocumentSource>(new InProcessPdfSource(path, options, std::move(*doc)));
}

}  // namespace quire
