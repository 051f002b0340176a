#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <sstream>

#include "quire/export/book.h"
#include "quire/export/exporters.h"
#include "quire/text/dictionary.h"
#include "quire/text/word_diff.h"

using namespace quire;

namespace {
BookPageInput page(const std::string& text) {
    BookPageInput p;
    p.text = text;
    return p;
}
// Four pages with running heads, folios, a chapter and a word hyphenated across a page break.
std::vector<BookPageInput> fourPages() {
    return {page("CHAPTER I\nThe Start\n\nIt was a dark night and the\nwind was high.\n\n1"),
            page("2 THE BOOK OF THINGS\n\nThen came the morning, slow and\ngrey."),
            page("THE START 3\n\nNobody spoke at breakfast; the hyphen-"),
            page("4 THE BOOK OF THINGS\n\nated word was found.\n\n- 4 -")};
}
}  // namespace

class TestBook : public QObject {
    Q_OBJECT
private slots:
    void joinsHyphenatedLines_data() {
        QTest::addColumn<QStringList>("lines");
        QTest::addColumn<QString>("joined");
        QTest::newRow("hyphen") << QStringList{"a hyphen-", "ated word"} << "a hyphenated word";
        QTest::newRow("capital after hyphen is kept") << QStringList{"the Anglo-", "Saxon age"} << "the Anglo-Saxon age";
        QTest::newRow("soft hyphen") << QStringList{QString("inter") + QChar(0x00AD), "national"} << "international";
        QTest::newRow("dash alone") << QStringList{"it was -", "over"} << "it was - over";
        QTest::newRow("plain") << QStringList{"one", "two"} << "one two";
    }
    void joinsHyphenatedLines() {
        QFETCH(QStringList, lines);
        QFETCH(QString, joined);
        std::vector<std::string> v;
        for (const auto& l : lines) v.push_back(l.toStdString());
        QCOMPARE(QString::fromStdString(joinLines(v)), joined);
    }

    // A hunspell dictionary of a few words, written for the test, so the rule does not depend on
    // what the machine has installed.
    void lineEndHyphenAsksTheBookThenTheDictionary() {
        QTemporaryDir dir;
        QFile aff(dir.filePath("en_US.aff")), dic(dir.filePath("en_US.dic"));
        QVERIFY(aff.open(QIODevice::WriteOnly) && dic.open(QIODevice::WriteOnly));
        aff.write("SET UTF-8\nTRY esiarntolcdugmphbyfvkwz'\n");
        dic.write("9\nrudely\nconstructed\nsomething\nsome\nthing\nnarrator\nthe\nspoke\nhut\n");
        aff.close(), dic.close();
        Dictionary d = Dictionary::forLanguages("eng+xyz", dir.path().toStdString());
        QVERIFY(d.available());
        QCOMPARE(d.loaded(), std::vector<std::string>{"en_US"});  // en_GB is not in the folder
        QVERIFY(d.knows("constructed") && d.knows("Something") && !d.knows("rudelyconstructed"));
        const auto s = d.suggestions("constructd");
        QVERIFY(!s.empty() && s.front() == "constructed");
        QVERIFY(!d.knows("Cortez"));
        d.addWord("Cortez");
        QVERIFY(d.knows("Cortez"));

        auto join = [&](const std::vector<std::string>& bookTexts, QStringList lines, const Dictionary* dict) {
            const HyphenJudge judge(bookTexts, dict);
            std::vector<std::string> v;
            for (const auto& l : lines) v.push_back(l.toStdString());
            return QString::fromStdString(joinLines(v, &judge));
        };
        // The dictionary: a word it knows joined; two words it knows that join into none, a compound.
        QCOMPARE(join({}, {"a rudely-", "constructed hut"}, &d), QString("a rudely-constructed hut"));
        QCOMPARE(join({}, {"some-", "thing"}, &d), QString("something"));
        QCOMPARE(join({}, {"the narra-", "tor spoke"}, &d), QString("the narrator spoke"));
        // The book's own spelling comes first: "to-day" where it writes so, "today" where it does not.
        QCOMPARE(join({"it was to-day, I think"}, {"to-", "day we go"}, &d), QString("to-day we go"));
        QCOMPARE(join({"it was today, I think"}, {"to-", "day we go"}, &d), QString("today we go"));
        // Half a word at a line end is no vocabulary: "rudely-" on its own line says nothing.
        QCOMPARE(join({"a rudely-\nconstructed hut"}, {"a rudely-", "constructed hut"}, &d), QString("a rudely-constructed hut"));
        // Without a dictionary a broken word is the rule; a soft hyphen always joins.
        QCOMPARE(join({}, {"a rudely-", "constructed hut"}, nullptr), QString("a rudelyconstructed hut"));
        QCOMPARE(join({}, {QString("Mon") + QChar(0x00AD), "Tezuma"}, &d), QString("MonTezuma"));
        // The whole book: assembleBook takes the dictionary.
        const Book book = assembleBook({page("It was a rudely-\nconstructed hut, said the narra-\ntor.")}, &d);
        QCOMPARE(QString::fromStdString(book.paragraphs[0].text), QString("It was a rudely-constructed hut, said the narrator."));
    }

