// Document sources: files recognised by content (PDF, TIFF, PNG/JPEG/BMP) and folders in natural
// order, decoded one page at a time, with size limits and decoder warnings.
#include "quire/source/document_source.h"

#include <QCryptographicHash>
#include <QImage>

#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <tiffio.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "jpeg_check.h"
#include "pdf_source.h"

namespace fs = std::filesystem;

namespace quire {

const char* sourceKindName(SourceKind kind) {
    switch (kind) {
        case SourceKind::Pdf: return "pdf";
        case SourceKind::Tiff: return "tiff";
        case SourceKind::Image: return "image";
        case SourceKind::Folder: return "folder";
    }
    return "unknown";
}

cv::Mat compositeOnWhite(const cv::Mat& image) {
    if (image.channels() != 4 && image.channels() != 2) return image;
    const int colour = image.channels() - 1;
    cv::Mat out(image.rows, image.cols, colour == 3 ? CV_8UC3 : CV_8UC1);
    for (int y = 0; y < image.rows; ++y) {
        const uchar* s = image.ptr<uchar>(y);
        uchar* d = out.ptr<uchar>(y);
        for (int x = 0; x < image.cols; ++x, s += colour + 1, d += colour) {
            const int a = s[colour];
            for (int c = 0; c < colour; ++c) d[c] = uchar((s[c] * a + 255 * (255 - a)) / 255);
        }
    }
    return out;
}

cv::Mat cropToRegion(const cv::Mat& page, const Box& region, int regionDpi, int decodedDpi) {
    if (region.empty()) return page;
    const double s = regionDpi > 0 && decodedDpi > 0 ? double(decodedDpi) / regionDpi : 1.0;
    const cv::Rect r = cv::Rect(int(region.x * s), int(region.y * s), int(region.w * s), int(region.h * s)) &
                       cv::Rect(0, 0, page.cols, page.rows);
    return r.area() > 0 ? page(r).clone() : page;
}

cv::Mat turnedClockwise(const cv::Mat& page, int degrees) {
    if (page.empty() || (degrees != 90 && degrees != 180 && degrees != 270)) return page;
    cv::Mat out;
    cv::rotate(page, out, degrees == 90 ? cv::ROTATE_90_CLOCKWISE : degrees == 180 ? cv::ROTATE_180
                                                                                     : cv::ROTATE_90_COUNTERCLOCKWISE);
    return out;
}

bool naturalLess(const std::string& a, const std::string& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
        const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
        if (da && db) {
            size_t ie = i, je = j;
            while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
            while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
            // Compare numerically without overflow: strip leading zeros, then length, then text.
            size_t is = i, js = j;
            while (is + 1 < ie && a[is] == '0') ++is;
            while (js + 1 < je && b[js] == '0') ++js;
            if (ie - is != je - js) return ie - is < je - js;
            const int c = a.compare(is, ie - is, b, js, je - js);
            if (c != 0) return c < 0;
            i = ie, j = je;
        } else {
            const int ca = std::tolower(static_cast<unsigned char>(a[i]));
            const int cb = std::tolower(static_cast<unsigned char>(b[j]));
            if (ca != cb) return ca < cb;
            ++i, ++j;
        }
    }
    if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
    return a < b;
}

Result<std::string> fileSha256(const fs::path& path) {
    // std::ifstream, not QFile: a name that is not UTF-8 must reach the file system byte for byte.
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status(ErrorCode::Unreadable, path.string() + ": cannot read: " + std::strerror(errno));
    QCryptographicHash hash(QCryptographicHash::Sha256);
    std::vector<char> buf(1 << 16);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        if (in.gcount() > 0) hash.addData(QByteArrayView(buf.data(), qsizetype(in.gcount())));
    }
    if (in.bad()) return Status(ErrorCode::Unreadable, path.string() + ": read error while hashing");
    return hash.result().toHex().toStdString();
}

