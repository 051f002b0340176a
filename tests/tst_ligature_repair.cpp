// Words read without a ligature's second letter written back as printed (quire/text/ligature_repair.h),
// with a hunspell dictionary of a few words written for the test, so the cases do not depend on
// what the machine has installed.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include "quire/text/ligature_repair.h"

using namespace quire;

class TstLigatureRepair : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

    LigatureRepair repair(const std::vector<std::string>& added = {}) {
        Dictionary d = Dictionary::forLanguages("eng", m_dir.path().toStdString());
        for (const auto& w : added) d.addWord(w);
        return LigatureRepair(std::move(d));
    }

    static Line line(const std::vector<std::string>& words) {
        Line l;
        for (const auto& t : words) l.words.push_back(Word{t, Box{}, 90.f, {}});
        return l;
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        QFile aff(m_dir.filePath("en_US.aff")), dic(m_dir.filePath("en_US.dic"));
        QVERIFY(aff.open(QIODevice::WriteOnly) && dic.open(QIODevice::WriteOnly));
        aff.write("SET UTF-8\nTRY esiarntolcdugmphbyfvkwz'\n");
        dic.write("14\nfirst\nflower\neffect\noffice\nbaffle\nfire\nfires\nbonfires\nthe\nfiats\nflats\nshelf\nflier\nfifer\n");
    }

    void eachLostLetterIsWrittenBack_data() {
        QTest::addColumn<QString>("read");
        QTest::addColumn<QString>("printed");  // empty: left as read
        QTest::newRow("fi read as f") << "frst" << "first";
        QTest::newRow("fl read as f") << "fower" << "flower";
        QTest::newRow("ff read as f") << "efect" << "effect";
        QTest::newRow("ffi read as f") << "ofce" << "office";
        QTest::newRow("ffi read as ff") << "offce" << "office";
        QTest::newRow("ffl read as ff") << "baffe" << "baffle";
        QTest::newRow("punctuation and case kept") << "\u201cFower,\u201d" << "";  // a capital F is no ligature
        QTest::newRow("punctuation around") << "(frst)," << "(first),";
        QTest::newRow("known as read") << "fire" << "";
        QTest::newRow("under four letters") << "fre" << "";  // a piece of "free" as often as "fire"
        QTest::newRow("read beginning ff") << "ffer" << "";  // a piece of "offer", not "fifer"
        QTest::newRow("fiats or flats: which was printed is a guess") << "fats" << "";
        QTest::newRow("no f") << "hous" << "";
        QTest::newRow("no word of letters") << "f1rst" << "";
        QTest::newRow("unknown and beyond repair") << "fxyz" << "";
    }
    void eachLostLetterIsWrittenBack() {
        QFETCH(QString, read);
        QFETCH(QString, printed);
        const LigatureRepair r = repair();
        QVERIFY(r.available());
        QCOMPARE(QString::fromStdString(r.repaired(read.toStdString())), printed);
    }

    // A word the project added (a name, an old spelling) is known, so it is never repaired.
    void theProjectsWordsAreKept() {
        QCOMPARE(QString::fromStdString(repair().repaired("frst")), QString("first"));
        QVERIFY(repair({"frst"}).repaired("frst").empty());
    }

    // The halves of a word hyphenated at a line end are not words: neither is touched ("bon-" /
    // "fres" would become "fires").
    void aHyphenatedWordsHalvesAreLeft() {
        PageText page;
        page.lines = {line({"the", "frst", "bon-"}), line({"fres", "the", "fower"}), line({"shelf", "ofce"})};
        QCOMPARE(repair().repairPage(page), 3);
        QCOMPARE(QString::fromStdString(page.plainText()), QString("the first bon-\nfres the flower\nshelf office"));
        QCOMPARE(page.lines[0].words[1].confidence, 90.f);  // the word's box and confidence stay
    }

    // Without a dictionary for the languages nothing changes.
    void noDictionaryNoRepair() {
        LigatureRepair r(Dictionary::forLanguages("chi_sim", m_dir.path().toStdString()));
        QVERIFY(!r.available());
        PageText page;
        page.lines = {line({"frst"})};
        QCOMPARE(r.repairPage(page), 0);
        QCOMPARE(page.lines[0].words[0].text, std::string("frst"));
    }
};

QTEST_GUILESS_MAIN(TstLigatureRepair)
#include "tst_ligature_repair.moc"
