// The decoder's device path (engine/src/decoder/step_backend.h). The mirror runs it in plain loops
// on the host, so these tests check, without a GPU, everything the session does for a device:
// which slots it copies, which gated blocks it stages, the spans it hands over, the keys and values
// it takes back — against the CPU session, step by step, on volumes whose pages leave the window
// and come back through the gate. The same comparison on a GPU is tools/gpu/decoder_device_check
// (ctest label gpu; it skips without one); here the CUDA device's absence is checked to be a clear
// error.
#include <QtTest>

#include <map>
#include <random>

#include "quire/core/backend.h"
#include "quire/decoder/session.h"
#include "test_util.h"

using namespace quire;
using namespace quire::decoder;
using namespace quire::test;

namespace {

AttentionParams params(const QString& mode) {
    AttentionParams p;
    p.mode = *parseAttentionMode(mode.toStdString());
    p.recentTokens = 24;
    p.maxPageTokens = 40;
    p.gatedPages = 2;
    p.blocksPerGatedPage = 2;
    p.gatedCachePages = 1;  // pages are computed again often: staged blocks come and go
    return p;
}

struct Compared {
    double worst = 0;
    int worstStep = 0, steps = 0, sameTokens = 0, pages = 0;
    int tracked = 0, sameAttended = 0;  // steps with a most-attended visual token, and agreeing on it
    int64_t uploads = 0;
};

// Runs `steps` greedy steps on two sessions fed the same tokens (a's choices; a page break every
// 30 tokens, line ends every 7 with line-aligned positions), comparing logits and attended
// positions at every step.
Compared compare(DecodeSession& a, DecodeSession& b, const ModelConfig& cfg, int steps, bool checkPositions) {
    Compared r;
    int fed = -1, token = cfg.bosTokenId;
    for (int step = 0; step < steps; ++step) {
        const int page = a.stats().currentPage;
        while (fed < page + a.params().windowAfter) {
            ++fed;
            const int n = 20 + fed % 3 * 10;
            const auto f = cfg.visualTokenIds ? pageWithIds(fed, n, cfg.visualDim, 5, cfg.visualEvidenceIds)
                                              : pageFeatures(fed, n, cfg.visualDim);
            if (!a.addPage(fed, f.data(), n) || !b.addPage(fed, f.data(), n)) return r;
        }
        auto ra = a.step(token);
        auto rb = b.step(token);
        if (!ra || !rb) {
            qWarning("step %d: %s", step, (!ra ? ra.status() : rb.status()).message().c_str());
            return r;
        }
        const double diff = relDiff(*rb->logits, *ra->logits);
        if (diff > r.worst) r.worst = diff, r.worstStep = step;
        const auto best = [](const std::vector<float>& l) { return int(std::max_element(l.begin() + 7, l.end()) - l.begin()); };
        const int next = best(*ra->logits);
        r.sameTokens += next == best(*rb->logits);
        if (ra->attendedVisual >= 0) ++r.tracked, r.sameAttended += ra->attendedVisual == rb->attendedVisual;
        if (checkPositions && a.lastAttendedPositions() != b.lastAttendedPositions()) {
            qWarning("step %d: attended positions differ", step);
            return r;
        }
        ++r.steps;
        token = (step % 30 == 29) ? cfg.pageBreakTokenId : cfg.lineAlignedPositions() && step % 7 == 6 ? 4 + 2 * (step % 2) : next;
    }
    r.pages = a.stats().currentPage;
    r.uploads = b.stats().deviceUploadBlocks;
    return r;
}

// The device memory an SR-SWA session on a mirror of its own holds with `p`'s budgets (weights
// and its slots): what a small device is sized against.
size_t mirrorSessionBytes(const std::shared_ptr<const ModelWeights>& model, AttentionParams p) {
    p.device = StepDevice::Mirror;
    DecodeSession probe(model, p);
    return probe.begin({1}) && probe.stats().onDevice ? probe.stats().deviceBytes : 0;
}

}  // namespace

