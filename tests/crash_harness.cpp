// A real transcription with a scripted stream of corrections through the engine API, for the
// crash test: it prints "ack <k> <sequence>" once correction k of page <sequence> is committed.
// Usage: crash_harness INPUT PROJECT SEED
#include <QCoreApplication>

#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

#include "quire/pipeline/transcriber.h"

using namespace quire;

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    if (argc != 4) {
        std::fprintf(stderr, "usage: crash_harness INPUT PROJECT SEED\n");
        return 2;
    }
    auto store = ProjectStore::open(argv[2]);
    if (!store) {
        std::fprintf(stderr, "%s\n", store.status().message().c_str());
        return 2;
    }
    TranscribeParams p;
    p.inputs = {argv[1]};
    p.threads = 1;
    std::atomic<bool> finished{false};
    Status runStatus;
    std::thread run([&] {
        auto worker = ProjectStore::open(argv[2]);  // its own connection, as the GUI's worker has
        if (!worker) runStatus = worker.status();
        else if (auto r = runTranscription(**worker, p); !r) runStatus = r.status();
        finished = true;
    });
    std::mt19937 rng(uint32_t(std::stoul(argv[3])));
    int k = 0;
    while (!finished) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30 + rng() % 120));
        auto pages = (*store)->pages();
        if (!pages) continue;
        std::vector<PageRecord> done;
        for (const auto& pg : *pages)
            if (pg.status == PageStatus::Done) done.push_back(pg);
        if (done.empty()) continue;
        const PageRecord& pg = done[rng() % done.size()];
        ++k;
        const std::string text = "Correction " + std::to_string(k) + " of page " + std::to_string(pg.sequence) +
                                 " (seed " + argv[3] + ")";
        if ((*store)->addCorrection(pg.id, text)) {
            std::printf("ack %d %d %s\n", k, pg.sequence, text.c_str());
            std::fflush(stdout);
        }
    }
    run.join();
    if (!runStatus.isOk()) {
        std::fprintf(stderr, "%s\n", runStatus.message().c_str());
        return 1;
    }
    std::printf("done\n");
    return 0;
}
