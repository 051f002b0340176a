// quire-server end to end, on loopback: each test starts its own server (port 0, a fresh data
// folder) and talks to it over HTTP as a client would.
#include <httplib.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <QTextStream>
#include <QThread>

#include <atomic>
#include <memory>
#include <netinet/in.h>
#include <thread>
#include <opencv2/imgcodecs.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include "test_util.h"

using namespace quire::test;

namespace {

const char* kToken = "tst-server-token-0123456789";

// A server or Redis started by a test dies with the test, even when the test itself crashes:
// started through util-linux's setpriv, which asks for SIGKILL when its parent dies, then execs it.
void startDyingWithTheTest(QProcess& p, const QString& program, const QStringList& args) {
    p.start("setpriv", QStringList{"--pdeathsig", "KILL", "--", program} + args);
}

QJsonObject json(const std::string& body) { return QJsonDocument::fromJson(QByteArray::fromStdString(body)).object(); }

// A running quire-server and a client that carries the token. Its log goes to a file (a pipe
// nobody drains would stop the server once full).
struct Server {
    QProcess process;
    int port = 0;
    QString log, logFile;

    bool start(const QString& data, const QStringList& extra = {}) {
        static int started = 0;
        logFile = data + QString("-server%1.log").arg(++started);
        process.setProcessChannelMode(QProcess::MergedChannels);
        process.setStandardOutputFile(logFile, QIODevice::Truncate);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QUIRE_SERVER_TOKEN", kToken);
        process.setProcessEnvironment(env);
        startDyingWithTheTest(process, QStringLiteral(QUIRE_SERVER_PATH), QStringList{"--data", data, "--port", "0"} + extra);
        if (!process.waitForStarted()) return false;
        QElapsedTimer t;
        t.start();
        static const QRegularExpression listening("listening on https?://127.0.0.1:(\\d+)");
        while (t.elapsed() < 60000) {
            QThread::msleep(50);
            if (auto m = listening.match(output()); m.hasMatch()) {
                port = m.captured(1).toInt();
                return true;
            }
            if (process.state() == QProcess::NotRunning) return false;
        }
        return false;
    }
    QString output() {
        log = QString::fromStdString(readFile(logFile));
        return log;
    }
    void kill() {
        process.kill();
        process.waitForFinished();
    }
    std::unique_ptr<httplib::Client> client(const char* token = kToken) const {
        auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
        c->set_read_timeout(600, 0);
        if (token) c->set_bearer_token_auth(token);
        return c;
    }

    ~Server() {
        if (process.state() != QProcess::NotRunning) {
            process.terminate();
            if (!process.waitForFinished(30000)) kill();
        }
    }
};

httplib::MultipartFormDataItems form(const QString& file, const std::string& more = {}, const std::string& value = {}) {
    httplib::MultipartFormDataItems items{{"file", readFile(file), QFileInfo(file).fileName().toStdString(), "application/octet-stream"}};
    if (!more.empty()) items.push_back({more, value, "", ""});
    return items;
}

// Polls a job until it is done, failed or cancelled.
QJsonObject waitForJob(httplib::Client& c, const std::string& id, int seconds = 600) {
    QElapsedTimer t;
    t.start();
    QJsonObject o;
    while (t.elapsed() < seconds * 1000) {
        auto r = c.Get("/v1/jobs/" + id);
        if (!r) return {};
        o = json(r->body);
        const QString s = o.value("state").toString();
        if (s == "done" || s == "failed" || s == "cancelled") return o;
        QThread::msleep(200);
    }
    return o;
}

// A loopback port nobody listens on at this moment.
int freePort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

// A redis-server of the test's own on loopback (nothing saved to disk), stopped with the test.
struct Redis {
    QProcess process;
    QString address;
    bool start(const QString& dir) {
        const int port = freePort();
        if (port <= 0) return false;
        QDir().mkpath(dir);
        process.setProcessChannelMode(QProcess::MergedChannels);
        startDyingWithTheTest(process, "redis-server",
                              {"--port", QString::number(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir});
        QElapsedTimer t;
        t.start();
        QString out;
        while (t.elapsed() < 30000 && process.state() != QProcess::NotRunning) {
            process.waitForReadyRead(200);
            out += QString::fromUtf8(process.readAll());
            if (out.contains("Ready to accept connections")) {
                address = QString("127.0.0.1:%1").arg(port);
                return true;
            }
        }
        qWarning("%s", qPrintable(out));
        return false;
    }
    ~Redis() {
        process.terminate();
        if (!process.waitForFinished(10000)) process.kill();
    }
};

}  // namespace

class TestServer : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::string m_cliMarkdown;  // the sample read by quire-cli: what the server must export too

