// Pages stream: peak memory of a run does not grow with the page count.
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/imgproc.hpp>
#include <sys/resource.h>
#include <tiffio.h>

#include "test_util.h"

using namespace quire::test;

namespace {

void writeVolume(const QString& file, int pages) {
    TIFF* t = TIFFOpen(file.toLocal8Bit().constData(), "w8");
    for (int p = 0; p < pages; ++p) {
        const cv::Mat page = textPage({"Page " + std::to_string(p + 1) + " of a long volume"}, 900, 260, 1.0);
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, page.cols);
        TIFFSetField(t, TIFFTAG_IMAGELENGTH, page.rows);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
        TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
        TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
        TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
        for (int y = 0; y < page.rows; ++y) TIFFWriteScanline(t, const_cast<uchar*>(page.ptr(y)), uint32_t(y), 0);
        TIFFWriteDirectory(t);
    }
    TIFFClose(t);
}

long childPeakKb() {
    rusage u{};
    getrusage(RUSAGE_CHILDREN, &u);
    return u.ru_maxrss;
}

}  // namespace

class TestMemory : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
private slots:
    void peakMemoryIsFlatInPageCount() {
        const int small = 40, large = 400;
        writeVolume(m_dir.filePath("small.tif"), small);
        writeVolume(m_dir.filePath("large.tif"), large);
        auto r = runCli({"transcribe", m_dir.filePath("small.tif"), "--project", m_dir.filePath("s.quire"), "--threads", "2",
                         "--export", "md,pdf", "--out", m_dir.filePath("s-out")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const long smallPeak = childPeakKb();
        r = runCli({"transcribe", m_dir.filePath("large.tif"), "--project", m_dir.filePath("l.quire"), "--threads", "2",
                    "--export", "md,pdf", "--out", m_dir.filePath("l-out")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const long bothPeak = childPeakKb();  // max over both runs
        qInfo("peak RSS: %d pages %ld KiB; %d pages %ld KiB", small, smallPeak, large, bothPeak);
        const auto st = runCli({"status", "--project", m_dir.filePath("l.quire"), "--json", "--pages"});
        QVERIFY2(st.out.contains("Page 400 of a long volume"), qPrintable(st.out.right(400)));
        QVERIFY(QFileInfo(m_dir.filePath("l-out/book.pdf")).size() > 0);
        QVERIFY2(bothPeak <= smallPeak * 1.15 + 8 * 1024,
                 qPrintable(QString("%1 KiB for %2 pages vs %3 KiB for %4").arg(bothPeak).arg(large).arg(smallPeak).arg(small)));
    }
};

QTEST_GUILESS_MAIN(TestMemory)
#include "tst_memory.moc"
