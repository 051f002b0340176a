// Drafts of several sessions computed together: DecodeSession::computeDrafts and StepBatcher give
// every session what its stepDraft() alone gives, bit for bit.
#include <QTest>

#include <cstring>
#include <memory>
#include <thread>

#include "quire/decoder/model.h"
#include "quire/decoder/session.h"
#include "quire/decoder/step_batcher.h"
#include "test_util.h"

using namespace quire;
using namespace quire::decoder;
using namespace quire::test;

namespace {

constexpr int kPageTokens = 40;

// What a session is fed: a fixed token sequence (page breaks at its own pace, written line ends
// every seventh token), drafted in pieces of varying length with wrong guesses among them.
struct Volume {
    int index = 0;
    std::vector<int> inputs;
    int draftLength(int call) const { return 1 + (call * 7 + index) % 14; }
    bool wrongGuess(int at) const { return (at * 3 + index) % 13 == 0; }
};

Volume makeVolume(const ModelConfig& cfg, int index, int steps) {
    Volume v;
    v.index = index;
    const int breakEvery = 21 + 4 * index;
    for (int s = 0; s < steps; ++s)
        v.inputs.push_back(s == 0 ? cfg.bosTokenId
                           : s % breakEvery == 0 ? cfg.pageBreakTokenId
                           : s % 7 == 6          ? 4 + 2 * (s % 2)
                                                 : 7 + (index * 31 + s * 17) % (cfg.vocabSize - 7));
    return v;
}

// A session reading a volume: its pages fed ahead of the step that turns to them, as a reader does.
struct Reading {
    Volume volume;
    std::unique_ptr<DecodeSession> session;
    int pageBreak = 3, vocabSize = 48, visualDim = 12, fed = -1, at = 0, calls = 0;
    // What each fed token got: logits, most-attended visual token, attended positions.
    std::vector<std::vector<float>> logits;
    std::vector<int> attended;
    std::vector<std::vector<std::vector<int64_t>>> positions;

    bool done() const { return at >= int(volume.inputs.size()); }
    bool feedPages(const AttentionParams& p) {
        const int turn = volume.inputs[size_t(at)] == pageBreak ? 1 : 0;
        const int target = session->stats().currentPage + turn + p.windowAfter;
        while (fed < target) {
            ++fed;
            const auto f = pageWithIds(fed + 100 * volume.index, kPageTokens, visualDim, 5);
            if (!session->addPage(fed, f.data(), kPageTokens)) return false;
        }
        return true;
    }
    std::vector<int> draft() const {
        std::vector<int> d;
        const int end = std::min(int(volume.inputs.size()), at + volume.draftLength(calls));
        for (int j = at; j < end; ++j)
            d.push_back(j > at && volume.wrongGuess(j) ? (volume.inputs[size_t(j)] + 1) % vocabSize : volume.inputs[size_t(j)]);
        return d;
    }
    // The callback for the draft `d`: records what the token got, goes on while the guess holds.
    std::function<bool(int, const StepResult&)> record(const std::vector<int>& d) {
        return [this, d](int i, const StepResult& r) {
            logits.push_back(*r.logits);
            attended.push_back(r.attendedVisual);
            positions.push_back(session->lastAttendedPositions());
            const size_t next = size_t(at + i + 1);
            return size_t(i) + 1 < d.size() && next < volume.inputs.size() && d[size_t(i) + 1] == volume.inputs[next];
        };
    }
    void advance(int fedTokens) { at += fedTokens, ++calls; }
};

bool sameAs(const Reading& a, const Reading& b) {
    if (a.logits.size() != b.logits.size() || a.attended != b.attended || a.positions != b.positions) return false;
    for (size_t t = 0; t < a.logits.size(); ++t)
        if (a.logits[t].size() != b.logits[t].size() ||
            std::memcmp(a.logits[t].data(), b.logits[t].data(), a.logits[t].size() * sizeof(float)) != 0)
            return false;
    return true;
}

}  // namespace

class TestStepBatcher : public QObject {
    Q_OBJECT

    ModelConfig m_cfg;
    std::shared_ptr<const ModelWeights> m_model, m_other;
    std::shared_ptr<SharedDevice> m_shared;

