// The reader's context across pages: a run stopped part-way resumes with the context it had, a
// model trained with look-ahead reads the next page first (and resumes between the two), and the
// engines of one batch on a device step together there. The reader on single pages: tst_reader.
#include <QTemporaryDir>
#include <QtTest>

#include <opencv2/imgcodecs.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "quire/decoder/model.h"
#include "quire/pipeline/transcriber.h"
#include "quire/ppocr/ppocr.h"
#include "quire/reader/reader.h"
#include "quire/reader/reader_sharing.h"
#include "quire/store/project_store.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;
namespace fs = std::filesystem;

// The shipped reader's weights in `dir` with its config.json's "srswa" pattern set to read `after`
// pages ahead (the shipped pattern's other settings kept), or with no pattern where `after` is
// absent (a model trained under R-SWA masks); false where no reader model is shipped. The checks
// below then hold whichever pattern the shipped model was trained with.
static bool modelReadingAhead(const fs::path& dir, std::optional<int> after) {
    auto shipped = findReaderModel();
    if (!shipped) return false;
    auto c = decoder::ModelConfig::load(fs::path(*shipped) / "config.json");
    if (!c) return false;
    if (!after) c->srswa.reset();
    else {
        if (!c->srswa) c->srswa = decoder::TrainedPattern{};
        c->srswa->windowAfter = *after;
    }
    fs::create_directories(dir);
    for (const char* f : {"model.safetensors", "character_counts.tsv"}) fs::copy_file(fs::path(*shipped) / f, dir / f);
    std::ofstream(dir / "config.json") << c->toJson();
    return true;
}
class TestReaderContext : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        QVERIFY2(findPpocrModels(), findPpocrModels().status().message().c_str());
    }

    // A reader run stopped part-way (cancelled here; a kill leaves the same committed state, as the
    // checkpoint is saved in each page's transaction) takes up the context it had: the pages read
    // after the resume come out exactly as in an uninterrupted run. Also with a model that reads a
    // page ahead (the transcriber holds the next prepared page for it; the saved context then ends
    // with the page after the last one committed).
    void readerResumesWithTheContextItHad_data() {
        QTest::addColumn<int>("ahead");
        QTest::newRow("no pattern") << 0;  // trained under R-SWA masks: the reader's defaults
        QTest::newRow("one page ahead") << 1;
    }
    void readerResumesWithTheContextItHad() {
        QFETCH(int, ahead);
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        QTemporaryDir tmp;
        const fs::path aheadDir = fs::path(tmp.path().toStdString()) / "ahead";
        QVERIFY(modelReadingAhead(aheadDir, ahead > 0 ? std::optional<int>(ahead) : std::nullopt));
        const std::vector<std::vector<std::string>> texts = {
            {"The register of the parish", "was kept by the clerk"}, {"in a book of ninety leaves,", "bound in calf"},
            {"and he wrote each entry", "in the same hand"}, {"until the year of the flood", "took the vestry"},
            {"and the book with it.", "Nothing else was lost."}, {"The clerk began again", "from memory"},
            {"and the neighbours", "filled in the rest."}};
        // Seven pages: a cancel at the second can still see up to three more committed (the page
        // being read and two finished ones waiting in the queue), and must leave some unread.
        const int total = int(texts.size());
        TranscribeParams p;
        for (size_t k = 0; k < texts.size(); ++k) {
            const QString png = tmp.filePath(QString("page%1.png").arg(k + 1));
            QVERIFY(cv::imwrite(png.toStdString(), textPage(texts[k], 1300, 420, 1.4)));
            p.inputs.push_back(png.toStdString());
        }
        p.recognizer.engine = "reader";
        p.recognizer.readerModel = aheadDir.string();
        std::vector<std::string> logs;
        p.onLog = [&](const std::string& m) { logs.push_back(m); };
        auto pageTexts = [](ProjectStore& store) {
            std::vector<std::string> out;
            for (const auto& page : *store.pages()) out.push_back(*store.engineText(page.id));
            return out;
        };

        // The uninterrupted run reads with one thread (no prepare stage); the parted runs with the
        // front-end of the next pages on two prepare threads of their own, handing their pages on
        // in order: the same text either way. (Reading ahead needs the prepared pages: with it,
        // both runs prepare.)
        auto whole = ProjectStore::open(tmp.filePath("whole.quire").toStdString());
        QVERIFY(whole);
        TranscribeParams oneThread = p;
        if (ahead == 0) oneThread.preparers = 0;
        // A budget of one page in memory: the page held for the look-ahead must not keep the loader
        // from bringing the next one.
        else oneThread.pixelBudget = 1;
        auto r = runTranscription(**whole, oneThread);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->done, total);
        QVERIFY(!(*whole)->decoderState()->has_value());  // a finished run drops its context
        const auto expected = pageTexts(**whole);

        auto parted = ProjectStore::open(tmp.filePath("parted.quire").toStdString());
        QVERIFY(parted);
        std::atomic<bool> cancel{false};
        TranscribeParams first = p;
        first.cancel = &cancel;
        int committed = 0;
        first.onPage = [&](const PageEvent&) {
            if (++committed == 2) cancel = true;
        };
        r = runTranscription(**parted, first);
        QVERIFY2(r, r.status().message().c_str());
        QVERIFY(r->cancelled);
        QVERIFY2(r->done >= 2 && r->done < total, qPrintable(QString::number(r->done)));
        const int doneBefore = r->done;
        auto saved = (*parted)->decoderState();
        QVERIFY(saved && saved->has_value());
        QCOMPARE((*saved)->lastPageId, (*(*parted)->pages())[size_t(doneBefore - 1)].id);
        QVERIFY((*parted)->contextPage(doneBefore - 1));  // every page of the context is kept
        // One context from the first page on (each page was the one fed ahead for it: another
        // would have started a fresh one), the pages fed ahead of the last one committed kept
        // with it; none beyond.
        for (int k = 0; k < doneBefore + ahead; ++k) QVERIFY((*parted)->contextPage(k));
        QVERIFY(!(*parted)->contextPage(doneBefore + ahead));

        logs.clear();
        r = runTranscription(**parted, p);
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->done, total);
        bool continued = false;
        for (const auto& m : logs) continued = continued || m.find("continues with the context it had") != std::string::npos;
        QVERIFY2(continued, logs.empty() ? "no log" : logs.front().c_str());
        const auto got = pageTexts(**parted);
        QCOMPARE(int(got.size()), total);
        for (size_t k = 0; k < got.size(); ++k) QCOMPARE(QString::fromStdString(got[k]), QString::fromStdString(expected[k]));

        if (ahead > 0) return;
        // A checkpoint is refused by another model, and a damaged one is named as such.
        auto other = ReaderEngine::load(ReaderOptions{*dir});
        QVERIFY(other);
        DecoderCheckpoint cp = (*other)->checkpoint();
        QVERIFY((*other)->restore(cp.state, {}));
        QTemporaryDir modelDir;
        QVERIFY(decoder::saveModel(decoder::randomModel(tinyDecoderConfig(reader_vocab::kVocabSize, reader_vocab::kVisualDim, 1 << 16), 5), modelDir.filePath("m").toStdString()));
        auto tiny = ReaderEngine::load(ReaderOptions{modelDir.filePath("m").toStdString()});
        QVERIFY(tiny);
        Status refused = (*tiny)->restore(cp.state, {});
        QVERIFY2(!refused && QString::fromStdString(refused.message()).contains("another reader model"), refused.message().c_str());
        Status damaged = (*other)->restore(cp.state.substr(0, cp.state.size() - 3), {});
        QCOMPARE(damaged.code(), ErrorCode::Corrupt);
    }

    // A model trained with a page of look-ahead reads with it: the page after the current one is fed
    // before the current one's text is written (the checkpoints list it with the current page) and
    // not fed again; a resume between the two continues exactly; a page that is not the one fed
    // ahead for it starts a fresh context.
    void readerFeedsThePageAheadAndResumesInsideIt() {
        QTemporaryDir tmp;
        const fs::path dir = fs::path(tmp.path().toStdString()) / "ahead";
        if (!modelReadingAhead(dir, 1)) QSKIP("no reader model is shipped");
        const std::vector<std::vector<std::string>> texts = {
            {"The register of the parish", "was kept by the clerk"}, {"in a book of ninety leaves,", "bound in calf"},
            {"and he wrote each entry", "in the same hand"}, {"until the year of the flood", "took the vestry"}};
        auto reader = ReaderEngine::load(ReaderOptions{dir.string()});
        QVERIFY2(reader, reader.status().message().c_str());
        QCOMPARE((*reader)->pagesAhead(), 1);
        const fs::path masked = fs::path(tmp.path().toStdString()) / "masked";
        QVERIFY(modelReadingAhead(masked, std::nullopt));
        auto withoutPattern = ReaderEngine::load(ReaderOptions{masked.string()});
        QVERIFY(withoutPattern);
        QCOMPARE((*withoutPattern)->pagesAhead(), 0);  // trained without a pattern: the reader's defaults
        std::vector<Result<PpocrPage>> pages;
        for (const auto& t : texts) pages.push_back((*reader)->encode(textPage(t, 1300, 420, 1.4)));
        std::vector<std::string> whole;
        std::vector<DecoderCheckpoint> cps;
        std::vector<std::vector<float>> context;  // the context's pages as the store keeps them
        for (size_t k = 0; k < pages.size(); ++k) {
            std::vector<const Result<PpocrPage>*> ahead;
            if (k + 1 < pages.size()) ahead.push_back(&pages[k + 1]);
            auto got = (*reader)->readEncoded(pages[k], 300, nullptr, {}, ahead);
            QVERIFY2(got && got->failure.empty(), got ? got->failure.c_str() : got.status().message().c_str());
            whole.push_back(got->text.plainText());
            cps.push_back((*reader)->checkpoint());
            QCOMPARE(cps.back().firstNewPage, int(context.size()));
            for (auto& page : cps.back().newPages) context.push_back(page);
            // Page k and k + 1 after the first page; then only the next; none after the last.
            QCOMPARE(int(context.size()), std::min(int(k) + 2, int(pages.size())));
        }
        const auto provider = [&](int i) -> Result<std::vector<float>> {
            if (i < 0 || size_t(i) >= context.size()) return Status(ErrorCode::NotFound, "no such page");
            return context[size_t(i)];
        };
        // Resumed after the first page, with the second fed ahead already.
        auto resumed = ReaderEngine::load(ReaderOptions{dir.string()});
        QVERIFY(resumed);
        QVERIFY2((*resumed)->restore(cps[0].state, provider), "restore");
        for (size_t k = 1; k < pages.size(); ++k) {
            std::vector<const Result<PpocrPage>*> ahead;
            if (k + 1 < pages.size()) ahead.push_back(&pages[k + 1]);
            auto got = (*resumed)->readEncoded(pages[k], 300, nullptr, {}, ahead);
            QVERIFY(got && got->failure.empty());
            QCOMPARE(QString::fromStdString(got->text.plainText()), QString::fromStdString(whole[k]));
        }
        // Resumed after the first page, but the next page is another: read as a volume's first.
        auto changed = ReaderEngine::load(ReaderOptions{dir.string()});
        QVERIFY(changed && (*changed)->restore(cps[0].state, provider));
        auto other = (*changed)->readEncoded(pages[3], 300);
        auto fresh = ReaderEngine::load(ReaderOptions{dir.string()});
        QVERIFY(fresh);
        auto first = (*fresh)->readEncoded(pages[3], 300);
        QVERIFY(other && first && other->failure.empty());
        QCOMPARE(QString::fromStdString(other->text.plainText()), QString::fromStdString(first->text.plainText()));
        QCOMPARE((*changed)->checkpoint().restartPages, true);
        // Without look-ahead given (a page read alone), the page is read and the next one fed then.
        auto alone = ReaderEngine::load(ReaderOptions{dir.string()});
        QVERIFY(alone);
        for (size_t k = 0; k < 2; ++k) {
            auto got = (*alone)->readEncoded(pages[k], 300);
            QVERIFY(got && got->failure.empty());
            QCOMPARE((*alone)->checkpoint().newPages.size(), size_t(1));
        }
    }

    // Reader engines of one batch (a server's concurrent jobs) decoding on a device share one device
    // of their ReaderSharing: their steps run there as one batch, attention tracked, and each
    // volume's text and word boxes are what its engine writes alone on a device of its own.
    void readersOnOneDeviceStepTogether() {
        auto dir = findReaderModel();
        if (!dir) QSKIP("no reader model is shipped");
        const std::vector<std::vector<std::vector<std::string>>> volumes = {
            {{"CHAPTER THE FIRST.", "Of the binding of books, and of"}, {"12 THE BINDER'S GUIDE", "The sheets were folded, gathered"}},
            {{"The register of the parish", "was kept by the clerk"}, {"in a book of ninety leaves,", "bound in calf"}}};
        ReaderOptions o;
        o.modelDir = *dir;
        o.attention.device = decoder::StepDevice::Mirror;
        auto read = [&](ReaderEngine& e, const std::vector<std::vector<std::string>>& pages, std::vector<ReaderPage>& out,
                        std::string& error) {
            for (const auto& lines : pages) {
                auto got = e.readPage(textPage(lines, 1100, 300, 1.3), 300);
                if (!got || !got->failure.empty()) return void(error = got ? got->failure : got.status().message());
                out.push_back(std::move(*got));
            }
        };
        std::vector<std::vector<ReaderPage>> alone(volumes.size()), together(volumes.size());
        for (size_t v = 0; v < volumes.size(); ++v) {
            auto e = ReaderEngine::load(o);
            QVERIFY2(e, e.status().message().c_str());
            std::string error;
            read(**e, volumes[v], alone[v], error);
            QVERIFY2(error.empty(), error.c_str());
        }
        o.sharing = std::make_shared<ReaderSharing>(std::chrono::milliseconds(500));
        std::vector<std::unique_ptr<ReaderEngine>> engines;
        for (size_t v = 0; v < volumes.size(); ++v) {
            auto e = ReaderEngine::load(o);
            QVERIFY2(e, e.status().message().c_str());
            engines.push_back(std::move(*e));
        }
        std::vector<std::string> errors(volumes.size());
        std::vector<std::thread> threads;
        for (size_t v = 0; v < volumes.size(); ++v)
            threads.emplace_back([&, v] { read(*engines[v], volumes[v], together[v], errors[v]); });
        for (auto& t : threads) t.join();
        for (size_t v = 0; v < volumes.size(); ++v) {
            QVERIFY2(errors[v].empty(), errors[v].c_str());
            QVERIFY2(engines[v]->deviceNotice().empty(), engines[v]->deviceNotice().c_str());
            QCOMPARE(together[v].size(), alone[v].size());
            for (size_t p = 0; p < alone[v].size(); ++p) {
                QCOMPARE(QString::fromStdString(together[v][p].text.plainText()), QString::fromStdString(alone[v][p].text.plainText()));
                QCOMPARE(together[v][p].tokens, alone[v][p].tokens);
                const auto &la = alone[v][p].text.lines, &lt = together[v][p].text.lines;
                QCOMPARE(lt.size(), la.size());
                for (size_t l = 0; l < la.size(); ++l)
                    for (size_t w = 0; w < la[l].words.size() && w < lt[l].words.size(); ++w)
                        QCOMPARE(lt[l].words[w].box.x, la[l].words[w].box.x);
                QCOMPARE(alone[v][p].deviceBatchedSteps, int64_t(0));
            }
            QVERIFY2(together[v].back().deviceBatchedSteps > 0, "no step ran in a device batch");
        }
        QVERIFY(o.sharing->batcher().stats().largest >= 2);
    }
};

QTEST_GUILESS_MAIN(TestReaderContext)
#include "tst_reader_context.moc"
