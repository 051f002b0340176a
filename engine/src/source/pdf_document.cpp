// PdfDocument: qpdf's check of the page tree and of self-drawing forms, QtPdf's rendering, and
// poppler's pdftoppm for pages that PDFium renders blank (JBIG2 scans in Qt 6.4, for one).
#define POINTERHOLDER_TRANSITION 4  // qpdf 11: no PointerHolder at all, std::shared_ptr only
#include "pdf_document.h"

#include <qpdf/QPDF.hh>
#include <qpdf/QPDFWriter.hh>

#include <QFile>
#include <QImage>
#include <QPdfSelection>

#include <opencv2/core.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include "../core/subprocess.h"
#include "../core/unnamed_file.h"

namespace fs = std::filesystem;

namespace quire {

namespace {

// The page tree walked by hand: qpdf's own walk throws on a loop, and PDFium trusts /Count.
struct Inherited {
    QPDFObjectHandle mediaBox, cropBox, resources, rotate;
};
struct Leaf {
    QPDFObjectHandle page;
    Inherited inherited;
};

void walkPages(QPDFObjectHandle node, Inherited inh, std::set<QPDFObjGen>& seen, std::vector<Leaf>& leaves,
               std::string& damage, int depth) {
    if (!node.isDictionary()) {
        damage = "a page-tree entry is not a dictionary";
        return;
    }
    if (depth > 1024) {  // PDFium's own limit
        damage = "the page tree is more than 1,024 levels deep";
        return;
    }
    if (node.isIndirect() && !seen.insert(node.getObjGen()).second) {
        damage = "the page tree refers back to itself (object " + node.getObjGen().unparse(' ') + ")";
        return;
    }
    if (node.hasKey("/MediaBox")) inh.mediaBox = node.getKey("/MediaBox");
    if (node.hasKey("/CropBox")) inh.cropBox = node.getKey("/CropBox");
    if (node.hasKey("/Resources")) inh.resources = node.getKey("/Resources");
    if (node.hasKey("/Rotate")) inh.rotate = node.getKey("/Rotate");
    QPDFObjectHandle kids = node.getKey("/Kids");
    const bool isPage = node.getKey("/Type").isNameAndEquals("/Page");
    if (!isPage && kids.isArray()) {
        for (int i = 0; i < kids.getArrayNItems(); ++i) walkPages(kids.getArrayItem(i), inh, seen, leaves, damage, depth + 1);
        return;
    }
    leaves.push_back({node, inh});
}

// Names drawn with `Do` in content bytes, and whether inline images appear.
void scanContent(const std::string& bytes, std::set<std::string>& drawn, bool& inlineImage) {
    static const std::regex doOp(R"(/([^\s/\[\]()<>{}%]+)\s+Do\b)");
    for (auto it = std::sregex_iterator(bytes.begin(), bytes.end(), doOp); it != std::sregex_iterator(); ++it)
        drawn.insert("/" + (*it)[1].str());
    static const std::regex bi(R"((^|\s)BI\s)");
    if (std::regex_search(bytes, bi)) inlineImage = true;
}

// A content stream's bytes, decoded; where qpdf cannot decode them (a /Filter that is not a filter's
// name, a damaged stream), the bytes as stored: PDFium draws such a stream from them (a page whose
// /Filter was 7 drew its self-drawing form until PDFium ran out of memory, fuzz/corpus/pdf).
std::string streamBytes(QPDFObjectHandle stream) {
    auto bytes = [](const auto& data) {
        return std::string(reinterpret_cast<const char*>(data->getBuffer()), data->getSize());
    };
    try {
        // A content stream beyond 16 MB is not scanned (its drawings are not followed).
        if (stream.getDict().getKey("/Length").isInteger() && stream.getDict().getKey("/Length").getIntValue() > (16 << 20))
            return {};
        try {
            return bytes(stream.getStreamData(qpdf_dl_generalized));
        } catch (const std::exception&) {
            std::string raw = bytes(stream.getRawStreamData());
            if (raw.size() > (16u << 20)) raw.clear();
            return raw;
        }
    } catch (const std::exception&) {
        return {};
    }
}

std::string contentsBytes(QPDFObjectHandle contents) {
    std::string all;
    if (contents.isStream()) all = streamBytes(contents);
    else if (contents.isArray())
        for (int i = 0; i < contents.getArrayNItems() && i < 4096; ++i)
            if (contents.getArrayItem(i).isStream()) all += streamBytes(contents.getArrayItem(i)) + "\n";
    return all;
}

// Follows the XObjects a content draws: notes images, and returns the form that draws itself
// (directly or through others), if any. `budget` bounds the forms visited per page. Names are
// looked up as PDFium does: in the form's /XObject, or in the page's where the form has none.
std::optional<QPDFObjGen> followDrawings(const std::string& content, QPDFObjectHandle resources, QPDFObjectHandle pageResources,
                                         std::vector<QPDFObjGen>& path, bool& images, int& budget) {
    std::set<std::string> drawn;
    scanContent(content, drawn, images);
    QPDFObjectHandle xobjects = resources.isDictionary() ? resources.getKey("/XObject") : QPDFObjectHandle::newNull();
    if (!xobjects.isDictionary() && pageResources.isDictionary()) xobjects = pageResources.getKey("/XObject");
    if (!xobjects.isDictionary()) return std::nullopt;
    for (const std::string& name : drawn) {
        QPDFObjectHandle x = xobjects.getKey(name);
        if (!x.isStream()) continue;
        QPDFObjectHandle subtype = x.getDict().getKey("/Subtype");
        if (subtype.isNameAndEquals("/Image")) images = true;
        if (!subtype.isNameAndEquals("/Form") || --budget < 0) continue;
        const QPDFObjGen og = x.getObjGen();
        if (std::find(path.begin(), path.end(), og) != path.end() || path.size() >= 32) return og;
        path.push_back(og);
        QPDFObjectHandle formResources = x.getDict().getKey("/Resources");
        if (!formResources.isDictionary()) formResources = resources;  // a form without resources uses its drawer's
        if (auto cycle = followDrawings(streamBytes(x), formResources, pageResources, path, images, budget)) return cycle;
        path.pop_back();
    }
    return std::nullopt;
}

// Where qpdf cannot read a file (no /Root found), PDFium may still repair it and draw a form that
// draws itself until it runs out of memory (a fuzz finding). Its bytes are then searched as text:
// each "N G obj" up to the next, and a form there whose own resources name an object (/X M G R)
// it draws (/X Do). Returns an object of a cycle among such forms, if any. Files over 16 MB are
// not searched (the quire-render helper's deadline and memory limit still hold there).
std::optional<long> rawSelfDrawingForm(const fs::path& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec || size > (16u << 20)) return std::nullopt;
    std::string bytes(size, '\0');
    {
        FILE* f = std::fopen(path.c_str(), "rb");
        if (!f) return std::nullopt;
        bytes.resize(std::fread(bytes.data(), 1, size, f));
        std::fclose(f);
    }
    // Object headers: digits, white space, digits, white space, "obj".
    auto digitsBefore = [&](size_t end) {
        size_t b = end;
        while (b > 0 && std::isdigit(static_cast<unsigned char>(bytes[b - 1]))) --b;
        return b;
    };
    std::vector<std::pair<size_t, long>> headers;  // where each object's text starts, its number
    for (size_t at = bytes.find("obj"); at != std::string::npos; at = bytes.find("obj", at + 3)) {
        size_t k = at;
        if (k == 0 || !std::isspace(static_cast<unsigned char>(bytes[k - 1]))) continue;
        while (k > 0 && std::isspace(static_cast<unsigned char>(bytes[k - 1]))) --k;
        const size_t g = digitsBefore(k);
        if (g == k || g == 0 || !std::isspace(static_cast<unsigned char>(bytes[g - 1]))) continue;
        size_t n = g;
        while (n > 0 && std::isspace(static_cast<unsigned char>(bytes[n - 1]))) --n;
        const size_t start = digitsBefore(n);
        if (start == n || n - start > 9) continue;
        headers.emplace_back(at + 3, std::stol(bytes.substr(start, n - start)));
    }
    // The forms each form draws through names its own text maps to objects.
    static const std::regex named(R"(/([^\s/\[\]()<>{}%]+)\s+(\d{1,9})\s+\d+\s+R)");
    std::map<long, std::set<long>> draws;
    for (size_t h = 0; h < headers.size(); ++h) {
        const size_t end = h + 1 < headers.size() ? headers[h + 1].first : bytes.size();
        const std::string text = bytes.substr(headers[h].first, std::min<size_t>(end - headers[h].first, 1u << 20));
        if (text.find("/Form") == std::string::npos) continue;
        std::set<std::string> drawn;
        bool inlineImage = false;
        scanContent(text, drawn, inlineImage);
        for (auto it = std::sregex_iterator(text.begin(), text.end(), named); it != std::sregex_iterator(); ++it)
            if (drawn.count("/" + (*it)[1].str())) draws[headers[h].second].insert(std::stol((*it)[2].str()));
    }
    // A cycle among them: depth-first, each form followed at most once.
    std::map<long, int> state;  // 1: on the path, 2: done
    std::function<std::optional<long>(long)> visit = [&](long form) -> std::optional<long> {
        state[form] = 1;
        if (auto it = draws.find(form); it != draws.end())
            for (long next : it->second) {
                if (state[next] == 1) return next;
                if (state[next] == 0 && draws.count(next))
                    if (auto cycle = visit(next)) return cycle;
            }
        state[form] = 2;
        return std::nullopt;
    };
    for (const auto& [form, _] : draws)
        if (state[form] == 0)
            if (auto cycle = visit(form)) return cycle;
    return std::nullopt;
}

bool validUtf8(const std::string& s) {
    const QByteArray b = QByteArray::fromStdString(s);
    return QString::fromUtf8(b).toUtf8() == b;
}

// A descriptor's name, for QtPdf in this process and for pdftoppm in a child.
fs::path descriptorPath(int fd) { return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(fd); }

}  // namespace

