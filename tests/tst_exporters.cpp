#include <QDir>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/imgcodecs.hpp>

#include "quire/export/exporters.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

namespace {

// Lines of words laid out left to right at the given rows; paragraph changes at blank entries.
PageText makeLayout(const std::vector<std::string>& lines, int width, int height) {
    PageText t;
    t.width = width, t.height = height, t.dpi = 300;
    t.engine = "test", t.engineVersion = "1", t.language = "eng";
    int y = 120, para = 0;
    for (const auto& text : lines) {
        if (text.empty()) {
            ++para;
            continue;
        }
        Line l;
        l.paragraph = para;
        int x = 140;
        std::istringstream in(text);
        std::string w;
        while (in >> w) {
            const int ww = int(w.size()) * 30;
            l.words.push_back({w, {x, y, ww, 50}, 92});
            x += ww + 25;
        }
        for (const auto& word : l.words) l.box = l.box.united(word.box);
        t.lines.push_back(l);
        y += 84;
    }
    return t;
}

QString normalized(const QString& s) { return s.simplified(); }

}  // namespace

class TestExporters : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::unique_ptr<ProjectStore> m_store;
    QString m_out;

    const std::vector<std::vector<std::string>> kPages = {
        {"CHAPTER ONE", "", "It was the best of times and the", "worst of times, said the hyphen-", "ated narrator."},
        {"2 A TALE OF TESTS", "", "Archivists read every page & check", "each <word> \"twice\"."},
    };

    // Scanned pages with their engine text (kPages unless given), in `store`; the scans are written
    // under `prefix`.
    void fillProject(ProjectStore& store, const QString& prefix, std::vector<std::vector<std::string>> texts = {}) {
        if (texts.empty()) texts = kPages;
        std::vector<std::pair<std::string, int>> files;
        for (size_t i = 0; i < texts.size(); ++i) {
            // The scan the text layer goes on: a real image file on disk.
            const QString img = m_dir.filePath(QString("%1scan%2.png").arg(prefix).arg(i + 1));
            QVERIFY(cv::imwrite(img.toStdString(), textPage(texts[i], 1700, 2200, 1.2)));
            files.emplace_back(img.toStdString(), 0);
            DocumentRecord d{0, img.toStdString(), "image", "h" + std::to_string(i), 1, 0, 0};
            QVERIFY(store.addDocument(d, {files.back()}));
        }
        auto pages = *store.pages();
        for (size_t i = 0; i < pages.size(); ++i) {
            PageOutcome o;
            o.text = makeLayout(texts[i], 1700, 2200);
            o.region = {0, 0, 1700, 2200};
            QVERIFY(store.saveResult(pages[i].id, {o}));
        }
    }

