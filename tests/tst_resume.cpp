// Kill -9 at several points of a real run: the project stays sound, finished pages are not redone,
// acknowledged corrections survive, and the final export equals an uninterrupted run's.
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <sqlite3.h>

#include <map>

#include "test_util.h"

using namespace quire::test;

namespace {

struct DbState {
    QString integrity;
    int done = 0;
    std::map<qint64, QString> finished;  // page id -> updated_at of done pages
};

int countDone(const QString& file) {
    sqlite3* db = nullptr;
    int n = 0;
    if (sqlite3_open_v2(file.toUtf8().constData(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* st = nullptr;
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pages WHERE status='done'", -1, &st, nullptr) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
}

DbState readState(const QString& file) {
    DbState s;
    sqlite3* db = nullptr;
    // Read-write, as the next run opens it: a kill while the file was being created can leave a hot
    // rollback journal that only a writer may roll back.
    if (sqlite3_open_v2(file.toUtf8().constData(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
        sqlite3_close(db);
        return s;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        s.integrity = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "SELECT id, updated_at FROM pages WHERE status='done'", -1, &st, nullptr) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            s.finished[sqlite3_column_int64(st, 0)] =
                QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    }
    sqlite3_finalize(st);
    s.done = int(s.finished.size());
    sqlite3_close(db);
    return s;
}

const char* kCorrection = "CHAPTER I\nOf Registers and Their Keepers\n\nCorrected by hand before the crash.";

}  // namespace

class TestResume : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    QString exportMarkdown(const QString& project, const QString& name) {
        const QString out = m_dir.filePath(name);
        const auto r = runCli({"export", "--project", project, "--format", "md", "--out", out});
        if (r.exitCode != 0) return "export failed: " + r.err;
        return QString::fromStdString(readFile(out + "/book.md"));
    }

private slots:
    void killedRunsResumeWithNothingLost() {
        // Reference: one uninterrupted run, then the same correction.
        const QString ref = m_dir.filePath("ref.quire");
        QCOMPARE(runCli({"transcribe", samplePdf(), "--project", ref, "--threads", "1"}).exitCode, 0);
        QCOMPARE(runCli({"correct", "--project", ref, "--page", "1", "--text", kCorrection}).exitCode, 0);
        const QString expected = exportMarkdown(ref, "ref-out");
        QVERIFY(expected.contains("Corrected by hand"));

        const QString project = m_dir.filePath("killed.quire");
        DbState before;
        bool corrected = false;
        // Kill points: during start-up, and after 1, 3 and 6 finished pages.
        for (int target : {0, 1, 3, 6}) {
            QProcess p;
            p.start(QStringLiteral(QUIRE_CLI_PATH), {"transcribe", samplePdf(), "--project", project, "--threads", "1"});
            QVERIFY(p.waitForStarted());
            if (target == 0) {
                QThread::msleep(150);
            } else {
                QElapsedTimer t;
                t.start();
                while (countDone(project) < target && p.state() == QProcess::Running && t.elapsed() < 120000)
                    QThread::msleep(25);
            }
            p.kill();  // SIGKILL
            p.waitForFinished();
            const DbState after = readState(project);
            if (QFileInfo::exists(project)) QCOMPARE(after.integrity, QString("ok"));
            // Pages finished before are untouched: not redone, same commit time.
            for (const auto& [id, stamp] : before.finished) QCOMPARE(after.finished.at(id), stamp);
            QVERIFY(after.done >= before.done);
            before = after;
            if (!corrected && after.done >= 1) {
                QCOMPARE(runCli({"correct", "--project", project, "--page", "1", "--text", kCorrection}).exitCode, 0);
                corrected = true;
            }
        }
        QVERIFY(corrected);
        const auto finish = runCli({"transcribe", "--project", project, "--threads", "1"});
        QVERIFY2(finish.exitCode == 0, qPrintable(finish.err));
        const DbState end = readState(project);
        QCOMPARE(end.integrity, QString("ok"));
        for (const auto& [id, stamp] : before.finished) QCOMPARE(end.finished.at(id), stamp);
        QCOMPARE(exportMarkdown(project, "killed-out"), expected);
    }
};

QTEST_GUILESS_MAIN(TestResume)
#include "tst_resume.moc"