namespace {

enum class FileFormat { Unknown, Pdf, Tiff, Png, Jpeg, Bmp };

std::string errnoText() { return std::strerror(errno); }

Result<FileFormat> sniff(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) return Status(ErrorCode::Unreadable, path.string() + ": " + ec.message());
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status(ErrorCode::Unreadable, path.string() + ": cannot open: " + errnoText());
    if (size == 0) return Status(ErrorCode::Corrupt, path.string() + ": file is empty (0 bytes)");
    std::array<unsigned char, 1024> head{};
    in.read(reinterpret_cast<char*>(head.data()), head.size());
    const auto n = static_cast<size_t>(in.gcount());
    if (in.bad()) return Status(ErrorCode::Unreadable, path.string() + ": read error: " + errnoText());
    auto starts = [&](const char* magic, size_t len) {
        return n >= len && std::memcmp(head.data(), magic, len) == 0;
    };
    if (starts("\x89PNG\r\n\x1a\n", 8)) return FileFormat::Png;
    if (starts("\xff\xd8\xff", 3)) return FileFormat::Jpeg;
    if (starts("II*\0", 4) || starts("MM\0*", 4) || starts("II+\0", 4) || starts("MM\0+", 4))
        return FileFormat::Tiff;  // classic and BigTIFF
    if (starts("BM", 2) && n >= 26) return FileFormat::Bmp;
    // PDF allows junk before the header within the first 1024 bytes.
    const std::string_view view(reinterpret_cast<const char*>(head.data()), n);
    if (view.find("%PDF-") != std::string_view::npos) return FileFormat::Pdf;
    return FileFormat::Unknown;
}

uint32_t be32(const unsigned char* p) { return (p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }
uint16_t be16(const unsigned char* p) { return uint16_t((p[0] << 8) | p[1]); }
uint32_t le32(const unsigned char* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t(p[3]) << 24); }

struct ImageHeader {
    long long width = 0, height = 0;
    double dpi = 0;  // 0: unknown
};

// Reads dimensions and resolution without decoding pixels, so huge images are refused cheaply.
ImageHeader readHeader(const fs::path& path, FileFormat format) {
    ImageHeader h;
    std::ifstream in(path, std::ios::binary);
    std::vector<unsigned char> buf(1 << 16);
    in.read(reinterpret_cast<char*>(buf.data()), buf.size());
    buf.resize(static_cast<size_t>(in.gcount()));
    const size_t n = buf.size();
    if (format == FileFormat::Png && n >= 24) {
        h.width = be32(&buf[16]);
        h.height = be32(&buf[20]);
        for (size_t p = 8; p + 12 <= n;) {  // walk chunks looking for pHYs before IDAT
            const uint32_t len = be32(&buf[p]);
            const std::string_view type(reinterpret_cast<const char*>(&buf[p + 4]), 4);
            if (type == "pHYs" && p + 8 + 9 <= n && buf[p + 16] == 1)
                h.dpi = be32(&buf[p + 8]) * 0.0254;
            if (type == "IDAT" || len > n) break;
            p += 12 + len;
        }
    } else if (format == FileFormat::Jpeg) {
        for (size_t p = 2; p + 9 < n;) {
            if (buf[p] != 0xFF) break;
            const unsigned char marker = buf[p + 1];
            const uint16_t len = be16(&buf[p + 2]);
            if (marker == 0xE0 && p + 16 < n && std::memcmp(&buf[p + 4], "JFIF", 4) == 0) {
                const int units = buf[p + 11];
                const double xd = be16(&buf[p + 12]);
                if (units == 1) h.dpi = xd;
                if (units == 2) h.dpi = xd * 2.54;
            }
            if ((marker >= 0xC0 && marker <= 0xCF) && marker != 0xC4 && marker != 0xC8 &&
                marker != 0xCC) {
                h.height = be16(&buf[p + 5]);
                h.width = be16(&buf[p + 7]);
                break;
            }
            p += 2 + len;
        }
    } else if (format == FileFormat::Bmp && n >= 46) {
        h.width = static_cast<int32_t>(le32(&buf[18]));
        h.height = std::llabs(static_cast<int32_t>(le32(&buf[22])));
        const uint32_t ppm = le32(&buf[38]);
        if (ppm > 0) h.dpi = ppm * 0.0254;
    }
    return h;
}

