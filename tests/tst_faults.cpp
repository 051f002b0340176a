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

    // Pages of the project file overwritten on disk: every open says the project is damaged and
    // names the newest sound backup; `restore` puts it back, keeping the damaged file, with the
    // correction made before the backup.
    void damagedProjectIsRestoredFromItsBackup() {
        const QString project = m_dir.filePath("damaged.quire");
        auto r = runCli({"transcribe", samplePdf(), "--project", project});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        r = runCli({"correct", "--project", project, "--page", "2", "--text", "A correction typed before the damage."});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(QDir(project + ".backups").entryList(QDir::Files).size() >= 1, "no backup after a clean close");
        QVERIFY(!QFileInfo::exists(project + "-wal") || QFileInfo(project + "-wal").size() == 0);
        // Overwrite every fourth 4 KB page after the first with junk (the header stays SQLite's).
        std::string bytes = readFile(project);
        for (size_t off = 4096; off + 4096 <= bytes.size(); off += 4 * 4096)
            for (size_t i = 0; i < 4096; ++i) bytes[off + i] = char((i * 131 + off) & 0xff);
        writeFile(project, bytes);
        const auto st = runCli({"status", "--project", project});
        QCOMPARE(st.exitCode, 2);
        QVERIFY2(st.err.contains("damaged") && st.err.contains("quire-cli restore --project"), qPrintable(st.err + st.out));
        const auto tr = runCli({"transcribe", "--project", project});
        QCOMPARE(tr.exitCode, 2);
        QVERIFY2(tr.err.contains("the project file is damaged") && tr.err.contains("newest sound backup"), qPrintable(tr.err));
        const auto rs = runCli({"restore", "--project", project});
        QVERIFY2(rs.exitCode == 0, qPrintable(rs.err));
        QCOMPARE(QDir(m_dir.path()).entryList({"damaged.quire.damaged-*"}, QDir::Files).size(), 1);
        const auto ok = runCli({"status", "--project", project, "--json", "--pages"});
        QVERIFY2(ok.exitCode == 0, qPrintable(ok.err));
        const QJsonObject o = QJsonDocument::fromJson(ok.out.toUtf8()).object();
        QCOMPARE(o.value("integrity").toString(), QString("ok"));
        QCOMPARE(o.value("done").toInt(), 9);
        QCOMPARE(o.value("pageList").toArray().at(1).toObject().value("text").toString(), QString("A correction typed before the damage."));
        // The restored project takes work again.
        QCOMPARE(runCli({"transcribe", "--project", project}).exitCode, 0);
    }

    // A process killed in the middle of a transaction leaves a hot journal, which only a writer can
    // roll back: `status` (read-only) rolls it back through a writable connection and says so.
    void statusRollsBackAHotJournal() {
        const QString project = m_dir.filePath("hot.quire");
        QVERIFY(runCli({"transcribe", samplePdf(), "--project", project}).exitCode == 0);
        const auto py = runProgram("/usr/bin/python3", {"-c", QString("import sqlite3, os\n"
                                                                      "c = sqlite3.connect('%1', isolation_level=None)\n"
                                                                      "c.execute('pragma journal_mode=DELETE')\n"
                                                                      "c.execute('begin immediate')\n"
                                                                      "c.execute('update pages set flagged=1')\n"
                                                                      "c.execute('create table junk(x)')\n"
                                                                      "c.executemany('insert into junk values(?)', [(b'x' * 1000,)] * 5000)\n"
                                                                      "os.kill(os.getpid(), 9)\n").arg(project)});
        QVERIFY(QFileInfo::exists(project + "-journal"));
        const auto st = runCli({"status", "--project", project, "--json"});
        QVERIFY2(st.exitCode == 0, qPrintable(st.err));
        QVERIFY2(st.err.contains("rolled back an unfinished transaction"), qPrintable(st.err));
        const QJsonObject o = QJsonDocument::fromJson(st.out.toUtf8()).object();
        QCOMPARE(o.value("integrity").toString(), QString("ok"));
        QVERIFY2(o.value("flagged").toInt() < 9, "the killed transaction's update survived");
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