    void runningHeadsAndNumbersLeaveTheBody() {
        const std::vector<BookPageInput> pages = fourPages();
        const Book book = assembleBook(pages);
        QCOMPARE(QString::fromStdString(book.furniture[1].header), QString("2 THE BOOK OF THINGS"));
        QCOMPARE(QString::fromStdString(book.furniture[1].pageNumber), QString("2"));
        QCOMPARE(QString::fromStdString(book.furniture[2].header), QString("THE START 3"));
        QCOMPARE(QString::fromStdString(book.furniture[0].footer), QString("1"));
        QCOMPARE(QString::fromStdString(book.furniture[3].footer), QString("- 4 -"));
        QCOMPARE(int(book.paragraphs.size()), 4);
        QCOMPARE(book.paragraphs[0].headingLevel, 1);
        QCOMPARE(QString::fromStdString(book.paragraphs[0].text), QString("CHAPTER I The Start"));
        QCOMPARE(QString::fromStdString(book.paragraphs[1].text), QString("It was a dark night and the wind was high."));
        QCOMPARE(QString::fromStdString(book.paragraphs[2].text), QString("Then came the morning, slow and grey."));
        // A paragraph and a hyphenated word carried across the page break, the running head dropped.
        QCOMPARE(QString::fromStdString(book.paragraphs[3].text),
                 QString("Nobody spoke at breakfast; the hyphenated word was found."));
        QCOMPARE(book.paragraphs[3].firstPage, 2);
        QCOMPARE(book.paragraphs[3].lastPage, 3);
    }

    // A running head and its folio read as two lines, the folio after the head (and glued to the
    // body's first line) or before it: both leave the body, the folio is the page's number, and the
    // word broken over the page break is joined (the held-out licence volumes' odd pages).
    void headAndFolioOnTwoLinesLeaveTheBody() {
        const Book book = assembleBook({page("GNU GENERAL PUBLIC LICENSE Version 3, 29\n\n211\n\nMoreover, your "
                                             "licence from a copyright holder is re-"),
                                        page("COLLECTED LICENCES\n\n212\ninstated for good, and the parties agree "
                                             "that the con-"),
                                        page("GNU GENERAL PUBLIC LICENSE Version 3, 29\n\n213\ntributor version stands."),
                                        page("214\n\nCOLLECTED LICENCES\n\nIn the following paragraphs a licence is "
                                             "any agreement.")});
        QCOMPARE(int(book.paragraphs.size()), 2);
        QCOMPARE(QString::fromStdString(book.paragraphs[0].text),
                 QString("Moreover, your licence from a copyright holder is reinstated for good, and the parties "
                         "agree that the contributor version stands."));
        QCOMPARE(QString::fromStdString(book.paragraphs[1].text),
                 QString("In the following paragraphs a licence is any agreement."));
        const char* numbers[] = {"211", "212", "213", "214"};
        for (size_t i = 0; i < 4; ++i)
            QCOMPARE(QString::fromStdString(book.furniture[i].pageNumber), QString(numbers[i]));
        QCOMPARE(QString::fromStdString(book.furniture[1].header), QString("COLLECTED LICENCES 212"));
        QCOMPARE(QString::fromStdString(book.furniture[3].header), QString("214 COLLECTED LICENCES"));
        // A number under a line of body text is not taken for a folio.
        const Book plain = assembleBook({page("Some text.\n\n3\nthree things were counted.")});
        QCOMPARE(QString::fromStdString(plain.paragraphs.back().text), QString("3 three things were counted."));
    }

    // Regions drawn by hand: a paragraph in a heading region is a heading, one in a marginal-note
    // region is set apart (never joined to the text around it), whatever they look like.
    void drawnHeadingsAndMarginalNotes() {
        BookPageInput p = page("A plain line\n\nthe body text runs on\n\nnote in the margin\n\nand on to its end.");
        auto line = [](const std::string& words, Box box) {
            Line l;
            l.box = box;
            std::istringstream in(words);
            for (std::string w; in >> w;) l.words.push_back({w, box, 90});
            return l;
        };
        p.layout.lines = {line("A plain line", {100, 100, 800, 40}), line("the body text runs on", {100, 200, 800, 40}),
                          line("note in the margin", {1000, 200, 300, 40}), line("and on to its end.", {100, 260, 800, 40})};
        p.regions = {{{50, 50, 900, 100}, RegionKind::Heading}, {{50, 180, 900, 200}, RegionKind::Text},
                     {{980, 180, 400, 100}, RegionKind::MarginalNote}};
        const Book book = assembleBook({p});
        QCOMPARE(int(book.paragraphs.size()), 4);
        QCOMPARE(book.paragraphs[0].headingLevel, 2);
        QVERIFY(book.paragraphs[2].marginalNote);
        QCOMPARE(QString::fromStdString(book.paragraphs[2].text), QString("note in the margin"));
        QVERIFY(!book.paragraphs[1].marginalNote && !book.paragraphs[3].marginalNote);
        QCOMPARE(book.paragraphs[3].firstPage, 0);
        const QString md = QString::fromStdString(toMarkdown(book, false));
        QVERIFY2(md.startsWith("## A plain line\n") && md.contains("\n> note in the margin\n"), qPrintable(md));
    }