// Scanners write "72 dpi" and other nonsense; a resolution is used only when the page it implies
// is plausible (at most 24 inches wide), else 300 dpi is assumed.
int plausibleDpi(double dpi, long long width) {
    if (dpi >= 70 && dpi <= 2400 && width / dpi <= 24.0) return static_cast<int>(dpi + 0.5);
    return 300;
}

Status checkSize(const fs::path& path, long long w, long long h, const SourceOptions& o,
                 const std::string& where = {}) {
    if (w <= 0 || h <= 0)
        return Status(ErrorCode::Corrupt, path.string() + where + ": image has no pixels");
    if (w > o.maxSide || h > o.maxSide || w * h > o.maxPixels)
        return Status(ErrorCode::TooLarge,
                      path.string() + where + ": image is " + std::to_string(w) + "x" +
                          std::to_string(h) + " pixels, above the limit of " +
                          std::to_string(o.maxPixels / 1'000'000) + " megapixels / " +
                          std::to_string(o.maxSide) + " pixels a side; refused to protect memory");
    return Status::ok();
}

cv::Mat to8bit(cv::Mat m) {
    if (m.depth() == CV_16U) m.convertTo(m, CV_8U, 1.0 / 257.0);
    else if (m.depth() != CV_8U) {
        double mn, mx;
        cv::minMaxLoc(m.reshape(1), &mn, &mx);
        m.convertTo(m, CV_8U, mx > mn ? 255.0 / (mx - mn) : 1.0, mx > mn ? -mn * 255.0 / (mx - mn) : 0);
    }
    // Transparency is paper: ink drawn over transparent pixels (of any colour) is composited on white.
    return compositeOnWhite(m);
}

bool jpegHasEnd(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    const std::streamoff size = in.tellg();
    const std::streamoff tail = std::min<std::streamoff>(size, 4096);
    std::string buf(size_t(tail), '\0');
    in.seekg(size - tail);
    in.read(buf.data(), tail);
    return buf.find("\xff\xd9") != std::string::npos;
}

// ---- single images (PNG, JPEG, BMP) ----
class ImageSource : public DocumentSource {
public:
    ImageSource(fs::path p, FileFormat f, SourceOptions o) : m_path(std::move(p)), m_format(f), m_opt(o) {}
    SourceKind kind() const override { return SourceKind::Image; }
    const fs::path& path() const override { return m_path; }
    int pageCount() const override { return 1; }
    Result<PageImage> loadPage(int index) override {
        if (index != 0) return Status(ErrorCode::InvalidArgument, m_path.string() + ": no page " + std::to_string(index + 1));
        const ImageHeader h = readHeader(m_path, m_format);
        if (h.width > 0) {
            if (Status s = checkSize(m_path, h.width, h.height, m_opt); !s) return s;
        }
        // libjpeg pads a cut JPEG with grey and calls it a warning; a page must not come back half
        // blank, so a JPEG without its end-of-image marker is refused.
        if (m_format == FileFormat::Jpeg && !jpegHasEnd(m_path))
            return Status(ErrorCode::Corrupt, m_path.string() + ": the JPEG is truncated (no end-of-image marker)");
        // PNGs keep their alpha channel (to be composited on white); JPEGs keep EXIF orientation.
        cv::Mat m = cv::imread(m_path.string(), m_format == FileFormat::Png ? cv::IMREAD_UNCHANGED
                                                                            : cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR);
        if (m.empty())
            return Status(ErrorCode::Corrupt, m_path.string() + ": cannot decode image (truncated or damaged)");
        if (Status s = checkSize(m_path, m.cols, m.rows, m_opt); !s) return s;
        PageImage page;
        page.image = to8bit(m);
        page.dpi = plausibleDpi(h.dpi, m.cols);
        if (m_format == FileFormat::Jpeg)
            if (const std::string damage = jpegDamage(m_path); !damage.empty())
                page.doubt = "the JPEG is damaged (libjpeg: " + damage + "); parts of the page may be grey or missing";
        return page;
    }

private:
    fs::path m_path;
    FileFormat m_format;
    SourceOptions m_opt;
};