    QString data(const QString& name) { return m_dir.filePath(name); }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        const auto r = runCli({"transcribe", samplePdf(), "--project", data("cli.quire"), "--export", "md", "--out", data("cli-out")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        m_cliMarkdown = readFile(data("cli-out/book.md"));
        QVERIFY(m_cliMarkdown.size() > 1000);
    }
    // The corpus has an unreadable file and names that are not UTF-8, which QDir cannot remove.
    void cleanupTestCase() {
        runProgram("chmod", {"-R", "u+rwX", m_dir.path()});
        runProgram("rm", {"-rf", data("corpus")});
    }

    // No token, a wrong token, a token: 401, 401, 200; the health checks need none. The token
    // never appears in the server's log.
    void callsNeedTheToken() {
        Server s;
        QVERIFY2(s.start(data("auth")), qPrintable(s.log));
        auto none = s.client(nullptr);
        QCOMPARE(none->Get("/healthz")->status, 200);
        QCOMPARE(none->Get("/readyz")->status, 200);
        auto r = none->Get("/v1/jobs");
        QCOMPARE(r->status, 401);
        QVERIFY(r->get_header_value("WWW-Authenticate") == "Bearer");
        QCOMPARE(s.client("a-wrong-token-of-some-length")->Get("/v1/jobs")->status, 401);
        QCOMPARE(none->Get("/metrics")->status, 401);
        auto ok = s.client();
        QCOMPARE(ok->Get("/v1/jobs")->status, 200);
        const auto metrics = ok->Get("/metrics");
        QCOMPARE(metrics->status, 200);
        QVERIFY2(metrics->body.find("quire_requests_refused_total{reason=\"unauthorized\"} 3") != std::string::npos,
                 metrics->body.c_str());
        QCOMPARE(ok->Get("/v1/nothing")->status, 404);
        s.process.terminate();
        QVERIFY(s.process.waitForFinished(30000));
        // SIGTERM stops the server cleanly: it once went to an OpenBLAS thread that did not block it
        // and ended the process before a call's log line was written (docs/RELIABILITY.md).
        const QString ended = QString("exit status %1, code %2; the log:\n").arg(int(s.process.exitStatus())).arg(s.process.exitCode());
        QVERIFY2(!s.output().contains(kToken), "the token was logged");
        QVERIFY2(s.output().contains("GET /v1/jobs 401"), qPrintable(ended + s.log));
        QCOMPARE(s.process.exitStatus(), QProcess::NormalExit);
    }

    // With a certificate and key the server speaks HTTPS (and not plain HTTP); a key that does
    // not go with the certificate is refused at the start.
    void tlsWhenACertificateIsGiven() {
        const QString cert = data("tls-cert.pem"), key = data("tls-key.pem");
        const auto gen = runProgram("openssl", {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                                                "-keyout", key, "-out", cert});
        QVERIFY2(gen.exitCode == 0, qPrintable(gen.err));
        Server s;
        QVERIFY2(s.start(data("tls"), {"--tls-cert", cert, "--tls-key", key}), qPrintable(s.log));
        QVERIFY(s.output().contains("listening on https://"));
        httplib::SSLClient tls("127.0.0.1", s.port);
        tls.set_ca_cert_path(cert.toLocal8Bit().constData());
        tls.enable_server_certificate_verification(true);
        tls.set_bearer_token_auth(kToken);
        auto health = tls.Get("/healthz");
        QVERIFY2(health && health->status == 200, health ? "" : httplib::to_string(health.error()).c_str());
        QCOMPARE(tls.Get("/v1/jobs")->status, 200);
        QVERIFY(!s.client()->Get("/healthz"));  // plain HTTP gets no answer
        const QString otherKey = data("other-key.pem");
        QCOMPARE(runProgram("openssl", {"genrsa", "-out", otherKey, "2048"}).exitCode, 0);
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QUIRE_SERVER_TOKEN", kToken);
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(QUIRE_SERVER_PATH), {"--data", data("tls2"), "--port", "0", "--tls-cert", cert, "--tls-key", otherKey});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("cannot use the certificate"));
    }

    // A server without a token does not start, and says how to give one.
    void noTokenNoServer() {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("QUIRE_SERVER_TOKEN");
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(QUIRE_SERVER_PATH), {"--data", data("no-token"), "--port", "0"});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("QUIRE_SERVER_TOKEN"));
    }

    // The sample volume as an async job: 202 and a Location, each page as an event, the page's
    // words with boxes, and a Markdown export equal to quire-cli's.
    void asyncJobEndToEnd() {
        Server s;
        QVERIFY2(s.start(data("async")), qPrintable(s.log));
        auto c = s.client();
        auto r = c->Post("/v1/jobs", form(samplePdf(), "formats", "md,docx"));
        QVERIFY(r);
        QCOMPARE(r->status, 202);
        const QJsonObject job = json(r->body);
        const std::string id = job.value("id").toString().toStdString();
        QCOMPARE(r->get_header_value("Location"), "/v1/jobs/" + id);
        QCOMPARE(job.value("pages").toInt(), 9);
        // The event stream: nine page events, then the end with the job done.
        std::string stream;
        auto ev = s.client()->Get(("/v1/jobs/" + id + "/events").c_str(), [&](const char* d, size_t n) {
            stream.append(d, n);
            return true;
        });
        QVERIFY(ev && ev->status == 200);
        int pages = 0;
        for (size_t at = stream.find("event: page"); at != std::string::npos; at = stream.find("event: page", at + 1)) ++pages;
        QCOMPARE(pages, 9);
        QVERIFY(stream.find("event: end") != std::string::npos);
        const QJsonObject done = waitForJob(*c, id);
        QCOMPARE(done.value("state").toString(), QString("done"));
        QCOMPARE(done.value("done").toInt(), 9);
        auto page = c->Get("/v1/jobs/" + id + "/pages/1");
        QCOMPARE(page->status, 200);
        const QJsonObject p1 = json(page->body);
        QVERIFY(p1.value("text").toString().contains("Registers"));
        const QJsonObject word = p1.value("lines").toArray().at(0).toObject().value("words").toArray().at(0).toObject();
        QCOMPARE(word.value("box").toArray().size(), 4);
        QVERIFY(word.value("confidence").toDouble() > 0);
        QCOMPARE(c->Get("/v1/jobs/" + id + "/pages/10")->status, 404);
        auto md = c->Get("/v1/jobs/" + id + "/export?format=md");
        QCOMPARE(md->status, 200);
        QVERIFY2(md->body == m_cliMarkdown, "the server's Markdown differs from quire-cli's");
        auto docx = c->Get("/v1/jobs/" + id + "/export?format=docx");
        QCOMPARE(docx->status, 200);
        QVERIFY(docx->body.rfind("PK", 0) == 0);
        auto alto = c->Get("/v1/jobs/" + id + "/export?format=alto");
        QCOMPARE(alto->status, 200);
        QCOMPARE(alto->get_header_value("Content-Type"), std::string("application/zip"));
        QCOMPARE(c->Get("/v1/jobs/" + id + "/export?format=xls")->status, 400);
        const auto metrics = c->Get("/metrics")->body;
        QVERIFY2(metrics.find("quire_page_seconds_count 9") != std::string::npos, metrics.c_str());
        QVERIFY(metrics.find("quire_jobs{state=\"done\"} 1") != std::string::npos);
    }

    // A `path` input names a file under --input-dir; anything outside it, or missing, is refused.
    void pathInputsStayInTheInputFolder() {
        QDir().mkpath(data("inbox"));
        QVERIFY(QFile::copy(samplePdf(), data("inbox/volume.pdf")));
        Server s;
        QVERIFY2(s.start(data("paths"), {"--input-dir", data("inbox")}), qPrintable(s.log));
        auto c = s.client();
        auto path = [&](const std::string& p) { return c->Post("/v1/jobs", httplib::MultipartFormDataItems{{"path", p, "", ""}}); };
        auto ok = path("volume.pdf");
        QCOMPARE(ok->status, 202);
        QCOMPARE(json(ok->body).value("pages").toInt(), 9);
        const auto outside = path("../cli.quire");
        QCOMPARE(outside->status, 400);
        QVERIFY(json(outside->body).value("error").toString().contains("not under the server's input folder"));
        QCOMPARE(path("/etc/passwd")->status, 400);
        QCOMPARE(path("missing.pdf")->status, 404);
        c->Delete("/v1/jobs/" + json(ok->body).value("id").toString().toStdString());
    }

    // The synchronous call answers with the pages; a document over its page cap is refused (413).
    void syncCall() {
        Server s;
        QVERIFY2(s.start(data("sync"), {"--sync-max-pages", "2"}), qPrintable(s.log));
        const QString png = data("page.png");
        QVERIFY(cv::imwrite(png.toStdString(), textPage({"Quire reads a page", "while the caller waits."})));
        auto c = s.client();
        auto r = c->Post("/v1/transcribe", form(png));
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const QJsonObject o = json(r->body);
        QCOMPARE(o.value("state").toString(), QString("done"));
        const QString text = o.value("results").toArray().at(0).toObject().value("text").toString();
        QVERIFY2(text.contains("caller"), qPrintable(text));
        auto big = c->Post("/v1/transcribe", form(samplePdf()));
        QCOMPARE(big->status, 413);
        QVERIFY(json(big->body).value("error").toString().contains("9 pages"));
        // Answered sync jobs are not kept.
        QCOMPARE(json(c->Get("/v1/jobs")->body).value("jobs").toArray().size(), 0);
    }

    // A synchronous call whose pages take longer than --sync-wait: 504, the job is cancelled and
    // not kept.
    void slowSyncCallIsCancelled() {
        Server s;
        QVERIFY2(s.start(data("sync-slow"), {"--sync-wait", "1", "--threads", "1"}), qPrintable(s.log));
        auto c = s.client();
        auto r = c->Post("/v1/transcribe", form(samplePdf()));
        QVERIFY(r);
        QCOMPARE(r->status, 504);
        QVERIFY(json(r->body).value("error").toString().contains("POST /v1/jobs"));
        QElapsedTimer t;
        t.start();
        while (!json(c->Get("/v1/jobs")->body).value("jobs").toArray().isEmpty() && t.elapsed() < 120000) QThread::msleep(100);
        QCOMPARE(json(c->Get("/v1/jobs")->body).value("jobs").toArray().size(), 0);
        QVERIFY(QDir(data("sync-slow/jobs")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty());
    }

    // A synchronous call that waits in the queue behind another job past --sync-wait is cancelled
    // there and not kept either (it stayed listed as cancelled: only a job a worker had taken was
    // removed, so a slow worker start, as under the sanitizers, left it behind).
    void syncCallCancelledInTheQueueIsNotKept() {
        Server s;
        QVERIFY2(s.start(data("sync-queued"), {"--sync-wait", "1", "--workers", "1", "--threads", "1"}), qPrintable(s.log));
        auto c = s.client();
        auto first = c->Post("/v1/jobs", form(samplePdf()));  // nine pages: the one worker is busy
        QVERIFY(first && first->status == 202);
        const std::string id = json(first->body).value("id").toString().toStdString();
        QElapsedTimer t;
        t.start();
        while (json(c->Get(("/v1/jobs/" + id).c_str())->body).value("state").toString() != "running" && t.elapsed() < 120000)
            QThread::msleep(50);
        auto r = c->Post("/v1/transcribe", form(samplePdf()));
        QVERIFY(r);
        QCOMPARE(r->status, 504);
        const QJsonArray jobs = json(c->Get("/v1/jobs")->body).value("jobs").toArray();
        QCOMPARE(jobs.size(), 1);
        QCOMPARE(jobs.at(0).toObject().value("id").toString().toStdString(), id);
        c->Delete(("/v1/jobs/" + id).c_str());
    }

    // --device cuda: the reader's jobs compute on the GPU where there is one; without one the
    // server says so at the start and reads on the CPU (the same text).
    void readerOnTheDeviceOrTheCpu() {
        Server s;
        QVERIFY2(s.start(data("device"), {"--device", "cuda"}), qPrintable(s.log));
        const QString png = data("device-page.png");
        QVERIFY(cv::imwrite(png.toStdString(), textPage({"The reader reads this line", "on whatever device it has."})));
        auto r = s.client()->Post("/v1/transcribe", form(png, "engine", "reader"));
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const QString text = json(r->body).value("results").toArray().at(0).toObject().value("text").toString();
        QVERIFY2(text.contains("reader reads"), qPrintable(text));
        QVERIFY(s.output().contains("--device cuda: "));
        QVERIFY(s.client()->Get("/metrics")->body.find("quire_memory_guarded_bytes{memory=") != std::string::npos);
    }

    // Reader jobs read at the same time decode as one batch (their drafts computed together: the
    // metrics count passes that took more than one), and each job's text is the text it gets read
    // alone (--no-batch, one worker).
    void readerJobsDecodeAsOneBatch() {
        constexpr int kJobs = 3;
        static const char* kWords[] = {"harbour", "meadow", "lantern", "orchard", "granite", "willow", "copper", "thistle"};
        QStringList volumes;
        for (int j = 0; j < kJobs; ++j) {
            volumes << data(QString("batch-volume%1.tif").arg(j));
            writeTiffVolume(volumes.back(), 2, [j](int p) {
                std::vector<std::string> lines;
                for (int l = 0; l < 26; ++l)
                    lines.push_back(std::string(kWords[(j + l) % 8]) + " and " + kWords[(p + 3 * l + j) % 8] + " by the " +
                                    kWords[(5 * l + j + p) % 8] + " line " + std::to_string(l + 1));
                return lines;
            }, 1700, 2200, 1.4);
        }
        auto readAll = [&](const QStringList& extra, std::string* metrics) {
            std::vector<std::string> texts;
            Server s;
            if (!s.start(data(extra.contains("--no-batch") ? "batch-alone" : "batch-together"), QStringList{"--threads", "1"} + extra))
                return texts;
            auto c = s.client();
            std::vector<std::string> ids;
            for (const QString& v : volumes) {
                auto r = c->Post("/v1/jobs", httplib::MultipartFormDataItems{
                                                 {"file", readFile(v), QFileInfo(v).fileName().toStdString(), "image/tiff"},
                                                 {"engine", "reader", "", ""}});
                if (!r || r->status != 202) return texts;
                ids.push_back(json(r->body).value("id").toString().toStdString());
            }
            for (const auto& id : ids) {
                if (waitForJob(*c, id).value("state").toString() != "done") return texts;
                texts.push_back(c->Get("/v1/jobs/" + id + "/export?format=txt")->body);
            }
            *metrics = c->Get("/metrics")->body;
            return texts;
        };
        auto counter = [](const std::string& metrics, const std::string& name) {
            const auto at = metrics.find("\n" + name + " ");
            return at == std::string::npos ? -1LL : std::stoll(metrics.substr(at + name.size() + 2));
        };
        std::string together, alone;
        const auto batched = readAll({"--workers", QString::number(kJobs)}, &together);
        QCOMPARE(int(batched.size()), kJobs);
        const long long passes = counter(together, "quire_decode_batch_passes_total"),
                        drafts = counter(together, "quire_decode_batch_drafts_total");
        qInfo("%lld drafts in %lld passes", drafts, passes);
        QVERIFY2(passes > 0 && drafts > passes, together.c_str());
        QVERIFY(together.find("quire_decode_batch_members 0") != std::string::npos);
        const auto single = readAll({"--workers", "1", "--no-batch"}, &alone);
        QCOMPARE(int(single.size()), kJobs);
        QCOMPARE(counter(alone, "quire_decode_batch_passes_total"), 0LL);
        for (int j = 0; j < kJobs; ++j) {
            QVERIFY2(batched[size_t(j)].find(kWords[j]) != std::string::npos, batched[size_t(j)].c_str());
            QCOMPARE(batched[size_t(j)], single[size_t(j)]);
        }
    }

    // Over the body limit: 413 with the limit in words; over the queue: 429 with Retry-After.
    void limitsAreKept() {
        Server s;
        QVERIFY2(s.start(data("limits"), {"--max-body-mb", "2", "--max-queue", "1", "--workers", "1"}), qPrintable(s.log));
        auto c = s.client();
        const QString big = data("big.bin");
        writeFile(big, std::string(3 << 20, 'x'));
        auto r = c->Post("/v1/jobs", form(big));
        QVERIFY(r);
        QCOMPARE(r->status, 413);
        QVERIFY2(json(r->body).value("error").toString().contains("2 MiB"), r->body.c_str());
        int accepted = 0, refused = 0;
        for (int i = 0; i < 4; ++i) {
            auto j = c->Post("/v1/jobs", form(samplePdf()));
            QVERIFY(j);
            if (j->status == 202) ++accepted;
            if (j->status == 429) {
                ++refused;
                QVERIFY(!j->get_header_value("Retry-After").empty());
            }
        }
        QVERIFY2(accepted >= 1 && accepted <= 2 && refused == 4 - accepted, qPrintable(QString("%1 accepted").arg(accepted)));
        QVERIFY(c->Get("/metrics")->body.find("quire_requests_refused_total{reason=\"queue_full\"} " + std::to_string(refused)) !=
                std::string::npos);
        // A queued job is cancelled at once; its folder stays until it is removed.
        for (const auto& v : json(c->Get("/v1/jobs")->body).value("jobs").toArray())
            QCOMPARE(c->Delete("/v1/jobs/" + v.toObject().value("id").toString().toStdString())->status, 200);
    }

    // SIGKILL mid-job, then a restart on the same data folder: the job resumes, no finished page
    // is lost, and its export equals the uninterrupted one.
    void killedServerResumesItsJobs() {
        std::string id;
        {
            Server s;
            QVERIFY2(s.start(data("resume"), {"--threads", "1"}), qPrintable(s.log));
            auto c = s.client();
            auto r = c->Post("/v1/jobs", form(samplePdf(), "formats", "md"));
            QCOMPARE(r->status, 202);
            id = json(r->body).value("id").toString().toStdString();
            QElapsedTimer t;
            t.start();
            while (t.elapsed() < 300000 && json(c->Get("/v1/jobs/" + id)->body).value("done").toInt() < 3) QThread::msleep(50);
            s.kill();
        }
        Server again;
        QVERIFY2(again.start(data("resume")), qPrintable(again.log));
        auto c = again.client();
        const QJsonObject before = json(c->Get("/v1/jobs/" + id)->body);
        QVERIFY2(before.value("done").toInt() >= 3, "finished pages were lost");
        QVERIFY2(before.value("done").toInt() < 9, "the kill came after the job was done: nothing was resumed");
        const QJsonObject done = waitForJob(*c, id);
        QCOMPARE(done.value("state").toString(), QString("done"));
        QCOMPARE(done.value("done").toInt(), 9);
        QVERIFY2(c->Get("/v1/jobs/" + id + "/export?format=md")->body == m_cliMarkdown, "the resumed job's export differs");
    }

    // SIGTERM while a job runs and a client follows its events: the server stops (the stream
    // ends, it does not wait for the job), exits 0, and the job is done after a restart.
    void terminateStopsWithAStreamOpen() {
        std::string id;
        {
            Server s;
            QVERIFY2(s.start(data("term"), {"--threads", "1"}), qPrintable(s.log));
            auto c = s.client();
            auto r = c->Post("/v1/jobs", form(samplePdf()));
            QCOMPARE(r->status, 202);
            id = json(r->body).value("id").toString().toStdString();
            std::atomic<int> pageEvents{0};
            std::thread follower([&] {
                s.client()->Get(("/v1/jobs/" + id + "/events").c_str(), [&](const char* d, size_t n) {
                    if (std::string(d, n).find("event: page") != std::string::npos) ++pageEvents;
                    return true;
                });
            });
            QElapsedTimer t;
            t.start();
            while (pageEvents == 0 && t.elapsed() < 300000) QThread::msleep(20);
            s.process.terminate();
            const bool stopped = s.process.waitForFinished(120000);
            follower.join();
            QVERIFY2(stopped, "the server did not stop on SIGTERM");
            QCOMPARE(s.process.exitCode(), 0);
            QVERIFY(s.output().contains("stopping: running jobs resume at the next start"));
        }
        Server again;
        QVERIFY2(again.start(data("term")), qPrintable(again.log));
        auto c = again.client();
        QVERIFY2(json(c->Get("/v1/jobs/" + id)->body).value("done").toInt() < 9, "the stop waited for the whole job");
        const QJsonObject done = waitForJob(*c, id);
        QCOMPARE(done.value("state").toString(), QString("done"));
        QVERIFY2(c->Get("/v1/jobs/" + id + "/export?format=md")->body == m_cliMarkdown, "the resumed job's export differs");
    }

    // Retention: a finished job's uploads go first (its text and exports stay), then the job;
    // a job still being read keeps everything meanwhile.
    void retentionNeverTouchesAJobInProgress() {
        Server s;
        QVERIFY2(s.start(data("retention"), {"--retain-hours", "0.0015", "--keep-inputs-hours", "0.0003", "--workers", "2",
                                             "--threads", "1"}),
                 qPrintable(s.log));
        auto c = s.client();
        const QString png = data("short.png");
        QVERIFY(cv::imwrite(png.toStdString(), textPage({"A short job that is soon forgotten."})));
        auto shortJob = c->Post("/v1/jobs", form(png));
        // The long job: the sample three times (27 pages), several times as long as the short job's
        // retention (5.4 s) on a fast machine.
        httplib::MultipartFormDataItems thrice = form(samplePdf());
        thrice.push_back(thrice.front());
        thrice.push_back(thrice.front());
        auto longJob = c->Post("/v1/jobs", thrice);
        QVERIFY(shortJob && longJob && shortJob->status == 202 && longJob->status == 202);
        const std::string shortId = json(shortJob->body).value("id").toString().toStdString();
        const std::string longId = json(longJob->body).value("id").toString().toStdString();
        const QString jobs = data("retention/jobs/");
        QCOMPARE(waitForJob(*c, shortId).value("state").toString(), QString("done"));
        QElapsedTimer t;
        t.start();
        while (QFileInfo::exists(jobs + QString::fromStdString(shortId) + "/inputs") && t.elapsed() < 60000) QThread::msleep(50);
        QVERIFY2(!QFileInfo::exists(jobs + QString::fromStdString(shortId) + "/inputs"), "the uploads were kept");
        auto md = c->Get("/v1/jobs/" + shortId + "/export?format=md");
        QVERIFY2(md->status == 200 && md->body.find("forgotten") != std::string::npos, md->body.c_str());
        while (c->Get("/v1/jobs/" + shortId)->status != 404 && t.elapsed() < 120000) QThread::msleep(100);
        QCOMPARE(c->Get("/v1/jobs/" + shortId)->status, 404);
        QVERIFY(!QFileInfo::exists(jobs + QString::fromStdString(shortId)));
        const QJsonObject running = json(c->Get("/v1/jobs/" + longId)->body);
        QVERIFY2(running.value("state").toString() == "running", "the long job ended before the short one was removed: nothing was shown");
        QVERIFY(QFileInfo::exists(jobs + QString::fromStdString(longId) + "/inputs"));
        QCOMPARE(waitForJob(*c, longId).value("done").toInt(), 27);
    }

    // The CLI's bad-input corpus uploaded one file at a time: the refused ones are answered with a
    // 4xx naming the file, the others accepted (and cancelled); the server goes on serving.
    void hostileUploadsAreAnsweredInWords() {
        const QString corpus = data("corpus");
        const auto gen = runProgram("/usr/bin/python3", {sourceDir() + "/tests/make_hostile_corpus.py", corpus, samplePdf()});
        QVERIFY2(gen.exitCode == 0, qPrintable(gen.err));
        Server s;
        QVERIFY2(s.start(data("hostile"), {"--max-queue", "1000"}), qPrintable(s.log));
        auto c = s.client();
        QFile manifest(corpus + "/MANIFEST");
        QVERIFY(manifest.open(QIODevice::ReadOnly));
        QTextStream in(&manifest);
        int cases = 0;
        while (!in.atEnd()) {
            const QStringList parts = in.readLine().split('\t');
            if (parts.size() != 2) continue;
            const QByteArray name = QByteArray::fromPercentEncoding(parts[1].toLatin1());
            QFile f(QDir(corpus).filePath(QString::fromLocal8Bit(name)));
            if (!f.open(QIODevice::ReadOnly)) continue;  // a name this file system's codec cannot spell
            const QByteArray bytes = f.readAll();
            if (bytes.isEmpty()) continue;               // an empty upload is refused before anything (below)
            ++cases;
            auto r = c->Post("/v1/jobs", httplib::MultipartFormDataItems{{"file", bytes.toStdString(), name.toStdString(), ""}});
            QVERIFY2(r, qPrintable("no answer to " + parts[1] + ": the server died?"));
            const QString shown = QString::fromUtf8(name.left(20));
            QVERIFY2(!QString::fromStdString(r->body).contains(m_dir.path()), "an answer shows the server's folders");
            if (parts[0] == "error" && r->status != 202) {
                QVERIFY2(r->status >= 400 && r->status < 500, qPrintable(parts[1] + ": " + QString::number(r->status) + " " + QString::fromStdString(r->body)));
                QVERIFY2(json(r->body).value("error").toString().contains(shown) ||
                             QString::fromStdString(r->body).contains(QString::fromLatin1(name.left(8).toPercentEncoding())),
                         qPrintable(parts[1] + ": " + QString::fromStdString(r->body)));
            } else if (parts[0] == "error") {
                // Found bad only when its page is decoded (as quire-cli finds it): the page fails, in words.
                const std::string id = json(r->body).value("id").toString().toStdString();
                const QJsonObject done = waitForJob(*c, id, 300);
                QVERIFY2(done.value("failed").toInt() >= 1, qPrintable(parts[1] + ": " + QJsonDocument(done).toJson()));
                const QJsonObject page = json(c->Get("/v1/jobs/" + id + "/pages/1")->body);
                QVERIFY2(!page.value("failure").toString().isEmpty(), qPrintable(parts[1]));
                QVERIFY2(!page.value("failure").toString().contains(m_dir.path()), qPrintable(page.value("failure").toString()));
            } else {
                QVERIFY2(r->status == 202 || (r->status >= 400 && r->status < 500),
                         qPrintable(parts[1] + ": " + QString::number(r->status) + " " + QString::fromStdString(r->body)));
                if (r->status == 202) c->Delete("/v1/jobs/" + json(r->body).value("id").toString().toStdString());
            }
        }
        QVERIFY(cases > 40);
        auto empty = c->Post("/v1/jobs", httplib::MultipartFormDataItems{{"file", "", "empty.pdf", ""}});
        QCOMPARE(empty->status, 400);
        QVERIFY(json(empty->body).value("error").toString().contains("empty.pdf"));
        QCOMPARE(c->Post("/v1/jobs", "not a form", "text/plain")->status, 400);
        QCOMPARE(c->Get("/healthz")->status, 200);
        auto good = c->Post("/v1/transcribe", form(corpus + "/good-page.png"));
        QCOMPARE(good->status, 200);
        QVERIFY(QString::fromStdString(good->body).contains("zebras", Qt::CaseInsensitive));
    }

    // Two workers and a front-end sharing a Redis queue and a data folder: a batch of jobs is
    // done, each exactly once, also after the worker reading a long job is killed in its middle
    // (the other takes it over once its heartbeat has been silent for the claim time).
    void redisWorkersShareTheQueue() {
        Redis redis;
        QVERIFY2(redis.start(data("redis")), "redis-server did not start");
        const QString shared = data("shared");
        Server front, a, b;
        QVERIFY2(front.start(shared, {"--redis", redis.address}), qPrintable(front.log));
        const QStringList worker{"--redis", redis.address, "--worker", "--claim-after", "3", "--threads", "1"};
        QVERIFY2(a.start(shared, worker), qPrintable(a.log));
        QVERIFY2(b.start(shared, worker), qPrintable(b.log));
        auto c = front.client();
        std::vector<std::string> ids;
        auto submit = [&](int j, int pages) {
            const QString tif = data(QString("batch-%1.tif").arg(j));
            writeTiffVolume(tif, pages, [j](int p) {
                return std::vector<std::string>{"Volume " + std::to_string(j) + " page " + std::to_string(p + 1),
                                                "kept in the shared queue", "and read by one worker only."};
            }, 1200, 1400, 1.2);
            auto r = c->Post("/v1/jobs", form(tif));
            QVERIFY(r);
            QCOMPARE(r->status, 202);
            ids.push_back(json(r->body).value("id").toString().toStdString());
        };
        // A long job first; whichever worker takes it is killed once the other reads the short
        // ones too (both at work on one queue), long before the long job can be done.
        const int longPages = 16;
        submit(0, longPages);
        const QString longStarted = QString::fromStdString("job " + ids[0] + " started: ");
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 120000 && !a.output().contains(longStarted) && !b.output().contains(longStarted)) QThread::msleep(20);
        const bool aHasIt = a.output().contains(longStarted);
        QVERIFY2(aHasIt || b.output().contains(longStarted), "no worker took the long job");
        Server& victim = aHasIt ? a : b;
        Server& survivor = aHasIt ? b : a;
        for (int j = 1; j < 6; ++j) submit(j, 3);
        while (t.elapsed() < 120000 && !survivor.output().contains(" started: ")) QThread::msleep(20);
        QVERIFY2(survivor.output().contains(" started: "), "the other worker never took a job");
        victim.kill();
        QVERIFY2(!victim.output().contains(QString::fromStdString("job " + ids[0] + " done:")),
                 "the long job was done before its worker was killed: nothing was taken over");
        for (size_t j = 0; j < ids.size(); ++j) {
            const QJsonObject done = waitForJob(*c, ids[j], 300);
            QVERIFY2(done.value("state").toString() == "done" && done.value("done").toInt() == (j == 0 ? longPages : 3),
                     qPrintable(QString::fromStdString(ids[j]) + ": " + QJsonDocument(done).toJson()));
        }
        const QString logs = a.output() + b.output();
        for (const auto& id : ids)
            QVERIFY2(logs.count(QString::fromStdString("job " + id + " done:")) == 1,
                     qPrintable(QString::fromStdString(id) + " was not done exactly once:\n" + logs));
        QVERIFY2(survivor.output().contains(QString::fromStdString("job " + ids[0] + ": taken over from a worker that stopped answering")),
                 qPrintable(survivor.output()));
        // The front-end answers for the workers' jobs: pages and exports.
        QVERIFY(json(c->Get("/v1/jobs/" + ids[0] + "/pages/2")->body).value("text").toString().contains("shared queue"));
        QCOMPARE(c->Get("/v1/jobs/" + ids[5] + "/export?format=txt")->status, 200);
    }

    // installer/k8s passes the offline check (kind by kind, references, quire-server's options),
    // and the check finds a manifest broken on purpose.
    void kubernetesManifestsAreSound() {
        const QString check = sourceDir() + "/tools/k8s_check.py";
        const auto good = runProgram("/usr/bin/python3", {check, sourceDir() + "/installer/k8s", "--server", QUIRE_SERVER_PATH});
        QVERIFY2(good.exitCode == 0, qPrintable(good.out + good.err));
        const QString bad = data("k8s-broken");
        QDir().mkpath(bad);
        for (const QString& f : QDir(sourceDir() + "/installer/k8s").entryList({"*.yaml"}))
            QVERIFY(QFile::copy(sourceDir() + "/installer/k8s/" + f, bad + "/" + f));
        std::string workers = readFile(bad + "/workers.yaml");
        workers.replace(workers.find("\"--claim-after\""), 15, "\"--claim-later\"");
        QFile::remove(bad + "/workers.yaml");
        writeFile(bad + "/workers.yaml", workers);
        const auto broken = runProgram("/usr/bin/python3", {check, bad, "--server", QUIRE_SERVER_PATH});
        QCOMPARE(broken.exitCode, 1);
        QVERIFY2(broken.out.contains("quire-server takes no option --claim-later"), qPrintable(broken.out));
    }

    // Every shell example in docs/API.md runs against a live server and succeeds.
    void apiDocExamplesRun() {
        Server s;
        QVERIFY2(s.start(data("docs")), qPrintable(s.log));
        const QString doc = QString::fromStdString(readFile(sourceDir() + "/docs/API.md"));
        static const QRegularExpression block("```sh\\n(.*?)```", QRegularExpression::DotMatchesEverythingOption);
        QString script = "set -euo pipefail\n";
        int examples = 0;
        for (auto it = block.globalMatch(doc); it.hasNext(); ++examples) script += it.next().captured(1);
        QVERIFY(examples >= 5);
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert("QUIRE", QString("http://127.0.0.1:%1").arg(s.port));
        env.insert("QUIRE_SERVER_TOKEN", kToken);
        env.insert("SAMPLE", samplePdf());
        p.setProcessEnvironment(env);
        p.setWorkingDirectory(data(""));
        p.start("/bin/bash", {"-c", script});
        QVERIFY(p.waitForFinished(600000));
        QVERIFY2(p.exitCode() == 0, qPrintable(QString::fromUtf8(p.readAllStandardError() + p.readAllStandardOutput())));
    }
};

QTEST_GUILESS_MAIN(TestServer)
#include "tst_server.moc"
