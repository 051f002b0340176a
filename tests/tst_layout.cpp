// Reading order and orientation on generated layouts (tests/make_layout_pages.py): Quire's
// Tesseract path reads narrow justified columns and mixed layouts at least as well as the
// `tesseract` command with the same model, pieces of a line cut apart by the layout analysis are
// joined, and pages scanned on their side or upside down are read upright.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "quire/recognizers/line_stitch.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

namespace {

// Whitespace collapsed, as the accuracy tool (tools/eval/eval.py) compares texts.
QString collapsed(const QString& s) { return s.simplified(); }

Line line(int block, Box box, std::vector<std::string> words) {
    Line l;
    l.block = block;
    l.box = box;
    for (auto& w : words) l.words.push_back(Word{std::move(w), box, 90});
    return l;
}

}  // namespace

class TstLayout : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_pages;

    // The pages' texts as Quire's Tesseract path reads them, by file name.
    QMap<QString, QString> quireTexts(const QStringList& files, const QString& project, QString* log,
                                      const QString& engine = "tesseract") {
        auto r = runCli(QStringList{"transcribe"} + files +
                        QStringList{"--project", project, "--threads", "2", "--json", "--engine", engine});
        if (log) *log = r.out;
        if (r.exitCode != 0) return {};
        r = runCli({"status", "--project", project, "--json", "--pages"});
        QMap<QString, QString> out;
        for (const auto v : QJsonDocument::fromJson(r.out.toUtf8()).object().value("pageList").toArray())
            out[QFileInfo(v.toObject().value("file").toString()).completeBaseName()] = v.toObject().value("text").toString();
        return out;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_pages = m_dir.filePath("pages");
        const auto gen = runProgram("/usr/bin/python3", {sourceDir() + "/tests/make_layout_pages.py", m_pages});
        QVERIFY2(gen.exitCode == 0, qPrintable(gen.err));
    }

    // The end of a justified line read as a line of another block joins its line, where it began;
    // two columns' lines on the same baseline stay apart.
    void piecesOfALineAreJoined() {
        PageText page;
        page.lines.push_back(line(0, {200, 100, 620, 40}, {"the", "first", "line", "of", "the", "column"}));
        page.lines.push_back(line(0, {200, 165, 200, 40}, {"and", "with"}));
        page.lines.push_back(line(0, {200, 230, 620, 40}, {"accord.", "And", "when"}));
        page.lines.push_back(line(1, {470, 163, 350, 42}, {"Israel,", "with", "one"}));
        page.lines.push_back(line(1, {200, 295, 620, 40}, {"tants", "of", "Gibeon"}));
        QCOMPARE(stitchSplitLines(page), 1);
        QCOMPARE(int(page.lines.size()), 4);
        QCOMPARE(page.lines[1].text(), std::string("and with Israel, with one"));
        QCOMPARE(page.lines[1].box.right(), 820);
        QCOMPARE(page.lines[2].text(), std::string("accord. And when"));

        PageText columns;  // two columns with a narrow gutter: no line is joined across it
        for (int i = 0; i < 3; ++i) {
            columns.lines.push_back(line(0, {200, 100 + 60 * i, 560, 40}, {"left"}));
            columns.lines.push_back(line(1, {840, 100 + 60 * i, 560, 40}, {"right"}));
        }
        columns.lines.push_back(line(2, {840, 280, 200, 40}, {"short", "end"}));
        columns.lines.push_back(line(3, {200, 280, 300, 40}, {"paragraph", "end"}));
        QCOMPARE(stitchSplitLines(columns), 0);
    }

    // Each generated page read by Quire has at most a few characters more wrong than the
    // `tesseract` command's reading (--psm 3, the same eng model), fewer over all the pages, and
    // under 0.33 % (unjoined pieces of lines cost 0.7 % on one page).
    void columnsAndMixedLayoutsReadAsWellAsTheTesseractCommand() {
        QStringList files;
        for (const auto& f : QDir(m_pages).entryList({"*.png"}, QDir::Files, QDir::Name)) files << m_pages + "/" + f;
        QCOMPARE(files.size(), 4);
        QString log;
        const auto quire = quireTexts(files, m_dir.filePath("layout.quire"), &log);
        QVERIFY2(quire.size() == files.size(), qPrintable(log));
        int quireErrors = 0, commandErrors = 0;
        QStringList report;
        for (const auto& file : files) {
            const QString name = QFileInfo(file).completeBaseName();
            const QString truth = collapsed(QString::fromStdString(readFile(m_pages + "/" + name + ".gt.txt")));
            const auto cli = runProgram("tesseract", {file, "-", "-l", "eng", "--psm", "3"});
            QVERIFY2(cli.exitCode == 0, qPrintable(cli.err));
            const int q = editDistance(collapsed(quire.value(name)), truth);
            const int c = editDistance(collapsed(cli.out), truth);
            report << QString("%1: quire %2, tesseract %3 of %4").arg(name).arg(q).arg(c).arg(truth.size());
            QVERIFY2(q <= c + std::max(3, int(truth.size() / 500)), qPrintable(report.join("; ")));
            // Clean pages are read in order: a line's end read after its column would cost more.
            QVERIFY2(q <= truth.size() / 300, qPrintable(report.join("; ")));
            quireErrors += q, commandErrors += c;
        }
        QVERIFY2(quireErrors <= commandErrors, qPrintable(report.join("; ")));
        qInfo("%s", qPrintable(report.join("; ")));
    }

    // Pages scanned on their side or upside down are turned upright (the log says so) and read; an
    // upright page is left as it is.
    void turnedPagesAreReadUpright_data() {
        QTest::addColumn<QString>("engine");
        QTest::newRow("tesseract") << "tesseract";
#if !defined(__SANITIZE_ADDRESS__)
        // Under the sanitizers' Debug build PP-OCR takes over a minute a page (four pages passed the
        // test's time); these two rows run in the plain build.
        QTest::newRow("ppocr") << "ppocr";
        QTest::newRow("reader") << "reader";  // judged from its front-end's reading, before the decoder
#endif
    }
    void turnedPagesAreReadUpright() {
        QFETCH(QString, engine);
        struct Case { const char* page; int turn; };  // turn: cv::RotateFlags applied to the scan
        const Case cases[] = {{"columns_liberation", cv::ROTATE_90_COUNTERCLOCKWISE},
                              {"mixed_liberation", cv::ROTATE_180},
                              {"single_dejavu", cv::ROTATE_90_CLOCKWISE},
                              {"columns_dejavu", -1}};
        QStringList files;
        for (const auto& c : cases) {
            cv::Mat scan = cv::imread((m_pages + "/" + c.page + ".png").toStdString(), cv::IMREAD_GRAYSCALE);
            QVERIFY(!scan.empty());
            if (c.turn >= 0) cv::rotate(scan, scan, c.turn);
            files << m_dir.filePath(QString("turned_%1.png").arg(c.page));
            QVERIFY(cv::imwrite(files.back().toStdString(), scan));
        }
        QString log;
        const auto texts = quireTexts(files, m_dir.filePath("turned_" + engine + ".quire"), &log, engine);
        QVERIFY2(texts.size() == files.size(), qPrintable(log));
        for (const auto& c : cases) {
            const QString name = QString("turned_%1").arg(c.page);
            const QString truth = collapsed(QString::fromStdString(readFile(m_pages + "/" + c.page + ".gt.txt")));
            const int errors = editDistance(collapsed(texts.value(name)), truth);
            QVERIFY2(errors < truth.size() / 50, qPrintable(QString("%1: %2 errors of %3").arg(name).arg(errors).arg(truth.size())));
            const bool turnedLogged = log.contains(QRegularExpression(name + "\\.png page 1: turned (90|180|270)°"));
            QVERIFY2(turnedLogged == (c.turn >= 0), qPrintable(log));
        }
        QVERIFY2(log.contains(QRegularExpression("turned_mixed_liberation\\.png page 1: turned 180° clockwise")), qPrintable(log));
        QVERIFY2(log.contains(QRegularExpression("turned_columns_liberation\\.png page 1: turned 90° clockwise")), qPrintable(log));
        QVERIFY2(log.contains(QRegularExpression("turned_single_dejavu\\.png page 1: turned 270° clockwise")), qPrintable(log));
        // Each engine reads a page first: the upright page, read level and sure, skips the
        // orientation check; each turned one (upside down: unsure; on its side: tall) meets it.
        QVERIFY2(log.contains("\"orientationChecks\":3"), qPrintable(log));
    }

    // A page in Fraktur type that Tesseract's `eng` reads well would skip the script check if read
    // first; the book's first page always meets it, so the warning comes at the volume's start.
    void aFrakturBookReadInEnglishIsNamedAtItsStart() {
        const QString dir = m_dir.filePath("fraktur");
        const auto gen = runProgram("/usr/bin/python3", {sourceDir() + "/tests/make_layout_pages.py", dir, "--fraktur"});
        QVERIFY2(gen.exitCode == 0, qPrintable(gen.err));
        const QStringList files{dir + "/fraktur_mainzer.png", m_pages + "/columns_dejavu.png"};
        auto r = runCli(QStringList{"transcribe"} + files +
                        QStringList{"--project", m_dir.filePath("fraktur.quire"), "--lang", "eng", "--threads", "1", "--json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains(QRegularExpression("fraktur_mainzer\\.png page 1: the type looks like Fraktur")), qPrintable(r.out));
        QVERIFY2(r.out.contains("\"orientationChecks\":1"), qPrintable(r.out));  // the English page read first
    }
};

QTEST_GUILESS_MAIN(TstLayout)
#include "tst_layout.moc"
