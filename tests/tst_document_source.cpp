#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <tiffio.h>

#include <filesystem>
#include <fstream>

#include "quire/source/document_source.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

class TestDocumentSource : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString path(const QString& name) const { return m_dir.filePath(name); }

    // Multi-page TIFF written with libtiff: `photometric` 1 gray / 2 RGB / 5 CMYK, 8 or 16 bits.
    void writeTiff(const QString& file, int pages, int spp, int bits, int photometric) {
        TIFF* t = TIFFOpen(file.toLocal8Bit().constData(), "w");
        QVERIFY(t);
        const int w = 320, h = 200;
        for (int p = 0; p < pages; ++p) {
            TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
            TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
            TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
            TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
            TIFFSetField(t, TIFFTAG_PHOTOMETRIC, photometric);
            TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
            TIFFSetField(t, TIFFTAG_XRESOLUTION, 300.0f);
            TIFFSetField(t, TIFFTAG_YRESOLUTION, 300.0f);
            TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, RESUNIT_INCH);
            TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
            TIFFSetField(t, TIFFTAG_PAGENUMBER, p, pages);
            std::vector<uint8_t> row(size_t(w * spp * bits / 8));
            for (int y = 0; y < h; ++y) {
                for (size_t i = 0; i < row.size(); ++i) row[i] = uint8_t((y + p * 40) & 0xff);
                TIFFWriteScanline(t, row.data(), uint32_t(y), 0);
            }
            TIFFWriteDirectory(t);
        }
        TIFFClose(t);
    }

