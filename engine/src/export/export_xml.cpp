// Layout exports: hOCR 1.2 (one file for the book), ALTO 4.4 and PAGE XML 2019 (one file a page).
#include <QDateTime>
#include <QString>

#include <algorithm>
#include <filesystem>
#include <map>

#include "quire/export/exporters.h"

namespace quire {

namespace {

std::string num(int v) { return std::to_string(v); }
std::string fmt(double v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

Box nonEmpty(Box b) {
    b.w = std::max(1, b.w);
    b.h = std::max(1, b.h);
    return b;
}

std::string bbox(const Box& b0) {
    const Box b = nonEmpty(b0);
    return "bbox " + num(b.x) + " " + num(b.y) + " " + num(b.right()) + " " + num(b.bottom());
}

bool startsLowerWord(const std::string& s) {
    for (const QChar c : QString::fromStdString(s)) {
        if (c.isLetter()) return c.isLower();
        return false;
    }
    return false;
}

// The last word of `a` is the first half of a word hyphenated into `b`.
bool hyphenatedInto(const Line& a, const Line& b) {
    return !a.words.empty() && !b.words.empty() && endsWithHyphen(a.words.back().text) &&
           startsLowerWord(b.words.front().text);
}

std::string stripHyphen(const std::string& s) {
    QString t = QString::fromStdString(s);
    t.chop(1);
    return t.toStdString();
}

// The page's scan by file name, without the folders it lay in on this machine (an export travels);
// a page of a many-page file adds "#page=N" (a PDF's open parameter; the same for a TIFF).
std::string pageImageName(const PageRecord& p) {
    const std::string name = std::filesystem::path(p.sourceFile).filename().string();
    std::string ext = std::filesystem::path(p.sourceFile).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    const bool manyPages = p.filePage > 0 || ext == ".pdf" || ext == ".tif" || ext == ".tiff";
    return manyPages ? name + "#page=" + std::to_string(p.filePage + 1) : name;
}

Box pageBox(const BookPageInput& in) {
    const PageRecord& p = in.page;
    if (p.region.w > 0) return p.region;
    return {0, 0, std::max(1, in.layout.width), std::max(1, in.layout.height)};
}

}  // namespace

std::string toHocr(const std::vector<BookPageInput>& pages, const DocumentInfo& info) {
    const std::string lang = xmlEscape(info.language.empty() ? "en" : info.language);
    std::string out =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\" "
        "\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">\n"
        "<html xmlns=\"http://www.w3.org/1999/xhtml\" xml:lang=\"" + lang + "\" lang=\"" + lang + "\">\n<head>\n<title>" +
        xmlEscape(info.title) + "</title>\n<meta http-equiv=\"Content-Type\" content=\"text/html;charset=utf-8\"/>\n" +
        (info.author.empty() ? std::string() : "<meta name=\"author\" content=\"" + xmlEscape(info.author) + "\"/>\n") +
        "<meta name=\"ocr-system\" content=\"quire " QUIRE_VERSION_STRING "\"/>\n"
        "<meta name=\"ocr-capabilities\" content=\"ocr_page ocr_carea ocr_par ocr_line ocrx_word ocrp_wconf\"/>\n"
        "</head>\n<body>\n";
    int wordId = 0, lineId = 0, parId = 0, areaId = 0;
    for (size_t pi = 0; pi < pages.size(); ++pi) {
        const auto& in = pages[pi];
        const int pn = int(pi) + 1;
        out += "<div class=\"ocr_page\" id=\"page_" + num(pn) + "\" title=\"image &quot;" +
               xmlEscape(std::filesystem::path(in.page.sourceFile).filename().string()) + "&quot;; " + bbox(pageBox(in)) + "; ppageno " + num(int(pi)) +
               "\">\n";
        int block = -1, para = -1;
        bool openArea = false, openPar = false;
        for (const auto& line : in.layout.lines) {
            if (line.block != block || !openArea) {
                if (openPar) out += "</p>\n";
                if (openArea) out += "</div>\n";
                Box area;
                for (const auto& l : in.layout.lines)
                    if (l.block == line.block) area = area.united(l.box);
                out += "<div class=\"ocr_carea\" id=\"block_" + num(++areaId) + "\" title=\"" + bbox(area) + "\">\n";
                openArea = true, openPar = false, block = line.block, para = -1;
            }
            if (line.paragraph != para || !openPar) {
                if (openPar) out += "</p>\n";
                Box pb;
                for (const auto& l : in.layout.lines)
                    if (l.paragraph == line.paragraph && l.block == line.block) pb = pb.united(l.box);
                out += "<p class=\"ocr_par\" id=\"par_" + num(++parId) + "\" title=\"" + bbox(pb) + "\">\n";
                openPar = true, para = line.paragraph;
            }
            out += "<span class=\"ocr_line\" id=\"line_" + num(++lineId) + "\" title=\"" + bbox(line.box) +
                   "; baseline 0 0\">";
            for (size_t wi = 0; wi < line.words.size(); ++wi) {
                const Word& w = line.words[wi];
                if (wi) out += " ";
                out += "<span class=\"ocrx_word\" id=\"word_" + num(++wordId) + "\" title=\"" +
                       bbox(w.box.empty() ? line.box : w.box) + "; x_wconf " + num(int(w.confidence + 0.5f)) + "\">" +
                       xmlEscape(w.text) + "</span>";
            }
            out += "</span>\n";
        }
        if (openPar) out += "</p>\n";
        if (openArea) out += "</div>\n";
        out += "</div>\n";
    }
    out += "</body>\n</html>\n";
    return out;
}

namespace {
std::string altoTagId(RegionKind kind) { return std::string("region_") + regionKindName(kind); }

// The kinds of the page's hand-drawn regions as ALTO layout tags.
std::string altoTags(const std::vector<PageRegion>& regions) {
    std::string tags;
    for (const RegionKind kind : allRegionKinds()) {
        const bool used = std::any_of(regions.begin(), regions.end(), [&](const PageRegion& r) { return r.kind == kind; });
        if (used && kind != RegionKind::Ignore)
            tags += "<LayoutTag ID=\"" + altoTagId(kind) + "\" LABEL=\"" + regionKindName(kind) + "\"/>";
    }
    return tags.empty() ? tags : "<Tags>" + tags + "</Tags>\n";
}
}  // namespace

std::string toAlto(const BookPageInput& in, int pageNumber, const BookPageInput* next) {
    const Box pb = pageBox(in);
    const int W = std::max(1, in.layout.width), H = std::max(1, in.layout.height);
    std::string out =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<alto xmlns=\"http://www.loc.gov/standards/alto/ns-v4#\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
        "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:schemaLocation=\"http://www.loc.gov/standards/"
        "alto/ns-v4# http://www.loc.gov/alto/v4/alto-4-4.xsd\">\n<Description>\n<MeasurementUnit>pixel</MeasurementUnit>\n"
        "<sourceImageInformation><fileName>" + xmlEscape(pageImageName(in.page)) + "</fileName></sourceImageInformation>\n"
        "<Processing ID=\"proc1\"><processingAgency>Quire</processingAgency><processingStepSettings>engine " +
        xmlEscape(in.layout.engine + " " + in.layout.engineVersion + "; language " + in.layout.language) +
        "</processingStepSettings><processingSoftware><softwareName>Quire</softwareName><softwareVersion>"
        QUIRE_VERSION_STRING "</softwareVersion></processingSoftware></Processing>\n</Description>\n" + altoTags(in.regions) + "<Layout>\n"
        "<Page ID=\"page_" + num(pageNumber) + "\" PHYSICAL_IMG_NR=\"" + num(in.page.sourceIndex + 1) + "\" WIDTH=\"" +
        num(W) + "\" HEIGHT=\"" + num(H) + "\"" + (in.page.pageNumber.empty() ? "" : " PRINTED_IMG_NR=\"" +
        xmlEscape(in.page.pageNumber) + "\"") + ">\n<PrintSpace HPOS=\"" + num(pb.x) + "\" VPOS=\"" + num(pb.y) +
        "\" WIDTH=\"" + num(std::max(1, pb.w)) + "\" HEIGHT=\"" + num(std::max(1, pb.h)) + "\">\n";
    const auto& lines = in.layout.lines;
    // The first body line of the next page, for words hyphenated across the page break: past the
    // running head's lines (the book joins a head and its folio read as two lines with a space).
    const Line* nextFirst = nullptr;
    if (next)
        for (const auto& l : next->layout.lines)
            if (!l.words.empty() && (" " + next->page.header + " ").find(" " + l.text() + " ") == std::string::npos) {
                nextFirst = &l;
                break;
            }
    int block = -1, lineNo = 0, wordNo = 0;
    std::string carried;  // full word whose second half starts this line
    for (size_t li = 0; li < lines.size(); ++li) {
        const Line& line = lines[li];
        if (line.block != block) {
            if (block >= 0) out += "</TextBlock>\n";
            Box bb;
            for (const auto& l : lines)
                if (l.block == line.block) bb = nonEmpty(bb.united(l.box));
            // A block in a hand-drawn region is tagged with the region's kind.
            const int hand = readRegionAt(line.box, in.regions);
            const std::string tag =
                hand >= 0 ? " TAGREFS=\"" + altoTagId(in.regions[size_t(hand)].kind) + "\"" : std::string();
            out += "<TextBlock ID=\"p" + num(pageNumber) + "_b" + num(line.block) + "\" HPOS=\"" + num(bb.x) +
                   "\" VPOS=\"" + num(bb.y) + "\" WIDTH=\"" + num(bb.w) + "\" HEIGHT=\"" + num(bb.h) + "\"" + tag + ">\n";
            block = line.block;
        }
        const Box lb = nonEmpty(line.box);
        out += "<TextLine ID=\"p" + num(pageNumber) + "_l" + num(++lineNo) + "\" HPOS=\"" + num(lb.x) + "\" VPOS=\"" +
               num(lb.y) + "\" WIDTH=\"" + num(lb.w) + "\" HEIGHT=\"" + num(lb.h) + "\">\n";
        const Line* following = li + 1 < lines.size() ? &lines[li + 1] : nextFirst;
        const bool hyph = following && hyphenatedInto(line, *following);
        for (size_t wi = 0; wi < line.words.size(); ++wi) {
            const Word& w = line.words[wi];
            const Box b = nonEmpty(w.box.empty() ? lb : w.box);
            const bool last = wi + 1 == line.words.size();
            std::string content = w.text, subs;
            if (last && hyph) {
                content = stripHyphen(w.text);
                subs = " SUBS_TYPE=\"HypPart1\" SUBS_CONTENT=\"" +
                       xmlEscape(content + following->words.front().text) + "\"";
            } else if (wi == 0 && !carried.empty()) {
                subs = " SUBS_TYPE=\"HypPart2\" SUBS_CONTENT=\"" + xmlEscape(carried) + "\"";
            }
            if (wi) out += "<SP/>\n";
            out += "<String ID=\"p" + num(pageNumber) + "_w" + num(++wordNo) + "\" CONTENT=\"" + xmlEscape(content) +
                   "\" HPOS=\"" + num(b.x) + "\" VPOS=\"" + num(b.y) + "\" WIDTH=\"" + num(b.w) + "\" HEIGHT=\"" +
                   num(b.h) + "\" WC=\"" + fmt(std::clamp(w.confidence / 100.0, 0.0, 1.0), 2) + "\"" + subs + "/>\n";
            if (last && hyph) out += "<HYP CONTENT=\"-\"/>\n";
        }
        carried = hyph && li + 1 < lines.size() ? stripHyphen(line.words.back().text) + following->words.front().text
                                                 : std::string();
        out += "</TextLine>\n";
    }
    if (block >= 0) out += "</TextBlock>\n";
    for (size_t r = 0; r < in.regions.size(); ++r)
        if (in.regions[r].kind == RegionKind::Image) {
            const Box b = nonEmpty(in.regions[r].box);
            out += "<Illustration ID=\"p" + num(pageNumber) + "_i" + num(int(r)) + "\" HPOS=\"" + num(b.x) + "\" VPOS=\"" +
                   num(b.y) + "\" WIDTH=\"" + num(b.w) + "\" HEIGHT=\"" + num(b.h) + "\" TAGREFS=\"" +
                   altoTagId(RegionKind::Image) + "\"/>\n";
        }
    out += "</PrintSpace>\n</Page>\n</Layout>\n</alto>\n";
    return out;
}

namespace {
std::string points(const Box& b0) {
    const Box b = nonEmpty(b0);
    return num(b.x) + "," + num(b.y) + " " + num(b.right()) + "," + num(b.y) + " " + num(b.right()) + "," +
           num(b.bottom()) + " " + num(b.x) + "," + num(b.bottom());
}
}  // namespace

std::string toPageXml(const BookPageInput& in) {
    const std::string now = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    std::string out =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<PcGts xmlns=\"http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15\" "
        "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:schemaLocation=\"http://schema.primaresearch.org/"
        "PAGE/gts/pagecontent/2019-07-15 http://schema.primaresearch.org/PAGE/gts/pagecontent/2019-07-15/"
        "pagecontent.xsd\">\n<Metadata><Creator>Quire " QUIRE_VERSION_STRING "</Creator><Created>" + now +
        "</Created><LastChange>" + now + "</LastChange></Metadata>\n<Page imageFilename=\"" +
        xmlEscape(pageImageName(in.page)) + "\" imageWidth=\"" + num(std::max(1, in.layout.width)) + "\" imageHeight=\"" +
        num(std::max(1, in.layout.height)) + "\">\n";
    // Regions in reading order: the hand-drawn ones (with their lines), then the paragraphs of
    // lines outside them (all of them on a page without hand-drawn regions).
    struct OutRegion {
        const PageRegion* hand = nullptr;
        Box box;
        std::vector<const Line*> lines;
    };
    std::vector<OutRegion> regions;
    std::vector<int> handIndex;  // in.regions index -> regions index (-1: ignored)
    for (const auto& r : in.regions) {
        handIndex.push_back(r.kind == RegionKind::Ignore ? -1 : int(regions.size()));
        if (r.kind != RegionKind::Ignore) regions.push_back({&r, r.box, {}});
    }
    int para = -1;
    bool openPara = false;
    for (const auto& l : in.layout.lines) {
        const int hand = readRegionAt(l.box, in.regions);
        if (hand >= 0) {
            regions[size_t(handIndex[size_t(hand)])].lines.push_back(&l);
            openPara = false;
            continue;
        }
        if (!openPara || l.paragraph != para) regions.push_back({nullptr, {}, {}});
        regions.back().lines.push_back(&l);
        regions.back().box = regions.back().box.united(l.box);
        para = l.paragraph, openPara = true;
    }
    if (!regions.empty()) {
        out += "<ReadingOrder><OrderedGroup id=\"ro1\">";
        for (size_t r = 0; r < regions.size(); ++r)
            out += "<RegionRefIndexed index=\"" + num(int(r)) + "\" regionRef=\"r" + num(int(r)) + "\"/>";
        out += "</OrderedGroup></ReadingOrder>\n";
    }
    int lineNo = 0, wordNo = 0;
    auto textRegion = [&](const std::string& id, const char* type, const Box& box, const std::vector<const Line*>& lines) {
        std::string regionText;
        for (const Line* l : lines) regionText += (regionText.empty() ? "" : "\n") + l->text();
        out += "<TextRegion id=\"" + id + "\" type=\"" + type + "\"><Coords points=\"" + points(box) + "\"/>\n";
        for (const Line* l : lines) {
            out += "<TextLine id=\"l" + num(++lineNo) + "\"><Coords points=\"" + points(l->box) + "\"/>\n";
            for (const Word& w : l->words) {
                out += "<Word id=\"w" + num(++wordNo) + "\"><Coords points=\"" + points(w.box.empty() ? l->box : w.box) +
                       "\"/><TextEquiv conf=\"" + fmt(std::clamp(w.confidence / 100.0, 0.0, 1.0), 2) +
                       "\"><Unicode>" + xmlEscape(w.text) + "</Unicode></TextEquiv></Word>\n";
            }
            out += "<TextEquiv><Unicode>" + xmlEscape(l->text()) + "</Unicode></TextEquiv></TextLine>\n";
        }
        out += "<TextEquiv><Unicode>" + xmlEscape(regionText) + "</Unicode></TextEquiv></TextRegion>\n";
    };
    for (size_t r = 0; r < regions.size(); ++r) {
        const OutRegion& o = regions[r];
        const std::string id = "r" + num(int(r));
        const RegionKind kind = o.hand ? o.hand->kind : RegionKind::Text;
        if (kind == RegionKind::Image) {
            out += "<ImageRegion id=\"" + id + "\"><Coords points=\"" + points(o.box) + "\"/></ImageRegion>\n";
        } else if (kind == RegionKind::Table) {
            out += "<TableRegion id=\"" + id + "\"><Coords points=\"" + points(o.box) + "\"/>\n";
            textRegion(id + "_text", "other", o.box, o.lines);
            out += "</TableRegion>\n";
        } else {
            textRegion(id, kind == RegionKind::Heading ? "heading" : kind == RegionKind::MarginalNote ? "marginalia" : "paragraph",
                       o.box, o.lines);
        }
    }
    out += "</Page>\n</PcGts>\n";
    return out;
}

}  // namespace quire