// ---- TIFF (one or many pages), through libtiff so every photometric/bit depth decodes ----
thread_local std::string t_tiffError;
void tiffErrorHandler(const char* module, const char* fmt, va_list ap) {
    char buf[512];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    t_tiffError = (module ? std::string(module) + ": " : std::string()) + buf;
}

struct TiffCloser {
    void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffCloser>;

void installTiffHandlers() {
    static const bool once = [] {
        TIFFSetErrorHandler(tiffErrorHandler);
        TIFFSetWarningHandler(nullptr);
        return true;
    }();
    (void)once;
}

class TiffSource : public DocumentSource {
public:
    static Result<std::unique_ptr<DocumentSource>> open(const fs::path& p, const SourceOptions& o) {
        installTiffHandlers();
        t_tiffError.clear();
        TiffPtr tif(TIFFOpen(p.string().c_str(), "rm"));
        if (!tif) return Status(ErrorCode::Corrupt, p.string() + ": not a readable TIFF: " + t_tiffError);
        int pages = 0;
        do { ++pages; } while (TIFFReadDirectory(tif.get()) && pages < 1'000'000);
        auto src = std::unique_ptr<TiffSource>(new TiffSource(p, o, pages));
        // A chain of pages that ends in an unreadable directory is read up to there, and said.
        if (!t_tiffError.empty())
            src->m_note = "the TIFF's page " + std::to_string(pages + 1) + " cannot be read (" + t_tiffError +
                          "); read its first " + std::to_string(pages) + " page(s)";
        src->m_tif = std::move(tif);
        return std::unique_ptr<DocumentSource>(std::move(src));
    }
    SourceKind kind() const override { return SourceKind::Tiff; }
    std::string openNote() const override { return m_note; }
    const fs::path& path() const override { return m_path; }
    int pageCount() const override { return m_pages; }
    Result<PageImage> loadPage(int index) override {
        const std::string where = " page " + std::to_string(index + 1);
        if (index < 0 || index >= m_pages) return Status(ErrorCode::InvalidArgument, m_path.string() + ": no" + where);
        t_tiffError.clear();
        if (!TIFFSetDirectory(m_tif.get(), static_cast<tdir_t>(index)))
            return Status(ErrorCode::Corrupt, m_path.string() + where + ": cannot read directory: " + t_tiffError);
        uint32_t w = 0, h = 0;
        uint16_t spp = 1, unit = RESUNIT_INCH;
        float xres = 0;
        TIFFGetField(m_tif.get(), TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(m_tif.get(), TIFFTAG_IMAGELENGTH, &h);
        TIFFGetFieldDefaulted(m_tif.get(), TIFFTAG_SAMPLESPERPIXEL, &spp);
        TIFFGetFieldDefaulted(m_tif.get(), TIFFTAG_RESOLUTIONUNIT, &unit);
        TIFFGetField(m_tif.get(), TIFFTAG_XRESOLUTION, &xres);
        if (Status s = checkSize(m_path, w, h, m_opt, where); !s) return s;
        cv::Mat rgba(static_cast<int>(h), static_cast<int>(w), CV_8UC4);
        // Stop at the first error: a truncated strip must fail the page, not come back half blank.
        if (!TIFFReadRGBAImageOriented(m_tif.get(), w, h, reinterpret_cast<uint32_t*>(rgba.data),
                                       ORIENTATION_TOPLEFT, 1) ||
            !t_tiffError.empty())
            return Status(ErrorCode::Corrupt, m_path.string() + where + ": cannot decode (truncated or damaged): " + t_tiffError);
        PageImage page;
        // libtiff packs ABGR words: bytes are R,G,B,A in memory on little-endian machines.
        cv::cvtColor(rgba, page.image, spp >= 3 ? cv::COLOR_RGBA2BGR : cv::COLOR_RGBA2GRAY);
        double dpi = xres;
        if (unit == RESUNIT_CENTIMETER) dpi *= 2.54;
        if (unit == RESUNIT_NONE) dpi = 0;
        page.dpi = plausibleDpi(dpi, w);
        return page;
    }

private:
    TiffSource(fs::path p, SourceOptions o, int pages) : m_path(std::move(p)), m_opt(o), m_pages(pages) {}
    fs::path m_path;
    SourceOptions m_opt;
    int m_pages;
    TiffPtr m_tif;
    std::string m_note;
};

Result<std::unique_ptr<DocumentSource>> openFile(const fs::path& p, const SourceOptions& o) {
    auto fmt = sniff(p);
    if (!fmt) return fmt.status();
    switch (*fmt) {
        case FileFormat::Pdf: return openPdf(p, o);
        case FileFormat::Tiff: return TiffSource::open(p, o);
        case FileFormat::Png:
        case FileFormat::Jpeg:
        case FileFormat::Bmp: {
            const ImageHeader h = readHeader(p, *fmt);
            if (h.width > 0)
                if (Status s = checkSize(p, h.width, h.height, o); !s) return s;
            return std::unique_ptr<DocumentSource>(new ImageSource(p, *fmt, o));
        }
        case FileFormat::Unknown: break;
    }
    return Status(ErrorCode::UnsupportedFormat,
                  p.string() + ": not a PDF, TIFF, PNG, JPEG or BMP file (the content does not match any "
                               "of these formats, whatever its name says)");
}

// ---- folders of page images ----
class FolderSource : public DocumentSource {
public:
    static Result<std::unique_ptr<DocumentSource>> open(const fs::path& dir, const SourceOptions& o) {
        std::error_code ec;
        fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
        if (ec) return Status(ErrorCode::Unreadable, dir.string() + ": cannot list folder: " + ec.message());
        std::vector<std::string> names;
        for (; it != fs::directory_iterator(); it.increment(ec)) {
            if (ec) return Status(ErrorCode::Unreadable, dir.string() + ": " + ec.message());
            std::error_code fe;
            if (!it->is_regular_file(fe)) continue;
            std::string ext = it->path().extension().string();
            std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
            static const std::array<const char*, 6> kExt{".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp"};
            if (std::find_if(kExt.begin(), kExt.end(), [&](const char* e) { return ext == e; }) == kExt.end())
                continue;
            names.push_back(it->path().filename().string());
        }
        std::sort(names.begin(), names.end(), naturalLess);
        auto src = std::unique_ptr<FolderSource>(new FolderSource(dir, o));
        for (const auto& n : names) {
            const fs::path file = dir / n;
            auto fmt = sniff(file);
            // A file named as an image that is not one (a letter saved as .png) is refused up front,
            // naming it, as it would be given alone: a page that can never be read must not wait in
            // the volume. A damaged image is an image: its page fails with the reason when read.
            if (fmt && *fmt == FileFormat::Unknown)
                return Status(ErrorCode::UnsupportedFormat,
                              file.string() + ": not a PDF, TIFF, PNG, JPEG or BMP file (whatever its name says); "
                                              "remove it from the folder " + dir.string() + " or rename it");
            int pages = 1;
            if (fmt && *fmt == FileFormat::Tiff) {
                auto t = TiffSource::open(file, o);
                if (t) pages = (*t)->pageCount();
            }
            for (int i = 0; i < pages; ++i) src->m_pages.push_back({file, i});
        }
        if (src->m_pages.empty())
            return Status(ErrorCode::Empty, dir.string() + ": the folder contains no page images "
                                                           "(.png, .jpg, .tif, .bmp)");
        return std::unique_ptr<DocumentSource>(std::move(src));
    }
    SourceKind kind() const override { return SourceKind::Folder; }
    const fs::path& path() const override { return m_path; }
    int pageCount() const override { return int(m_pages.size()); }
    fs::path pageFile(int index) const override { return m_pages.at(index).file; }
    int pageIndexInFile(int index) const override { return m_pages.at(index).page; }
    Result<PageImage> loadPage(int index) override {
        if (index < 0 || index >= pageCount()) return Status(ErrorCode::InvalidArgument, m_path.string() + ": no page " + std::to_string(index + 1));
        const auto& ref = m_pages[index];
        if (!m_current || m_currentFile != ref.file) {
            m_current.reset();
            auto s = openFile(ref.file, m_opt);
            if (!s) return s.status();
            m_current = std::move(*s);
            m_currentFile = ref.file;
        }
        return m_current->loadPage(ref.page);
    }

private:
    FolderSource(fs::path p, SourceOptions o) : m_path(std::move(p)), m_opt(o) {}
    struct Ref {
        fs::path file;
        int page;
    };
    fs::path m_path;
    SourceOptions m_opt;
    std::vector<Ref> m_pages;
    std::unique_ptr<DocumentSource> m_current;
    fs::path m_currentFile;
};

}  // namespace

Result<std::unique_ptr<DocumentSource>> openSource(const fs::path& path, const SourceOptions& options) {
    static const bool quietOpenCv = [] {
        cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
        return true;
    }();
    (void)quietOpenCv;
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
        if (ec && ec != std::errc::no_such_file_or_directory)
            return Status(ErrorCode::Unreadable, path.string() + ": " + ec.message());
        return Status(ErrorCode::NotFound, path.string() + ": no such file or folder");
    }
    if (fs::is_directory(st)) return FolderSource::open(path, options);
    if (!fs::is_regular_file(st))
        return Status(ErrorCode::UnsupportedFormat, path.string() + ": not a regular file");
    return openFile(path, options);
}

