// quire-server: Quire's engine, project store and exporters behind an HTTP API (docs/API.md).
#include <httplib.h>
#include <QCoreApplication>

#include <fcntl.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "http_api.h"
#include "job_board.h"
#include "quire/core/backend.h"
#include "quire/core/process_tuning.h"
#include "quire/source/document_source.h"
#include "server_metrics.h"
#include "server_options.h"

namespace {

// SIGTERM and SIGINT write their number to this pipe and nothing more (async-signal-safe); one
// thread reads it and stops the server, since stopping takes locks and joins threads, which a
// handler may not. A signal mask and sigwait were not enough: threads that libraries start before
// main (OpenBLAS's workers) do not inherit the mask, and a SIGTERM the kernel gave one of them
// ended the process at once, without the stop (docs/RELIABILITY.md).
int g_stopPipe[2] = {-1, -1};

extern "C" void onStopSignal(int sig) {
    const int saved = errno;
    const char c = char(sig);
    (void)!write(g_stopPipe[1], &c, 1);
    errno = saved;
}

bool catchStopSignals() {
    if (pipe2(g_stopPipe, O_CLOEXEC) != 0) return false;  // not inherited by quire-render
    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    return sigaction(SIGTERM, &sa, nullptr) == 0 && sigaction(SIGINT, &sa, nullptr) == 0;
}

// Blocks until a stop signal (or wakeStopper) arrives.
void waitForStopSignal() {
    char c = 0;
    while (read(g_stopPipe[0], &c, 1) < 0 && errno == EINTR) {
    }
}

void wakeStopper() { (void)!write(g_stopPipe[1], "", 1); }

}  // namespace

int main(int argc, char** argv) {
    quire::runTesseractSingleThreaded(argv);
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
            std::cout << quire::server::kServerUsage;
            return 0;
        } else if (std::string(argv[i]) == "--version") {
            std::cout << "quire-server " << QUIRE_VERSION_STRING << "\n";
            return 0;
        }
    if (!catchStopSignals()) {
        std::cerr << "quire-server: cannot take SIGTERM and SIGINT\n";
        return 1;
    }
    std::signal(SIGPIPE, SIG_IGN);
    quire::tuneHeapForLargeBuffers();
    QCoreApplication app(argc, argv);  // Qt's JSON and file classes; no event loop runs
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S %^%l%$: %v");
    auto options = quire::server::parseServerOptions(argc, argv, std::getenv("QUIRE_SERVER_TOKEN"));
    if (!options) {
        std::cerr << "quire-server: " << options.status().message() << "\n\n" << quire::server::kServerUsage;
        return 2;
    }
    if (options->device == "cuda") {
        std::string why;
        const auto gpus = quire::gpuDevices(&why);
        if (gpus.empty()) spdlog::warn("--device cuda: no GPU ({}); jobs are read on the CPU", why);
        else spdlog::info("--device cuda: {} ({} MiB); the memory guard watches its memory", gpus.front().name, gpus.front().totalBytes >> 20);
    }
    quire::RecognizerOptions engine;
    if (const char* v = std::getenv("QUIRE_PPOCR_DIR")) engine.ppocrDir = v;
    if (const char* v = std::getenv("QUIRE_READER_MODEL")) engine.readerModel = v;

    quire::server::ServerMetrics metrics;
    quire::server::JobBoard board(*options, engine, quire::pdfHelperIn(QCoreApplication::applicationDirPath().toStdString()),
                                  metrics);
    if (auto s = board.start(); !s) {
        std::cerr << "quire-server: " << s.message() << "\n";
        return 1;
    }
    std::unique_ptr<httplib::Server> server;
    if (!options->tlsCert.empty()) {
        auto tls = std::make_unique<httplib::SSLServer>(options->tlsCert.c_str(), options->tlsKey.c_str());
        if (!tls->is_valid()) {
            std::cerr << "quire-server: cannot use the certificate " << options->tlsCert << " with the key " << options->tlsKey << "\n";
            return 2;
        }
        server = std::move(tls);
    } else {
        server = std::make_unique<httplib::Server>();
    }
    server->set_payload_max_length(options->maxBodyBytes);
    server->new_task_queue = [] { return new httplib::ThreadPool(32); };  // event streams hold a thread each
    quire::server::installRoutes(*server, board, metrics, *options);
    int port = options->port;
    if (port == 0) {
        port = server->bind_to_any_port(options->host);
    } else if (!server->bind_to_port(options->host, port)) {
        port = -1;
    }
    if (port < 0) {
        std::cerr << "quire-server: cannot listen on " << options->host << ":" << options->port << "\n";
        return 1;
    }
    // The line a supervisor (or a test) waits for; with --port 0 it says which port was given.
    spdlog::info("listening on {}://{}:{} (data {})", options->tlsCert.empty() ? "http" : "https", options->host, port,
                 options->dataDir.string());
    // The jobs stop first (event streams end with them), then the listener; the pages in flight
    // are committed, and running jobs resume at the next start.
    std::thread stopper([&] {
        waitForStopSignal();
        spdlog::info("stopping: running jobs resume at the next start");
        board.stop();
        server->stop();
    });
    const bool listened = server->listen_after_bind();
    if (!listened) {
        spdlog::error("the listener failed");
        wakeStopper();
    }
    stopper.join();
    return listened ? 0 : 1;
}
