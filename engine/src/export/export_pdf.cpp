// Searchable PDF: each page's original scan, untouched (PDF pages copied, JPEG and PNG data
// passed through, other images losslessly re-encoded), under an invisible text layer (render mode
// 3) with one run per word fitted to its box, in Tesseract's glyph-less font with a ToUnicode map.
#define POINTERHOLDER_TRANSITION 4  // qpdf 11: no PointerHolder at all, std::shared_ptr only
#include <qpdf/Pipeline.hh>
#include <qpdf/QPDF.hh>
#include <qpdf/QPDFPageDocumentHelper.hh>
#include <qpdf/QPDFPageObjectHelper.hh>
#include <qpdf/QPDFWriter.hh>

#include <QDateTime>
#include <QString>

#include <opencv2/imgproc.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "quire/source/document_source.h"
#include "quire/export/exporters.h"
#include "export/srgb_profile.h"

namespace fs = std::filesystem;

namespace quire {

namespace {

std::string readFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool isPdfFile(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    char head[1024] = {};
    in.read(head, sizeof head);
    return std::string_view(head, size_t(in.gcount())).find("%PDF-") != std::string_view::npos;
}

bool isPngOrJpeg(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    char head[8] = {};
    in.read(head, sizeof head);
    if (in.gcount() < 8) return false;
    return std::memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0 || std::memcmp(head, "\xff\xd8\xff", 3) == 0;
}

fs::path findGlyphlessFont() {
    std::vector<fs::path> dirs;
    if (const char* env = std::getenv("TESSDATA_PREFIX"); env && *env) dirs.emplace_back(env);
    for (const char* d : {"/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tesseract-ocr/4.00/tessdata",
                          "/usr/share/tessdata"})
        dirs.emplace_back(d);
    for (const auto& d : dirs) {
        std::error_code ec;
        if (fs::exists(d / "pdf.ttf", ec)) return d / "pdf.ttf";
    }
    return {};
}

uint32_t be32(const unsigned char* p) { return (uint32_t(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }

// PNG data that a PDF can carry as is: IDAT bytes under FlateDecode with the PNG predictor.
struct PngPassThrough {
    int width = 0, height = 0, bits = 0, colors = 0;
    std::string idat;
};
std::optional<PngPassThrough> pngPassThrough(const std::string& png) {
    if (png.size() < 33 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return std::nullopt;
    const auto* d = reinterpret_cast<const unsigned char*>(png.data());
    PngPassThrough out;
    out.width = int(be32(d + 16));
    out.height = int(be32(d + 20));
    out.bits = d[24];
    const int colorType = d[25], interlace = d[28];
    if (interlace != 0 || (colorType != 0 && colorType != 2)) return std::nullopt;
    if (out.bits != 1 && out.bits != 8) return std::nullopt;
    out.colors = colorType == 2 ? 3 : 1;
    for (size_t p = 8; p + 12 <= png.size();) {
        const uint32_t len = be32(d + p);
        if (p + 12 + len > png.size()) return std::nullopt;  // truncated
        const std::string_view type(png.data() + p + 4, 4);
        if (type == "IDAT") out.idat.append(png, p + 8, len);
        if (type == "IEND") break;
        p += 12 + len;
    }
    if (out.idat.empty()) return std::nullopt;
    return out;
}

struct JpegInfo {
    int width = 0, height = 0, components = 0;
};
std::optional<JpegInfo> jpegInfo(const std::string& jpg) {
    const auto* d = reinterpret_cast<const unsigned char*>(jpg.data());
    if (jpg.size() < 4 || d[0] != 0xFF || d[1] != 0xD8) return std::nullopt;
    for (size_t p = 2; p + 9 < jpg.size();) {
        if (d[p] != 0xFF) return std::nullopt;
        const unsigned char m = d[p + 1];
        const size_t len = (size_t(d[p + 2]) << 8) | d[p + 3];
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC)
            return JpegInfo{(d[p + 7] << 8) | d[p + 8], (d[p + 5] << 8) | d[p + 6], d[p + 9]};
        p += 2 + len;
    }
    return std::nullopt;
}

// Decoded pixels are produced only while the file is written, so memory stays flat in page count.
class LazyImages : public QPDFObjectHandle::StreamDataProvider {
public:
    void add(QPDFObjGen og, std::function<std::string()> make) { m_makers[og] = std::move(make); }
    void provideStreamData(QPDFObjGen const& og, Pipeline* pipeline) override {
        const std::string data = m_makers.at(og)();
        pipeline->write(reinterpret_cast<const unsigned char*>(data.data()), data.size());
        pipeline->finish();
    }

private:
    std::map<QPDFObjGen, std::function<std::string()>> m_makers;
};

std::string packImage(const cv::Mat& img, bool bilevel) {
    std::string out;
    if (bilevel) {
        const int rowBytes = (img.cols + 7) / 8;
        out.assign(size_t(rowBytes) * size_t(img.rows), '\0');
        for (int y = 0; y < img.rows; ++y) {
            const uchar* s = img.ptr(y);
            auto* d = reinterpret_cast<unsigned char*>(&out[size_t(y) * size_t(rowBytes)]);
            for (int x = 0; x < img.cols; ++x)
                if (s[x] >= 128) d[x >> 3] |= uchar(0x80 >> (x & 7));
        }
        return out;
    }
    cv::Mat m = img;
    if (m.channels() == 3) cv::cvtColor(img, m, cv::COLOR_BGR2RGB);
    out.reserve(m.total() * m.elemSize());
    for (int y = 0; y < m.rows; ++y) out.append(reinterpret_cast<const char*>(m.ptr(y)), m.cols * m.elemSize());
    return out;
}

bool isBilevel(const cv::Mat& m) {
    if (m.channels() != 1) return false;
    for (int y = 0; y < m.rows; ++y) {
        const uchar* p = m.ptr(y);
        for (int x = 0; x < m.cols; ++x)
            if (p[x] != 0 && p[x] != 255) return false;
    }
    return true;
}

// The last source opened stays open: pages come in book order, and reopening a multi-page TIFF
// for each of its pages would make the export quadratic in the page count.
struct SourceCache {
    std::string path;
    int dpi = 0;
    std::unique_ptr<DocumentSource> source;
};

Result<cv::Mat> decodeRegion(const PageRecord& page, SourceCache& cache) {
    const int dpi = page.dpi > 0 ? page.dpi : 300;
    if (!cache.source || cache.path != page.sourceFile || cache.dpi != dpi) {
        SourceOptions opt;
        opt.pdfDpi = dpi;
        auto src = openSource(page.sourceFile, opt);
        if (!src) return src.status();
        cache.source = std::move(*src);
        cache.path = page.sourceFile;
        cache.dpi = dpi;
    }
    auto img = cache.source->loadPage(page.filePage);
    if (!img) return img.status();
    return cropToRegion(turnedClockwise(img->image, page.rotation), page.region, dpi, dpi);
}

std::string utf16Hex(const std::string& text) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (const QChar c : QString::fromStdString(text)) {
        const char16_t u = c.unicode();
        for (int shift : {12, 8, 4, 0}) out += hex[(u >> shift) & 0xF];
    }
    return out;
}

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

// Invisible words, fitted to their boxes. (ox, oy): page-space origin of pixel (0,0) at the top;
// s: points per pixel.
std::string textLayer(const PageText& layout, const Box& region, double left, double top, double s) {
    std::string out = "BT\n3 Tr\n";
    for (const auto& line : layout.lines) {
        for (size_t wi = 0; wi < line.words.size(); ++wi) {
            const Word& w = line.words[wi];
            if (w.box.empty() || w.text.empty()) continue;
            const bool space = wi + 1 < line.words.size();
            const std::string text = space ? w.text + " " : w.text;
            // A word with its trailing space spans to the next word's start.
            int width = w.box.w;
            if (space && !line.words[wi + 1].box.empty() && line.words[wi + 1].box.x > w.box.right())
                width = line.words[wi + 1].box.x - w.box.x;
            const double fontSize = std::max(1.0, w.box.h * s);
            const double chars = double(QString::fromStdString(text).size());
            const double natural = chars * 0.5 * fontSize;  // glyph-less font: 500 units per glyph
            const double tz = natural > 0 ? 100.0 * width * s / natural : 100.0;
            const double x = left + (w.box.x - region.x) * s;
            const double y = top - (w.box.bottom() - region.y) * s + 0.15 * fontSize;
            out += "/FQuire " + fmt(fontSize) + " Tf " + fmt(tz) + " Tz 1 0 0 1 " + fmt(x) + " " + fmt(y) +
                   " Tm <" + utf16Hex(text) + "> Tj\n";
        }
    }
    out += "ET\n";
    return out;
}

QPDFObjectHandle makeFont(QPDF& pdf, const std::string& ttf) {
    const std::string cmap =
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n1 begincodespacerange\n<0000> <FFFF>\n"
        "endcodespacerange\n1 beginbfrange\n<0000> <FFFF> <0000>\nendbfrange\nendcmap\n"
        "CMapName currentdict /CMap defineresource pop\nend\nend\n";
    auto toUnicode = pdf.makeIndirectObject(QPDFObjectHandle::newStream(&pdf, cmap));
    std::string cidToGid(65536 * 2, '\0');
    for (size_t i = 0; i < 65536; ++i) cidToGid[2 * i + 1] = 1;  // every code to the one glyph
    auto cidMap = pdf.makeIndirectObject(QPDFObjectHandle::newStream(&pdf, cidToGid));
    auto fontFile = QPDFObjectHandle::newStream(&pdf, ttf);
    fontFile.getDict().replaceKey("/Length1", QPDFObjectHandle::newInteger(int64_t(ttf.size())));
    fontFile = pdf.makeIndirectObject(fontFile);
    auto descriptor = pdf.makeIndirectObject(QPDFObjectHandle::parse(
        "<< /Type /FontDescriptor /FontName /GlyphLessFont /Flags 5 /FontBBox [0 0 500 1000] /ItalicAngle 0 "
        "/Ascent 1000 /Descent -1 /CapHeight 1000 /StemV 80 >>"));
    descriptor.replaceKey("/FontFile2", fontFile);
    auto cidFont = pdf.makeIndirectObject(QPDFObjectHandle::parse(
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /GlyphLessFont "
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 500 >>"));
    cidFont.replaceKey("/FontDescriptor", descriptor);
    cidFont.replaceKey("/CIDToGIDMap", cidMap);
    auto font = pdf.makeIndirectObject(QPDFObjectHandle::parse(
        "<< /Type /Font /Subtype /Type0 /BaseFont /GlyphLessFont /Encoding /Identity-H >>"));
    auto descendants = QPDFObjectHandle::newArray();
    descendants.appendItem(cidFont);
    font.replaceKey("/DescendantFonts", descendants);
    font.replaceKey("/ToUnicode", toUnicode);
    return font;
}

void addFontResource(QPDFObjectHandle page, QPDFObjectHandle font) {
    auto res = page.getKey("/Resources");
    if (!res.isDictionary()) {
        res = QPDFObjectHandle::newDictionary();
        page.replaceKey("/Resources", res);
    }
    auto fonts = res.getKey("/Font");
    if (!fonts.isDictionary()) {
        fonts = QPDFObjectHandle::newDictionary();
        res.replaceKey("/Font", fonts);
    }
    fonts.replaceKey("/FQuire", font);
}

}  // namespace

namespace {

// XMP metadata for PDF/A-2b: the conformance, and the document information again (PDF/A wants
// both to say the same).
std::string xmpMetadata(const DocumentInfo& docInfo, const std::string& creator, const std::string& producer,
                        const std::string& when) {
    std::string x = "<?xpacket begin=\"\xEF\xBB\xBF\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n"
                    "<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n"
                    "<rdf:Description rdf:about=\"\" xmlns:pdfaid=\"http://www.aiim.org/pdfa/ns/id/\" "
                    "xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:xmp=\"http://ns.adobe.com/xap/1.0/\" "
                    "xmlns:pdf=\"http://ns.adobe.com/pdf/1.3/\">\n"
                    "<pdfaid:part>2</pdfaid:part><pdfaid:conformance>B</pdfaid:conformance>\n";
    if (!docInfo.title.empty())
        x += "<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">" + xmlEscape(docInfo.title) + "</rdf:li></rdf:Alt></dc:title>\n";
    if (!docInfo.author.empty())
        x += "<dc:creator><rdf:Seq><rdf:li>" + xmlEscape(docInfo.author) + "</rdf:li></rdf:Seq></dc:creator>\n";
    if (!docInfo.language.empty())
        x += "<dc:language><rdf:Bag><rdf:li>" + xmlEscape(docInfo.language) + "</rdf:li></rdf:Bag></dc:language>\n";
    x += "<dc:format>application/pdf</dc:format>\n<xmp:CreatorTool>" + xmlEscape(creator) + "</xmp:CreatorTool>\n"
         "<xmp:CreateDate>" + when + "</xmp:CreateDate><xmp:ModifyDate>" + when + "</xmp:ModifyDate><xmp:MetadataDate>" +
         when + "</xmp:MetadataDate>\n<pdf:Producer>" + xmlEscape(producer) + "</pdf:Producer>\n"
         "</rdf:Description>\n</rdf:RDF></x:xmpmeta>\n";
    // Padding lets an editor rewrite the packet in place, as XMP recommends.
    for (int i = 0; i < 20; ++i) x += std::string(99, ' ') + "\n";
    return x + "<?xpacket end=\"w\"?>";
}

// What PDF/A-2b asks of the catalogue: the XMP metadata (unfiltered) and the sRGB output intent that
// gives DeviceRGB and DeviceGray their meaning.
void makePdfA(QPDF& pdf, const std::string& xmp) {
    auto metadata = pdf.makeIndirectObject(QPDFObjectHandle::newStream(&pdf, xmp));
    metadata.getDict().replaceKey("/Type", QPDFObjectHandle::newName("/Metadata"));
    metadata.getDict().replaceKey("/Subtype", QPDFObjectHandle::newName("/XML"));
    pdf.getRoot().replaceKey("/Metadata", metadata);
    auto profile = QPDFObjectHandle::newStream(&pdf, srgbIccProfile());
    profile.getDict().replaceKey("/N", QPDFObjectHandle::newInteger(3));
    auto intent = QPDFObjectHandle::parse(
        "<< /Type /OutputIntent /S /GTS_PDFA1 /OutputConditionIdentifier (sRGB IEC61966-2.1) "
        "/RegistryName (http://www.color.org) /Info (sRGB IEC61966-2.1) >>");
    intent.replaceKey("/DestOutputProfile", pdf.makeIndirectObject(profile));
    auto intents = QPDFObjectHandle::newArray();
    intents.appendItem(pdf.makeIndirectObject(intent));
    pdf.getRoot().replaceKey("/OutputIntents", intents);
}

}  // namespace

Status writeSearchablePdf(const std::vector<BookPageInput>& pages, const fs::path& file, const DocumentInfo& docInfo,
                          const std::function<void(int, int)>& progress, const std::atomic<bool>* cancel, bool pdfA) {
    const fs::path fontPath = findGlyphlessFont();
    if (fontPath.empty())
        return Status(ErrorCode::Io, "searchable PDF: Tesseract's glyph-less font pdf.ttf was not found in its "
                                     "tessdata folder; install tesseract-ocr (installer/setup-deps.sh)");
    try {
        QPDF pdf;
        pdf.emptyPDF();
        const QPDFObjectHandle font = makeFont(pdf, readFile(fontPath));
        auto lazy = std::make_shared<LazyImages>();
        auto cache = std::make_shared<SourceCache>();
        std::map<std::string, std::unique_ptr<QPDF>> sources;  // source PDFs stay open until written
        QPDFPageDocumentHelper out(pdf);
        for (size_t i = 0; i < pages.size(); ++i) {
            if (cancel && cancel->load()) return Status(ErrorCode::Cancelled, "export cancelled");
            const PageRecord& page = pages[i].page;
            const double dpi = page.dpi > 0 ? page.dpi : 300;
            const double s = 72.0 / dpi;
            const bool whole = page.region.w <= 0 || page.part == 0;
            // A source PDF's page passes through as it is, unless the file must be PDF/A (then its
            // scan is rendered like any other: its fonts, transparency and the rest are not ours to
            // vouch for) or the user turned the page (the words are where the turned scan has them).
            if (whole && isPdfFile(page.sourceFile) && !pdfA && page.rotation == 0) {
                auto& src = sources[page.sourceFile];
                if (!src) {
                    src = std::make_unique<QPDF>();
                    src->processFile(page.sourceFile.c_str());
                    src->pushInheritedAttributesToPage();
                }
                auto srcPages = QPDFPageDocumentHelper(*src).getAllPages();
                if (page.filePage >= int(srcPages.size()))
                    return Status(ErrorCode::Corrupt, page.sourceFile + ": page " + std::to_string(page.filePage + 1) +
                                                          " is gone from the source PDF");
                out.addPage(srcPages[size_t(page.filePage)], false);
                QPDFPageObjectHelper added = out.getAllPages().back();
                const auto box = added.getCropBox(false, false).getArrayAsRectangle();
                addFontResource(added.getObjectHandle(), font);
                added.addPageContents(QPDFObjectHandle::newStream(&pdf, "q\n"), true);
                added.addPageContents(QPDFObjectHandle::newStream(
                                          &pdf, "Q\n" + textLayer(pages[i].layout, {0, 0, 0, 0}, box.llx, box.ury, s)),
                                      false);
            } else {
                // Image page: the scan itself, then the words.
                QPDFObjectHandle image = pdf.makeIndirectObject(QPDFObjectHandle::newStream(&pdf));
                int w = 0, h = 0;
                // Only single-image PNG/JPEG files can pass through; a multi-page TIFF is never read whole.
                std::string bytes = whole && page.rotation == 0 && isPngOrJpeg(page.sourceFile) ? readFile(page.sourceFile)
                                                                                              : std::string();
                const auto png = whole ? pngPassThrough(bytes) : std::nullopt;
                const auto jpg = whole && !png ? jpegInfo(bytes) : std::nullopt;
                auto dict = image.getDict();
                dict.replaceKey("/Type", QPDFObjectHandle::newName("/XObject"));
                dict.replaceKey("/Subtype", QPDFObjectHandle::newName("/Image"));
                if (png) {
                    w = png->width, h = png->height;
                    dict.replaceKey("/ColorSpace", QPDFObjectHandle::newName(png->colors == 3 ? "/DeviceRGB" : "/DeviceGray"));
                    dict.replaceKey("/BitsPerComponent", QPDFObjectHandle::newInteger(png->bits));
                    auto parms = QPDFObjectHandle::parse("<< /Predictor 15 >>");
                    parms.replaceKey("/Colors", QPDFObjectHandle::newInteger(png->colors));
                    parms.replaceKey("/BitsPerComponent", QPDFObjectHandle::newInteger(png->bits));
                    parms.replaceKey("/Columns", QPDFObjectHandle::newInteger(w));
                    image.replaceStreamData(png->idat, QPDFObjectHandle::newName("/FlateDecode"), parms);
                } else if (jpg && (jpg->components == 1 || jpg->components == 3)) {
                    w = jpg->width, h = jpg->height;
                    dict.replaceKey("/ColorSpace", QPDFObjectHandle::newName(jpg->components == 3 ? "/DeviceRGB" : "/DeviceGray"));
                    dict.replaceKey("/BitsPerComponent", QPDFObjectHandle::newInteger(8));
                    image.replaceStreamData(bytes, QPDFObjectHandle::newName("/DCTDecode"), QPDFObjectHandle::newNull());
                } else {
                    auto m = decodeRegion(page, *cache);
                    if (!m) return m.status();
                    w = m->cols, h = m->rows;
                    const bool bilevel = isBilevel(*m);
                    const int channels = m->channels();
                    dict.replaceKey("/ColorSpace", QPDFObjectHandle::newName(channels == 3 ? "/DeviceRGB" : "/DeviceGray"));
                    dict.replaceKey("/BitsPerComponent", QPDFObjectHandle::newInteger(bilevel ? 1 : 8));
                    image.replaceStreamData(lazy, QPDFObjectHandle::newNull(), QPDFObjectHandle::newNull());
                    const PageRecord copy = page;
                    lazy->add(image.getObjGen(), [copy, bilevel, cache] {
                        auto again = decodeRegion(copy, *cache);
                        return again ? packImage(*again, bilevel) : std::string();
                    });
                }
                bytes.clear();
                dict.replaceKey("/Width", QPDFObjectHandle::newInteger(w));
                dict.replaceKey("/Height", QPDFObjectHandle::newInteger(h));
                const double pw = w * s, ph = h * s;
                const Box region = whole ? Box{0, 0, w, h} : page.region;
                const std::string content = "q " + fmt(pw) + " 0 0 " + fmt(ph) + " 0 0 cm /Im0 Do Q\n" +
                                            textLayer(pages[i].layout, region, 0, ph, s);
                auto contents = QPDFObjectHandle::newStream(&pdf, content);
                auto pageObj = QPDFObjectHandle::parse("<< /Type /Page /Resources << /XObject << >> >> >>");
                pageObj.replaceKey("/MediaBox", QPDFObjectHandle::newArray(QPDFObjectHandle::Rectangle(0, 0, pw, ph)));
                pageObj.replaceKey("/Contents", contents);
                pageObj.getKey("/Resources").getKey("/XObject").replaceKey("/Im0", image);
                addFontResource(pageObj, font);
                out.addPage(QPDFPageObjectHelper(pdf.makeIndirectObject(pageObj)), false);
            }
            if (progress) progress(int(i) + 1, int(pages.size()));
        }
        // The document information a catalogue or a PDF reader shows.
        QPDFObjectHandle info = pdf.makeIndirectObject(QPDFObjectHandle::newDictionary());
        if (!docInfo.title.empty()) info.replaceKey("/Title", QPDFObjectHandle::newUnicodeString(docInfo.title));
        if (!docInfo.author.empty()) info.replaceKey("/Author", QPDFObjectHandle::newUnicodeString(docInfo.author));
        const std::string producer = "Quire " QUIRE_VERSION_STRING, creator = "Quire " QUIRE_VERSION_STRING " (OCR text layer)";
        info.replaceKey("/Producer", QPDFObjectHandle::newUnicodeString(producer));
        info.replaceKey("/Creator", QPDFObjectHandle::newUnicodeString(creator));
        const QDateTime time = QDateTime::currentDateTimeUtc();
        const std::string now = time.toString("'D:'yyyyMMddHHmmss'Z'").toStdString();
        info.replaceKey("/CreationDate", QPDFObjectHandle::newString(now));
        info.replaceKey("/ModDate", QPDFObjectHandle::newString(now));
        pdf.getTrailer().replaceKey("/Info", info);
        // The text's language, for screen readers and text extraction.
        if (!docInfo.language.empty()) pdf.getRoot().replaceKey("/Lang", QPDFObjectHandle::newUnicodeString(docInfo.language));
        if (pdfA) makePdfA(pdf, xmpMetadata(docInfo, creator, producer, time.toString(Qt::ISODate).toStdString()));
        QPDFWriter writer(pdf, file.c_str());
        // Filtered streams (scans, the source PDF's pages) are copied byte for byte; only our own
        // unfiltered streams (text layer, re-encoded pixels) get compressed.
        writer.setDecodeLevel(qpdf_dl_none);
        writer.setCompressStreams(true);
        writer.setObjectStreamMode(qpdf_o_generate);
        writer.setMinimumPDFVersion("1.5");
        writer.write();
    } catch (const std::exception& e) {
        return Status(ErrorCode::Io, file.string() + ": cannot write the searchable PDF: " + e.what());
    }
    return Status::ok();
}

}  // namespace quire
