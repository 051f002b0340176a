// Pages stream: peak memory of a run does not grow with the page count.
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/imgproc.hpp>
#include <sys/resource.h>

#include "test_util.h"

using namespace quire::test;

namespace {

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
        auto lines = [](int p) { return std::vector<std::string>{"Page " + std::to_string(p + 1) + " of a long volume"}; };
        writeTiffVolume(m_dir.filePath("small.tif"), small, lines, 900, 260, 1.0, true);  // BigTIFF, too
        writeTiffVolume(m_dir.filePath("large.tif"), large, lines, 900, 260, 1.0, true);
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