private slots:
    void naturalOrder_data() {
        QTest::addColumn<QString>("a");
        QTest::addColumn<QString>("b");
        QTest::newRow("p2<p10") << "p2.png" << "p10.png";
        QTest::newRow("case") << "Page9" << "page10";
        QTest::newRow("zeros") << "p002" << "p10";
        QTest::newRow("prefix") << "scan" << "scan1";
        QTest::newRow("huge numbers") << "p99999999999999999998" << "p99999999999999999999";
    }
    void naturalOrder() {
        QFETCH(QString, a);
        QFETCH(QString, b);
        QVERIFY(naturalLess(a.toStdString(), b.toStdString()));
        QVERIFY(!naturalLess(b.toStdString(), a.toStdString()));
    }

    void imageFormats_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("type");
        QTest::newRow("png gray 8") << "g8.png" << CV_8UC1;
        QTest::newRow("png gray 16") << "g16.png" << CV_16UC1;
        QTest::newRow("png rgb") << "rgb.png" << CV_8UC3;
        QTest::newRow("png rgba") << "rgba.png" << CV_8UC4;
        QTest::newRow("jpeg") << "rgb.jpg" << CV_8UC3;
        QTest::newRow("bmp") << "rgb.bmp" << CV_8UC3;
    }
    void imageFormats() {
        QFETCH(QString, name);
        QFETCH(int, type);
        cv::Mat m(150, 240, type, cv::Scalar::all(type == CV_16UC1 ? 40000 : 180));
        QVERIFY(cv::imwrite(path(name).toStdString(), m));
        auto src = openSource(path(name).toStdString());
        QVERIFY2(src, src.status().message().c_str());
        QCOMPARE((*src)->pageCount(), 1);
        auto page = (*src)->loadPage(0);
        QVERIFY2(page, page.status().message().c_str());
        QCOMPARE(page->image.cols, 240);
        QCOMPARE(page->image.depth(), CV_8U);
        QVERIFY(page->image.channels() == 1 || page->image.channels() == 3);
        // The RGBA image is 180 at alpha 180: composited on white paper it is 180·180/255 + 255·75/255.
        const double expected = type == CV_16UC1 ? 40000 / 257.0 : type == CV_8UC4 ? (180.0 * 180 + 255.0 * 75) / 255 : 180;
        QVERIFY(std::abs(cv::mean(page->image)[0] - expected) < 3);
    }

    void tiffPages_data() {
        QTest::addColumn<int>("spp");
        QTest::addColumn<int>("bits");
        QTest::addColumn<int>("photometric");
        QTest::newRow("gray 8") << 1 << 8 << PHOTOMETRIC_MINISBLACK;
        QTest::newRow("gray 16") << 1 << 16 << PHOTOMETRIC_MINISBLACK;
        QTest::newRow("rgb") << 3 << 8 << PHOTOMETRIC_RGB;
        QTest::newRow("cmyk") << 4 << 8 << PHOTOMETRIC_SEPARATED;
    }
    void tiffPages() {
        QFETCH(int, spp);
        QFETCH(int, bits);
        QFETCH(int, photometric);
        const QString file = path(QString("multi-%1-%2-%3.tif").arg(spp).arg(bits).arg(photometric));
        writeTiff(file, 3, spp, bits, photometric);
        auto src = openSource(file.toStdString());
        QVERIFY2(src, src.status().message().c_str());
        QCOMPARE((*src)->kind(), SourceKind::Tiff);
        QCOMPARE((*src)->pageCount(), 3);
        for (int p = 0; p < 3; ++p) {
            auto page = (*src)->loadPage(p);
            QVERIFY2(page, page.status().message().c_str());
            QCOMPARE(page->image.cols, 320);
            QCOMPARE(page->dpi, 300);
        }
        QVERIFY(!(*src)->loadPage(3));
    }

    void folderInNaturalOrder() {
        QVERIFY(QDir(m_dir.path()).mkpath("folder"));
        for (int n : {10, 2, 1}) {
            cv::Mat m(100, 100, CV_8UC1, cv::Scalar(n * 20));
            cv::imwrite(path(QString("folder/p%1.png").arg(n)).toStdString(), m);
        }
        writeFile(path("folder/notes.txt"), "not a page");
        auto src = openSource(path("folder").toStdString());
        QVERIFY2(src, src.status().message().c_str());
        QCOMPARE((*src)->pageCount(), 3);
        QCOMPARE(QString::fromStdString((*src)->pageFile(0).filename().string()), QString("p1.png"));
        QCOMPARE(QString::fromStdString((*src)->pageFile(1).filename().string()), QString("p2.png"));
        QCOMPARE(QString::fromStdString((*src)->pageFile(2).filename().string()), QString("p10.png"));
        auto page = (*src)->loadPage(2);
        QVERIFY(page);
        QCOMPARE(int(cv::mean(page->image)[0] + 0.5), 200);
        // A letter named as a page image is refused up front, naming it.
        writeFile(path("folder/letter.png"), "Dear archivist,\n");
        auto refused = openSource(path("folder").toStdString());
        QVERIFY(!refused);
        QCOMPARE(refused.status().code(), ErrorCode::UnsupportedFormat);
        QVERIFY2(QString::fromStdString(refused.status().message()).contains("letter.png"), refused.status().message().c_str());
    }

    void pdfPagesRenderAtRequestedDpi() {
        SourceOptions opt;
        opt.pdfDpi = 100;
        auto src = openSource(samplePdf().toStdString(), opt);
        QVERIFY2(src, src.status().message().c_str());
        QVERIFY((*src)->pageCount() >= 8);
        auto page = (*src)->loadPage(0);
        QVERIFY(page);
        QCOMPARE(page->dpi, 100);
        QCOMPARE(page->image.cols, 550);  // 5.5 in at 100 dpi
        QVERIFY(!(*src)->textLayer(0));   // a scan: no text layer
    }

    void badInputs_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("words");
        QTest::newRow("zero bytes") << "empty.pdf" << QByteArray() << int(ErrorCode::Corrupt) << "empty";
        QTest::newRow("text as png") << "notes.png" << QByteArray("just some text\n") << int(ErrorCode::UnsupportedFormat)
                                     << "not a PDF";
        QTest::newRow("truncated pdf") << "trunc.pdf" << QByteArray("%PDF-1.7\n1 0 obj\n<< /Type /Cat")
                                       << int(ErrorCode::Corrupt) << "not a valid PDF";
    }
    void badInputs() {
        QFETCH(QString, name);
        QFETCH(QByteArray, content);
        QFETCH(int, code);
        QFETCH(QString, words);
        writeFile(path(name), content.toStdString());
        auto src = openSource(path(name).toStdString());
        QVERIFY(!src);
        QCOMPARE(int(src.status().code()), code);
        const QString msg = QString::fromStdString(src.status().message());
        QVERIFY2(msg.contains(name), qPrintable(msg));
        QVERIFY2(msg.contains(words), qPrintable(msg));
    }

    void missingPath() {
        auto src = openSource(path("nope.tif").toStdString());
        QVERIFY(!src);
        QCOMPARE(src.status().code(), ErrorCode::NotFound);
    }

    void truncatedImagesFailAtDecode() {
        cv::Mat m(400, 400, CV_8UC1);
        cv::randu(m, 0, 255);
        cv::imwrite(path("full.png").toStdString(), m);
        const std::string png = readFile(path("full.png"));
        writeFile(path("cut.png"), png.substr(0, png.size() / 2));
        auto src = openSource(path("cut.png").toStdString());
        QVERIFY(src);
        auto page = (*src)->loadPage(0);
        QVERIFY(!page);
        QCOMPARE(page.status().code(), ErrorCode::Corrupt);
        QVERIFY(QString::fromStdString(page.status().message()).contains("cut.png"));

        writeTiff(path("full.tif"), 1, 1, 8, PHOTOMETRIC_MINISBLACK);
        const std::string tif = readFile(path("full.tif"));
        writeFile(path("cut.tif"), tif.substr(0, 5000));
        auto t = openSource(path("cut.tif").toStdString());
        if (t) QVERIFY(!(*t)->loadPage(0));  // opens (header intact) but cannot decode
        else QCOMPARE(t.status().code(), ErrorCode::Corrupt);
    }

    // qpdf's check in this process (the CI's sanitizer stages run it here; quire-cli runs it in
    // quire-render): a lying page count and a looping page tree are read from a repaired copy, a
    // form that draws itself fails its page with the reason, a JBIG2 scan that PDFium renders blank
    // is rendered by poppler.
    void damagedPdfStructures_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("pages");
        QTest::addColumn<QString>("note");
        QTest::addColumn<QString>("pageError");
        QTest::newRow("count says a million") << "count-lies.pdf" << 1 << "page count says 1000000" << "";
        QTest::newRow("page tree cycle") << "tree-cycle.pdf" << 1 << "refers back to itself" << "";
        QTest::newRow("form draws itself") << "form-self.pdf" << 1 << "" << "draws a form that draws itself";
        QTest::newRow("fuzz finding: writer name") << "finding-writer-name-freed.pdf" << 1 << "" << "";
        // Its text layer was asked of PDFium, which loops on the form as it does when rendering.
        QTest::newRow("fuzz finding: text of a self-drawing page") << "finding-text-of-self-drawing-page.pdf" << 1 << ""
                                                                    << "draws a form that draws itself";
        // A form whose /Resources lost its /XObject draws itself through its page's (as PDFium
        // looks names up); PDFium ran out of memory in it.
        QTest::newRow("fuzz finding: form through the page's resources") << "finding-form-through-page-resources.pdf" << 1 << ""
                                                                          << "draws a form that draws itself";
        // The page's contents name a /Filter that is no filter (7): qpdf cannot decode them, PDFium
        // draws them as stored, and the self-drawing form they draw ran it out of memory.
        QTest::newRow("fuzz finding: self-drawing form, contents of an unknown filter")
            << "finding-self-drawing-form-unknown-filter.pdf" << 1 << "" << "draws a form that draws itself";
        // A damaged JBIG2 scan: PDFium renders it blank and poppler, asked again, printed errors for
        // 50 s (now quiet, and bounded at 20 s); the page is read or flagged, not a timeout.
        QTest::newRow("fuzz finding: JBIG2 errors without end") << "finding-jbig2-errors-without-end.pdf" << 1 << "" << "";
        // Damaged beyond qpdf (no /Root it can find), which PDFium repairs and then draws a form
        // that draws itself until it runs out of memory: found in the file's text, every page refused.
        QTest::newRow("fuzz finding: self-drawing form, no root for qpdf")
            << "finding-self-drawing-form-without-root.pdf" << 1 << "" << "form that draws itself (object 5)";
        // Damaged beyond qpdf, claiming a million pages PDFium cannot find: refused at once (it
        // took 15 s of probing phantom pages).
        QTest::newRow("fuzz finding: phantom pages") << "finding-slow-phantom-pages.pdf" << 0 << "no pages that can be found" << "";
    }
    void damagedPdfStructures() {
        QFETCH(QString, file);
        QFETCH(int, pages);
        QFETCH(QString, note);
        QFETCH(QString, pageError);
        auto src = openSource((sourceDir() + "/fuzz/corpus/pdf/" + file).toStdString());
        if (pages == 0) {
            QVERIFY2(!src && QString::fromStdString(src.status().message()).contains(note), src.status().message().c_str());
            return;
        }
        QVERIFY2(src, src.status().message().c_str());
        QCOMPARE((*src)->pageCount(), pages);
        if (!note.isEmpty()) QVERIFY2(QString::fromStdString((*src)->openNote()).contains(note), (*src)->openNote().c_str());
        auto page = (*src)->loadPage(0);
        (void)(*src)->textLayer(0);  // returns (it once looped)
        if (pageError.isEmpty()) QVERIFY2(page, page.status().message().c_str());
        else QVERIFY2(!page && QString::fromStdString(page.status().message()).contains(pageError), page.status().message().c_str());
    }
    // A repaired copy, and a file whose name is not UTF-8, are read through descriptors: nothing is
    // named in the temporary folder even while the PDF is open, so a killed process leaves nothing.
    // The JBIG2 scan with a lying page count is read by both QtPdf and poppler from the copy.
    void noTemporaryFileIsNamed() {
        QTemporaryDir tmp;
        const QByteArray before = qgetenv("TMPDIR");
        qputenv("TMPDIR", tmp.path().toUtf8());
        auto restore = qScopeGuard([&] { before.isNull() ? qunsetenv("TMPDIR") : qputenv("TMPDIR", before); });
        std::string jbig2 = readFile(sourceDir() + "/fuzz/corpus/pdf/jbig2.pdf");
        const size_t count = jbig2.find("/Count 1");
        QVERIFY(count != std::string::npos);
        jbig2.replace(count, 8, "/Count 7");
        std::string name = m_dir.path().toStdString() + "/scan-";
        name += char(0xe9);  // Latin-1 é: not UTF-8
        name += "-lies.pdf";
        std::ofstream(name, std::ios::binary) << jbig2;
        auto removeOdd = qScopeGuard([&] { std::filesystem::remove(name); });  // QDir cannot name it
        for (const std::string file : {(sourceDir() + "/fuzz/corpus/pdf/count-lies.pdf").toStdString(), name}) {
            auto src = openSource(file);
            QVERIFY2(src, src.status().message().c_str());
            QVERIFY2(QString::fromStdString((*src)->openNote()).contains("repaired copy"), (*src)->openNote().c_str());
            auto page = (*src)->loadPage(0);
            QVERIFY2(page, page.status().message().c_str());
            QVERIFY2(QDir(tmp.path()).isEmpty(), "a file is named in the temporary folder while the PDF is open");
            if (file == name) {
                QVERIFY2(page->note.find("poppler") != std::string::npos, page->note.c_str());
                cv::Mat gray = page->image;
                if (gray.channels() == 3) cv::cvtColor(gray, gray, cv::COLOR_BGR2GRAY);
                QVERIFY2(cv::countNonZero(gray < 128) > 100, "the JBIG2 page came back blank");
            }
        }
        QVERIFY(QDir(tmp.path()).isEmpty());
    }
    void jbig2ScanIsRenderedByPoppler() {
        auto src = openSource((sourceDir() + "/fuzz/corpus/pdf/jbig2.pdf").toStdString());
        QVERIFY2(src, src.status().message().c_str());
        auto page = (*src)->loadPage(0);
        QVERIFY2(page, page.status().message().c_str());
        QVERIFY2(page->doubt.empty(), page->doubt.c_str());
        cv::Mat gray = page->image;
        if (gray.channels() == 3) cv::cvtColor(gray, gray, cv::COLOR_BGR2GRAY);
        QVERIFY2(cv::countNonZero(gray < 128) > 100, "the JBIG2 page came back blank");
    }

    void hugeImageRefusedBeforeDecoding() {
        // A 30000 x 30000 PNG header (1-bit) is refused from its header: no 900 MB allocation.
        std::string png("\x89PNG\r\n\x1a\n", 8);
        auto be = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
        std::string ihdr = "IHDR" + be(30000) + be(30000) + std::string("\x01\x00\x00\x00\x00", 5);
        png += be(13) + ihdr + be(0);  // CRC is not checked before the size test
        writeFile(path("huge.png"), png);
        auto src = openSource(path("huge.png").toStdString());
        QVERIFY(!src);
        QCOMPARE(src.status().code(), ErrorCode::TooLarge);
        QVERIFY(QString::fromStdString(src.status().message()).contains("30000x30000"));
    }
};

QTEST_GUILESS_MAIN(TestDocumentSource)
#include "tst_document_source.moc"
