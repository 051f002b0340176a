// Flowing-text exports: Markdown, plain text and DOCX (OOXML written with QuaZip).
#include <QDateTime>
#include <QString>

#include <quazip.h>
#include <quazipfile.h>

#include "quire/export/exporters.h"

namespace quire {

std::string xmlEscape(const std::string& s) {
    const QString in = QString::fromUtf8(s.data(), qsizetype(s.size()));  // invalid UTF-8 -> U+FFFD
    QString out;
    out.reserve(in.size());
    for (qsizetype i = 0; i < in.size(); ++i) {
        const QChar c = in[i];
        const char16_t u = c.unicode();
        if (c.isHighSurrogate() && i + 1 < in.size() && in[i + 1].isLowSurrogate()) {
            out += c;
            out += in[++i];
            continue;
        }
        if (c.isSurrogate()) continue;  // unpaired
        if (u < 0x20 && u != 0x09 && u != 0x0A && u != 0x0D) continue;
        if (u == 0xFFFE || u == 0xFFFF) continue;
        switch (u) {
            case '&': out += QStringLiteral("&amp;"); break;
            case '<': out += QStringLiteral("&lt;"); break;
            case '>': out += QStringLiteral("&gt;"); break;
            case '"': out += QStringLiteral("&quot;"); break;
            default: out += c;
        }
    }
    return out.toStdString();
}

namespace {

// Markdown would read "1. ", "# ", "- " etc. at a paragraph start as markup.
std::string escapeMarkdown(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        if (c == '\\' || c == '*' || c == '_' || c == '`' || c == '[' || c == ']' || c == '<') out += '\\';
        out += c;
    }
    const size_t first = out.find_first_not_of(' ');
    if (first != std::string::npos) {
        const char c = out[first];
        if (c == '#' || c == '>' || c == '-' || c == '+' || c == '=' || c == '|') out.insert(first, "\\");
        size_t d = first;
        while (d < out.size() && std::isdigit(static_cast<unsigned char>(out[d]))) ++d;
        if (d > first && d < out.size() && (out[d] == '.' || out[d] == ')')) out.insert(d, "\\");
    }
    return out;
}

}  // namespace

namespace {
std::string bracketed(const std::string& citation) { return "[" + citation + "]"; }
}  // namespace

std::string toMarkdown(const Book& book, bool pageMarkers) {
    std::string out;
    for (const auto& p : book.paragraphs) {
        if (!out.empty()) out += "\n";
        if (p.headingLevel > 0) out += std::string(size_t(p.headingLevel), '#') + " ";
        if (p.marginalNote) out += "> ";  // set apart, as in the margin
        // The brackets come out escaped ("\[p. 12\]"): literal text, never a link.
        out += escapeMarkdown(pageMarkers ? withPageMarks(book, p, bracketed) : p.text) + "\n";
    }
    return out;
}

std::string toPlainText(const Book& book, bool pageMarkers) {
    std::string out;
    for (const auto& p : book.paragraphs) {
        if (!out.empty()) out += "\n";
        out += (pageMarkers ? withPageMarks(book, p, bracketed) : p.text) + "\n";
    }
    return out;
}

namespace {

constexpr const char* kContentTypes = R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
<Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/>
</Types>)";

constexpr const char* kRootRels = R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>
<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties" Target="docProps/app.xml"/>
</Relationships>)";

constexpr const char* kDocRels = R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>
</Relationships>)";

constexpr const char* kStyles = R"(<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:docDefaults><w:rPrDefault><w:rPr><w:rFonts w:ascii="Liberation Serif" w:hAnsi="Liberation Serif" w:eastAsia="Noto Serif CJK SC"/><w:sz w:val="24"/><w:lang w:val="en-US"/></w:rPr></w:rPrDefault>
<w:pPrDefault><w:pPr><w:spacing w:after="120" w:line="276" w:lineRule="auto"/></w:pPr></w:pPrDefault></w:docDefaults>
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/><w:qFormat/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:qFormat/>
<w:pPr><w:keepNext/><w:spacing w:before="360" w:after="240"/><w:jc w:val="center"/><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/><w:sz w:val="32"/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/><w:next w:val="Normal"/><w:qFormat/>
<w:pPr><w:keepNext/><w:spacing w:before="240" w:after="120"/><w:jc w:val="center"/><w:outlineLvl w:val="1"/></w:pPr><w:rPr><w:b/><w:sz w:val="28"/></w:rPr></w:style>
<w:style w:type="paragraph" w:styleId="MarginalNote"><w:name w:val="Marginal Note"/><w:basedOn w:val="Normal"/><w:qFormat/>
<w:pPr><w:ind w:left="720"/></w:pPr><w:rPr><w:i/><w:sz w:val="20"/></w:rPr></w:style>
</w:styles>)";

