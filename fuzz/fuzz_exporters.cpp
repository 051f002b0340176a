// libFuzzer target: the exporters on arbitrary recognised or typed text (control characters, bidi
// marks, invalid UTF-8, very long lines). Every XML export must stay well-formed, checked with
// QXmlStreamReader; book assembly and correction alignment must not crash.
#include <QByteArray>
#include <QXmlStreamReader>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "quire/export/exporters.h"

namespace {
void requireWellFormed(const std::string& xml) {
    QXmlStreamReader r(QByteArray::fromStdString(xml));
    while (!r.atEnd()) r.readNext();
    if (r.hasError()) {
        std::fprintf(stderr, "malformed XML: %s\n", r.errorString().toUtf8().constData());
        std::abort();
    }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    quire::BookPageInput page;
    page.page.sourceFile = "scan & <page>.png";
    page.text = text;
    page.layout.width = 1000, page.layout.height = 1400;
    std::istringstream in(text);
    std::string lineText;
    int y = 0, para = 0;
    while (std::getline(in, lineText) && y < 400) {
        if (lineText.empty()) {
            ++para;
            continue;
        }
        quire::Line line;
        line.paragraph = para;
        std::istringstream ws(lineText);
        std::string w;
        int x = 0;
        while (ws >> w && x < 2000) {
            line.words.push_back({w, {x, y, 10 + int(w.size()), 20}, float(w.size() % 101)});
            x += 12 + int(w.size());
        }
        if (!line.words.empty()) page.layout.lines.push_back(line);
        y += 25;
    }
    const quire::BookPageInput next = page;
    requireWellFormed(quire::toAlto(page, 1, &next));
    requireWellFormed(quire::toPageXml(page));
    requireWellFormed(quire::toHocr({page, next}, {text, text, text}));
    const quire::Book book = quire::assembleBook({page, next});
    (void)quire::toMarkdown(book);
    // Page marks land inside the paragraphs' text: every offset must be within it.
    for (const auto& p : book.paragraphs)
        for (const auto& s : p.pageStarts)
            if (s.offset > p.text.size()) __builtin_trap();
    (void)quire::toPlainText(book, true);
    (void)quire::toMarkdown(book, true);
    if (page.layout.lines.size() < 60) (void)quire::alignCorrection(page.layout, text.substr(0, 4000));
    return 0;
}