PdfDocument::~PdfDocument() {
    m_doc.close();
    for (const int fd : m_held) ::close(fd);
}

Result<std::unique_ptr<PdfDocument>> PdfDocument::open(const fs::path& path) {
    auto doc = std::unique_ptr<PdfDocument>(new PdfDocument);
    doc->m_path = path;
    doc->m_readPath = path;
    std::vector<PdfPageInfo> checked;
    bool qpdfRead = false, pagesChecked = false;
    try {
        QPDF q;
        q.setSuppressWarnings(true);
        q.processFile(path.string().c_str());
        qpdfRead = true;
        QPDFObjectHandle pages = q.getRoot().getKey("/Pages");
        std::vector<Leaf> leaves;
        std::set<QPDFObjGen> seen;
        std::string damage;
        walkPages(pages, {}, seen, leaves, damage, 0);
        QPDFObjectHandle count = pages.isDictionary() ? pages.getKey("/Count") : QPDFObjectHandle::newNull();
        if (damage.empty() && (!count.isInteger() || count.getIntValue() != (long long)leaves.size()))
            damage = "its page count says " + (count.isInteger() ? std::to_string(count.getIntValue()) : std::string("nothing")) +
                     " where the page tree holds " + std::to_string(leaves.size());
        for (auto& leaf : leaves) {
            PdfPageInfo info;
            QPDFObjectHandle resources = leaf.page.hasKey("/Resources") ? leaf.page.getKey("/Resources") : leaf.inherited.resources;
            std::vector<QPDFObjGen> drawPath;
            int budget = 10'000;
            if (auto cycle = followDrawings(contentsBytes(leaf.page.getKey("/Contents")), resources, resources, drawPath,
                                            info.drawsImages, budget))
                info.refusal = "the page draws a form that draws itself (object " + cycle->unparse(' ') +
                               "); it cannot be rendered";
            checked.push_back(info);
        }
        pagesChecked = true;
        if (!damage.empty() && !leaves.empty()) {
            // A copy with a sound page tree: one flat /Pages node holding each page once, with the
            // attributes it inherited set on the page itself.
            QPDFObjectHandle flat = q.makeIndirectObject(QPDFObjectHandle::newDictionary());
            QPDFObjectHandle kids = QPDFObjectHandle::newArray();
            for (auto& leaf : leaves) {
                QPDFObjectHandle page = leaf.page;
                if (!page.hasKey("/MediaBox") && leaf.inherited.mediaBox.isInitialized()) page.replaceKey("/MediaBox", leaf.inherited.mediaBox);
                if (!page.hasKey("/CropBox") && leaf.inherited.cropBox.isInitialized()) page.replaceKey("/CropBox", leaf.inherited.cropBox);
                if (!page.hasKey("/Resources") && leaf.inherited.resources.isInitialized()) page.replaceKey("/Resources", leaf.inherited.resources);
                if (!page.hasKey("/Rotate") && leaf.inherited.rotate.isInitialized()) page.replaceKey("/Rotate", leaf.inherited.rotate);
                page.replaceKey("/Type", QPDFObjectHandle::newName("/Page"));
                page.replaceKey("/Parent", flat);
                kids.appendItem(page);
            }
            flat.replaceKey("/Type", QPDFObjectHandle::newName("/Pages"));
            flat.replaceKey("/Kids", kids);
            flat.replaceKey("/Count", QPDFObjectHandle::newInteger((long long)leaves.size()));
            q.getRoot().replaceKey("/Pages", flat);
            q.updateAllPagesCache();
            std::string folder;
            const int fd = openUnnamedFile(folder);
            if (fd < 0)
                return Status(ErrorCode::Io, path.string() + ": cannot write a repaired copy to the temporary folder " + folder + ": " + std::strerror(errno));
            doc->m_held.push_back(fd);
            const fs::path repaired = descriptorPath(fd);
            // QPDFWriter keeps the name's pointer until write(): the string must outlive it.
            const std::string repairedName = repaired.string();
            QPDFWriter w(q, repairedName.c_str());
            w.write();
            doc->m_readPath = repaired;
            doc->m_repairNote = "the PDF's page tree is damaged (" + damage + "); read its " + std::to_string(leaves.size()) +
                                " page(s) from a repaired copy";
        } else if (!damage.empty()) {
            return Status(ErrorCode::Empty, path.string() + ": the PDF has no pages (" + damage + ")");
        }
    } catch (const std::exception&) {
        // qpdf could not read it: PDFium, which repairs more, decides below.
        if (!qpdfRead) checked.clear();
    }
    // QtPdf takes a QString: a name that is not UTF-8 is read through its descriptor's name.
    if (!validUtf8(doc->m_readPath.string())) {
        const int fd = ::open(doc->m_readPath.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return Status(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Io, path.string() + ": " + std::strerror(errno));
        doc->m_held.push_back(fd);
        doc->m_readPath = descriptorPath(fd);
    }
    const auto err = doc->m_doc.load(QString::fromStdString(doc->m_readPath.string()));
    switch (err) {
        case QPdfDocument::Error::None: break;
        case QPdfDocument::Error::FileNotFound:
            return Status(ErrorCode::NotFound, path.string() + ": file not found");
        case QPdfDocument::Error::IncorrectPassword:
        case QPdfDocument::Error::UnsupportedSecurityScheme:
            return Status(ErrorCode::Encrypted, path.string() + ": the PDF is encrypted and needs a password; "
                                                "remove the password (e.g. with qpdf --decrypt) and try again");
        case QPdfDocument::Error::InvalidFileFormat:
            return Status(ErrorCode::Corrupt, path.string() + ": not a valid PDF (truncated or damaged)");
        default:
            return Status(ErrorCode::Corrupt, path.string() + ": cannot open the PDF (unknown error)");
    }
    int n = doc->m_doc.pageCount();
    if (n <= 0) return Status(ErrorCode::Empty, path.string() + ": the PDF has no pages");
    // qpdf's findings apply page by page only where both libraries see the same pages.
    if (int(checked.size()) != n) checked.assign(size_t(n), PdfPageInfo{});
    // qpdf could not check the pages' drawings: a form the file's text shows drawing itself
    // refuses every page, as which pages draw it is not known.
    if (!pagesChecked)
        if (auto form = rawSelfDrawingForm(path))
            for (auto& info : checked)
                info.refusal = "the damaged file holds a form that draws itself (object " + std::to_string(*form) +
                               ") and its pages cannot be told apart from it; they cannot be rendered";
    // Where qpdf could not read the file, PDFium trusts the page count: a thousand pages in a row
    // that PDFium cannot find end the document at the last page it found.
    constexpr int kPhantomRun = 1000;
    int lastFound = -1;
    for (int i = 0; i < n; ++i) {
        const QSizeF pt = doc->m_doc.pagePointSize(i);
        checked[size_t(i)].widthPt = pt.width();
        checked[size_t(i)].heightPt = pt.height();
        if (pt.width() > 0 && pt.height() > 0) lastFound = i;
        else if (i - lastFound >= kPhantomRun) break;
    }
    if (n - 1 - lastFound >= kPhantomRun) {
        if (lastFound < 0) return Status(ErrorCode::Empty, path.string() + ": the PDF has no pages that can be found");
        doc->m_repairNote += std::string(doc->m_repairNote.empty() ? "" : "; ") + "the PDF claims " + std::to_string(n) +
                             " pages, but none after page " + std::to_string(lastFound + 1) + " can be found; read " +
                             std::to_string(lastFound + 1);
        n = lastFound + 1;
        checked.resize(size_t(n));
    }
    doc->m_pages = std::move(checked);
    return doc;
}

namespace {

bool isBlank(const cv::Mat& m) {
    cv::Mat gray;
    if (m.channels() == 1) gray = m;
    else cv::extractChannel(m, gray, 1);
    return cv::countNonZero(gray < 160) == 0;
}

// The page through poppler: `pdftoppm -gray` writes one PGM to its output. Quiet (-q): on a
// damaged JBIG2 stream it printed millions of errors, 50 s of them for one small page (3 s
// without). 20 s: a real scanned page takes it one to three.
Result<cv::Mat> renderWithPoppler(const fs::path& file, int index, int width, int height, const std::atomic<bool>* cancel) {
    auto p = Subprocess::start("pdftoppm", {"-q", "-f", std::to_string(index + 1), "-l", std::to_string(index + 1), "-scale-to-x",
                                            std::to_string(width), "-scale-to-y", std::to_string(height), "-gray", file.string()});
    if (!p) return p.status();
    const auto deadline = Subprocess::Clock::now() + std::chrono::seconds(20);
    std::string header;
    int fields = 0;
    // "P5" WIDTH HEIGHT MAXVAL, separated by whitespace, then one byte of whitespace and pixels.
    while (fields < 4) {
        auto c = (*p)->readExact(1, deadline, cancel);
        if (!c) return Status(c.status().code(), "pdftoppm " + c.status().message());
        const bool space = std::isspace(static_cast<unsigned char>((*c)[0]));
        if (space && !header.empty() && !std::isspace(static_cast<unsigned char>(header.back()))) ++fields;
        header += *c;
        if (header.size() > 64) return Status(ErrorCode::Engine, "pdftoppm wrote no PGM image");
    }
    int w = 0, h = 0, maxval = 0;
    if (std::sscanf(header.c_str(), "P5 %d %d %d", &w, &h, &maxval) != 3 || w <= 0 || h <= 0 || maxval != 255 ||
        (long long)w * h > (long long)width * height * 2 + 16)
        return Status(ErrorCode::Engine, "pdftoppm wrote an unexpected image header");
    auto pixels = (*p)->readExact(size_t(w) * size_t(h), deadline, cancel);
    if (!pixels) return Status(pixels.status().code(), "pdftoppm " + pixels.status().message());
    cv::Mat gray(h, w, CV_8UC1);
    std::memcpy(gray.data, pixels->data(), pixels->size());
    return gray;
}

}  // namespace

Result<PageImage> PdfDocument::render(int index, int width, int height, int dpi, const std::atomic<bool>* cancel) {
    const std::string where = m_path.string() + " page " + std::to_string(index + 1);
    if (index < 0 || index >= pageCount()) return Status(ErrorCode::InvalidArgument, where + ": no such page");
    if (!page(index).refusal.empty()) return Status(ErrorCode::Corrupt, where + ": " + page(index).refusal);
    QImage img = m_doc.render(index, QSize(width, height));
    if (img.isNull()) return Status(ErrorCode::Corrupt, where + ": cannot render page");
    img = img.convertToFormat(QImage::Format_ARGB32);
    const cv::Mat bgra(img.height(), img.width(), CV_8UC4, img.bits(), size_t(img.bytesPerLine()));
    // Transparent areas of a PDF page are paper.
    const cv::Mat out = compositeOnWhite(bgra);
    PageImage result;
    result.image = out;
    result.dpi = dpi;
    if (page(index).drawsImages && isBlank(out)) {
        auto again = renderWithPoppler(m_readPath, index, width, height, cancel);
        if (again && !isBlank(*again)) {
            result.image = *again;
            result.note = "rendered blank by PDFium although it shows an image; rendered with poppler instead";
        } else {
            if (!again && again.status().code() == ErrorCode::Cancelled) return again.status();
            result.doubt = "the page rendered blank although it shows an image (" +
                           (again ? std::string("poppler's rendering is blank too")
                                  : "poppler's pdftoppm could not render it: " + again.status().message()) +
                           "); compare it with the scan";
        }
    }
    return result;
}

std::optional<std::string> PdfDocument::textLayer(int index) {
    // A page refused for drawing itself loops in PDFium's text extraction as in its rendering.
    if (index < 0 || index >= pageCount() || !page(index).refusal.empty()) return std::nullopt;
    const QString text = m_doc.getAllText(index).text();
    for (const QChar c : text)
        if (c.isLetterOrNumber()) return text.trimmed().toStdString();
    return std::nullopt;
}

}  // namespace quire