    // Session i: SR-SWA (two threads; framed positions by a short rotary range), R-SWA, full
    // attention, the mirror device (whose steps are its own), a session on another model; from 7
    // on, SR-SWA sessions on one shared (mirror) device, stepped together there.
    AttentionParams params(int i) const {
        AttentionParams p;
        p.mode = i == 3 ? AttentionMode::RSwa : i == 4 ? AttentionMode::Full : AttentionMode::SrSwa;
        p.recentTokens = 20;
        p.windowBefore = 1, p.windowAfter = 1;
        p.gatedPages = 2, p.blocksPerGatedPage = 1;
        p.maxPageTokens = kPageTokens;
        p.trackAttention = i != 5;
        p.threads = i == 0 ? 2 : 1;
        if (i == 5) p.device = StepDevice::Mirror;
        if (i >= 7) p.device = StepDevice::Mirror, p.sharedDevice = m_shared;
        return p;
    }
    std::shared_ptr<const ModelWeights> modelOf(int i) const { return i == 6 ? m_other : m_model; }
    Reading start(int i, int steps) const {
        Reading r;
        r.volume = makeVolume(m_cfg, i, steps);
        r.pageBreak = m_cfg.pageBreakTokenId, r.vocabSize = m_cfg.vocabSize, r.visualDim = m_cfg.visualDim;
        r.session = std::make_unique<DecodeSession>(modelOf(i), params(i));
        if (!r.session->begin({1, 5, 6 + i})) r.at = int(r.volume.inputs.size());  // nothing to read: fails the comparison
        return r;
    }
    // The volume read by stepDraft() alone.
    Reading alone(int i, int steps) const {
        Reading r = start(i, steps);
        while (!r.done()) {
            if (!r.feedPages(params(i))) return r;
            const auto d = r.draft();
            auto fed = r.session->stepDraft(d, r.record(d));
            if (!fed) return r;
            r.advance(*fed);
        }
        return r;
    }

    // Each reading on a thread of its own through `batcher` (session i's parameters: params(first + i));
    // every thread a member before any starts, so the first passes wait for all. Each thread's error.
    std::vector<std::string> readOnThreads(StepBatcher& batcher, std::vector<Reading>& readings, int first) const {
        const size_t n = readings.size();
        std::vector<std::string> errors(n);
        std::vector<StepBatcher::Membership> members;
        for (size_t i = 0; i < n; ++i) members.push_back(batcher.join());
        std::vector<std::thread> threads;
        for (size_t i = 0; i < n; ++i)
            threads.emplace_back([&, i] {
                Reading& r = readings[i];
                const auto member = std::move(members[i]);
                while (!r.done()) {
                    if (!r.feedPages(params(first + int(i)))) return void(errors[i] = "page refused");
                    const auto d = r.draft();
                    auto fed = batcher.stepDraft(*r.session, d, r.record(d));
                    if (!fed) return void(errors[i] = fed.status().message());
                    r.advance(*fed);
                }
            });
        for (auto& t : threads) t.join();
        return errors;
    }

private slots:
    void initTestCase() {
        m_cfg = tinyDecoderConfig();
        m_cfg.pageAlignedPositions = true;
        makeLineAligned(m_cfg);
        m_model = std::make_shared<const ModelWeights>(randomModel(m_cfg, 41));
        m_other = std::make_shared<const ModelWeights>(randomModel(m_cfg, 42));
        auto shared = SharedDevice::open(m_model, StepDevice::Mirror);
        QVERIFY2(shared, shared ? "" : shared.status().message().c_str());
        m_shared = *shared;
    }

    // Seven sessions in lock-step rounds of beginDraft, one computeDrafts for all, endDraft: each
    // gets its alone run's logits, attended positions and visual tokens bit for bit, whatever its
    // attention mode, device, thread count or model. Sessions join late and leave early (volumes
    // of different lengths); drafts of one token go through the single-step path. The sessions on
    // a shared device take one token a draft there, stepped together (attention tracked).
    void draftsComputedTogetherMatchDraftsAlone() {
        constexpr int kSessions = 9;
        const int steps[kSessions] = {400, 260, 330, 300, 280, 240, 310, 290, 270};
        const int joinsAt[kSessions] = {0, 0, 15, 0, 30, 5, 0, 0, 10};
        std::vector<Reading> together;
        for (int i = 0; i < kSessions; ++i) together.push_back(start(i, steps[i]));
        int singles = 0, largest = 0;
        for (int round = 0;; ++round) {
            std::vector<Reading*> active;
            for (int i = 0; i < kSessions; ++i)
                if (round >= joinsAt[i] && !together[size_t(i)].done()) active.push_back(&together[size_t(i)]);
            if (active.empty()) break;
            largest = std::max(largest, int(active.size()));
            std::vector<DecodeSession*> sessions;
            std::vector<std::vector<int>> drafts;
            for (Reading* r : active) {
                QVERIFY(r->feedPages(params(r->volume.index)));
                drafts.push_back(r->draft());
                singles += drafts.back().size() == 1;
                QVERIFY(r->session->beginDraft(drafts.back()));
                sessions.push_back(r->session.get());
            }
            QVERIFY(DecodeSession::computeDrafts(sessions));
            for (size_t j = 0; j < active.size(); ++j) {
                auto fed = active[j]->session->endDraft(active[j]->record(drafts[j]));
                QVERIFY2(fed, fed ? "" : fed.status().message().c_str());
                active[j]->advance(*fed);
            }
        }
        QVERIFY(singles > 0);
        QCOMPARE(largest, kSessions);
        for (int i = 0; i < kSessions; ++i) {
            const Reading a = alone(i, steps[i]);
            QVERIFY2(a.done(), qPrintable(QString("session %1 alone failed").arg(i)));
            QVERIFY2(sameAs(together[size_t(i)], a), qPrintable(QString("session %1 computed otherwise together").arg(i)));
            QCOMPARE(together[size_t(i)].session->stats().position, a.session->stats().position);
            QCOMPARE(together[size_t(i)].session->gatedPages(), a.session->gatedPages());
            QCOMPARE(together[size_t(i)].calls, a.calls);
            QVERIFY(a.session->stats().currentPage >= 5);
        }
        QVERIFY(together[5].session->deviceNotice().empty());  // the mirror kept its session
        for (int i : {7, 8}) {  // stepped together on the shared device, one token a draft
            const SessionStats st = together[size_t(i)].session->stats();
            QVERIFY(together[size_t(i)].session->deviceNotice().empty());
            QVERIFY(st.onDevice);
            QVERIFY2(st.deviceBatchedSteps > steps[i] / 2, qPrintable(QString::number(st.deviceBatchedSteps)));
            QCOMPARE(together[size_t(i)].calls, steps[i]);
        }
        QCOMPARE(together[0].session->stats().deviceBatchedSteps, int64_t(0));
    }

