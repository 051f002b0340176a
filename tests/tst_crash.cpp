// Crash consistency: SIGKILL at random moments of a real run while corrections stream in (fixed
// seed; 50 kills, QUIRE_CRASH_KILLS for more). After every kill the project is sound and every
// acknowledged correction is there; the run resumes; the final export equals an uninterrupted
// run's with the same corrections. A reader run killed the same way resumes with the context it
// had (the decoder's checkpoint is committed with each page) and ends with an uninterrupted run's
// text.
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <csignal>
#include <map>
#include <random>

#include "quire/store/project_store.h"
#include "quire/reader/reader.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

class TestCrash : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    // A multi-page TIFF of full text pages ("Page N line L of the WORD").
    QString ledgerVolume(const QString& name, int pages, const std::string& word) {
        const QString volume = m_dir.filePath(name);
        writeTiffVolume(volume, pages, [word](int p) {
            std::vector<std::string> lines;
            for (int l = 0; l < 24; ++l) lines.push_back("Page " + std::to_string(p + 1) + " line " + std::to_string(l) + " of the " + word);
            return lines;
        }, 1700, 2200, 1.4);
        return volume;
    }

    // Runs `quire-cli transcribe VOLUME --project P --threads 1` until `trigger` appears in its log,
    // waits `afterMs`, sends `sig` and waits for the end; returns the log.
    static QString runUntil(const QString& volume, const QString& project, const QString& trigger, int afterMs, int sig) {
        QProcess p;
        p.setProgram(QStringLiteral(QUIRE_CLI_PATH));
        p.setArguments({"transcribe", volume, "--project", project, "--threads", "1"});
        p.start();
        QString err;
        QElapsedTimer t;
        t.start();
        while (!err.contains(trigger) && t.elapsed() < 120000 && p.state() != QProcess::NotRunning) {
            p.waitForReadyRead(100);
            err += QString::fromUtf8(p.readAllStandardError());
        }
        QThread::msleep(afterMs);
        ::kill(pid_t(p.processId()), sig);
        p.waitForFinished();
        return err;
    }

