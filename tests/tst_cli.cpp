// quire-cli end to end: a real transcription and export, and every kind of bad input answered with
// a message naming the file, a documented exit code, and the project left intact.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QThread>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <unistd.h>

#include <map>

#include "test_util.h"

using namespace quire::test;

namespace {

uint32_t crc32(const std::string& data) {
    uint32_t table[256];
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

std::string be32(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

std::string chunk(const std::string& type, const std::string& data) {
    return be32(uint32_t(data.size())) + type + data + be32(crc32(type + data));
}

// A valid 30000 x 30000 1-bit PNG (all white), about 110 KB on disk.
std::string hugePng() {
    const int side = 30000, rowBytes = side / 8 + 1;
    QByteArray raw(qsizetype(rowBytes) * side, '\xff');
    for (int y = 0; y < side; ++y) raw[qsizetype(y) * rowBytes] = 0;  // filter byte
    const QByteArray z = qCompress(raw, 9).mid(4);  // zlib stream without Qt's length prefix
    std::string png("\x89PNG\r\n\x1a\n", 8);
    png += chunk("IHDR", be32(side) + be32(side) + std::string("\x01\x00\x00\x00\x00", 5));
    png += chunk("IDAT", z.toStdString());
    png += chunk("IEND", "");
    return png;
}

std::string zeroPagePdf() {
    std::string body = "%PDF-1.4\n";
    std::vector<size_t> offs;
    offs.push_back(body.size());
    body += "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n";
    offs.push_back(body.size());
    body += "2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n";
    const size_t xref = body.size();
    body += "xref\n0 3\n0000000000 65535 f \n";
    for (size_t o : offs) {
        char line[32];
        std::snprintf(line, sizeof line, "%010zu 00000 n \n", o);
        body += line;
    }
    body += "trailer << /Size 3 /Root 1 0 R >>\nstartxref\n" + std::to_string(xref) + "\n%%EOF\n";
    return body;
}

}  // namespace

class TestCli : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_project, m_good;
    QByteArray m_statusBefore;

    QJsonObject status(const QString& project) {
        const auto r = runCli({"status", "--project", project, "--json", "--pages"});
        return QJsonDocument::fromJson(r.out.toUtf8()).object();
    }
    // The project answers, is sound, and holds exactly what it held before.
    void verifyIntact() {
        const QJsonObject s = status(m_project);
        QCOMPARE(s.value("integrity").toString(), QString("ok"));
        QCOMPARE(QJsonDocument(s).toJson(), m_statusBefore);
    }

private slots:
    void initTestCase() {
        m_project = m_dir.filePath("base.quire");
        m_good = m_dir.filePath("good page.png");
        QVERIFY(cv::imwrite(m_good.toStdString(),
                            textPage({"Quire keeps every page safe.", "Nothing typed is ever lost."})));
        const auto r = runCli({"transcribe", m_good, "--project", m_project, "--threads", "1"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QJsonObject s = status(m_project);
        QCOMPARE(s.value("done").toInt(), 1);
        QVERIFY(s.value("pageList").toArray()[0].toObject().value("text").toString().contains("every page safe"));
        m_statusBefore = QJsonDocument(s).toJson();
    }

    // bench decode on the shipped reader (its weights, config and token ids) fed a real page as
    // its front-end reads it, in the three attention modes: each runs, attends real tokens, and
    // SR-SWA attends no more than full attention; --volume without --model is refused.
    void benchDecodeRunsTheShippedReaderOnRealPages() {
        const QString model = sourceDir() + "/resources/models/reader";
        std::map<QString, int> attended;
        for (const char* mode : {"srswa", "rswa", "full"}) {
            const auto r = runCli({"bench", "decode", "--model", model, "--volume", m_good, "--pages", "11", "--mode", mode,
                                   "--tokens-per-page", "4", "--json"});
            QVERIFY2(r.exitCode == 0, qPrintable(r.err));
            QVERIFY2(r.err.contains("1 pages read by the front-end"), qPrintable(r.err));
            const QJsonObject o = QJsonDocument::fromJson(r.out.trimmed().toUtf8()).object();
            QCOMPARE(o.value("pagesDone").toInt(), 11);
            QVERIFY(o.value("parameters").toInteger() > 2'000'000 && o.value("parameters").toInteger() < 5'000'000);
            const QJsonArray cps = o.value("checkpoints").toArray();
            QCOMPARE(cps.size(), 1);
            attended[mode] = cps.at(0).toObject().value("attendedTokens").toInt();
            QVERIFY(attended[mode] > 0);
        }
        QVERIFY2(attended["srswa"] < attended["full"], qPrintable(QString("%1 %2").arg(attended["srswa"]).arg(attended["full"])));
        const auto r = runCli({"bench", "decode", "--volume", m_good, "--pages", "2"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--volume goes with --model"), qPrintable(r.err));
    }

    void transcribesAndExportsTheSampleVolume() {
        const QString project = m_dir.filePath("sample.quire");
        const QString out = m_dir.filePath("sample-out");
        const auto r = runCli({"transcribe", samplePdf(), "--project", project, "--export", "md,docx,pdf", "--out", out,
                               "--json"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY(r.out.contains("\"event\":\"summary\""));
        // The summary names the matrix kernels the run used: OpenBLAS's choice, or the one the
        // environment forces (they set the recognizer's speed; benchmarks record them).
        for (const QString& line : r.out.split('\n'))
            if (line.contains("\"event\":\"summary\"")) {
                const QJsonObject summary = QJsonDocument::fromJson(line.toUtf8()).object();
                const QString kernels = summary.value("matrixKernels").toString();
                QVERIFY(!kernels.isEmpty());
                if (const QString forced = qEnvironmentVariable("OPENBLAS_CORETYPE"); !forced.isEmpty())
                    QCOMPARE(kernels.toLower(), forced.toLower());
                // ... and the front-end's own product where the CPU has AVX-512.
                const QString product = summary.value("productKernel").toString();
                QVERIFY2(product == "avx512" || product == "openblas", qPrintable(product));
            }
        const QString md = QString::fromStdString(readFile(out + "/book.md"));
        QVERIFY(md.startsWith("# CHAPTER I"));
        QVERIFY(!md.contains("NOTES ON THE KEEPING OF RECORDS"));  // running heads are not body text
        // The word hyphenated across the page 4/5 break is whole in the export.
        QVERIFY2(md.contains("A single leaking pipe") || md.contains("single leaking"), qPrintable(md));
        QVERIFY(QFileInfo(out + "/book.docx").size() > 2000);
        QVERIFY(QFileInfo(out + "/book.pdf").size() < QFileInfo(samplePdf()).size() * 1.2);
        // A second run finds nothing to do and redoes no page.
        const auto again = runCli({"transcribe", samplePdf(), "--project", project, "--json"});
        QCOMPARE(again.exitCode, 0);
        QVERIFY(!again.out.contains("\"event\":\"page\""));
    }

    void pdfTextLayerIsReportedAndCanBeKept() {
        // A searchable PDF made by Quire carries a text layer: a new run says so.
        const QString out = m_dir.filePath("layer-out");
        QCOMPARE(runCli({"export", "--project", m_project, "--format", "pdf", "--out", out}).exitCode, 0);
        const QString pdf = out + "/book.pdf";
        auto r = runCli({"transcribe", pdf, "--project", m_dir.filePath("layer1.quire")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.contains("already carry a text layer") && r.err.contains("recognised the scans anyway"),
                 qPrintable(r.err));
        QJsonObject page = status(m_dir.filePath("layer1.quire")).value("pageList").toArray()[0].toObject();
        QVERIFY(page.value("hasTextLayer").toBool());
        // Kept on request: the page's text is the layer's, no recognition needed.
        r = runCli({"transcribe", pdf, "--project", m_dir.filePath("layer2.quire"), "--pdf-text", "keep"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.err.contains("kept their text"));
        page = status(m_dir.filePath("layer2.quire")).value("pageList").toArray()[0].toObject();
        QVERIFY2(page.value("text").toString().contains("every page safe"), qPrintable(page.value("text").toString()));
    }

    void changedSourceIsQueuedAgainKeepingCorrections() {
        const QString scan = m_dir.filePath("changing.png");
        const QString project = m_dir.filePath("changing.quire");
        QVERIFY(cv::imwrite(scan.toStdString(), textPage({"The first version of this page."})));
        QCOMPARE(runCli({"transcribe", scan, "--project", project}).exitCode, 0);
        QCOMPARE(runCli({"correct", "--project", project, "--page", "1", "--text", "Typed by the archivist."}).exitCode, 0);
        QVERIFY(cv::imwrite(scan.toStdString(), textPage({"A rescanned, second version."})));
        const auto r = runCli({"transcribe", scan, "--project", project, "--json"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("changed on disk") && r.out.contains("\"event\":\"page\""), qPrintable(r.out));
        const QJsonObject page = status(project).value("pageList").toArray()[0].toObject();
        QCOMPARE(page.value("text").toString(), QString("Typed by the archivist."));
        QVERIFY(page.value("corrected").toBool());
    }

    void secondProcessIsRefusedWhileOneWrites() {
        const QString project = m_dir.filePath("busy.quire");
        QProcess first;
        first.start(QStringLiteral(QUIRE_CLI_PATH), {"transcribe", samplePdf(), "--project", project, "--threads", "1"});
        QVERIFY(first.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(project + ".lock") && QFileInfo(project).size() > 0, 20000);
        QThread::msleep(300);
        const auto second = runCli({"transcribe", m_good, "--project", project});
        QCOMPARE(second.exitCode, 2);
        QVERIFY2(second.err.contains("open in another Quire process") && second.err.contains("pid"), qPrintable(second.err));
        // Reading is always allowed.
        QCOMPARE(runCli({"status", "--project", project}).exitCode, 0);
        first.kill();
        first.waitForFinished();
        // The lock died with its holder.
        QCOMPARE(runCli({"status", "--project", project, "--json"}).exitCode, 0);
        const auto resumed = runCli({"export", "--project", project, "--format", "txt", "--out", m_dir.filePath("busy-out")});
        QCOMPARE(resumed.exitCode, 0);
    }

    void badInput_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("words");
        const std::string sample = readFile(samplePdf());
        QTest::newRow("zero bytes") << "zero.png" << QByteArray() << 2 << "empty (0 bytes)";
        QTest::newRow("truncated pdf") << "truncated.pdf" << QByteArray::fromStdString(sample.substr(0, 1500)) << 2
                                       << "";
        QTest::newRow("zero-page pdf") << "nopages.pdf" << QByteArray::fromStdString(zeroPagePdf()) << 2
                                       << "no pages";
        QTest::newRow("text named png") << "letter.png" << QByteArray("Dear archivist,\n") << 2
                                        << "not a PDF, TIFF, PNG, JPEG or BMP";
        QTest::newRow("huge image") << "huge.png" << QByteArray::fromStdString(hugePng()) << 2 << "30000x30000";
    }
    void badInput() {
        QFETCH(QString, file);
        QFETCH(QByteArray, content);
        QFETCH(int, exitCode);
        QFETCH(QString, words);
        const QString path = m_dir.filePath(file);
        writeFile(path, content.toStdString());
        const auto r = runCli({"transcribe", path, "--project", m_project});
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(r.err.contains(file), qPrintable(r.err));
        QVERIFY2(r.err.contains(words), qPrintable(r.err));
        verifyIntact();
    }

    void encryptedPdf() {
        if (QStandardPaths::findExecutable("qpdf").isEmpty()) QSKIP("qpdf tool not installed");
        const QString enc = m_dir.filePath("locked.pdf");
        const auto q = runProgram("qpdf", {"--encrypt", "secret", "owner", "256", "--", samplePdf(), enc});
        QCOMPARE(q.exitCode, 0);
        const auto r = runCli({"transcribe", enc, "--project", m_project});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("locked.pdf") && r.err.contains("needs a password"), qPrintable(r.err));
        verifyIntact();
    }

    void truncatedTiffIsAFailedPageNamingTheFile() {
        const QString tif = m_dir.filePath("cut.tif");
        QVERIFY(cv::imwrite(tif.toStdString(), textPage({"a page that will be cut short"})));
        writeFile(tif, readFile(tif).substr(0, 3000));
        const QString project = m_dir.filePath("tiff.quire");
        const auto r = runCli({"transcribe", tif, "--project", project});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("cut.tif"), qPrintable(r.err));
        if (!QFileInfo::exists(project)) return;  // refused before a page was added: no empty project left
        const QJsonObject s = status(project);
        QCOMPARE(s.value("integrity").toString(), QString("ok"));
        if (s.value("pages").toInt() > 0) {
            QCOMPARE(s.value("failed").toInt(), 1);
            QVERIFY(s.value("pageList").toArray()[0].toObject().value("failure").toString().contains("cut.tif"));
        }
    }

    void missingPath() {
        const auto r = runCli({"transcribe", m_dir.filePath("no-such-scan.tif"), "--project", m_project});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(r.err.contains("no-such-scan.tif") && r.err.contains("no such file"));
        verifyIntact();
        // A new project given a missing input, or a bad option, is not left behind empty; a
        // finished run leaves no lock file.
        const QString fresh = m_dir.filePath("fresh.quire");
        QCOMPARE(runCli({"transcribe", m_dir.filePath("no-such-scan.tif"), "--project", fresh}).exitCode, 2);
        QCOMPARE(runCli({"transcribe", samplePdf(), "--project", fresh, "--dpi", "10"}).exitCode, 2);
        QVERIFY(QDir(m_dir.path()).entryList({"fresh.quire*"}).isEmpty());
        QVERIFY(!QFileInfo::exists(m_project + ".lock"));
    }

    void unreadableFile() {
        const QString secret = m_dir.filePath("secret.png");
        QVERIFY(cv::imwrite(secret.toStdString(), textPage({"private"})));
        QVERIFY(QFile::setPermissions(secret, QFileDevice::WriteOwner));
        CliResult r;
        if (geteuid() == 0) {
            // Root reads everything; drop to nobody for this one, on a copy of the project it can write.
            if (QStandardPaths::findExecutable("setpriv").isEmpty()) QSKIP("setpriv not available to drop root");
            QTemporaryDir open;
            QFile::setPermissions(open.path(), QFileDevice::Permissions(0x7777));
            QFile::setPermissions(m_dir.path(), QFileDevice::Permissions(0x7755));
            const QString copy = open.filePath("copy.quire");
            QVERIFY(QFile::copy(m_project, copy));
            QFile::setPermissions(copy, QFileDevice::Permissions(0x6666));
            r = runProgram("setpriv", {"--reuid=65534", "--regid=65534", "--clear-groups", QStringLiteral(QUIRE_CLI_PATH),
                                       "transcribe", secret, "--project", copy});
        } else {
            r = runCli({"transcribe", secret, "--project", m_project});
        }
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("secret.png") && r.err.contains("ermission denied"), qPrintable(r.err));
        verifyIntact();
    }

    void unwritableOutputFolder() {
        writeFile(m_dir.filePath("plainfile"), "x");
        const QString out = m_dir.filePath("plainfile/exports");
        auto r = runCli({"export", "--project", m_project, "--format", "md", "--out", out});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("plainfile/exports"), qPrintable(r.err));
        r = runCli({"transcribe", m_good, "--project", m_project, "--export", "md", "--out", out});
        QCOMPARE(r.exitCode, 2);
        verifyIntact();
    }

    void projectThatIsNotSqlite() {
        const QString bogus = m_dir.filePath("bogus.quire");
        writeFile(bogus, "this is a shopping list, not a project");
        const auto r = runCli({"transcribe", m_good, "--project", bogus});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("bogus.quire") && r.err.contains("not a Quire project"), qPrintable(r.err));
        QCOMPARE(readFile(bogus), std::string("this is a shopping list, not a project"));
    }

    void projectFromANewerVersion() {
        const QString newer = m_dir.filePath("newer.quire");
        QVERIFY(QFile::copy(m_project, newer));
        QCOMPARE(runProgram("sqlite3", {newer, "PRAGMA user_version=42"}).exitCode, 0);
        const std::string before = readFile(newer);
        const auto r = runCli({"transcribe", m_good, "--project", newer});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("newer version of Quire"), qPrintable(r.err));
        QCOMPARE(readFile(newer), before);
    }

    // The engine reads no environment; quire-cli maps the QUIRE_* variables onto its options: the
    // model folders (a wrong one is named, not bypassed) and the measurement settings (a malformed
    // one is refused naming the variable, before any file is made).
    void environmentVariablesReachTheEngine() {
        const QString project = m_dir.filePath("env.quire");
        qputenv("QUIRE_READER_MODEL", "/nonexistent/reader-model");
        auto r = runCli({"transcribe", m_good, "--project", project, "--engine", "reader"});
        qunsetenv("QUIRE_READER_MODEL");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("/nonexistent/reader-model"), qPrintable(r.err));
        qputenv("QUIRE_PPOCR_DIR", "/nonexistent/ppocr-models");
        r = runCli({"transcribe", m_good, "--project", project, "--engine", "ppocr"});
        qunsetenv("QUIRE_PPOCR_DIR");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("/nonexistent/ppocr-models"), qPrintable(r.err));
        const QString other = m_dir.filePath("env-window.quire");
        qputenv("QUIRE_READER_WINDOW", "many");
        r = runCli({"transcribe", m_good, "--project", other, "--engine", "reader"});
        qunsetenv("QUIRE_READER_WINDOW");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("QUIRE_READER_WINDOW"), qPrintable(r.err));
        QVERIFY(!QFileInfo::exists(other));
        qputenv("QUIRE_PPOCR_REC_BATCH", "0");
        r = runCli({"transcribe", m_good, "--project", other, "--engine", "ppocr"});
        qunsetenv("QUIRE_PPOCR_REC_BATCH");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("QUIRE_PPOCR_REC_BATCH") && r.err.contains("1-64"), qPrintable(r.err));
        QVERIFY(!QFileInfo::exists(other));
    }

    void badUsage_data() {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("no command") << QStringList{};
        QTest::newRow("unknown command") << QStringList{"frobnicate"};
        QTest::newRow("unknown option") << QStringList{"status", "--project", "x.quire", "--colour"};
        QTest::newRow("no project") << QStringList{"transcribe", "a.png"};
        QTest::newRow("missing language") << QStringList{"transcribe", "--project", "PROJECT", "--lang", "klingon"};
        QTest::newRow("bad format") << QStringList{"export", "--project", "PROJECT", "--format", "rtf", "--out", "x"};
    }
    void badUsage() {
        QFETCH(QStringList, args);
        args.replaceInStrings("PROJECT", m_project);
        const auto r = runCli(args);
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!r.err.isEmpty());
        verifyIntact();
    }

    void statusAndCorrect() {
        auto r = runCli({"correct", "--project", m_project, "--page", "1", "--text", "Quire keeps every page safe."});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject s = status(m_project);
        QCOMPARE(s.value("corrected").toInt(), 1);
        QCOMPARE(s.value("pageList").toArray()[0].toObject().value("text").toString(),
                 QString("Quire keeps every page safe."));
        m_statusBefore = QJsonDocument(s).toJson();
        // Without --json, --pages lists the pages one a line; --help names a command's options.
        r = runCli({"status", "--project", m_project, "--pages"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith("page 1: done, corrected, confidence ") && r.out.contains("good page.png p.1"), qPrintable(r.out));
        r = runCli({"transcribe", "--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("quire-cli transcribe") && r.out.contains("--gpu-memory") && !r.out.contains("quire-cli export"),
                 qPrintable(r.out));
    }

    // find lists hits across the book; --replace stores each changed page as a correction.
    void findAndReplace() {
        auto r = runCli({"find", "--project", m_project, "--text", "EVERY page", "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(o.value("hits").toArray().size(), 1);
        QCOMPARE(o.value("hits").toArray()[0].toObject().value("page").toInt(), 1);
        QCOMPARE(o.value("hits").toArray()[0].toObject().value("start").toInt(), 12);
        r = runCli({"find", "--project", m_project, "--text", "EVERY page", "--match-case"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("0 hits on 0 pages"), qPrintable(r.out));
        r = runCli({"find", "--project", m_project, "--regex", "(s)afe", "--replace", "\\1ound"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("p. 1, line 1: Quire keeps every page safe.") &&
                     r.out.contains("replaced 1 on 1 page"),
                 qPrintable(r.out + r.err));
        QCOMPARE(status(m_project).value("pageList").toArray()[0].toObject().value("text").toString(),
                 QString("Quire keeps every page sound."));
        r = runCli({"find", "--project", m_project, "--regex", "(unclosed"});
        QVERIFY2(r.exitCode == 2 && r.err.contains("is not valid"), qPrintable(r.err));
        QCOMPARE(runCli({"find", "--project", m_project}).exitCode, 2);
        QCOMPARE(status(m_project).value("integrity").toString(), QString("ok"));
    }

    // Title, author and language go into the DOCX's core properties and the PDF's information.
    void propertiesReachTheExports() {
        auto r = runCli({"properties", "--project", m_project, "--title", "A Tale of Two Tests", "--author", "Q. Archivist"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("title: A Tale of Two Tests") && r.out.contains("language: (not set"),
                 qPrintable(r.out + r.err));
        const QString out = m_dir.filePath("props");
        r = runCli({"export", "--project", m_project, "--format", "docx,pdf", "--out", out});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const auto core = runProgram("python3", {"-c", "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read('docProps/core.xml').decode())",
                                                 out + "/book.docx"});
        QVERIFY2(core.out.contains("<dc:title>A Tale of Two Tests</dc:title><dc:creator>Q. Archivist</dc:creator>"
                                   "<dc:language>en</dc:language>"),
                 qPrintable(core.out));
        const auto info = runProgram("pdfinfo", {out + "/book.pdf"});
        QVERIFY2(info.out.contains(QRegularExpression("Title: +A Tale of Two Tests\n")) &&
                     info.out.contains(QRegularExpression("Author: +Q. Archivist\n")),
                 qPrintable(info.out));
        r = runCli({"properties", "--project", m_project, "--json"});
        QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object().value("author").toString(), QString("Q. Archivist"));
    }

    // history lists a page's versions, shows what changed, and reverts without losing one.
    void historyListsDiffsAndReverts() {
        auto r = runCli({"history", "--project", m_project, "--page", "1"});
        QVERIFY2(r.exitCode == 0 && r.out.startsWith("0: engine reading (tesseract") && r.out.contains("(current)"), qPrintable(r.out + r.err));
        const int before = int(r.out.count('\n'));
        r = runCli({"history", "--project", m_project, "--page", "1", "--diff", "0"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("{+") && r.out.contains("[-"), qPrintable(r.out));
        r = runCli({"history", "--project", m_project, "--page", "1", "--revert", "0"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(int(r.out.count('\n')), before + 1);
        r = runCli({"history", "--project", m_project, "--page", "1", "--diff", "0"});
        QVERIFY2(!r.out.contains("{+") && !r.out.contains("[-"), qPrintable(r.out));  // the engine's text is current again
        QCOMPARE(runCli({"history", "--project", m_project, "--page", "1", "--revert", "99"}).exitCode, 2);
        QCOMPARE(runCli({"history", "--project", m_project, "--page", "0"}).exitCode, 2);
        QCOMPARE(runCli({"history", "--project", m_project, "--page", "1", "--diff", "x"}).exitCode, 2);
    }

    // pages --delete/--move/--rotate change the book, --undo puts each back; a turned page is read
    // again the right way up, and transcribe --pages reads only the pages named.
    void pagesAreRearrangedTurnedAndUndone() {
        const QString project = m_dir.filePath("arrange.quire");
        QStringList inputs;
        const char* words[] = {"Alpha leaves the harbour.", "Bravo counts the barrels.", "Charlie writes the letter."};
        for (int i = 0; i < 3; ++i) {
            cv::Mat page = textPage({words[i]});
            if (i == 2) cv::rotate(page, page, cv::ROTATE_90_COUNTERCLOCKWISE);  // scanned on its side
            inputs << m_dir.filePath(QString("arrange%1.png").arg(i + 1));
            QVERIFY(cv::imwrite(inputs.back().toStdString(), page));
        }
        auto r = runCli(QStringList{"transcribe"} + inputs + QStringList{"--project", project, "--no-orient", "--threads", "1"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        auto texts = [&] {
            QStringList out;
            for (const auto v : status(project).value("pageList").toArray()) out << v.toObject().value("text").toString().trimmed();
            return out;
        };
        QVERIFY(!texts()[2].contains("Charlie"));
        r = runCli({"pages", "--project", project, "--rotate", "3", "--by", "90"});
        QVERIFY2(r.exitCode == 0 && r.err.contains("turned page 3 90° clockwise"), qPrintable(r.err));
        QCOMPARE(status(project).value("queued").toInt(), 1);
        r = runCli({"transcribe", "--project", project, "--pages", "3", "--no-orient", "--threads", "1"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(texts()[2].contains("Charlie writes"), qPrintable(texts().join(" | ")));
        QCOMPARE(status(project).value("pageList").toArray()[2].toObject().value("rotation").toInt(), 90);
        // The searchable PDF shows the turned scan, its words over it.
        const QString turned = m_dir.filePath("turned");
        QCOMPARE(runCli({"export", "--project", project, "--format", "pdf", "--out", turned}).exitCode, 0);
        const auto size = runProgram("pdfinfo", {"-f", "3", "-l", "3", turned + "/book.pdf"});
        const auto m = QRegularExpression("Page +3 size: +([0-9.]+) x ([0-9.]+)").match(size.out);
        QVERIFY2(m.hasMatch() && m.captured(1).toDouble() < m.captured(2).toDouble(), qPrintable(size.out));  // upright again
        QVERIFY(runProgram("pdftotext", {"-f", "3", "-l", "3", turned + "/book.pdf", "-"}).out.contains("Charlie"));

        QCOMPARE(runCli({"pages", "--project", project, "--move", "3", "--before", "1"}).exitCode, 0);
        QVERIFY(texts()[0].contains("Charlie") && texts()[1].contains("Alpha"));
        QCOMPARE(runCli({"pages", "--project", project, "--delete", "2-2"}).exitCode, 0);
        QCOMPARE(texts().size(), 2);
        const QString out = m_dir.filePath("arranged");
        QCOMPARE(runCli({"export", "--project", project, "--format", "txt", "--out", out}).exitCode, 0);
        const QString txt = QString::fromStdString(readFile(out + "/book.txt"));
        QVERIFY2(txt.indexOf("Charlie") < txt.indexOf("Bravo") && !txt.contains("Alpha"), qPrintable(txt));

        // A removed page is put back out of order: not the last removed.
        QCOMPARE(runCli({"pages", "--project", project, "--delete", "2"}).exitCode, 0);  // Bravo too
        r = runCli({"pages", "--project", project, "--removed"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("removed 1: " + inputs[0] + " p.1") &&
                     r.out.contains("removed 2: " + inputs[1] + " p.1"), qPrintable(r.out + r.err));
        r = runCli({"pages", "--project", project, "--removed", "--json"});
        QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object().value("removedPages").toArray().size(), 2);
        QCOMPARE(runCli({"pages", "--project", project, "--restore", "3"}).exitCode, 2);
        r = runCli({"pages", "--project", project, "--restore", "1"});
        QVERIFY2(r.exitCode == 0 && r.err.contains("put back page 2"), qPrintable(r.err));
        QCOMPARE(texts().size(), 2);
        QVERIFY(texts()[1].contains("Alpha"));
        r = runCli({"pages", "--project", project, "--undo"});
        QVERIFY2(r.exitCode == 0 && r.err.contains("undone: put back page 2"), qPrintable(r.err));
        QCOMPARE(runCli({"pages", "--project", project, "--undo"}).exitCode, 0);  // Bravo's removal
        QVERIFY(texts().size() == 2 && texts()[1].contains("Bravo"));

        r = runCli({"pages", "--project", project, "--undo"});
        QVERIFY2(r.exitCode == 0 && r.err.contains("undone: removed page 2"), qPrintable(r.err));
        QCOMPARE(runCli({"pages", "--project", project, "--undo"}).exitCode, 0);
        QVERIFY(texts()[0].contains("Alpha") && texts()[2].contains("Charlie"));
        for (const QStringList& bad : {QStringList{"--move", "1"}, QStringList{"--rotate", "9"}, QStringList{"--rotate", "1", "--by", "45"},
                                       QStringList{"--delete", "1", "--rotate", "2"}, QStringList{"--delete", "x"}, QStringList{}})
            QCOMPARE(runCli(QStringList{"pages", "--project", project} + bad).exitCode, 2);
        QCOMPARE(runCli({"pages", "--project", project, "--undo"}).exitCode, 0);  // the turn
        r = runCli({"pages", "--project", project, "--undo"});
        QVERIFY2(r.exitCode == 2 && r.err.contains("nothing to undo"), qPrintable(r.err));
        QCOMPARE(status(project).value("integrity").toString(), QString("ok"));
    }

    // transcribe --reread reads pages again with other settings: the earlier reading stays a
    // version, corrections stay the text unless --replace-corrections; no engine chatter on stderr.
    void rereadWithOtherSettingsKeepsVersions() {
        const QString project = m_dir.filePath("reread.quire");
        auto r = runCli({"transcribe", m_good, "--project", project, "--threads", "1"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QCOMPARE(runCli({"correct", "--project", project, "--page", "1", "--text", "Typed by the archivist."}).exitCode, 0);
        r = runCli({"transcribe", "--project", project, "--reread", "1", "--engine", "ppocr", "--threads", "1"});
        QVERIFY2(r.exitCode == 0 && r.err.contains("they stay the pages' text"), qPrintable(r.err));
        QVERIFY2(!r.err.contains("Estimating resolution"), qPrintable(r.err));
        auto history = [&] {
            const auto h = runCli({"history", "--project", project, "--page", "1", "--json"});
            return QJsonDocument::fromJson(h.out.toUtf8()).object().value("versions").toArray();
        };
        QJsonArray versions = history();
        QCOMPARE(versions.size(), 3);
        QVERIFY(versions[0].toObject().value("label").toString().startsWith("earlier reading (tesseract"));
        QVERIFY(versions[1].toObject().value("current").toBool());
        QVERIFY(versions[2].toObject().value("label").toString().startsWith("engine reading (ppocr"));
        QCOMPARE(status(project).value("pageList").toArray()[0].toObject().value("text").toString(), QString("Typed by the archivist."));
        r = runCli({"transcribe", "--project", project, "--reread", "1", "--replace-corrections", "--engine", "tesseract", "--threads", "1"});
        QVERIFY2(r.exitCode == 0 && r.err.contains("the new readings become their text"), qPrintable(r.err));
        QVERIFY(status(project).value("pageList").toArray()[0].toObject().value("text").toString().contains("every page safe"));
        QVERIFY(history()[1].toObject().value("label").toString().contains("set aside"));
        QCOMPARE(runCli({"transcribe", "--project", project, "--replace-corrections"}).exitCode, 2);
        QCOMPARE(runCli({"transcribe", "--project", project, "--reread", "2"}).exitCode, 2);
        QCOMPARE(runCli({"transcribe", "--project", project, "--reread", "1", "--pages", "1"}).exitCode, 2);
        QCOMPARE(status(project).value("integrity").toString(), QString("ok"));
    }

    void exportWithPageMarkers() {
        const QString out = m_dir.filePath("marked");
        const auto r = runCli({"export", "--project", m_project, "--format", "txt", "--out", out, "--page-markers"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QString txt = QString::fromStdString(readFile(out + "/book.txt"));
        QVERIFY2(txt.startsWith("[scan 1] Quire keeps every page"), qPrintable(txt));
        QCOMPARE(runCli({"export", "--project", m_project, "--format", "txt", "--out", out, "--pages", "1-1"}).exitCode, 0);
        // --pdfa goes with the searchable PDF, which then passes the PDF/A-2b check.
        QCOMPARE(runCli({"export", "--project", m_project, "--format", "md", "--out", out, "--pdfa"}).exitCode, 2);
        QCOMPARE(runCli({"export", "--project", m_project, "--format", "pdf", "--out", out, "--pdfa"}).exitCode, 0);
        const auto check = runProgram("/usr/bin/python3", {sourceDir() + "/tools/pdfa_check.py", out + "/book.pdf"});
        QVERIFY2(check.exitCode == 0, qPrintable(check.out + check.err));
        for (const char* bad : {"2", "0", "2-1", "1-x", "-3"})
            QCOMPARE(runCli({"export", "--project", m_project, "--format", "txt", "--out", out, "--pages", bad}).exitCode, 2);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