    // Misuse is refused with a message, and a refused draft leaves nothing begun.
    void draftsOutOfOrderAreRefused() {
        Reading a = start(1, 50), b = start(2, 50);
        QVERIFY(a.feedPages(params(1)) && b.feedPages(params(2)));
        QVERIFY(!a.session->endDraft([](int, const StepResult&) { return true; }));  // nothing begun
        QVERIFY(!DecodeSession::computeDrafts({a.session.get()}));                   // nothing begun
        QVERIFY(a.session->beginDraft({1, 7, 8}));
        QVERIFY(!a.session->beginDraft({1, 7, 8}));  // begun already
        QVERIFY(!DecodeSession::computeDrafts({a.session.get(), a.session.get()}));
        auto early = a.session->endDraft([](int, const StepResult&) { return true; });
        QVERIFY(!early);  // not computed: ended without a step
        QVERIFY(QString::fromStdString(early.status().message()).contains("not computed"));
        QVERIFY(!a.session->beginDraft({m_cfg.vocabSize}));
        QVERIFY(a.session->beginDraft({1, 7, 8}));
        QVERIFY(DecodeSession::computeDrafts({a.session.get()}));
        QVERIFY(a.session->endDraft([](int, const StepResult&) { return true; }));
        QCOMPARE(a.session->stats().position, b.session->stats().position + 3);
    }

    // Four threads, one volume each, through one StepBatcher: each thread's session computes what
    // it computes alone, bit for bit, and the passes took several drafts at once (run under
    // ThreadSanitizer in CI). A long gathering time makes every pass wait for all the members.
    void batcherOnThreadsMatchesAlone() {
        constexpr int kThreads = 4;
        const int steps[kThreads] = {300, 220, 260, 240};
        StepBatcher batcher(std::chrono::milliseconds(500));
        std::vector<Reading> readings;
        for (int i = 0; i < kThreads; ++i) readings.push_back(start(i, steps[i]));
        const std::vector<std::string> errors = readOnThreads(batcher, readings, 0);
        for (int i = 0; i < kThreads; ++i) {
            QVERIFY2(errors[size_t(i)].empty(), errors[size_t(i)].c_str());
            QVERIFY2(sameAs(readings[size_t(i)], alone(i, steps[i])), qPrintable(QString("thread %1 computed otherwise").arg(i)));
        }
        const auto st = batcher.stats();
        qInfo("%lld drafts in %lld passes, at most %d a pass", static_cast<long long>(st.drafts),
              static_cast<long long>(st.passes), st.largest);
        QCOMPARE(st.members, 0);
        QCOMPARE(st.largest, kThreads);
        QVERIFY(st.drafts > 2 * st.passes);
    }

    // Three threads whose sessions share one device (a server's reader jobs on a GPU): through one
    // StepBatcher their steps run as one device batch, and each computes what it computes alone,
    // bit for bit (run under ThreadSanitizer in CI).
    void sharedDeviceSessionsOnThreadsStepTogether() {
        constexpr int kThreads = 3;
        const int first = 7, steps[kThreads] = {200, 160, 180};
        StepBatcher batcher(std::chrono::milliseconds(500));
        std::vector<Reading> readings;
        for (int i = 0; i < kThreads; ++i) readings.push_back(start(first + i, steps[i]));
        const std::vector<std::string> errors = readOnThreads(batcher, readings, first);
        for (int i = 0; i < kThreads; ++i) {
            QVERIFY2(errors[size_t(i)].empty(), errors[size_t(i)].c_str());
            const Reading a = alone(first + i, steps[i]);
            QVERIFY2(sameAs(readings[size_t(i)], a), qPrintable(QString("thread %1 computed otherwise").arg(i)));
            QCOMPARE(a.session->stats().deviceBatchedSteps, int64_t(0));
            QVERIFY(readings[size_t(i)].session->stats().deviceBatchedSteps > steps[i] / 2);
        }
        QCOMPARE(batcher.stats().largest, kThreads);
    }
};

QTEST_GUILESS_MAIN(TestStepBatcher)
#include "tst_step_batcher.moc"