std::string pdfHelperIn(const fs::path& programDir) {
    const fs::path helper = programDir / "quire-render";
    return access(helper.c_str(), X_OK) == 0 ? helper.string() : std::string();
}

std::string canonicalPath(const fs::path& p) {
    std::error_code ec;
    fs::path a = fs::weakly_canonical(fs::absolute(p), ec);
    return (ec ? fs::absolute(p) : a).string();
}

Result<std::string> DocumentSource::contentSha256() const {
    if (kind() != SourceKind::Folder) return fileSha256(path());
    QCryptographicHash h(QCryptographicHash::Sha256);
    fs::path last;
    for (int i = 0; i < pageCount(); ++i) {
        const fs::path f = pageFile(i);
        if (f == last) continue;
        last = f;
        auto fh = fileSha256(f);
        h.addData(QByteArray::fromStdString(f.filename().string() + ":" + (fh ? *fh : fh.status().message()) + "\n"));
    }
    return h.result().toHex().toStdString();
}

int64_t DocumentSource::sizeBytes() const {
    std::error_code ec;
    if (kind() != SourceKind::Folder) return int64_t(fs::file_size(path(), ec));
    int64_t total = 0;
    fs::path last;
    for (int i = 0; i < pageCount(); ++i) {
        if (pageFile(i) == last) continue;
        last = pageFile(i);
        total += int64_t(fs::file_size(last, ec));
    }
    return total;
}

}  // namespace quire