class TestDeviceDecoder : public QObject {
    Q_OBJECT
private slots:
    void mirrorMatchesTheCpuSession_data() {
        QTest::addColumn<QString>("mode");
        QTest::addColumn<int>("maxPositions");
        QTest::addColumn<bool>("lineAligned");
        QTest::addColumn<bool>("track");
        QTest::addColumn<int>("evidenceIds");
        QTest::newRow("srswa") << "srswa" << (1 << 20) << false << false << 0;
        QTest::newRow("srswa, tracking attention") << "srswa" << (1 << 20) << false << true << 0;
        QTest::newRow("srswa, framed, line-aligned, tracking") << "srswa" << 256 << true << true << 0;
        QTest::newRow("srswa, line-aligned, evidence ids") << "srswa" << (1 << 20) << true << false << 2;
        QTest::newRow("rswa") << "rswa" << (1 << 20) << false << false << 0;
        QTest::newRow("full") << "full" << (1 << 20) << false << false << 0;
    }
    void mirrorMatchesTheCpuSession() {
        QFETCH(QString, mode);
        QFETCH(int, maxPositions);
        QFETCH(bool, lineAligned);
        QFETCH(bool, track);
        QFETCH(int, evidenceIds);
        ModelConfig cfg = tinyDecoderConfig();
        cfg.maxPositions = maxPositions;
        if (lineAligned) makeLineAligned(cfg);
        cfg.visualEvidenceIds = evidenceIds;
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 41));
        AttentionParams cpu = params(mode);
        cpu.trackAttention = track;
        AttentionParams dev = cpu;
        dev.device = StepDevice::Mirror;
        DecodeSession a(model, cpu), b(model, dev);
        QVERIFY(a.begin({1, 5}) && b.begin({1, 5}));
        const int steps = mode == "full" ? 600 : 2000;
        const Compared r = compare(a, b, cfg, steps, true);
        QCOMPARE(r.steps, steps);
        QCOMPARE(r.sameTokens, steps);
        QVERIFY2(r.worst <= 1e-4, qPrintable(QString("logits differ by %1 at step %2").arg(r.worst).arg(r.worstStep)));
        if (track) {  // the visual token attended to most (a reader places words by it): the same, but for near ties
            QVERIFY(r.tracked > steps * 9 / 10);
            QVERIFY2(r.sameAttended >= r.tracked * 99 / 100, qPrintable(QString("%1 of %2").arg(r.sameAttended).arg(r.tracked)));
        } else {
            QCOMPARE(r.tracked, 0);
        }
        const SessionStats sb = b.stats();
        QVERIFY2(b.deviceNotice().empty(), b.deviceNotice().c_str());  // every step ran on the device
        QVERIFY(sb.deviceUploadBlocks > 0);
        if (mode == "srswa") {
            QVERIFY(sb.recomputedPages > 0);  // gated pages came back from the spill file (and were staged)
            QCOMPARE(sb.poolCapacityBytes, a.stats().poolCapacityBytes);
        }
        qInfo("%s: %d steps over %d pages, worst relative difference %.2e, %lld blocks copied to the device, most attended "
              "visual token the same at %d of %d steps",
              qPrintable(mode), r.steps, r.pages, r.worst, (long long)r.uploads, r.sameAttended, r.tracked);
    }

    // Sessions on one shared device, stepped together (DecodeSession::stepBatch): each computes
    // what it computes alone on a device of its own, bit for bit (the shared device holds each
    // session's blocks in its own range of slots), and what the CPU session computes within 1e-4;
    // the same greedy tokens. Four volumes turning their pages at their own pace, gated pages
    // computed again and restaged. Then a fault of the shared device in the middle of a batch:
    // every session goes on with the CPU, with a notice, and the same tokens. A session's slots
    // are taken again by the next session. Misuse is refused at begin(). Also with attention
    // tracked (a reader's sessions): the visual token attended to most is each session's own
    // device's at every step, and the sessions still step as one batch (the fault strikes them all).
    void sharedDeviceBatchComputesWhatEachComputesAlone_data() {
        QTest::addColumn<bool>("track");
        QTest::newRow("plain") << false;
        QTest::newRow("tracking attention") << true;
    }
    void sharedDeviceBatchComputesWhatEachComputesAlone() {
        QFETCH(bool, track);
        ModelConfig cfg = tinyDecoderConfig();
        cfg.maxPositions = 256;
        makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 47));
        constexpr int kSessions = 4, kSteps = 500, kFaultAt = 4 * 350 + 2;
        const int breakEvery[kSessions] = {30, 23, 41, 35};
        auto shared = SharedDevice::open(model, StepDevice::Mirror, true, kFaultAt);
        QVERIFY(shared);
        auto sharedFine = SharedDevice::open(model, StepDevice::Mirror);
        QVERIFY(sharedFine);
        struct Run {
            std::unique_ptr<DecodeSession> s;
            int fed = -1, token = 0;
            std::vector<std::vector<float>> logits;
            std::vector<int> attended;  // per step, the visual token attended to most (-1: none, or not tracked)
        };
        // 0: on the CPU alone; 1: on a mirror of its own; 2: on the shared device, in a batch (which
        // fails at kFaultAt); 3: on the other shared device, in a batch.
        std::vector<std::vector<Run>> runs(4);
        for (int kind = 0; kind < 4; ++kind)
            for (int i = 0; i < kSessions; ++i) {
                AttentionParams p = params("srswa");
                p.trackAttention = track;
                if (kind > 0) p.device = StepDevice::Mirror;
                if (kind == 2) p.sharedDevice = *shared;
                if (kind == 3) p.sharedDevice = *sharedFine;
                runs[size_t(kind)].push_back({std::make_unique<DecodeSession>(model, p), -1, cfg.bosTokenId, {}, {}});
                QVERIFY(runs[size_t(kind)].back().s->begin({1, 5, 6 + i}));
            }
        auto feed = [&](Run& r, int i) {
            while (r.fed < r.s->stats().currentPage + (r.token == cfg.pageBreakTokenId ? 1 : 0) + r.s->params().windowAfter) {
                ++r.fed;
                const int n = 20 + (r.fed + i) % 3 * 10;
                const auto f = pageWithIds(r.fed + 50 * i, n, cfg.visualDim, 5);
                if (!r.s->addPage(r.fed, f.data(), n)) return false;
            }
            return true;
        };
        auto next = [&](const std::vector<float>& l, int i, int step) {
            const int best = int(std::max_element(l.begin() + 7, l.end()) - l.begin());
            return step % breakEvery[i] == breakEvery[i] - 1 ? cfg.pageBreakTokenId : step % 7 == 6 ? 4 + 2 * (step % 2) : best;
        };
        for (int kind : {0, 1})
            for (int i = 0; i < kSessions; ++i) {
                Run& r = runs[size_t(kind)][size_t(i)];
                for (int step = 0; step < kSteps; ++step) {
                    QVERIFY(feed(r, i));
                    auto res = r.s->step(r.token);
                    QVERIFY(res);
                    r.logits.push_back(*res->logits);
                    r.attended.push_back(res->attendedVisual);
                    r.token = next(runs[0][size_t(i)].logits[size_t(step)], i, step);  // the CPU's choices for all
                }
            }
        for (int kind : {2, 3}) {
            for (int step = 0; step < kSteps; ++step) {
                std::vector<DecodeSession*> batch;
                std::vector<int> inputs;
                for (int i = 0; i < kSessions; ++i) {
                    Run& r = runs[size_t(kind)][size_t(i)];
                    QVERIFY(feed(r, i));
                    batch.push_back(r.s.get());
                    inputs.push_back(r.token);
                }
                auto res = DecodeSession::stepBatch(batch, inputs);
                QVERIFY2(res, res ? "" : res.status().message().c_str());
                for (int i = 0; i < kSessions; ++i) {
                    Run& r = runs[size_t(kind)][size_t(i)];
                    r.logits.push_back(*(*res)[size_t(i)].logits);
                    r.attended.push_back((*res)[size_t(i)].attendedVisual);
                    r.token = next(runs[0][size_t(i)].logits[size_t(step)], i, step);
                }
            }
        }
        double worst = 0;
        int sameTokens = 0, bitsOwn = 0, beforeFault = 0, tracked = 0, sameAttended = 0;
        const auto best = [](const std::vector<float>& l) { return int(std::max_element(l.begin() + 7, l.end()) - l.begin()); };
        for (int i = 0; i < kSessions; ++i)
            for (int step = 0; step < kSteps; ++step) {
                const auto& cpu = runs[0][size_t(i)].logits[size_t(step)];
                const auto& own = runs[1][size_t(i)].logits[size_t(step)];
                const auto& faulty = runs[2][size_t(i)].logits[size_t(step)];
                const auto& fine = runs[3][size_t(i)].logits[size_t(step)];
                bitsOwn += fine == own;
                if (step < 350) beforeFault += faulty == own;
                const int ownAt = runs[1][size_t(i)].attended[size_t(step)];
                tracked += ownAt >= 0;
                sameAttended += ownAt >= 0 && ownAt == runs[3][size_t(i)].attended[size_t(step)];
                if (!track) QCOMPARE(runs[3][size_t(i)].attended[size_t(step)], -1);
                for (const auto* l : {&own, &faulty, &fine}) {
                    worst = std::max(worst, relDiff(*l, cpu));
                    sameTokens += best(*l) == best(cpu);
                }
            }
        const int total = kSessions * kSteps;
        QCOMPARE(bitsOwn, total);  // the batch on a shared device is each session's own device, bit for bit
        if (track) {
            QVERIFY2(tracked > total * 9 / 10, qPrintable(QString("%1 of %2 steps tracked").arg(tracked).arg(total)));
            QCOMPARE(sameAttended, tracked);
        } else {
            QCOMPARE(tracked, 0);
        }
        QVERIFY2(worst <= 1e-4, qPrintable(QString("logits differ by %1").arg(worst)));
        QCOMPARE(sameTokens, 3 * total);
        // The fault struck inside the batch of step 350 (its third session): the steps before it
        // are the device's, and from it on every session of the batch runs on the CPU.
        QCOMPARE(beforeFault, 350 * kSessions);
        for (int i = 0; i < kSessions; ++i) {
            const std::string& notice = runs[2][size_t(i)].s->deviceNotice();
            QVERIFY2(QString::fromStdString(notice).contains("generated step 350"), notice.c_str());
            QVERIFY(runs[3][size_t(i)].s->deviceNotice().empty());
            QVERIFY(runs[3][size_t(i)].s->stats().recomputedPages > 0);
            QVERIFY(runs[3][size_t(i)].s->stats().currentPage >= 10);
        }
        if (track) return;
        // A session's slots go back to the shared device when it ends, and the next one takes them.
        const size_t bytes = runs[3][0].s->stats().deviceBytes;
        runs[3][1].s.reset();
        AttentionParams p = params("srswa");
        p.device = StepDevice::Mirror, p.sharedDevice = *sharedFine;
        DecodeSession again(model, p);
        QVERIFY(again.begin({1, 5}));
        const auto f = pageWithIds(0, 20, cfg.visualDim, 5);
        QVERIFY(again.addPage(0, f.data(), 20));
        QVERIFY(again.step(cfg.bosTokenId));
        QCOMPARE(again.stats().deviceBytes, bytes);
        // Refused: R-SWA on a shared device (its memory grows), another model's shared device.
        AttentionParams rswa = params("rswa");
        rswa.device = StepDevice::Mirror, rswa.sharedDevice = *sharedFine;
        DecodeSession growing(model, rswa);
        const Status refused = growing.begin({1, 5});
        QVERIFY(!refused);
        QVERIFY(QString::fromStdString(refused.message()).contains("SR-SWA"));
        auto other = std::make_shared<const ModelWeights>(randomModel(cfg, 48));
        DecodeSession foreign(other, p);
        QVERIFY(!foreign.begin({1, 5}));
        QVERIFY(!SharedDevice::open(model, StepDevice::Cpu));
    }

    // A session restored from a saved state onto a device continues as the CPU session does.
    void mirrorContinuesARestoredSession() {
        ModelConfig cfg = tinyDecoderConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 43));
        AttentionParams cpu = params("srswa");
        DecodeSession a(model, cpu);
        QVERIFY(a.begin({1, 5}));
        std::map<int, std::vector<float>> inputs;
        int fed = -1, token = cfg.bosTokenId;
        auto feed = [&](DecodeSession& s, int upTo) {
            while (fed < upTo) {
                ++fed;
                const int n = 20 + fed % 3 * 10;
                inputs[fed] = pageFeatures(fed, n, cfg.visualDim);
                QVERIFY(s.addPage(fed, inputs[fed].data(), n));
            }
        };
        for (int step = 0; step < 400; ++step) {
            feed(a, a.stats().currentPage + cpu.windowAfter);
            auto r = a.step(token);
            QVERIFY(r);
            token = step % 30 == 29 ? cfg.pageBreakTokenId : int(std::max_element(r->logits->begin() + 7, r->logits->end()) - r->logits->begin());
        }
        const std::string state = a.saveState();
        AttentionParams dev = cpu;
        dev.device = StepDevice::Mirror;
        auto restored = DecodeSession::restore(model, dev, state, [&](int page) -> Result<std::vector<float>> {
            std::vector<float> v = inputs.at(page);
            const auto summary = a.pageSummary(page);
            v.insert(v.end(), summary.begin(), summary.end());
            return v;
        });
        QVERIFY2(restored, restored ? "" : restored.status().message().c_str());
        DecodeSession& b = **restored;
        for (int step = 400; step < 800; ++step) {
            const int upTo = a.stats().currentPage + cpu.windowAfter;
            while (fed < upTo) {
                ++fed;
                const int n = 20 + fed % 3 * 10;
                inputs[fed] = pageFeatures(fed, n, cfg.visualDim);
                QVERIFY(a.addPage(fed, inputs[fed].data(), n) && b.addPage(fed, inputs[fed].data(), n));
            }
            auto ra = a.step(token);
            auto rb = b.step(token);
            QVERIFY(ra && rb);
            QVERIFY2(relDiff(*rb->logits, *ra->logits) <= 1e-4, qPrintable(QString("step %1").arg(step)));
            token = step % 30 == 29 ? cfg.pageBreakTokenId : int(std::max_element(ra->logits->begin() + 7, ra->logits->end()) - ra->logits->begin());
        }
    }

    // What the device path cannot do yet is refused at begin(), not computed differently.
    void deviceRefusesWhatItCannotCompute() {
        auto model = std::make_shared<const ModelWeights>(randomModel(tinyDecoderConfig(), 3));
        AttentionParams p = params("srswa");
        p.device = StepDevice::Mirror;
        p.measureRecall = true;
        DecodeSession s(model, p);
        const Status st = s.begin({1});
        QVERIFY(!st);
        QVERIFY2(QString::fromStdString(st.message()).contains("recall probe"), st.message().c_str());
    }

    // A device without the memory a session asks for (AttentionParams::deviceMemoryLimit makes the
    // mirror a small GPU): the session halves its gate and selector budgets until its memory fits,
    // and computes what the CPU computes with those budgets; stats() and the notice say so. Where
    // not even the session without gated pages fits, it reads on the CPU with the budgets asked;
    // without the fallback begin() fails as out of memory. A restored state saved with the larger
    // budgets resumes with the smaller ones.
    void deviceShortOfMemoryCutsBudgetsBeforeTheCpu() {
        const ModelConfig cfg = tinyDecoderConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 53));
        AttentionParams dev = params("srswa");
        dev.device = StepDevice::Mirror;
        const size_t full = mirrorSessionBytes(model, dev);
        const size_t weights = model->parameterCount() * sizeof(float);
        QVERIFY(full > weights);

        dev.deviceMemoryLimit = full - 1;  // one slot short
        DecodeSession b(model, dev);
        QVERIFY(b.begin({1, 5}));
        SessionStats sb = b.stats();
        QVERIFY(sb.onDevice);
        QCOMPARE(sb.deviceBudgetCuts, 1);
        QCOMPARE(sb.gatedPages, 1);
        QCOMPARE(sb.blocksPerGatedPage, 2);
        QVERIFY(sb.deviceBytes <= full - 1);
        const QString notice = QString::fromStdString(b.deviceNotice());
        QVERIFY2(notice.contains("with 1 gated pages of 2 blocks instead of 2 of 2") && notice.contains("out of memory"),
                 qPrintable(notice));
        AttentionParams cut = params("srswa");
        cut.gatedPages = 1;
        DecodeSession a(model, cut);
        QVERIFY(a.begin({1, 5}));
        const Compared r = compare(a, b, cfg, 1000, true);
        QCOMPARE(r.steps, 1000);
        QCOMPARE(r.sameTokens, 1000);
        QVERIFY2(r.worst <= 1e-4, qPrintable(QString("logits differ by %1 at step %2").arg(r.worst).arg(r.worstStep)));
        QVERIFY(b.stats().recomputedPages > 0);  // the one gated page came and went
        QVERIFY(b.stats().onDevice);

        // A state saved with the budgets asked resumes on the small device with the cut ones.
        AttentionParams asked = params("srswa");
        DecodeSession saved(model, asked), twin(model, asked);
        QVERIFY(saved.begin({1, 5}) && twin.begin({1, 5}));
        std::map<int, std::vector<float>> fedPages;
        int token = cfg.bosTokenId;
        for (int step = 0; step < 200; ++step) {
            while (int(fedPages.size()) <= saved.stats().currentPage + asked.windowAfter) {
                const int pg = int(fedPages.size()), n = 20 + pg % 3 * 10;
                fedPages[pg] = pageFeatures(pg, n, cfg.visualDim);
                QVERIFY(saved.addPage(pg, fedPages[pg].data(), n));
            }
            auto res = saved.step(token);
            QVERIFY(res);
            token = step % 30 == 29 ? cfg.pageBreakTokenId : int(std::max_element(res->logits->begin() + 7, res->logits->end()) - res->logits->begin());
        }
        QVERIFY(!saved.gatedPages().empty());
        auto resumed = DecodeSession::restore(model, dev, saved.saveState(), [&](int pg) -> Result<std::vector<float>> {
            return fedPages.at(pg);
        });
        QVERIFY2(resumed, resumed ? "" : resumed.status().message().c_str());
        QCOMPARE((*resumed)->stats().gatedPages, 1);
        QVERIFY((*resumed)->gatedPages().size() <= 1);
        for (int step = 0; step < 50; ++step) QVERIFY((*resumed)->step(7 + step % 20));

        // Only the weights fit: the CPU, with the budgets asked and its own results.
        dev.deviceMemoryLimit = weights + 1024;
        DecodeSession c(model, dev);
        QVERIFY(c.begin({1, 5}));
        const SessionStats sc = c.stats();
        QVERIFY(!sc.onDevice);
        QCOMPARE(sc.deviceBudgetCuts, 0);
        QCOMPARE(sc.gatedPages, 2);
        QVERIFY2(QString::fromStdString(c.deviceNotice()).startsWith("decoding on the CPU: device mirror: out of memory"),
                 c.deviceNotice().c_str());
        DecodeSession cpuAsked(model, params("srswa"));
        QVERIFY(cpuAsked.begin({1, 5}));
        const Compared rc = compare(cpuAsked, c, cfg, 300, true);
        QCOMPARE(rc.steps, 300);
        QCOMPARE(rc.worst, 0.0);
        dev.deviceFallback = false;
        DecodeSession d(model, dev);
        const Status refused = d.begin({1, 5});
        QVERIFY(!refused);
        QCOMPARE(refused.code(), ErrorCode::OutOfMemory);
        // Not even the weights: the CPU from the start.
        dev.deviceFallback = true;
        dev.deviceMemoryLimit = 1024;
        DecodeSession e(model, dev);
        QVERIFY(e.begin({1, 5}));
        QVERIFY(!e.stats().onDevice);
        QVERIFY2(QString::fromStdString(e.deviceNotice()).contains("out of memory for the weights"), e.deviceNotice().c_str());
    }

    // On a shared device short of memory the first session gets its budgets and the next one,
    // which finds less room, smaller ones; the batch steps both, each as the CPU with its budgets.
    void sharedDeviceShortOfMemoryCutsTheLaterSession() {
        const ModelConfig cfg = tinyDecoderConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 59));
        AttentionParams dev = params("srswa");
        dev.device = StepDevice::Mirror;
        const size_t full = mirrorSessionBytes(model, dev);
        const size_t weights = model->parameterCount() * sizeof(float), perSession = full - weights;
        auto shared = SharedDevice::open(model, StepDevice::Mirror, true, -1, weights + 2 * perSession - 1);
        QVERIFY(shared);
        dev.sharedDevice = *shared;
        DecodeSession first(model, dev), second(model, dev);
        QVERIFY(first.begin({1, 5}) && second.begin({1, 6}));
        QCOMPARE(first.stats().deviceBudgetCuts, 0);
        QVERIFY(second.stats().deviceBudgetCuts >= 1);
        QVERIFY(first.stats().onDevice && second.stats().onDevice);
        AttentionParams cutCpu = params("srswa");
        cutCpu.gatedPages = second.stats().gatedPages, cutCpu.blocksPerGatedPage = second.stats().blocksPerGatedPage;
        DecodeSession firstCpu(model, params("srswa")), secondCpu(model, cutCpu);
        QVERIFY(firstCpu.begin({1, 5}) && secondCpu.begin({1, 6}));
        DecodeSession* devs[2] = {&first, &second};
        DecodeSession* cpus[2] = {&firstCpu, &secondCpu};
        int fed[2] = {-1, -1}, tokens[2] = {cfg.bosTokenId, cfg.bosTokenId};
        double worst = 0;
        for (int step = 0; step < 400; ++step) {
            for (int i = 0; i < 2; ++i)
                while (fed[i] < cpus[i]->stats().currentPage + dev.windowAfter) {
                    ++fed[i];
                    const int n = 20 + (fed[i] + i) % 3 * 10;
                    const auto f = pageFeatures(fed[i] + 50 * i, n, cfg.visualDim);
                    QVERIFY(cpus[i]->addPage(fed[i], f.data(), n) && devs[i]->addPage(fed[i], f.data(), n));
                }
            auto batch = DecodeSession::stepBatch({&first, &second}, {tokens[0], tokens[1]});
            QVERIFY2(batch, batch ? "" : batch.status().message().c_str());
            for (int i = 0; i < 2; ++i) {
                auto alone = cpus[i]->step(tokens[i]);
                QVERIFY(alone);
                worst = std::max(worst, relDiff(*(*batch)[size_t(i)].logits, *alone->logits));
                tokens[i] = step % 30 == 29 ? cfg.pageBreakTokenId
                                            : int(std::max_element(alone->logits->begin() + 7, alone->logits->end()) - alone->logits->begin());
            }
        }
        QVERIFY2(worst <= 1e-4, qPrintable(QString("logits differ by %1").arg(worst)));
        QVERIFY(first.stats().onDevice && second.stats().onDevice);
        QVERIFY(second.stats().recomputedPages > 0);
    }

    // A device that fails mid-volume (a GPU out of memory) hands over to the CPU with a notice:
    // the host holds every key and value, so the steps go on with the same logits. Without the
    // fallback the step fails with the device's message.
    void deviceFaultFallsBackToTheCpu() {
        const ModelConfig cfg = tinyDecoderConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 47));
        AttentionParams cpu = params("srswa"), dev = cpu;
        dev.device = StepDevice::Mirror;
        dev.deviceFaultAtStep = 500;
        DecodeSession a(model, cpu), b(model, dev);
        QVERIFY(a.begin({1, 5}) && b.begin({1, 5}));
        const Compared r = compare(a, b, cfg, 1000, true);
        QCOMPARE(r.steps, 1000);
        QCOMPARE(r.sameTokens, 1000);
        QVERIFY2(r.worst <= 1e-4, qPrintable(QString("logits differ by %1 at step %2").arg(r.worst).arg(r.worstStep)));
        const QString notice = QString::fromStdString(b.deviceNotice());
        QVERIFY2(notice.contains("generated step 500 ") && notice.contains("out of memory"), qPrintable(notice));

        dev.deviceFallback = false;
        DecodeSession c(model, dev);
        QVERIFY(c.begin({1, 5}));
        const auto f = pageFeatures(0, 20, cfg.visualDim);
        QVERIFY(c.addPage(0, f.data(), 20));
        for (int i = 0; i < 500; ++i) QVERIFY(c.step(7 + i % 20));
        const auto failed = c.step(7);
        QVERIFY(!failed);
        QVERIFY2(failed.status().message().find("out of memory") != std::string::npos, failed.status().message().c_str());
    }

    // Without a GPU (or without the CUDA backend built) a CUDA session decodes on the CPU and says
    // why; without the fallback it fails at begin() with the reason.
    void cudaWithoutADeviceIsAClearError() {
        if (!gpuDevices().empty()) QSKIP("a GPU is present: decoder_device_check covers it");
        const ModelConfig cfg = tinyDecoderConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 3));
        AttentionParams p = params("srswa");
        p.device = StepDevice::Cuda;
        p.deviceFallback = false;
        DecodeSession s(model, p);
        const Status st = s.begin({1});
        QVERIFY(!st);
        QVERIFY2(QString::fromStdString(st.message()).contains("CUDA"), st.message().c_str());
        QVERIFY(!s.step(1));  // and stays refused

        p.deviceFallback = true;
        AttentionParams cpu = params("srswa");
        DecodeSession a(model, cpu), b(model, p);
        QVERIFY(a.begin({1, 5}) && b.begin({1, 5}));
        QVERIFY2(QString::fromStdString(b.deviceNotice()).contains("CUDA"), b.deviceNotice().c_str());
        const Compared r = compare(a, b, cfg, 200, true);
        QCOMPARE(r.steps, 200);
        QCOMPARE(r.worst, 0.0);  // the CPU's own steps
    }
};

QTEST_GUILESS_MAIN(TestDeviceDecoder)
#include "tst_device_decoder.moc"