private slots:
    void initTestCase() {
        m_store = std::move(*ProjectStore::open(m_dir.filePath("e.quire").toStdString()));
        fillProject(*m_store, "");
        m_out = m_dir.filePath("out");
        ExportOptions opt;
        opt.outDir = m_out.toStdString();
        opt.formats = *parseExportFormats("all");
        auto written = exportProject(*m_store, opt);
        QVERIFY2(written, written.status().message().c_str());
        QCOMPARE(int(written->size()), 7);
    }

    void markdownFlowsAcrossPagesAndLines() {
        const QString md = QString::fromStdString(readFile(m_out + "/book.md"));
        QVERIFY2(md.startsWith("# CHAPTER ONE\n"), qPrintable(md));
        QVERIFY(md.contains("said the hyphenated narrator."));
        QVERIFY(!md.contains("A TALE OF TESTS"));  // running head left out of the body
        QVERIFY(md.contains("each \\<word> \"twice\"."));
        QVERIFY(!md.contains("hyphen-"));
        const QString txt = QString::fromStdString(readFile(m_out + "/book.txt"));
        QVERIFY(txt.contains("Archivists read every page & check each <word> \"twice\"."));
    }

    // A running head and its folio read as two lines at the top of the next page: ALTO's
    // page-end hyphen looks past both to the word's rest, as the book joins it.
    void altoHyphenLooksPastAHeadAndItsFolio() {
        auto store = ProjectStore::open(m_dir.filePath("heads.quire").toStdString());
        QVERIFY(store);
        fillProject(**store, "heads-", {{"The story goes on and it is con-"},
                                        {"A TALE OF TESTS", "2", "", "tinued on this page."},
                                        {"A TALE OF TESTS", "3", "", "And it ends here."}});
        ExportOptions opt;
        opt.outDir = m_dir.filePath("heads-out").toStdString();
        opt.formats = *parseExportFormats("alto,md");
        QVERIFY(exportProject(**store, opt));
        const QString alto = QString::fromStdString(readFile(m_dir.filePath("heads-out/book.alto/0001.xml")));
        QVERIFY2(alto.contains("SUBS_TYPE=\"HypPart1\" SUBS_CONTENT=\"continued\""), qPrintable(alto.right(900)));
        const QString md = QString::fromStdString(readFile(m_dir.filePath("heads-out/book.md")));
        QVERIFY2(md.contains("it is continued on this page.") && !md.contains("TALE"), qPrintable(md));
    }

    void altoAndPageValidateAgainstTheirSchemas() {
        const QString shared = sharedDir();
        if (shared.isEmpty()) QSKIP("../shared/schemas not present");
        for (const auto& [dir, xsd] : {std::pair{"book.alto", "alto44.xsd"}, std::pair{"book.page", "page2019.xsd"}}) {
            const QStringList files = QDir(m_out + "/" + dir).entryList({"*.xml"});
            QCOMPARE(files.size(), 2);
            QStringList args{"--noout", "--nonet", "--schema", shared + "/schemas/" + xsd};
            for (const auto& f : files) args << m_out + "/" + dir + "/" + f;
            const auto r = runProgram("xmllint", args);
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        }
        const QString alto = QString::fromStdString(readFile(m_out + "/book.alto/0001.xml"));
        QVERIFY(alto.contains("<HYP CONTENT=\"-\"/>"));
        QVERIFY(alto.contains("CONTENT=\"hyphen\""));
        QVERIFY(alto.contains("SUBS_TYPE=\"HypPart1\" SUBS_CONTENT=\"hyphenated\""));
        QVERIFY(alto.contains("SUBS_TYPE=\"HypPart2\" SUBS_CONTENT=\"hyphenated\""));
        QVERIFY(alto.contains("<MeasurementUnit>pixel</MeasurementUnit>"));
        // The scan by name only: the folders it lay in on this machine do not travel with an export.
        QVERIFY2(alto.contains("<fileName>scan1.png</fileName>") && !alto.contains(m_dir.path()), qPrintable(alto.left(600)));
        const QString page = QString::fromStdString(readFile(m_out + "/book.page/0001.xml"));
        QVERIFY2(page.contains("imageFilename=\"scan1.png\"") && !page.contains(m_dir.path()), qPrintable(page.left(600)));
    }

    // Page markers in DOCX, Markdown and text, when asked: the DOCX's in runs of their own.
    void pageMarkersInTheFlowingFormats() {
        ExportOptions opt;
        opt.outDir = m_dir.filePath("marked").toStdString();
        opt.formats = *parseExportFormats("md,txt,docx");
        opt.pageMarkers = true;
        QVERIFY(exportProject(*m_store, opt));
        const QString txt = QString::fromStdString(readFile(m_dir.filePath("marked/book.txt")));
        QVERIFY2(txt.startsWith("[scan 1] CHAPTER ONE\n") && txt.contains("\n[p. 2] Archivists read every page"), qPrintable(txt));
        QVERIFY(QString::fromStdString(readFile(m_dir.filePath("marked/book.md"))).contains("\\[p. 2\\] Archivists"));
        const auto xml = runProgram("python3", {"-c", "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read('word/document.xml').decode())",
                                                m_dir.filePath("marked/book.docx")});
        QCOMPARE(xml.exitCode, 0);
        QVERIFY2(xml.out.contains("<w:r><w:rPr><w:color w:val=\"808080\"/></w:rPr><w:t xml:space=\"preserve\">[p. 2]</w:t></w:r>"
                                  "<w:r><w:t xml:space=\"preserve\"> Archivists read"),
                 qPrintable(xml.out));
    }

    // A range of the book's pages, and a range outside it refused.
    void exportsARangeOfPages() {
        ExportOptions opt;
        opt.outDir = m_dir.filePath("range").toStdString();
        opt.formats = *parseExportFormats("txt,alto");
        opt.firstPage = opt.lastPage = 1;
        opt.pageMarkers = true;
        QVERIFY(exportProject(*m_store, opt));
        QVERIFY(QString::fromStdString(readFile(m_dir.filePath("range/book.txt"))).startsWith("[scan 1] CHAPTER ONE"));
        opt.pageMarkers = false;
        opt.firstPage = opt.lastPage = 2;
        QVERIFY(exportProject(*m_store, opt));
        const QString txt = QString::fromStdString(readFile(m_dir.filePath("range/book.txt")));
        QVERIFY2(txt.contains("Archivists read every page") && !txt.contains("CHAPTER ONE"), qPrintable(txt));
        QCOMPARE(QDir(m_dir.filePath("range/book.alto")).entryList({"*.xml"}), QStringList{"0002.xml"});
        opt.firstPage = 2, opt.lastPage = 3;
        auto bad = exportProject(*m_store, opt);
        QVERIFY(!bad);
        QCOMPARE(bad.status().code(), ErrorCode::InvalidArgument);
        QVERIFY2(bad.status().message().find("it has 2 pages") != std::string::npos, bad.status().message().c_str());
    }

    void hocrIsWellFormed() {
        const auto r = runProgram("xmllint", {"--noout", "--nonet", m_out + "/book.hocr"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QString h = QString::fromStdString(readFile(m_out + "/book.hocr"));
        QCOMPARE(h.count("name=\"ocr-system\""), 1);
        QCOMPARE(h.count("name=\"ocr-capabilities\""), 1);
        QCOMPARE(h.count("class=\"ocr_page\""), 2);
        QVERIFY(h.contains("x_wconf 92"));
        QVERIFY(h.contains("&lt;word&gt;"));
    }

    void docxOpensInLibreOffice() {
        if (QStandardPaths::findExecutable("soffice").isEmpty()) QSKIP("LibreOffice is not installed");
        QTemporaryDir profile;
        const auto r = runProgram("soffice", {"-env:UserInstallation=file://" + profile.path(), "--headless",
                                              "--convert-to", "txt:Text (encoded):UTF8", "--outdir", m_out + "/lo",
                                              m_out + "/book.docx"},
                                  180000);
        QVERIFY2(r.exitCode == 0, qPrintable(r.err + r.out));
        const QString fromDocx = QString::fromStdString(readFile(m_out + "/lo/book.txt")).remove(QChar(0xFEFF));
        const QString txt = QString::fromStdString(readFile(m_out + "/book.txt"));
        QCOMPARE(normalized(fromDocx), normalized(txt));
    }

    void searchablePdfHasInvisibleWordsOverTheUntouchedScan() {
        const QString pdf = m_out + "/book.pdf";
        const auto text = runProgram("pdftotext", {pdf, "-"});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("worst of times, said the hyphen"), qPrintable(text.out));  // pdftotext joins hyphens itself
        QVERIFY(text.out.contains("Archivists read every page"));
        // Its document information: the project's name as title, Quire as producer, a date.
        const auto info = runProgram("pdfinfo", {pdf});
        QCOMPARE(info.exitCode, 0);
        QVERIFY2(info.out.contains(QRegularExpression("Title: +e\\n")) && info.out.contains(QRegularExpression("Producer: +Quire ")) &&
                     info.out.contains(QRegularExpression("CreationDate: +\\S")),
                 qPrintable(info.out));
        // Rendered at the scan's resolution, the page is the scan: the text layer draws nothing.
        const auto render = runProgram("pdftoppm", {"-r", "300", "-f", "1", "-l", "1", "-gray", "-png", pdf,
                                                    m_dir.filePath("render")});
        QCOMPARE(render.exitCode, 0);
        const QStringList pngs = QDir(m_dir.path()).entryList({"render*.png"});
        QCOMPARE(pngs.size(), 1);
        const cv::Mat rendered = cv::imread(m_dir.filePath(pngs[0]).toStdString(), cv::IMREAD_GRAYSCALE);
        const cv::Mat scan = cv::imread(m_dir.filePath("scan1.png").toStdString(), cv::IMREAD_GRAYSCALE);
        QCOMPARE(rendered.size(), scan.size());
        QVERIFY(cv::norm(rendered, scan, cv::NORM_L1) / double(scan.total()) < 0.5);
        // PNG data is passed through: the PDF is barely larger than the scans.
        const qint64 scans = QFileInfo(m_dir.filePath("scan1.png")).size() + QFileInfo(m_dir.filePath("scan2.png")).size();
        QVERIFY2(QFileInfo(pdf).size() < scans + 60 * 1024,
                 qPrintable(QString("%1 vs %2").arg(QFileInfo(pdf).size()).arg(scans)));
    }

    // PDF/A-2b on request: it passes tools/pdfa_check.py (the rules veraPDF checks that such a file
    // touches, the ICC profile read by littlecms); a page from a source PDF is stored as an image;
    // the text stays searchable. The plain export fails the same check.
    void searchablePdfAsPdfA2b() {
        auto store = ProjectStore::open(m_dir.filePath("pdfa.quire").toStdString());
        QVERIFY(store);
        fillProject(**store, "pdfa");
        DocumentRecord d{0, samplePdf().toStdString(), "pdf", "hs", 1, 0, 0};
        QVERIFY((*store)->addDocument(d, {{d.path, 0}}));
        PageOutcome o;
        o.text = makeLayout({"CHAPTER I", "The parish register of a small town"}, 1650, 2550);
        o.text.dpi = 300;
        o.region = {0, 0, 1650, 2550};
        QVERIFY((*store)->saveResult((*(*store)->pages())[2].id, {o}));
        ExportOptions opt;
        opt.outDir = m_dir.filePath("pdfa").toStdString();
        opt.formats = {ExportFormat::Pdf};
        opt.title = "A Tale & <Tests>";
        opt.author = "Q. Archivist";
        opt.language = "en-GB";
        opt.pdfA = true;
        auto written = exportProject(**store, opt);
        QVERIFY2(written, written.status().message().c_str());
        const QString pdf = m_dir.filePath("pdfa/book.pdf");
        const QString checker = sourceDir() + "/tools/pdfa_check.py";
        const auto check = runProgram("/usr/bin/python3", {checker, pdf});
        QVERIFY2(check.exitCode == 0 && check.out.isEmpty(), qPrintable(check.out + check.err));
        const auto plain = runProgram("/usr/bin/python3", {checker, m_out + "/book.pdf"});
        QVERIFY2(plain.exitCode == 1 && plain.out.contains("no /Metadata") && plain.out.contains("output intent"),
                 qPrintable(plain.out + plain.err));
        const auto info = runProgram("pdfinfo", {pdf});
        QVERIFY2(info.out.contains(QRegularExpression("Pages: +3\n")) &&
                     info.out.contains(QRegularExpression("Title: +A Tale & <Tests>\n")),
                 qPrintable(info.out));
        const auto fonts = runProgram("pdffonts", {pdf});
        // One font, embedded (emb yes), whole (sub no), with a Unicode map (uni yes).
        QVERIFY2(fonts.out.count("\n") == 3 && fonts.out.contains(QRegularExpression("GlyphLessFont +CID TrueType +Identity-H +yes +no +yes")),
                 qPrintable(fonts.out));
        const auto text = runProgram("pdftotext", {pdf, "-"});
        QVERIFY(text.out.contains("Archivists read every page") && text.out.contains("parish register"));
        // The source PDF's page became an image of the scan, not a copy of the page.
        const auto images = runProgram("pdfimages", {"-list", pdf});
        QCOMPARE(int(images.out.count(QRegularExpression("\\n +[123] +\\d+ image"))), 3);
    }

    // Specks the engine read as punctuation (low confidence, no letter or digit) leave the body of
    // every export; a confidently read spaced dash stays, and a corrected page stays as typed.
    void specksLeaveTheBody() {
        auto store = ProjectStore::open(m_dir.filePath("specks.quire").toStdString());
        QVERIFY(store);
        for (int i = 0; i < 2; ++i) {
            DocumentRecord d{0, "/scans/specks" + std::to_string(i) + ".png", "image", "s" + std::to_string(i), 1, 0, 0};
            QVERIFY((*store)->addDocument(d, {{d.path, 0}}));
        }
        auto specks = [](const std::vector<std::string>& lines) {
            PageText t = makeLayout(lines, 1700, 2200);
            for (auto& l : t.lines)
                for (auto& w : l.words)
                    if (w.text == "__" || w.text == "-" || w.text == "." || w.text == ",") w.confidence = 31;
            return t;
        };
        const auto pages = *(*store)->pages();
        PageOutcome o;
        o.region = {0, 0, 1700, 2200};
        o.text = specks({"A __ single lamp, and the - temptation", "of the incident. . It was , over", "-", "a word — well read"});
        o.text.lines[3].words[2].confidence = 92;  // the dash, read with confidence
        QVERIFY((*store)->saveResult(pages[0].id, {o}));
        o.text = specks({"Typed - by hand"});
        QVERIFY((*store)->saveResult(pages[1].id, {o}));
        QVERIFY((*store)->addCorrection(pages[1].id, "Typed - by hand ."));
        ExportOptions opt;
        opt.outDir = m_dir.filePath("specks").toStdString();
        opt.formats = {ExportFormat::Text, ExportFormat::Hocr};
        auto written = exportProject(**store, opt);
        QVERIFY2(written, written.status().message().c_str());
        const QString txt = QString::fromStdString(readFile(m_dir.filePath("specks/book.txt")));
        QVERIFY2(txt.contains("A single lamp, and the temptation of the incident. It was over a word — well read"), qPrintable(txt));
        QVERIFY2(txt.contains("Typed - by hand ."), qPrintable(txt));
        QVERIFY(!txt.contains("__"));
        const QString hocr = QString::fromStdString(readFile(m_dir.filePath("specks/book.hocr")));
        QVERIFY2(hocr.contains(">single<") && !hocr.contains(">__<"), qPrintable(hocr));
        // The project keeps what the engine read: the specks leave only the exports.
        QVERIFY((*store)->engineText(pages[0].id)->find("__") != std::string::npos);
    }

    void correctionsWinInEveryExport() {
        const int64_t id = (*m_store->pages())[1].id;
        QVERIFY(m_store->addCorrection(id, "2 A TALE OF TESTS\n\nArchivists read every leaf & check\neach <word> \"twice\"."));
        ExportOptions opt;
        opt.outDir = (m_out + "2").toStdString();
        opt.formats = {ExportFormat::Markdown, ExportFormat::Pdf, ExportFormat::Alto};
        QVERIFY(exportProject(*m_store, opt));
        QVERIFY(QString::fromStdString(readFile(m_out + "2/book.md")).contains("every leaf & check"));
        QVERIFY(runProgram("pdftotext", {m_out + "2/book.pdf", "-"}).out.contains("every leaf"));
        QVERIFY(QString::fromStdString(readFile(m_out + "2/book.alto/0002.xml")).contains("CONTENT=\"leaf\""));
    }

    // Exporting reads the project and writes nothing into it: every row is the same after.
    void exportingChangesNothingInTheProject() {
        const QString path = m_dir.filePath("untouched.quire");
        auto store = ProjectStore::open(path.toStdString());
        QVERIFY(store);
        fillProject(**store, "untouched-");
        const QString before = runProgram("sqlite3", {path, ".dump"}).out;
        QVERIFY(before.contains("CREATE TABLE"));
        ExportOptions opt;
        opt.outDir = m_dir.filePath("untouched-out").toStdString();
        opt.formats = *parseExportFormats("all");
        QVERIFY(exportProject(**store, opt));
        QCOMPARE(runProgram("sqlite3", {path, ".dump"}).out, before);
    }

    void unwritableOutputIsAClearError() {
        writeFile(m_dir.filePath("afile"), "x");
        ExportOptions opt;
        opt.outDir = m_dir.filePath("afile/sub").toStdString();
        opt.formats = {ExportFormat::Markdown};
        auto r = exportProject(*m_store, opt);
        QVERIFY(!r);
        QCOMPARE(r.status().code(), ErrorCode::Io);
        QVERIFY(QString::fromStdString(r.status().message()).contains("afile/sub"));
    }

    void hostileTextStaysValidXml() {
        BookPageInput in;
        in.page.sourceFile = "x.png";
        in.layout = makeLayout({std::string("bad \x01\x02 ctrl \xff\xfe bytes \xe2\x80\xae rtl"), "ok"}, 800, 600);
        const std::string alto = toAlto(in, 1, nullptr);
        writeFile(m_dir.filePath("hostile.xml"), alto);
        QCOMPARE(runProgram("xmllint", {"--noout", m_dir.filePath("hostile.xml")}).exitCode, 0);
    }
};

QTEST_GUILESS_MAIN(TestExporters)
#include "tst_exporters.moc"