    // Page markers: where each page's body begins, cited by the number printed on it (else its
    // place in the volume), after a word that runs across the break, blank pages included.
    void pageMarkersCiteThePrintedPage() {
        const std::vector<BookPageInput> pages = fourPages();
        const Book book = assembleBook(pages);
        QCOMPARE(QString::fromStdString(toPlainText(book, true)),
                 QString("[p. 1] CHAPTER I The Start\n\nIt was a dark night and the wind was high.\n\n"
                         "[p. 2] Then came the morning, slow and grey.\n\n"
                         "[p. 3] Nobody spoke at breakfast; the hyphenated [p. 4] word was found.\n"));
        QVERIFY(QString::fromStdString(toMarkdown(book, true)).contains("\\[p. 2\\] Then came"));
        QVERIFY(!QString::fromStdString(toPlainText(book)).contains("[p."));  // only when asked
        // No printed numbers: the scan's place; a blank page is marked with the next text.
        const Book plain = assembleBook({page("Some text that goes"), page(""), page("on and on.")});
        QCOMPARE(QString::fromStdString(toPlainText(plain, true)), QString("[scan 1] Some text that goes [scan 2] [scan 3] on and on.\n"));
    }

    // Word diff for comparing page versions: words and whitespace, in order.
    void wordDiffFindsTheChangedWords() {
        auto show = [](const std::string& a, const std::string& b) {
            QString s;
            for (const auto& p : wordDiff(a, b))
                s += (p.kind == DiffPiece::Same ? "=" : p.kind == DiffPiece::Removed ? "-" : "+") + QString::fromStdString(p.text) + "|";
            return s;
        };
        QCOMPARE(show("the ledgr of the\nparish", "the ledger of the\nparish"), QString("=the |-ledgr|+ledger|= of the\nparish|"));
        QCOMPARE(show("a b c", "a b c"), QString("=a b c|"));
        QCOMPARE(show("", "new text"), QString("+new text|"));
        QCOMPARE(show("old", ""), QString("-old|"));
        QCOMPARE(show("one two three", "one three"), QString("=one |-two |=three|"));
        // Whatever the texts, the pieces rebuild both sides.
        const std::string a = "In 1768 the Spaniards left the harbour, and the governor wrote", b = "In 1769 the Spaniards left, and the new governor wrote home";
        std::string before, after;
        for (const auto& p : wordDiff(a, b)) {
            if (p.kind != DiffPiece::Added) before += p.text;
            if (p.kind != DiffPiece::Removed) after += p.text;
        }
        QCOMPARE(before, a);
        QCOMPARE(after, b);
    }

    void finishedParagraphDoesNotRunOn() {
        const Book book = assembleBook({page("The end of a chapter."), page("New things begin here.")});
        QCOMPARE(int(book.paragraphs.size()), 2);
    }

    void bodyTextIsNeverTakenForFurniture() {
        // Long first lines are body text even when they repeat.
        const std::string line = "This sentence is far too long to be a running header of any book at all";
        const Book book = assembleBook({page(line + "."), page(line + "!")});
        QCOMPARE(int(book.paragraphs.size()), 2);
        QVERIFY(book.furniture[0].header.empty());
    }

    void correctionKeepsWordBoxes() {
        PageText layout;
        Line l;
        l.words = {{"Tbe", {10, 10, 30, 20}, 40}, {"cat", {50, 10, 30, 20}, 95}, {"sat", {90, 10, 30, 20}, 90}};
        layout.lines = {l};
        const PageText out = alignCorrection(layout, "The cat sat down");
        QCOMPARE(int(out.lines.size()), 1);
        const auto& w = out.lines[0].words;
        QCOMPARE(int(w.size()), 4);
        QCOMPARE(QString::fromStdString(w[0].text), QString("The"));
        QCOMPARE(w[0].box.x, 10);
        QCOMPARE(w[0].confidence, 100.0f);  // corrected by a person
        QCOMPARE(w[1].confidence, 95.0f);   // unchanged
        QVERIFY(w[3].box.x > w[2].box.right());  // inserted after its neighbour
    }
};

QTEST_GUILESS_MAIN(TestBook)
#include "tst_book.moc"