private slots:
    void killsLoseNothing() {
        const QString volume = m_dir.filePath("register.tif");
        // 600 small pages: enough work that every kill lands in the middle of a run.
        writeTiffVolume(volume, 600, [](int p) {
            return std::vector<std::string>{"Entry " + std::to_string(p + 1) + ": the register of baptisms",
                                            "kept by the clerk in the year " + std::to_string(1700 + p)};
        }, 1000, 300, 0.9);
        const int kills = qEnvironmentVariableIsSet("QUIRE_CRASH_KILLS") ? qEnvironmentVariableIntValue("QUIRE_CRASH_KILLS") : 50;
        const QString project = m_dir.filePath("crash.quire");
        std::mt19937 rng(20261129);
        std::map<int, QStringList> acked;  // page sequence -> acknowledged corrections
        int totalAcks = 0;
        for (int i = 0; i < kills; ++i) {
            QProcess h;
            h.start(QStringLiteral(QUIRE_HARNESS_PATH), {volume, project, QString::number(i)});
            QVERIFY(h.waitForStarted());
            const int delay = 100 + int(rng() % 400);
            const bool endedByItself = h.waitForFinished(delay);
            QVERIFY2(!endedByItself || i == kills - 1, "the run ended before the kill: the volume is too short");
            h.kill();  // SIGKILL, wherever it is
            h.waitForFinished();
            const QString out = QString::fromUtf8(h.readAllStandardOutput());
            static const QRegularExpression ack(QStringLiteral("^ack (\\d+) (\\d+) (.*)$"), QRegularExpression::MultilineOption);
            for (auto it = ack.globalMatch(out); it.hasNext();) {
                const auto m = it.next();
                acked[m.captured(2).toInt()] << m.captured(3);
                ++totalAcks;
            }
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::ReadOnly);
            if (!store) continue;  // killed before the project file existed
            QCOMPARE(QString::fromStdString((*store)->integrityCheck().value()), QString("ok"));
            auto pages = (*store)->pages();
            QVERIFY(pages);
            // Every acknowledged correction is there. (One committed just before a kill may be
            // there without its acknowledgement: that is extra, not lost.)
            for (const auto& [seq, texts] : acked) {
                QVERIFY(seq >= 1 && seq <= int(pages->size()));
                auto all = (*store)->corrections((*pages)[size_t(seq - 1)].id);
                QVERIFY(all);
                for (const QString& text : texts) {
                    bool present = false;
                    for (const auto& c : *all) present = present || QString::fromStdString(c.text) == text;
                    QVERIFY2(present, qPrintable("lost: " + text));
                }
            }
        }
        qInfo("%d kills survived, %d corrections acknowledged and all present", kills, totalAcks);
        // Resume to the end.
        const auto finish = runProgram(QStringLiteral(QUIRE_HARNESS_PATH), {volume, project, "999"}, 300000);
        QVERIFY2(finish.exitCode == 0, qPrintable(finish.err));
        // The same corrections (the newest of each page, as committed) on an uninterrupted run give
        // the same book.
        std::map<int, QString> finalText;
        {
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::ReadOnly);
            QVERIFY(store);
            const auto pages = (*store)->pages();
            QVERIFY(pages);
            QCOMPARE((*store)->counts()->done, 600);
            for (const auto& pg : *pages)
                if (auto c = (*store)->latestCorrection(pg.id); c && c->has_value())
                    finalText[pg.sequence] = QString::fromStdString((*c)->text);
        }
        const QString ref = m_dir.filePath("reference.quire");
        QCOMPARE(runCli({"transcribe", volume, "--project", ref, "--threads", "1"}).exitCode, 0);
        for (const auto& [seq, text] : finalText)
            QCOMPARE(runCli({"correct", "--project", ref, "--page", QString::number(seq), "--text", text}).exitCode, 0);
        QCOMPARE(runCli({"export", "--project", project, "--format", "md,txt", "--out", m_dir.filePath("a")}).exitCode, 0);
        QCOMPARE(runCli({"export", "--project", ref, "--format", "md,txt", "--out", m_dir.filePath("b")}).exitCode, 0);
        QCOMPARE(readFile(m_dir.filePath("a/book.md")), readFile(m_dir.filePath("b/book.md")));
        QCOMPARE(readFile(m_dir.filePath("a/book.txt")), readFile(m_dir.filePath("b/book.txt")));
    }

    // A page that crashes the engine twice is quarantined: run 1 crashes (SIGSEGV) while page 2 is
    // read (after page 1 is committed); run 2 reads the pages in flight one at a time and crashes
    // while page 2 is read alone; run 3 fails page 2 with the reason, reads the rest, and exits 3;
    // `pages --retry 2` queues it again and run 4 reads it. (Kills and cancels count no crash:
    // killsLoseNothing ends with every page done.)
    void pageThatKillsTheProcessTwiceIsQuarantined() {
        const QString volume = ledgerVolume("quarantine.tif", 4, "register");
        const QString project = m_dir.filePath("quarantine.quire");
        auto runAndCrash = [&](const QString& trigger, int afterMs) { return runUntil(volume, project, trigger, afterMs, SIGSEGV); };
        QVERIFY2(runAndCrash("page 1 (quarantine.tif p.1): done", 0).contains("p.1): done"), "run 1 never committed page 1");
        auto st = runCli({"status", "--project", project, "--json"});
        QVERIFY2(st.out.contains("\"done\":1"), qPrintable(st.out));
        const QString second = runAndCrash("page 2: it was being read when an earlier run crashed; reading it alone", 500);
        QVERIFY2(second.contains("reading it alone"), qPrintable(second));
        const auto third = runCli({"transcribe", volume, "--project", project, "--threads", "1"});
        QCOMPARE(third.exitCode, 3);
        QVERIFY2(third.err.contains("page 2: the engine crashed 2 times while reading it; marked failed"), qPrintable(third.err));
        st = runCli({"status", "--project", project, "--json"});
        QVERIFY2(st.out.contains("\"done\":3") && st.out.contains("\"failed\":1"), qPrintable(st.out));
        QCOMPARE(runCli({"status", "--project", project}).exitCode, 0);
        // A later run leaves the quarantined page alone: nothing to do, exit 0.
        QCOMPARE(runCli({"transcribe", "--project", project}).exitCode, 0);
        const auto retry = runCli({"pages", "--project", project, "--retry", "2"});
        QVERIFY2(retry.exitCode == 0, qPrintable(retry.err));
        const auto fourth = runCli({"transcribe", "--project", project});
        QVERIFY2(fourth.exitCode == 0, qPrintable(fourth.err));
        st = runCli({"status", "--project", project, "--json"});
        QVERIFY2(st.out.contains("\"done\":4") && st.out.contains("\"failed\":0"), qPrintable(st.out));
        // --skip: a queued page is left alone until retried.
        QCOMPARE(runCli({"pages", "--project", project, "--skip", "2"}).exitCode, 2);  // page 2 is done, not queued
    }

    // A run ended by the kernel's out-of-memory killer leaves no crash marker (SIGKILL cannot be
    // caught); the next run tells it from a kill by hand by the killer's count, recorded when the
    // run started. Simulated: a SIGKILL, then the recorded count lowered below the count now.
    void outOfMemoryKillCountsAsACrash() {
        const QString volume = ledgerVolume("oom.tif", 3, "ledger");
        const QString project = m_dir.filePath("oom.quire");
        runUntil(volume, project, "p.1): done", 0, SIGKILL);
        std::string inflight = readFile(project + ".inflight");
        if (inflight.rfind("# oom-kills ", 0) != 0) QSKIP("this machine tells no out-of-memory count");
        const size_t countEnd = inflight.find(' ', 12);
        QVERIFY(countEnd != std::string::npos);
        writeFile(project + ".inflight", "# oom-kills -1" + inflight.substr(countEnd));
        const auto next = runCli({"transcribe", "--project", project, "--threads", "1"});
        QVERIFY2(next.exitCode == 0, qPrintable(next.err));
        QVERIFY2(next.err.contains("out-of-memory killer") && next.err.contains("reading it alone"), qPrintable(next.err));
        QVERIFY(!QFileInfo::exists(project + ".inflight"));
    }

    // SIGKILL while a PDF is being opened (the helper inspecting a 3,000-page page tree) and in its
    // first pages: the project stays sound, no helper outlives the run, and the run completes.
    void killDuringPdfOpeningLeavesNothingBehind() {
        const QString pdf = m_dir.filePath("many-pages.pdf");
        const auto gen = runProgram("/usr/bin/python3", {"-c", QString("import sys; sys.argv = ['x']; sys.path.insert(0, '%1/tests')\n"
                                                                       "import make_hostile_corpus as m\n"
                                                                       "open('%2', 'wb').write(m.many_pages_pdf(3000))\n")
                                                                   .arg(sourceDir(), pdf)});
        QVERIFY2(gen.exitCode == 0, qPrintable(gen.err));
        const QString project = m_dir.filePath("pdf-kill.quire");
        std::mt19937 rng(20261202);
        for (int k = 0; k < 6; ++k) {
            QProcess p;
            p.start(QStringLiteral(QUIRE_CLI_PATH), {"transcribe", pdf, "--project", project});
            QVERIFY(p.waitForStarted());
            QThread::msleep(std::uniform_int_distribution<int>(50, 900)(rng));
            p.kill();
            p.waitForFinished();
            QThread::msleep(200);  // the helper dies with the thread that started it
            const auto helpers = runProgram("pgrep", {"-f", "quire-render " + pdf});
            QVERIFY2(helpers.out.trimmed().isEmpty(), qPrintable("a helper outlived the run: " + helpers.out));
            if (QFileInfo::exists(project)) {
                const auto st = runCli({"status", "--project", project});
                QVERIFY2(st.exitCode == 0 && st.out.contains("integrity ok"), qPrintable(st.err + st.out));
            }
        }
        const auto done = runCli({"transcribe", pdf, "--project", project});
        QVERIFY2(done.exitCode == 0, qPrintable(done.err));
        QVERIFY(runCli({"status", "--project", project}).out.contains("3000 done"));
    }

    // SIGKILL while a new project is being created: the project either does not exist or is whole
    // (it was once found with half its schema migrations, which a read-only status could not open).
    void killDuringProjectCreationLeavesNoHalfProject() {
        std::mt19937 rng(20261204);
        const QString project = m_dir.filePath("create-kill.quire");
        // When the project appears after the start on this machine: the kills are spread around it.
        QElapsedTimer clock;
        {
            QProcess p;
            clock.start();
            p.start(QStringLiteral(QUIRE_CLI_PATH), {"transcribe", samplePdf(), "--project", project});
            QVERIFY(p.waitForStarted());
            while (!QFileInfo::exists(project) && clock.elapsed() < 60000) QThread::msleep(2);
            p.kill();
            p.waitForFinished();
        }
        const int appears = int(clock.elapsed());
        int found = 0;
        for (int k = 0; k < 40; ++k) {
            for (const QString& f : QDir(m_dir.path()).entryList({"create-kill.quire*"}, QDir::Files))
                QFile::remove(m_dir.filePath(f));
            QProcess p;
            p.start(QStringLiteral(QUIRE_CLI_PATH), {"transcribe", samplePdf(), "--project", project});
            QVERIFY(p.waitForStarted());
            QThread::msleep(std::uniform_int_distribution<int>(appears - 40, appears + 40)(rng));
            p.kill();
            p.waitForFinished();
            if (!QFileInfo::exists(project)) continue;
            ++found;
            const auto st = runCli({"status", "--project", project});
            QVERIFY2(st.exitCode == 0 && st.out.contains("integrity ok"), qPrintable(st.err + st.out));
        }
        QVERIFY2(found > 0, "no kill landed after the project was created: the delays are too short");
        // A leftover of a killed creation is replaced by the next run.
        QVERIFY(runCli({"transcribe", samplePdf(), "--project", project}).exitCode == 0);
        QVERIFY(!QFileInfo::exists(project + ".creating"));
    }

    // SIGKILL at random moments of short writes, each of which takes a backup at its clean close:
    // the project stays sound and every backup listed passes its integrity check.
    void killDuringBackupLeavesSoundBackups() {
        const QString project = m_dir.filePath("backup-kill.quire");
        QVERIFY(runCli({"transcribe", samplePdf(), "--project", project}).exitCode == 0);
        std::mt19937 rng(20261203);
        for (int k = 0; k < 20; ++k) {
            QProcess p;
            p.start(QStringLiteral(QUIRE_CLI_PATH), {"correct", "--project", project, "--page", "1", "--text",
                                                      QString("Correction %1").arg(k)});
            QVERIFY(p.waitForStarted());
            QThread::msleep(std::uniform_int_distribution<int>(0, 120)(rng));
            p.kill();
            p.waitForFinished();
            const auto st = runCli({"status", "--project", project});
            QVERIFY2(st.exitCode == 0 && st.out.contains("integrity ok"), qPrintable(st.err + st.out));
        }
        const QStringList backups = QDir(project + ".backups").entryList({"*.backup"}, QDir::Files);
        QVERIFY(!backups.isEmpty() && backups.size() <= 3);
        for (const QString& b : backups) {
            const auto check = runProgram("sqlite3", {project + ".backups/" + b, "PRAGMA quick_check"});
            QVERIFY2(check.out.trimmed() == "ok", qPrintable(b + ": " + check.out + check.err));
        }
    }

    void killedReaderResumesWithItsContext() {
        if (!findReaderModel()) QSKIP("no reader model is shipped");
        const QString volume = m_dir.filePath("letters.tif");
        // Sixteen pages (the eight letters twice) and kills within 150 ms of a commit: with two
        // prepare threads the pages of a resumed run commit in bursts, and eight pages were done
        // before a second kill.
        const int pages = 16;
        static const std::vector<std::vector<std::string>> text = {
            {"The miller wrote to his brother", "in the spring of that year"}, {"about the price of corn and", "the state of the roads"},
            {"which the rains had spoiled.", "His brother answered him"},     {"from the town by the river", "with news of their mother"},
            {"who was ill but mending,", "and of the new church bell"},     {"that the parish had bought", "for forty pounds in silver."},
            {"The letters were kept together", "in a box under the stairs"},  {"until a grandson found them", "and gave them to the library."}};
        writeTiffVolume(volume, pages, [](int p) { return text[size_t(p) % text.size()]; }, 1300, 420, 1.4);
        const QString project = m_dir.filePath("reader.quire");
        const QStringList run = {"transcribe", volume, "--project", project, "--engine", "reader", "--lang", "eng"};
        auto doneCount = [&] {
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::ReadOnly);
            if (!store) return 0;
            auto c = (*store)->counts();
            return c ? c->done : 0;
        };
        std::mt19937 rng(20261129);
        int kills = 0;
        while (doneCount() < pages - 2 && kills < 6) {
            const int before = doneCount();
            QProcess h;
            h.start(QStringLiteral(QUIRE_CLI_PATH), run);
            QVERIFY(h.waitForStarted());
            // Kill once at least one more page is committed, at a random moment of the next one.
            QElapsedTimer t;
            t.start();
            while (doneCount() <= before && h.state() == QProcess::Running && t.elapsed() < 120000) QThread::msleep(20);
            QThread::msleep(rng() % 150);
            if (h.state() != QProcess::Running) break;
            h.kill();
            h.waitForFinished();
            auto store = ProjectStore::open(project.toStdString(), ProjectStore::Mode::ReadOnly);
            QVERIFY(store);
            QCOMPARE(QString::fromStdString((*store)->integrityCheck().value()), QString("ok"));
            if ((*store)->counts()->queued == 0) break;  // it finished just before the kill
            ++kills;
            QVERIFY((*store)->decoderState()->has_value());  // the context of the committed pages
        }
        QVERIFY2(kills >= 2, qPrintable(QString("only %1 kills").arg(kills)));
        const auto finish = runCli(run);
        QVERIFY2(finish.exitCode == 0,
                 qPrintable(finish.err + runCli({"status", "--project", project, "--json", "--pages"}).out.left(3000)));
        QVERIFY2(finish.err.contains("continues with the context it had"), qPrintable(finish.err));
        const QString ref = m_dir.filePath("reader-reference.quire");
        QCOMPARE(runCli({"transcribe", volume, "--project", ref, "--engine", "reader", "--lang", "eng"}).exitCode, 0);
        QCOMPARE(runCli({"export", "--project", project, "--format", "txt", "--out", m_dir.filePath("ra")}).exitCode, 0);
        QCOMPARE(runCli({"export", "--project", ref, "--format", "txt", "--out", m_dir.filePath("rb")}).exitCode, 0);
        QCOMPARE(readFile(m_dir.filePath("ra/book.txt")), readFile(m_dir.filePath("rb/book.txt")));
        qInfo("reader: %d kills, resumed with its context each time, text equal to an uninterrupted run's", kills);
    }
};

QTEST_GUILESS_MAIN(TestCrash)
#include "tst_crash.moc"