bool writeEntry(QuaZip& zip, const char* name, const std::string& data) {
    QuaZipFile f(&zip);
    QuaZipNewInfo info(QString::fromLatin1(name));
    info.dateTime = QDateTime::currentDateTime();
    if (!f.open(QIODevice::WriteOnly, info)) return false;
    const bool ok = f.write(data.data(), qint64(data.size())) == qint64(data.size());
    f.close();
    return ok && f.getZipError() == UNZ_OK;
}

}  // namespace

Status writeDocx(const Book& book, const DocumentInfo& info, const std::filesystem::path& file, bool pageMarkers) {
    std::string body;
    body.reserve(book.paragraphs.size() * 400);
    bool first = true;
    for (const auto& p : book.paragraphs) {
        body += "<w:p>";
        if (p.headingLevel > 0) body += "<w:pPr><w:pStyle w:val=\"Heading" + std::to_string(p.headingLevel) + "\"/></w:pPr>";
        else if (p.marginalNote) body += "<w:pPr><w:pStyle w:val=\"MarginalNote\"/></w:pPr>";
        // Chapters start on a new page, as in the printed book.
        if (p.headingLevel == 1 && !first) body += "<w:r><w:br w:type=\"page\"/></w:r>";
        if (!pageMarkers || p.pageStarts.empty()) {
            body += "<w:r><w:t xml:space=\"preserve\">" + xmlEscape(p.text) + "</w:t></w:r></w:p>\n";
        } else {
            // Each mark a run of its own, in grey, between the runs of the text around it.
            const std::string marked = withPageMarks(book, p, [](const std::string& c) { return "\x01[" + c + "]\x02"; });
            size_t at = 0;
            while (at < marked.size()) {
                const size_t open = marked.find('\x01', at);
                const size_t end = open == std::string::npos ? marked.size() : open;
                if (end > at) body += "<w:r><w:t xml:space=\"preserve\">" + xmlEscape(marked.substr(at, end - at)) + "</w:t></w:r>";
                if (open == std::string::npos) break;
                const size_t close = marked.find('\x02', open);
                if (close == std::string::npos) break;  // a stray control character in the text itself
                body += "<w:r><w:rPr><w:color w:val=\"808080\"/></w:rPr><w:t xml:space=\"preserve\">" +
                        xmlEscape(marked.substr(open + 1, close - open - 1)) + "</w:t></w:r>";
                at = close + 1;
            }
            body += "</w:p>\n";
        }
        first = false;
    }
    const std::string document =
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\"><w:body>\n" + body +
        "<w:sectPr><w:pgSz w:w=\"11906\" w:h=\"16838\"/><w:pgMar w:top=\"1440\" w:right=\"1440\" w:bottom=\"1440\" "
        "w:left=\"1440\" w:header=\"708\" w:footer=\"708\" w:gutter=\"0\"/></w:sectPr></w:body></w:document>\n";
    const std::string now = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    const std::string core =
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        "<cp:coreProperties xmlns:cp=\"http://schemas.openxmlformats.org/package/2006/metadata/core-properties\" "
        "xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:dcterms=\"http://purl.org/dc/terms/\" "
        "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><dc:title>" + xmlEscape(info.title) +
        "</dc:title>" + (info.author.empty() ? std::string() : "<dc:creator>" + xmlEscape(info.author) + "</dc:creator>") +
        (info.language.empty() ? std::string() : "<dc:language>" + xmlEscape(info.language) + "</dc:language>") +
        "<cp:lastModifiedBy>Quire</cp:lastModifiedBy><dcterms:created xsi:type=\"dcterms:W3CDTF\">" + now +
        "</dcterms:created><dcterms:modified xsi:type=\"dcterms:W3CDTF\">" + now +
        "</dcterms:modified></cp:coreProperties>\n";
    const std::string app =
        "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
        "<Properties xmlns=\"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties\">"
        "<Application>Quire</Application></Properties>\n";
    QuaZip zip(QString::fromStdString(file.string()));
    if (!zip.open(QuaZip::mdCreate))
        return Status(ErrorCode::Io, file.string() + ": cannot create DOCX (zip error " + std::to_string(zip.getZipError()) + ")");
    const bool ok = writeEntry(zip, "[Content_Types].xml", kContentTypes) && writeEntry(zip, "_rels/.rels", kRootRels) &&
                    writeEntry(zip, "word/_rels/document.xml.rels", kDocRels) &&
                    writeEntry(zip, "word/document.xml", document) && writeEntry(zip, "word/styles.xml", kStyles) &&
                    writeEntry(zip, "docProps/core.xml", core) && writeEntry(zip, "docProps/app.xml", app);
    zip.close();
    if (!ok || zip.getZipError() != UNZ_OK)
        return Status(ErrorCode::Io, file.string() + ": writing the DOCX failed (disk full?)");
    return Status::ok();
}

}  // namespace quire
