#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <sqlite3.h>

#include "quire/pipeline/transcriber.h"
#include "quire/store/book_search.h"
#include "quire/store/page_arrangement.h"
#include "quire/store/page_history.h"
#include "quire/store/project_store.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

namespace {

PageText samplePage(const std::string& firstWord) {
    PageText t;
    t.width = 1000, t.height = 1400, t.dpi = 300;
    t.engine = "test", t.engineVersion = "1", t.language = "eng";
    Line l;
    l.box = {100, 100, 800, 40};
    l.words = {{firstWord, {100, 100, 200, 40}, 91.0f}, {"world", {320, 100, 200, 40}, 55.0f}};
    t.lines.push_back(l);
    return t;
}

void execSql(const QString& file, const char* sql) {
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(file.toUtf8().constData(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
}

}  // namespace

class TestProjectStore : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    std::unique_ptr<ProjectStore> fresh(const QString& name, int pages = 3) {
        auto store = ProjectStore::open(m_dir.filePath(name).toStdString());
        if (!store) return nullptr;
        DocumentRecord d{0, "/books/" + name.toStdString() + ".pdf", "pdf", "hash1", 100, 0, 0};
        std::vector<std::pair<std::string, int>> files;
        for (int i = 0; i < pages; ++i) files.emplace_back(d.path, i);
        if (!(*store)->addDocument(d, files)) return nullptr;
        return std::move(*store);
    }

    // A spread read as two halves, "left" and "right".
    static std::vector<PageOutcome> spreadHalves() {
        PageOutcome left, right;
        left.text = samplePage("left");
        left.region = {0, 0, 500, 1400};
        right.text = samplePage("right");
        right.region = {500, 0, 500, 1400};
        return {left, right};
    }

    // Two source pages, the first read as a spread split in halves.
    std::unique_ptr<ProjectStore> splitSpread(const QString& name) {
        auto store = fresh(name, 2);
        if (!store || !store->saveResult((*store->pages())[0].id, spreadHalves())) return nullptr;
        return store;
    }

    // Three pages, the first `read` of them read as "Colour world".
    std::unique_ptr<ProjectStore> colourBook(const QString& name, int read) {
        auto store = fresh(name);
        if (!store) return nullptr;
        PageOutcome o;
        o.text = samplePage("Colour");
        o.region = {0, 0, 1000, 1400};
        auto pages = *store->pages();
        for (int i = 0; i < read; ++i)
            if (!store->saveResult(pages[size_t(i)].id, {o})) return nullptr;
        return store;
    }

private slots:
    // A flagged page says why, in words the proofreader reads; the reason is stored with the page.
    void flagReasonIsSaidAndStored() {
        FlagPolicy policy;  // mean below 80, or more than 10% of words below 60
        PageText t = samplePage("hello");  // words at 91 and 55: mean 73, half of them low
        QCOMPARE(QString::fromStdString(policy.reason(t, 0.1)),
                 QString("mean word confidence 73 is below 80; 50% of words are below confidence 60 (more than 10%)"));
        t.lines[0].words[1].confidence = 89;
        QVERIFY(policy.reason(t, 0.1).empty());
        QVERIFY(!policy.shouldFlag(t, 0.1));
        PageText empty;
        QCOMPARE(policy.reason(empty, 0.2), std::string("ink on the page but no words read"));
        QVERIFY(policy.reason(empty, 0.0).empty());  // a blank page is not doubtful

        auto store = fresh("flag.quire", 2);
        auto pages = *store->pages();
        PageOutcome o;
        o.text = samplePage("hello");
        o.region = {0, 0, 1000, 1400};
        o.flagged = true;
        o.flagReason = policy.reason(o.text, 0.1);
        QVERIFY(store->saveResult(pages[0].id, {o}));
        QCOMPARE(store->page(pages[0].id)->flagReason, o.flagReason);
        QCOMPARE((*store->pages())[0].flagReason, o.flagReason);
        o.flagged = false;  // read again and fine: the old reason goes
        QVERIFY(store->saveResult(pages[0].id, {o}));
        QVERIFY(store->page(pages[0].id)->flagReason.empty());
    }

    // A page whose type looks like Fraktur, read without a Fraktur model, is doubted in words that
    // say what would read it; with one, or on a weak guess, or in Latin type, it is not.
    void scriptDoubtNamesWhatWouldReadThePage() {
        QCOMPARE(QString::fromStdString(scriptDoubt("Fraktur", 6.25, "tesseract", "eng")),
                 QString("the type looks like Fraktur (script confidence 6.2), which the languages eng do not read; "
                         "read it again with Tesseract and German (Fraktur), frk"));
        QVERIFY(QString::fromStdString(scriptDoubt("Fraktur", 13.6, "ppocr", "frk")).contains("ppocr does not read"));
        QVERIFY(scriptDoubt("Fraktur", 6.25, "tesseract", "eng+frk").empty());
        QVERIFY(scriptDoubt("Fraktur", 6.25, "auto", "deu_latf").empty());
        QVERIFY(scriptDoubt("Fraktur", 1.5, "tesseract", "eng").empty());  // below kScriptConfidence
        QVERIFY(scriptDoubt("Latin", 90, "tesseract", "eng").empty());
        QVERIFY(scriptDoubt("", 0, "tesseract", "eng").empty());  // orientation detection did not run
    }

    // Find across the book: the engine's text and the newest correction of each page, in book order,
    // with lines and UTF-16 positions an editor can select.
    void findsPlainWholeWordAndRegexAcrossTheBook() {
        auto store = colourBook("find.quire", 2);  // the third page not read yet: no text
        QVERIFY(store);
        auto pages = *store->pages();
        QVERIFY(store->addCorrection(pages[1].id, "the colours of Mr. Smith\nand colour, F\xc3\xbc\xc3\x9f""e colour"));
        auto count = [&](SearchQuery q) {
            auto hits = findInBook(*store, q);
            return hits ? int(hits->size()) : -1;
        };
        QCOMPARE(count({"colour", SearchMode::Plain, false}), 4);
        QCOMPARE(count({"colour", SearchMode::Plain, true}), 3);
        QCOMPARE(count({"colour", SearchMode::WholeWord, false}), 3);  // not "colours"
        QCOMPARE(count({"colou?rs?\\b", SearchMode::Regex, false}), 4);
        QCOMPARE(count({"Mr.", SearchMode::Plain, false}), 1);  // the dot is no wildcard in plain text
        QCOMPARE(count({"M.\\. \\w+", SearchMode::Regex, true}), 1);
        auto hits = *findInBook(*store, {"colour", SearchMode::WholeWord, false});
        QCOMPARE(hits[0].sequence, 1);
        QCOMPARE(hits[0].start, 0);
        QCOMPARE(hits[1].sequence, 2);
        QCOMPARE(hits[1].line, 2);
        QCOMPARE(hits[1].start, 29);  // "and " after the first line and its newline
        QCOMPARE(hits[2].start, 42);  // after "F\u00fc\u00dfe ": two UTF-16 units, not four bytes
        QCOMPARE(QString::fromStdString(hits[2].context), QString("and colour, F\u00fc\u00dfe colour"));
        // A limit, and queries that cannot run, refused with the reason.
        QCOMPARE(int(findInBook(*store, {"colour", SearchMode::Plain, false}, 2)->size()), 2);
        auto bad = findInBook(*store, {"colour(", SearchMode::Regex, false});
        QVERIFY(!bad);
        QCOMPARE(bad.status().code(), ErrorCode::InvalidArgument);
        QVERIFY2(QString::fromStdString(bad.status().message()).contains("at character"), bad.status().message().c_str());
        QVERIFY(!findInBook(*store, {"", SearchMode::Plain, false}));
    }

    // Replace across the book: one correction per page it changes, in one transaction; removing
    // them undoes it exactly, the user's earlier corrections untouched.
    void replaceIsACorrectionPerPageAndUndoable() {
        auto store = colourBook("replace.quire", 3);
        QVERIFY(store);
        auto pages = *store->pages();
        QVERIFY(store->addCorrection(pages[1].id, "Mr. Smith's colour and Mr. Jones"));
        const auto before = *store->counts();
        auto r = replaceInBook(*store, {"colour", SearchMode::WholeWord, false}, "color");
        QVERIFY2(r, r.status().message().c_str());
        QCOMPARE(r->hits, 3);
        QCOMPARE(r->pages, 3);
        QCOMPARE(*store->effectiveText(pages[0].id), std::string("color world"));
        QCOMPARE(*store->effectiveText(pages[1].id), std::string("Mr. Smith's color and Mr. Jones"));
        QCOMPARE(*store->engineText(pages[0].id), std::string("Colour world"));  // the engine's reading stays
        QCOMPARE(store->counts()->corrected, 3);
        // Groups in a regular expression's replacement.
        auto g = replaceInBook(*store, {"Mr\\. (\\w+)", SearchMode::Regex, true}, "Mister \\1");
        QVERIFY(g);
        QCOMPARE(g->hits, 2);
        QCOMPARE(*store->effectiveText(pages[1].id), std::string("Mister Smith's color and Mister Jones"));
        // Only the listed pages, and nothing stored when nothing changes.
        auto only = replaceInBook(*store, {"world", SearchMode::Plain, false}, "earth", {pages[2].id});
        QCOMPARE(only->pages, 1);
        QCOMPARE(*store->effectiveText(pages[0].id), std::string("color world"));
        QCOMPARE(replaceInBook(*store, {"nowhere", SearchMode::Plain, false}, "x")->pages, 0);
        // Undo, newest first: back to the user's own correction and the engine's text.
        QVERIFY(store->removeCorrections(only->correctionIds));
        QVERIFY(store->removeCorrections(g->correctionIds));
        QVERIFY(store->removeCorrections(r->correctionIds));
        QCOMPARE(*store->effectiveText(pages[1].id), std::string("Mr. Smith's colour and Mr. Jones"));
        QCOMPARE(*store->effectiveText(pages[2].id), std::string("Colour world"));
        QCOMPARE(store->counts()->corrected, before.corrected);
    }

    void createsWithSchemaAndPragmas() {
        auto store = fresh("a.quire");
        QVERIFY(store);
        sqlite3* db = store->handle();
        auto one = [&](const char* sql) {
            sqlite3_stmt* st = nullptr;
            sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
            sqlite3_step(st);
            const QString v = QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
            sqlite3_finalize(st);
            return v;
        };
        QCOMPARE(one("PRAGMA user_version"), QString::number(ProjectStore::kSchemaVersion));
        QCOMPARE(one("PRAGMA journal_mode"), QString("wal"));
        QCOMPARE(one("PRAGMA foreign_keys"), QString("1"));
        QCOMPARE(*store->integrityCheck(), std::string("ok"));
        QCOMPARE(store->counts()->pages, 3);
        QCOMPARE(store->counts()->queued, 3);
    }

    void resultsAndCorrections() {
        auto store = fresh("b.quire");
        QVERIFY(store);
        auto pages = store->pages();
        QCOMPARE(int(pages->size()), 3);
        const int64_t id = (*pages)[1].id;
        PageOutcome o;
        o.text = samplePage("hello");
        o.region = {0, 0, 1000, 1400};
        o.flagged = true;
        QVERIFY(store->saveResult(id, {o}));
        QCOMPARE(*store->effectiveText(id), std::string("hello world"));
        auto layout = store->layout(id);
        QCOMPARE(int(layout->lines.size()), 1);
        QCOMPARE(layout->lines[0].words[1].box.x, 320);
        QCOMPARE(layout->lines[0].words[1].confidence, 55.0f);
        // Every edit is kept; the newest wins over the engine's text.
        QVERIFY(store->addCorrection(id, "hello wor1d"));
        QVERIFY(store->addCorrection(id, "hello, world"));
        QCOMPARE(*store->effectiveText(id), std::string("hello, world"));
        QCOMPARE(int(store->corrections(id)->size()), 2);
        // Re-recognising the page never touches the corrections.
        o.text = samplePage("jello");
        QVERIFY(store->saveResult(id, {o}));
        QCOMPARE(*store->effectiveText(id), std::string("hello, world"));
        QCOMPARE(*store->engineText(id), std::string("jello world"));
        const auto c = store->counts();
        QCOMPARE(c->done, 1);
        QCOMPARE(c->flagged, 1);
        QCOMPARE(c->corrected, 1);
        QCOMPARE(int(store->queuedPages()->size()), 2);
    }

    void splitSpreadBecomesTwoPages() {
        auto store = splitSpread("c.quire");
        QVERIFY(store);
        auto pages = store->pages();
        QCOMPARE(int(pages->size()), 3);
        QCOMPARE((*pages)[0].part, 1);
        QCOMPARE((*pages)[1].part, 2);
        QCOMPARE((*pages)[1].region.x, 500);
        QCOMPARE(*store->effectiveText((*pages)[1].id), std::string("right world"));
        QCOMPARE((*pages)[2].status, PageStatus::Queued);
    }

    void changedSourceRequeuesAndKeepsCorrections() {
        auto store = fresh("d.quire", 3);
        QVERIFY(store);
        auto pages = *store->pages();
        PageOutcome o;
        o.text = samplePage("x");
        for (const auto& p : pages) QVERIFY(store->saveResult(p.id, {o}));
        QVERIFY(store->addCorrection(pages[2].id, "typed by hand"));
        const auto doc = (*store->documents())[0];
        // The file now has two pages: page 3 had a correction, so it stays (failed, with a reason).
        QVERIFY(store->requeueDocument(doc.id, "hash2", 90, {{doc.path, 0}, {doc.path, 1}}));
        auto after = *store->pages();
        QCOMPARE(int(after.size()), 3);
        QCOMPARE(after[0].status, PageStatus::Queued);
        QCOMPARE(after[2].status, PageStatus::Failed);
        QCOMPARE(*store->effectiveText(after[2].id), std::string("typed by hand"));
        QCOMPARE((*store->findDocument(doc.path))->sha256, std::string("hash2"));
    }

    void refusesNewerSchema() {
        const QString file = m_dir.filePath("newer.quire");
        { QVERIFY(fresh("newer.quire")); }
        execSql(file, "PRAGMA user_version=99");
        auto store = ProjectStore::open(file.toStdString());
        QVERIFY(!store);
        QCOMPARE(store.status().code(), ErrorCode::NewerSchema);
        QVERIFY(QString::fromStdString(store.status().message()).contains("newer version of Quire"));
        // Refusing it did not alter it.
        sqlite3* db = nullptr;
        sqlite3_open(file.toUtf8().constData(), &db);
        sqlite3_stmt* st = nullptr;
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
        sqlite3_step(st);
        QCOMPARE(sqlite3_column_int(st, 0), 99);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }

    void refusesNonProjects_data() {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<bool>("foreignSqlite");
        QTest::newRow("text") << QByteArray("hello, I am not a database at all...") << false;
        QTest::newRow("foreign sqlite") << QByteArray() << true;
    }
    void refusesNonProjects() {
        QFETCH(QByteArray, content);
        QFETCH(bool, foreignSqlite);
        const QString file = m_dir.filePath(QString("not-%1.quire").arg(foreignSqlite));
        if (foreignSqlite) execSql(file, "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
        else writeFile(file, content.toStdString());
        const std::string before = readFile(file);
        auto store = ProjectStore::open(file.toStdString());
        QVERIFY(!store);
        QCOMPARE(store.status().code(), ErrorCode::Corrupt);
        QVERIFY(QString::fromStdString(store.status().message()).contains("not a Quire project"));
        QCOMPARE(readFile(file), before);
    }

    void decoderStateIsKept() {
        auto store = fresh("f.quire");
        QVERIFY(!store->decoderState()->has_value());
        // Binary, with a NUL and a high byte (hex escapes are split so they do not run on).
        const std::string blob = std::string(1, '\0') + "\x01" "binary" "\xff";
        DecoderCheckpoint cp;
        cp.state = blob;
        cp.restartPages = true;
        cp.newPages = {{1.f, 2.f, 3.f}, {4.f}};
        QVERIFY(store->saveDecoderState(cp));
        // The next checkpoint adds a page; the saved state is replaced.
        cp.state = blob + "more";
        cp.restartPages = false;
        cp.firstNewPage = 2;
        cp.newPages = {{-0.5f, 1e30f}};
        const auto pages = store->pages();
        QVERIFY(store->saveDecoderState(cp, pages->front().id));
        auto saved = store->decoderState();
        QVERIFY(saved && saved->has_value());
        QCOMPARE((*saved)->state, blob + "more");
        QCOMPARE((*saved)->lastPageId, pages->front().id);
        QCOMPARE(*store->contextPage(0), std::vector<float>({1.f, 2.f, 3.f}));
        QCOMPARE(*store->contextPage(2), std::vector<float>({-0.5f, 1e30f}));
        QCOMPARE(store->contextPage(3).status().code(), ErrorCode::NotFound);
        // A context that starts again drops the old context's pages.
        cp.restartPages = true;
        cp.firstNewPage = 0;
        cp.newPages = {{7.f}};
        QVERIFY(store->saveResult(pages->front().id, {PageOutcome{}}, &cp));
        QCOMPARE(*store->contextPage(0), std::vector<float>({7.f}));
        QVERIFY(!store->contextPage(1));
        QVERIFY(store->clearDecoderState());
        QVERIFY(!store->decoderState()->has_value());
        QVERIFY(!store->contextPage(0));
    }

    void migratesAVersionOneProject() {
        const QString file = m_dir.filePath("v1.quire");
        { QVERIFY(fresh("v1.quire")); }
        // Back to schema 1: without what migrations 2-9 add.
        execSql(file, "DROP TABLE decoder_state; DROP TABLE context_pages; ALTER TABLE pages DROP COLUMN crashes; "
                      "ALTER TABLE pages DROP COLUMN flag_reason; DROP TABLE dictionary; DROP TABLE arrangement_edits; "
                      "ALTER TABLE pages DROP COLUMN book_order; ALTER TABLE pages DROP COLUMN removed; "
                      "ALTER TABLE pages DROP COLUMN rotation; DROP TABLE readings; ALTER TABLE corrections DROP COLUMN "
                      "set_aside; ALTER TABLE pages DROP COLUMN reading_replaces_corrections; DROP TABLE regions; "
                      "PRAGMA user_version=1");
        auto store = ProjectStore::open(file.toStdString());
        QVERIFY2(store, store.status().message().c_str());
        QVERIFY((*store)->saveDecoderState(DecoderCheckpoint{"x", true, 0, {{1.f}}}));
        QCOMPARE((*store)->counts()->pages, 3);
        QVERIFY((*store)->pages()->front().flagReason.empty());
        QVERIFY((*store)->addProjectWord("Cortez"));
        QCOMPARE(*(*store)->projectWords(), std::vector<std::string>{"Cortez"});
        // The pages keep the order they had (documents, then pages in the file) and can be moved.
        auto pages = *(*store)->pages();
        QCOMPARE(pages[0].filePage, 0);
        QCOMPARE(pages[2].filePage, 2);
        QVERIFY(movePages(**store, {pages[2].id}, 1));
        QCOMPARE((*store)->pages()->front().filePage, 2);
    }

    // The book's arrangement: pages removed (kept, out of the book), moved, turned; each change
    // undone in turn, also after reopening the project.
    void pagesAreRemovedMovedTurnedAndUndone() {
        const QString file = m_dir.filePath("arrange.quire");
        auto store = fresh("arrange.quire", 5);
        QVERIFY(store);
        auto ids = [&] {
            std::vector<int64_t> out;
            for (const auto& p : *store->pages()) out.push_back(p.id);
            return out;
        };
        const std::vector<int64_t> p = ids();  // pages 1..5
        PageOutcome o;
        o.region = {0, 0, 1000, 1400};
        for (int i = 0; i < 5; ++i) {
            o.text = samplePage("page" + std::to_string(i + 1));
            QVERIFY(store->saveResult(p[size_t(i)], {o}));
        }
        QVERIFY(store->addCorrection(p[1], "corrected two"));

        auto removed = removePages(*store, {p[1]});
        QVERIFY2(removed, removed.status().message().c_str());
        QCOMPARE(QString::fromStdString(removed->summary), QString("removed page 2"));
        QCOMPARE(ids(), (std::vector<int64_t>{p[0], p[2], p[3], p[4]}));
        QCOMPARE(store->counts()->pages, 4);
        QCOMPARE(store->counts()->corrected, 0);
        QCOMPARE(store->page(p[1])->sequence, 0);       // out of the book
        QCOMPARE(store->page(p[3])->sequence, 3);
        QCOMPARE(int(store->effectiveTexts()->size()), 4);
        QCOMPARE(*store->effectiveText(p[1]), std::string("corrected two"));  // its work is kept
        QVERIFY(!movePages(*store, {p[1]}, 1));  // a removed page is not in the book to move

        auto moved = movePages(*store, {p[4], p[0]}, 2);  // pages 5 and 1 before page 2 (page 3 of the source)
        QVERIFY2(moved, moved.status().message().c_str());
        QCOMPARE(ids(), (std::vector<int64_t>{p[0], p[4], p[2], p[3]}));  // kept in their order: 1 before 5
        QVERIFY(movePages(*store, {p[2]}, 5));  // to the end
        QCOMPARE(ids(), (std::vector<int64_t>{p[0], p[4], p[3], p[2]}));
        QCOMPARE(store->page(p[2])->sequence, 4);
        QCOMPARE(store->effectiveTexts()->back().pageId, p[2]);
        QVERIFY(!movePages(*store, {p[2]}, 6));  // no page 6 to go before
        QCOMPARE(movePages(*store, {p[2]}, 4)->id, int64_t(0));  // there already: nothing to undo
        QVERIFY(!movePages(*store, {p[2], p[2]}, 1));

        auto turned = rotatePages(*store, {p[3]}, 90);
        QVERIFY2(turned, turned.status().message().c_str());
        QCOMPARE(store->page(p[3])->rotation, 90);
        QCOMPARE(store->page(p[3])->status, PageStatus::Queued);  // to be read again the right way up
        QCOMPARE(*store->engineText(p[3]), std::string("page4 world"));  // until then, its reading stays
        QVERIFY(rotatePages(*store, {p[3]}, 270));
        QCOMPARE(store->page(p[3])->rotation, 0);
        QVERIFY(!rotatePages(*store, {p[3]}, 45));

        // A page added now follows the last page.
        DocumentRecord more{0, "/books/more.pdf", "pdf", "hash2", 10, 0, 0};
        QVERIFY(store->addDocument(more, {{more.path, 0}}));
        const int64_t added = ids().back();
        QCOMPARE(int(ids().size()), 5);

        // Undone newest first, after reopening: each change's words, then the state before it.
        store.reset();
        auto reopened = ProjectStore::open(file.toStdString());
        QVERIFY(reopened);
        store = std::move(*reopened);
        QCOMPARE(QString::fromStdString((*lastArrangement(*store))->summary), QString("turned page 3 270° clockwise"));
        QVERIFY(undoArrangement(*store));  // the second turn
        QCOMPARE(store->page(p[3])->rotation, 90);
        QVERIFY(undoArrangement(*store));  // the first: never read turned, so its reading stands again
        QCOMPARE(store->page(p[3])->rotation, 0);
        QCOMPARE(store->page(p[3])->status, PageStatus::Done);
        QVERIFY(undoArrangement(*store));
        QCOMPARE(ids(), (std::vector<int64_t>{p[0], p[4], p[2], p[3], added}));
        QVERIFY(undoArrangement(*store));
        QCOMPARE(ids(), (std::vector<int64_t>{p[0], p[2], p[3], p[4], added}));
        auto last = undoArrangement(*store);
        QCOMPARE(QString::fromStdString((*last)->summary), QString("removed page 2"));
        QCOMPARE(ids(), (std::vector<int64_t>{p[0], p[1], p[2], p[3], p[4], added}));
        QCOMPARE(store->counts()->corrected, 1);
        QVERIFY(!undoArrangement(*store)->has_value());  // nothing more
        QCOMPARE(*store->integrityCheck(), std::string("ok"));
    }

    // Removed pages are put back in any order, each where it stood among the pages now in the book
    // (Undo only takes back the last change); putting back is a change Undo takes back too.
    void removedPagesArePutBackInAnyOrder() {
        auto store = fresh("restore.quire", 5);
        QVERIFY(store);
        auto ids = [&] {
            std::vector<int64_t> out;
            for (const auto& pg : *store->pages()) out.push_back(pg.id);
            return out;
        };
        const std::vector<int64_t> p = ids();
        QVERIFY(store->addCorrection(p[3], "corrected four"));
        QVERIFY(removePages(*store, {p[1]}));
        QVERIFY(removePages(*store, {p[3]}));
        QVERIFY(movePages(*store, {p[4]}, 1));  // page 5 first: 5 1 3
        auto removed = removedPages(*store);
        QVERIFY(removed);
        QCOMPARE(int(removed->size()), 2);
        QCOMPARE(*removedPageCount(*store), 2);
        QCOMPARE((*removed)[0].id, p[1]);  // in the order they stood
        QCOMPARE((*removed)[1].sequence, 0);
        QVERIFY(!restorePages(*store, {p[0]}));  // in the book already
        QVERIFY(!restorePages(*store, {}));

        auto back = restorePages(*store, {p[1]});  // the earlier removal, past the move and the later one
        QVERIFY2(back, back.status().message().c_str());
        QCOMPARE(QString::fromStdString(back->summary), QString("put back page 3"));
        QCOMPARE(ids(), (std::vector<int64_t>{p[4], p[0], p[1], p[2]}));
        QCOMPARE(int(removedPages(*store)->size()), 1);
        QVERIFY(restorePages(*store, {p[3]}));
        QCOMPARE(ids(), (std::vector<int64_t>{p[4], p[0], p[1], p[2], p[3]}));
        QCOMPARE(*store->effectiveText(p[3]), std::string("corrected four"));  // its work came back with it
        QCOMPARE(store->counts()->corrected, 1);

        auto undone = undoArrangement(*store);
        QCOMPARE(QString::fromStdString((*undone)->summary), QString("put back page 5"));
        QCOMPARE(ids(), (std::vector<int64_t>{p[4], p[0], p[1], p[2]}));
        QCOMPARE(store->page(p[3])->sequence, 0);
        QCOMPARE(*store->integrityCheck(), std::string("ok"));
    }

    // A page read again keeps its earlier reading as a version; its corrections stay its text unless
    // the re-read was asked to replace them, and then they stay in its history, revertible.
    void rereadKeepsEarlierReadingsAndCorrections() {
        auto store = fresh("reread.quire", 2);
        // Versions are listed in the order of their times, to the millisecond: each step here
        // waits one out, as a person's steps always do (a clean-clone run once saw a tie).
        auto tick = [] { QThread::msleep(3); };
        QVERIFY(store);
        const auto pages = *store->pages();
        const int64_t id = pages[0].id;
        PageOutcome o;
        o.region = {0, 0, 1000, 1400};
        o.text = samplePage("alpha");
        QVERIFY(store->saveResult(id, {o}));
        tick();
        QVERIFY(store->addCorrection(id, "alpha, corrected"));
        tick();

        auto corrected = queueReread(*store, {id, pages[1].id}, false);
        QVERIFY2(corrected, corrected.status().message().c_str());
        QCOMPARE(*corrected, 1);  // the choice concerned one page
        QCOMPARE(store->page(id)->status, PageStatus::Queued);
        o.text = samplePage("beta");
        o.text.engine = "other";
        QVERIFY(store->saveResult(id, {o}));
        tick();
        QCOMPARE(*store->effectiveText(id), std::string("alpha, corrected"));  // the correction stays the text
        auto versions = *pageVersions(*store, id);
        QCOMPARE(int(versions.size()), 3);
        QCOMPARE(versions[0].kind, PageVersion::Kind::EarlierReading);
        QCOMPARE(versions[0].text, std::string("alpha world"));
        QCOMPARE(QString::fromStdString(versions[0].label), QString("earlier reading (test 1)"));
        QVERIFY(versions[1].current);
        QCOMPARE(versions[2].text, std::string("beta world"));

        QCOMPARE(*queueReread(*store, {id}, true), 1);
        o.text = samplePage("gamma");
        QVERIFY(store->saveResult(id, {o}));
        tick();
        QCOMPARE(*store->effectiveText(id), std::string("gamma world"));  // the new reading is the text
        QCOMPARE(store->counts()->corrected, 0);
        QVERIFY(!store->page(id)->corrected);
        versions = *pageVersions(*store, id);
        QCOMPARE(int(versions.size()), 4);
        QCOMPARE(versions[1].kind, PageVersion::Kind::SetAsideCorrection);
        QVERIFY(versions[3].current);
        QVERIFY(revertPage(*store, id, 1));  // the set-aside correction is the text again
        tick();
        QCOMPARE(*store->effectiveText(id), std::string("alpha, corrected"));
        // The same reading again adds no version; a later re-read without the choice keeps corrections.
        QVERIFY(queueReread(*store, {id}, false));
        QVERIFY(store->saveResult(id, {o}));
        QCOMPARE(int(pageVersions(*store, id)->size()), 5);
        QCOMPARE(*store->effectiveText(id), std::string("alpha, corrected"));
        QVERIFY(!queueReread(*store, {987654}, false));
    }

    // A turn is the scan's: both halves of a split spread turn; halves moved apart are still read
    // as one source page.
    void spreadHalvesTurnTogetherAndAreReadOnce() {
        auto store = splitSpread("spread.quire");
        QVERIFY(store);
        auto pages = *store->pages();  // left, right, page 2
        QVERIFY(movePages(*store, {pages[1].id}, 4));  // the right half to the end
        QVERIFY(rotatePages(*store, {pages[0].id}, 180));
        auto after = *store->pages();
        QCOMPARE(after[0].rotation, 180);
        QCOMPARE(after[2].id, pages[1].id);
        QCOMPARE(after[2].rotation, 180);
        auto queued = *store->queuedPages();
        QCOMPARE(int(queued.size()), 2);  // the spread once, page 2
        // Read again split: the halves keep their places.
        QVERIFY(store->saveResult(queued[0].id, spreadHalves()));
        QCOMPARE(store->pages()->at(2).id, pages[1].id);
        QCOMPARE(store->pages()->at(0).id, pages[0].id);
    }

    void runsAreRecorded() {
        auto store = fresh("e.quire");
        auto run = store->beginRun("{\"languages\":\"eng\"}");
        QVERIFY(run);
        auto second = store->beginRun("{\"languages\":\"deu\"}");  // the first one was interrupted
        QVERIFY(store->finishRun(*second, "finished"));
        auto last = store->lastRun();
        QCOMPARE((*last)->state, std::string("finished"));
        QCOMPARE((*last)->params, std::string("{\"languages\":\"deu\"}"));
    }
};

QTEST_GUILESS_MAIN(TestProjectStore)
#include "tst_project_store.moc"
