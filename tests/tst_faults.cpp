// Storage faults: the disk filling up during a run (a real, small tmpfs), and a project on a
// location the user cannot write.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QProcess>
#include <QTest>
#include <QThread>

#include <opencv2/imgcodecs.hpp>

#include <unistd.h>

#include "test_util.h"

using namespace quire::test;

namespace {
QJsonObject status(const QString& project) {
    return QJsonDocument::fromJson(runCli({"status", "--project", project, "--json"}).out.toUtf8()).object();
}
}  // namespace

class TestFaults : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    void diskFullStopsCleanlyAndResumes() {
        if (geteuid() != 0) QSKIP("mounting a small tmpfs needs root");
        const QString mnt = m_dir.filePath("small-disk");
        QVERIFY(QDir().mkpath(mnt));
        if (runProgram("mount", {"-t", "tmpfs", "-o", "size=200k", "tmpfs", mnt}).exitCode != 0)
            QSKIP("this machine does not allow mounting a tmpfs");
        struct Unmount {
            QString at;
            ~Unmount() { runProgram("umount", {"-l", at}); }
        } unmount{mnt};
        const QString project = mnt + "/book.quire";
        // 200 KB (database and its write-ahead log) fill up after a page or two of the sample volume.
        const auto full = runCli({"transcribe", samplePdf(), "--project", project, "--threads", "1"});
        QVERIFY2(full.exitCode != 0, "the run should have stopped on a full disk");
        QVERIFY2(full.err.contains("disk is full") || full.err.contains("database or disk is full"), qPrintable(full.err));
        QJsonObject s = status(project);
        QCOMPARE(s.value("integrity").toString(), QString("ok"));
        const int doneBefore = s.value("done").toInt();
        QVERIFY(doneBefore < 9);
        // Space comes back: the run resumes and finishes, the pages done before are kept.
        QCOMPARE(runProgram("mount", {"-o", "remount,size=64m", mnt}).exitCode, 0);
        const auto resumed = runCli({"transcribe", "--project", project, "--threads", "1"});
        QVERIFY2(resumed.exitCode == 0, qPrintable(resumed.err));
        s = status(project);
        QCOMPARE(s.value("done").toInt(), 9);
        QCOMPARE(s.value("integrity").toString(), QString("ok"));
    }

    void cancelledRunLeavesNoHalfWrittenPage() {
        const QString project = m_dir.filePath("cancel.quire");
        QProcess run;
        run.start(QStringLiteral(QUIRE_CLI_PATH), {"transcribe", samplePdf(), "--project", project, "--threads", "1"});
        QVERIFY(run.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(status(project).value("done").toInt() >= 1, 60000);
        run.terminate();  // SIGTERM, like Ctrl-C: pages in flight finish, nothing new starts
        QVERIFY(run.waitForFinished(60000));
        QCOMPARE(run.exitCode(), 1);
        QVERIFY(QString::fromUtf8(run.readAllStandardError()).contains("cancelled (run again to resume)"));
        const QJsonObject s = status(project);
        QCOMPARE(s.value("integrity").toString(), QString("ok"));
        QVERIFY(s.value("done").toInt() < 9);
        // Every page marked done has its text; every other page is still queued.
        const auto pages = QJsonDocument::fromJson(runCli({"status", "--project", project, "--json", "--pages"}).out.toUtf8())
                               .object().value("pageList").toArray();
        for (const auto& v : pages) {
            const QJsonObject p = v.toObject();
            if (p.value("status").toString() == "done") QVERIFY(!p.value("text").toString().isEmpty());
            else QCOMPARE(p.value("status").toString(), QString("queued"));
        }
        QCOMPARE(runCli({"transcribe", "--project", project, "--threads", "1"}).exitCode, 0);
        QCOMPARE(status(project).value("done").toInt(), 9);
    }

    void readOnlyProjectOpensReadOnly() {
        const QString project = m_dir.filePath("ro.quire");
        const QString scan = m_dir.filePath("page.png");
        cv::imwrite(scan.toStdString(), textPage({"A page kept on a read-only shelf."}));
        QCOMPARE(runCli({"transcribe", scan, "--project", project}).exitCode, 0);
        QFile::remove(project + ".lock");
        QFile::setPermissions(project, QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther);
        QFile::setPermissions(m_dir.path(), QFileDevice::Permissions(0x5555));
        auto asUser = [&](const QStringList& args) {
            if (geteuid() != 0) return runCli(args);
            return runProgram("setpriv", QStringList{"--reuid=65534", "--regid=65534", "--clear-groups",
                                                      QStringLiteral(QUIRE_CLI_PATH)} + args);
        };
        const auto st = asUser({"status", "--project", project});
        QFile::setPermissions(m_dir.path(), QFileDevice::Permissions(0x7755));
        QVERIFY2(st.exitCode == 0 && st.out.contains("integrity ok"), qPrintable(st.err + st.out));
        QFile::setPermissions(m_dir.path(), QFileDevice::Permissions(0x5555));
        const auto write = asUser({"correct", "--project", project, "--page", "1", "--text", "x"});
        const auto run = asUser({"transcribe", "--project", project});
        QFile::setPermissions(m_dir.path(), QFileDevice::Permissions(0x7755));
        QCOMPARE(write.exitCode, 1);  // refused by SQLite as read-only: an error, not a crash
        QVERIFY2(write.err.contains("read-only") || write.err.contains("readonly"), qPrintable(write.err));
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.contains("read-only"), qPrintable(run.err));
        QCOMPARE(status(project).value("corrected").toInt(), 0);
        QFile::setPermissions(project, QFileDevice::ReadOwner | QFileDevice::WriteOwner);
    }
};

QTEST_GUILESS_MAIN(TestFaults)
#include "tst_faults.moc"
