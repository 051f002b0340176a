// The decoder's passes that compute many tokens at once against one token at a time: batched
// prefill, two threads, draft steps, several volumes' steps as one batch, a shared device.
#include <QTest>

#include <algorithm>
#include <cstring>
#include <thread>

#include "quire/decoder/model.h"
#include "quire/decoder/session.h"
#include "test_util.h"

using namespace quire;
using namespace quire::decoder;
using namespace quire::test;

namespace {

// Per layer, the attended positions in ascending order (the set, whatever order spans came in).
std::vector<std::vector<int64_t>> sorted(std::vector<std::vector<int64_t>> v) {
    for (auto& l : v) std::sort(l.begin(), l.end());
    return v;
}

}  // namespace

class TestDecoderBatch : public QObject {
    Q_OBJECT

private slots:
    // The page prefill's matrix products give what the decode step's attention gives token by
    // token: pages longer than one 256-row chunk, several sinks, absolute and framed positions.
    void batchedPrefillMatchesTokenByToken_data() {
        QTest::addColumn<int>("maxPositions");
        QTest::newRow("absolute") << (1 << 20);
        QTest::newRow("framed") << 256;
    }
    void batchedPrefillMatchesTokenByToken() {
        QFETCH(int, maxPositions);
        ModelConfig cfg = tinyDecoderConfig();
        cfg.maxPositions = maxPositions;
        cfg.pageAlignedPositions = true;
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 17));
        AttentionParams fast;
        fast.mode = AttentionMode::RSwa;
        fast.maxPageTokens = 700;
        AttentionParams ref = fast;
        ref.referencePrefill = true;
        DecodeSession a(model, fast), b(model, ref);
        QVERIFY(a.begin({1, 7, 8}) && b.begin({1, 7, 8}));
        double worst = 0;
        for (int page = 0; page < 3; ++page) {
            const int count = page == 1 ? 37 : 600;
            const auto f = pageFeatures(page, count, cfg.visualDim);
            QVERIFY(a.addPage(page, f.data(), count) && b.addPage(page, f.data(), count));
            for (int k = 0; k < 5; ++k) {
                const int token = k == 0 && page ? cfg.pageBreakTokenId : 10 + k;
                auto ra = a.step(token);
                auto rb = b.step(token);
                QVERIFY(ra && rb);
                worst = std::max(worst, relDiff(*ra->logits, *rb->logits));
            }
        }
        qInfo("worst relative difference %.2e", worst);
        QVERIFY(worst < 1e-4);
    }

    // A page's prefill on two threads (rows of its matrix products, KV groups of its attention):
    // the same gate summaries and the same logits after it as on one, to the bit, for pages longer
    // than the packed products take (64 rows) and than the attention's row chunks (256), with and
    // without token ids among the visual features.
    void twoThreadsPrefillWhatOneDoes() {
        for (const bool lineAligned : {false, true}) {
            ModelConfig cfg = tinyDecoderConfig();
            if (lineAligned) makeLineAligned(cfg);
            auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 31));
            AttentionParams p;
            p.maxPageTokens = 400;
            AttentionParams p2 = p;
            p2.threads = 2;
            DecodeSession a(model, p), b(model, p2);
            QVERIFY(a.begin({1, 5}));
            QVERIFY(b.begin({1, 5}));
            const int counts[] = {300, 203, 70};
            for (int page = 0; page < 3; ++page) {
                const auto f = lineAligned ? pageWithIds(page, counts[page], cfg.visualDim, 5)
                                           : pageFeatures(page, counts[page], cfg.visualDim);
                QVERIFY(a.addPage(page, f.data(), counts[page]));
                QVERIFY(b.addPage(page, f.data(), counts[page]));
                const auto sa = a.pageSummary(page), sb = b.pageSummary(page);
                QVERIFY(!sa.empty());
                QVERIFY(sa.size() == sb.size() && std::memcmp(sa.data(), sb.data(), sa.size() * sizeof(float)) == 0);
            }
            int token = cfg.bosTokenId;
            for (int i = 0; i < 24; ++i) {
                auto ra = a.step(token);
                auto rb = b.step(token);
                QVERIFY(ra && rb);
                QVERIFY(std::memcmp(ra->logits->data(), rb->logits->data(), ra->logits->size() * sizeof(float)) == 0);
                token = 7 + (token * 13 + i) % (cfg.vocabSize - 7);
            }
        }
    }

    // AttentionParams::threads 2 splits a draft pass (attention by KV group, the weights and the LM
    // head by rows) between two threads: the same logits to the bit, the same attended tokens and
    // the same state as one thread, with gated, framed and line-aligned spans in the drafts.
    void twoThreadsComputeWhatOneDoes() {
        ModelConfig cfg = tinyDecoderConfig();
        cfg.maxPositions = 160;
        cfg.pageAlignedPositions = true;
        makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 29));
        AttentionParams p;
        p.recentTokens = 20;
        p.windowBefore = 1, p.windowAfter = 1;
        p.gatedPages = 2, p.blocksPerGatedPage = 1;
        p.maxPageTokens = 40;
        p.trackAttention = true;
        const int pageTokens = 40, steps = 400;
        AttentionParams p2 = p;
        p2.threads = 2;
        DecodeSession a(model, p), b(model, p2);
        QVERIFY(a.begin({1, 5}));
        QVERIFY(b.begin({1, 5}));
        int fed = -1, at = 0, token = cfg.bosTokenId, compared = 0;
        while (at < steps) {
            const int target = a.stats().currentPage + (token == cfg.pageBreakTokenId ? 1 : 0) + p.windowAfter;
            while (fed < target) {
                ++fed;
                const auto f = pageWithIds(fed, pageTokens, cfg.visualDim, 5);
                QVERIFY(a.addPage(fed, f.data(), pageTokens));
                QVERIFY(b.addPage(fed, f.data(), pageTokens));
            }
            // A draft of up to 12: page breaks every 45 tokens, written line ends every 7.
            std::vector<int> draft{token};
            for (int j = at + 1; j < at + 12 && j % 45 != 0; ++j)
                draft.push_back(j % 7 == 6 ? 4 + 2 * (j % 2) : 7 + (j * 11) % (cfg.vocabSize - 7));
            std::vector<std::vector<float>> logitsA;
            std::vector<int> attendedA;
            std::vector<std::vector<std::vector<int64_t>>> positionsA;
            auto fedA = a.stepDraft(draft, [&](int i, const StepResult& r) {
                logitsA.push_back(*r.logits);
                attendedA.push_back(r.attendedVisual);
                positionsA.push_back(a.lastAttendedPositions());
                return i % 5 != 4;  // a guess refused now and then
            });
            QVERIFY(fedA);
            auto fedB = b.stepDraft(draft, [&](int i, const StepResult& r) {
                const size_t n = size_t(i);
                if (n >= logitsA.size()) return false;
                const bool same = r.logits->size() == logitsA[n].size() &&
                                  std::memcmp(r.logits->data(), logitsA[n].data(), logitsA[n].size() * sizeof(float)) == 0 &&
                                  r.attendedVisual == attendedA[n] && b.lastAttendedPositions() == positionsA[n];
                if (same) ++compared;
                else qWarning("token %d: two threads computed otherwise than one", at + i);
                return i % 5 != 4;
            });
            QVERIFY(fedB);
            QCOMPARE(*fedB, *fedA);
            at += *fedA;
            const int last = draft[size_t(*fedA) - 1];
            token = at % 45 == 0 ? cfg.pageBreakTokenId : 7 + (last * 5 + at) % (cfg.vocabSize - 7);
        }
        QCOMPARE(compared, at);
        QCOMPARE(b.stats().position, a.stats().position);
        QCOMPARE(b.stats().currentPage, a.stats().currentPage);
        QCOMPARE(b.gatedPages(), a.gatedPages());
        QVERIFY(a.stats().currentPage >= 8);
        QVERIFY(!a.gatedPages().empty());
    }

    // Draft verification computes what plain steps compute: a session fed a volume token by token
    // and one fed the same tokens as drafts (with wrong guesses among them, which are not fed)
    // give the same logits, the same attended positions and most-attended visual tokens, and end
    // in the same state. Small budgets so that the gate, the block selector, eviction and (framed)
    // position frames all act; line-aligned positions move the text.
    void draftStepsMatchPlainSteps_data() {
        QTest::addColumn<int>("mode");
        QTest::addColumn<int>("maxPositions");
        QTest::addColumn<bool>("lineAligned");
        QTest::addColumn<int>("rotaryCache");  // 0: the default
        QTest::newRow("srswa") << int(AttentionMode::SrSwa) << (1 << 20) << false << 0;
        QTest::newRow("srswa framed, line-aligned") << int(AttentionMode::SrSwa) << 160 << true << 0;
        // The rotary cache cleared inside draft passes (a pointer into it once outlived a
        // clearing: the text then varied from run to run).
        QTest::newRow("srswa framed, rotary cache of 3") << int(AttentionMode::SrSwa) << 160 << true << 3;
        QTest::newRow("rswa") << int(AttentionMode::RSwa) << (1 << 20) << true << 0;
        QTest::newRow("full") << int(AttentionMode::Full) << (1 << 20) << false << 0;
    }
    void draftStepsMatchPlainSteps() {
        QFETCH(int, mode);
        QFETCH(int, maxPositions);
        QFETCH(bool, lineAligned);
        QFETCH(int, rotaryCache);
        ModelConfig cfg = tinyDecoderConfig();
        cfg.maxPositions = maxPositions;
        cfg.pageAlignedPositions = true;
        if (lineAligned) makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 23));
        AttentionParams p;
        p.mode = AttentionMode(mode);
        p.recentTokens = 20;
        p.windowBefore = 1, p.windowAfter = 1;
        p.gatedPages = 2, p.blocksPerGatedPage = 1;
        p.maxPageTokens = 40;
        p.trackAttention = true;
        const int pageTokens = 40, steps = 500;
        auto page = [&](int n) { return lineAligned ? pageWithIds(n, pageTokens, cfg.visualDim, 5) : pageFeatures(n, pageTokens, cfg.visualDim); };
        // Pages are added ahead of the step that turns to them, as a reader does.
        auto feedPages = [&](DecodeSession& s, int& fed, int input) {
            const int target = s.stats().currentPage + (input == cfg.pageBreakTokenId ? 1 : 0) + p.windowAfter;
            while (fed < target) {
                ++fed;
                const auto f = page(fed);
                if (!s.addPage(fed, f.data(), pageTokens)) return false;
            }
            return true;
        };
        // The plain run: inputs, logits, attended positions and visual tokens, step by step.
        DecodeSession a(model, p);
        QVERIFY(a.begin({1, 5}));
        std::vector<int> inputs;
        std::vector<std::vector<float>> logits;
        std::vector<std::vector<std::vector<int64_t>>> positions;
        std::vector<int> attended;
        int fedA = -1, token = cfg.bosTokenId;
        for (int s = 0; s < steps; ++s) {
            QVERIFY(feedPages(a, fedA, token));
            auto r = a.step(token);
            QVERIFY(r);
            inputs.push_back(token);
            logits.push_back(*r->logits);
            positions.push_back(a.lastAttendedPositions());
            attended.push_back(r->attendedVisual);
            const int best = int(std::max_element(r->logits->begin(), r->logits->end()) - r->logits->begin());
            token = (s % 45 == 44) ? cfg.pageBreakTokenId : lineAligned && s % 7 == 6 ? 4 + 2 * (s % 2) : best;
        }
        // The same tokens as drafts of up to 12, every 13th guess wrong.
        DecodeSession b(model, p);
        if (rotaryCache > 0) b.setRotaryCacheLimit(size_t(rotaryCache));
        QVERIFY(b.begin({1, 5}));
        int fedB = -1, at = 0, calls = 0, longest = 0, positionsDiffer = 0, attendedDiffer = 0;
        double worst = 0;
        while (at < steps) {
            QVERIFY(feedPages(b, fedB, inputs[size_t(at)]));
            std::vector<int> draft;
            for (int j = at; j < std::min(steps, at + 12); ++j)
                draft.push_back(j > at && j % 13 == 0 ? (inputs[size_t(j)] + 1) % cfg.vocabSize : inputs[size_t(j)]);
            auto fed = b.stepDraft(draft, [&](int i, const StepResult& r) {
                const size_t s = size_t(at + i);
                worst = std::max(worst, relDiff(*r.logits, logits[s]));
                attendedDiffer += r.attendedVisual != attended[s];
                positionsDiffer += sorted(b.lastAttendedPositions()) != sorted(positions[s]);
                return size_t(i) + 1 < draft.size() && draft[size_t(i) + 1] == inputs[s + 1];
            });
            QVERIFY(fed);
            ++calls, longest = std::max(longest, *fed);
            at += *fed;
        }
        QCOMPARE(at, steps);
        QCOMPARE(positionsDiffer, 0);
        QCOMPARE(attendedDiffer, 0);
        qInfo("%d steps in %d calls (longest %d), worst relative logit difference %.2e", steps, calls, longest, worst);
        QVERIFY2(worst < 1e-4, qPrintable(QString("logits differ by %1").arg(worst)));
        QVERIFY(calls < steps / 3);  // the drafts were taken many tokens at a time
        QCOMPARE(b.stats().position, a.stats().position);
        QCOMPARE(b.stats().currentPage, a.stats().currentPage);
        QCOMPARE(b.stats().poolUsedBytes, a.stats().poolUsedBytes);
        QVERIFY(a.stats().currentPage >= 10);
    }

    // A batch of sessions stepped together computes what each computes alone, bit for bit: six
    // volumes on one model, in SR-SWA (framed positions and tracking among them), R-SWA and full
    // attention, each turning its pages at its own pace; one on the mirror device (which takes its
    // own steps inside the batch); the first with two threads (the sessions' attention split
    // between them). Then the batch's refusals.
    void batchedStepsMatchSessionsAlone() {
        ModelConfig cfg = tinyDecoderConfig();
        cfg.maxPositions = 160;
        cfg.pageAlignedPositions = true;
        makeLineAligned(cfg);
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 31));
        auto params = [&](int i) {
            AttentionParams p;
            p.mode = i == 3 ? AttentionMode::RSwa : i == 4 ? AttentionMode::Full : AttentionMode::SrSwa;
            p.recentTokens = 20;
            p.windowBefore = 1, p.windowAfter = 1;
            p.gatedPages = 2, p.blocksPerGatedPage = 1;
            p.maxPageTokens = 40;
            p.trackAttention = i != 5;
            p.threads = i == 0 ? 2 : 1;
            if (i == 5) p.device = StepDevice::Mirror;
            return p;
        };
        constexpr int kSessions = 6, kSteps = 300, kPageTokens = 40;
        const int breakEvery[kSessions] = {45, 31, 52, 40, 27, 38};
        struct Run {
            std::unique_ptr<DecodeSession> s;
            int fed = -1, token = 0;
        };
        auto start = [&](std::vector<Run>& runs) {
            for (int i = 0; i < kSessions; ++i) {
                runs.push_back({std::make_unique<DecodeSession>(model, params(i)), -1, cfg.bosTokenId});
                QVERIFY(runs.back().s->begin({1, 5, 6 + i}));
            }
        };
        auto feed = [&](Run& r, int i) {
            const int target = r.s->stats().currentPage + (r.token == cfg.pageBreakTokenId ? 1 : 0) + 1;
            while (r.fed < target) {
                ++r.fed;
                const auto f = pageWithIds(r.fed + 100 * i, kPageTokens, cfg.visualDim, 5);
                if (!r.s->addPage(r.fed, f.data(), kPageTokens)) return false;
            }
            return true;
        };
        auto next = [&](const StepResult& r, int i, int step) {
            const int best = int(std::max_element(r.logits->begin(), r.logits->end()) - r.logits->begin());
            return step % breakEvery[i] == breakEvery[i] - 1 ? cfg.pageBreakTokenId : step % 7 == 6 ? 4 + 2 * (step % 2) : best;
        };
        // Alone: each session's logits, attended positions and visual tokens, step by step.
        std::vector<Run> alone, batch;
        start(alone);
        std::vector<std::vector<std::vector<float>>> logits(kSessions);
        std::vector<std::vector<std::vector<std::vector<int64_t>>>> positions(kSessions);
        std::vector<std::vector<int>> attended(kSessions);
        for (int i = 0; i < kSessions; ++i)
            for (int step = 0; step < kSteps; ++step) {
                Run& r = alone[size_t(i)];
                QVERIFY(feed(r, i));
                auto res = r.s->step(r.token);
                QVERIFY(res);
                logits[size_t(i)].push_back(*res->logits);
                positions[size_t(i)].push_back(r.s->lastAttendedPositions());
                attended[size_t(i)].push_back(res->attendedVisual);
                r.token = next(*res, i, step);
            }
        // Together.
        start(batch);
        int differ = 0;
        for (int step = 0; step < kSteps; ++step) {
            std::vector<DecodeSession*> sessions;
            std::vector<int> inputs;
            for (int i = 0; i < kSessions; ++i) {
                QVERIFY(feed(batch[size_t(i)], i));
                sessions.push_back(batch[size_t(i)].s.get());
                inputs.push_back(batch[size_t(i)].token);
            }
            auto res = DecodeSession::stepBatch(sessions, inputs);
            QVERIFY2(res, res ? "" : res.status().message().c_str());
            QCOMPARE(int(res->size()), kSessions);
            for (int i = 0; i < kSessions; ++i) {
                const StepResult& r = (*res)[size_t(i)];
                const auto& want = logits[size_t(i)][size_t(step)];
                const bool same = r.logits->size() == want.size() &&
                                  std::memcmp(r.logits->data(), want.data(), want.size() * sizeof(float)) == 0 &&
                                  r.attendedVisual == attended[size_t(i)][size_t(step)] &&
                                  batch[size_t(i)].s->lastAttendedPositions() == positions[size_t(i)][size_t(step)];
                if (!same && differ++ < 5) qWarning("session %d, step %d: the batch computed otherwise", i, step);
                batch[size_t(i)].token = next(r, i, step);
            }
        }
        QCOMPARE(differ, 0);
        for (int i = 0; i < kSessions; ++i) {
            const SessionStats a = alone[size_t(i)].s->stats(), b = batch[size_t(i)].s->stats();
            QCOMPARE(b.position, a.position);
            QCOMPARE(b.currentPage, a.currentPage);
            QCOMPARE(b.poolUsedBytes, a.poolUsedBytes);
            QCOMPARE(batch[size_t(i)].s->gatedPages(), alone[size_t(i)].s->gatedPages());
            QVERIFY(a.currentPage >= 5);
        }
        QVERIFY(batch[5].s->deviceNotice().empty());  // the mirror device kept its session
        QVERIFY(!batch[0].s->gatedPages().empty());

        // Refusals: sessions on different models, a session twice, inputs not matching, a bad token.
        auto other = std::make_shared<const ModelWeights>(randomModel(cfg, 32));
        DecodeSession foreign(other, params(1));
        QVERIFY(foreign.begin({1, 5}));
        auto mixed = DecodeSession::stepBatch({batch[1].s.get(), &foreign}, {7, 7});
        QVERIFY(!mixed);
        QVERIFY(QString::fromStdString(mixed.status().message()).contains("different models"));
        QVERIFY(!DecodeSession::stepBatch({batch[1].s.get(), batch[1].s.get()}, {7, 7}));
        QVERIFY(!DecodeSession::stepBatch({batch[1].s.get()}, {7, 7}));
        QVERIFY(!DecodeSession::stepBatch({}, {}));
        const int64_t before = batch[1].s->stats().position;
        QVERIFY(!DecodeSession::stepBatch({batch[1].s.get(), batch[2].s.get()}, {7, cfg.vocabSize}));
        QCOMPARE(batch[1].s->stats().position, before);  // refused before any session moved
    }

    // Sessions of one shared (mirror) device on two threads at once, each its own volume: each
    // computes what it computes on a device of its own, bit for bit (the shared device takes one
    // call at a time; run under ThreadSanitizer in CI).
    void sharedDeviceTakesSessionsFromTwoThreads() {
        const ModelConfig cfg = tinyDecoderConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 35));
        auto shared = SharedDevice::open(model, StepDevice::Mirror);
        QVERIFY(shared);
        constexpr int kSteps = 200;
        auto run = [&](bool share, int volume, std::vector<std::vector<float>>& logits) {
            AttentionParams p = smallSrSwaParams();
            p.device = StepDevice::Mirror;
            if (share) p.sharedDevice = *shared;
            DecodeSession s(model, p);
            if (!s.begin({1, 5, 6 + volume})) return;
            int fed = -1, token = cfg.bosTokenId;
            for (int step = 0; step < kSteps; ++step) {
                while (fed < s.stats().currentPage + (token == cfg.pageBreakTokenId ? 1 : 0) + p.windowAfter) {
                    ++fed;
                    const auto f = pageFeatures(fed + 100 * volume, 30, cfg.visualDim);
                    if (!s.addPage(fed, f.data(), 30)) return;
                }
                auto r = s.step(token);
                if (!r || !s.deviceNotice().empty()) return;
                logits.push_back(*r->logits);
                const int best = int(std::max_element(r->logits->begin() + 4, r->logits->end()) - r->logits->begin());
                token = step % (20 + 7 * volume) == 19 + 7 * volume ? cfg.pageBreakTokenId : best;
            }
        };
        std::vector<std::vector<float>> alone[2], together[2];
        run(false, 0, alone[0]);
        run(false, 1, alone[1]);
        std::thread other([&] { run(true, 1, together[1]); });
        run(true, 0, together[0]);
        other.join();
        for (int v = 0; v < 2; ++v) {
            QCOMPARE(int(alone[v].size()), kSteps);
            QCOMPARE(int(together[v].size()), kSteps);
            QVERIFY(alone[v] == together[v]);
        }
    }

    // More sessions than one batched pass takes (64): the batch runs in passes, each session's
    // logits still its own steps'.
    void batchLargerThanOnePass() {
        const ModelConfig cfg = tinyDecoderConfig();
        auto model = std::make_shared<const ModelWeights>(randomModel(cfg, 33));
        AttentionParams p;
        p.mode = AttentionMode::RSwa;
        p.maxPageTokens = 16;
        constexpr int kSessions = 70, kSteps = 6;
        std::vector<std::unique_ptr<DecodeSession>> alone, together;
        std::vector<DecodeSession*> batch;
        for (int i = 0; i < kSessions; ++i) {
            for (auto* list : {&alone, &together}) {
                list->push_back(std::make_unique<DecodeSession>(model, p));
                QVERIFY(list->back()->begin({1, 5}));
                const auto f = pageFeatures(i, 16, cfg.visualDim);
                QVERIFY(list->back()->addPage(0, f.data(), 16));
            }
            batch.push_back(together.back().get());
        }
        std::vector<int> inputs(kSessions, cfg.bosTokenId);
        int differ = 0;
        for (int step = 0; step < kSteps; ++step) {
            auto res = DecodeSession::stepBatch(batch, inputs);
            QVERIFY(res);
            for (int i = 0; i < kSessions; ++i) {
                auto want = alone[size_t(i)]->step(inputs[size_t(i)]);
                QVERIFY(want);
                differ += *want->logits != *(*res)[size_t(i)].logits;
                const auto& l = *(*res)[size_t(i)].logits;
                inputs[size_t(i)] = 4 + int(std::max_element(l.begin() + 4, l.end()) - l.begin() - 4);
            }
        }
        QCOMPARE(differ, 0);
    }

};

QTEST_GUILESS_MAIN(TestDecoderBatch)
#include "tst_decoder_batch.moc"
