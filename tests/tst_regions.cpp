// Regions drawn by hand (issue #30, item 2): stored per page, read in their order by the engine,
// text outside them (or in an ignore/image region) left out, and carried into the exports.
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "quire/pipeline/region_layout.h"
#include "quire/store/page_regions.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

namespace {

Line line(int block, Box box, const std::vector<std::string>& words) {
    Line l;
    l.block = block;
    l.box = box;
    const int w = box.w / int(words.size());
    for (size_t i = 0; i < words.size(); ++i) l.words.push_back({words[i], {box.x + int(i) * w, box.y, w - 10, box.h}, 90});
    return l;
}

// A page of two columns under a heading, with a library stamp at the foot: each part is text the
// engines read without help, placed where the test's regions will be drawn.
cv::Mat twoColumnPage() {
    cv::Mat page(2200, 2400, CV_8UC1, cv::Scalar(255));
    auto put = [&](const std::vector<std::string>& lines, cv::Rect at) {
        textPage(lines, at.width, at.height, 1.4).copyTo(page(at));
    };
    put({"THE SECOND CHAPTER"}, {600, 60, 1200, 200});
    put({"The left column begins", "the story of the mill", "beside the old river."}, {60, 400, 1100, 600});
    put({"The right column holds", "a later account of", "the flood of that year."}, {1260, 400, 1100, 600});
    put({"STAMPED BY A LIBRARY"}, {600, 1800, 1200, 200});
    return page;
}

}  // namespace

class TestRegions : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

private slots:
    // A line the engine ran across both columns is cut between the regions; the lines come in the
    // regions' order (right column first here), each region a block; an ignore region's words go.
    void wordsAreSortedIntoTheRegions() {
        PageText page;
        page.lines.push_back(line(0, {100, 100, 2000, 40}, {"left1", "left2", "right1", "right2"}));
        page.lines.push_back(line(0, {100, 160, 2000, 40}, {"left3", "left4", "right3", "right4"}));
        page.lines.push_back(line(1, {100, 900, 1000, 40}, {"stamp", "stamp"}));
        page.lines[1].paragraph = 0;
        page.lines[2].paragraph = 1;
        const std::vector<PageRegion> regions{{{1080, 50, 1100, 300}, RegionKind::Text},
                                              {{50, 50, 1040, 300}, RegionKind::Heading},
                                              {{50, 850, 1200, 200}, RegionKind::Ignore}};
        arrangeByRegions(page, regions);
        QCOMPARE(int(page.lines.size()), 4);
        QCOMPARE(QString::fromStdString(page.plainText()), QString("right1 right2\nright3 right4\n\nleft1 left2\nleft3 left4"));
        QCOMPARE(page.lines[0].block, 0);
        QCOMPARE(page.lines[2].block, 1);
        QVERIFY(page.lines[0].box.x >= 1080);
        // A note drawn inside a text region takes the words at its centre (the smallest wins).
        const std::vector<PageRegion> nested{{{0, 0, 2400, 2000}, RegionKind::Text}, {{1000, 0, 400, 400}, RegionKind::MarginalNote}};
        QCOMPARE(readRegionAt({1100, 100, 50, 20}, nested), 1);
        QCOMPARE(readRegionAt({100, 100, 50, 20}, nested), 0);
        QCOMPARE(readRegionAt({100, 2100, 50, 20}, nested), -1);
    }

    // A region read again alone: its words replace the ones it held; the rest stays as read.
    void oneRegionsTextIsReplaced() {
        PageText before;
        before.lines.push_back(line(0, {100, 100, 2000, 40}, {"oldL1", "oldL2", "oldR1", "oldR2"}));
        PageText reread;
        reread.lines.push_back(line(0, {1100, 100, 1000, 40}, {"newR1", "newR2"}));
        reread.lines.push_back(line(0, {100, 300, 1000, 40}, {"stray"}));  // outside the region: not taken
        const std::vector<PageRegion> regions{{{50, 50, 1040, 300}, RegionKind::Text}, {{1080, 50, 1100, 300}, RegionKind::Text}};
        const PageText merged = replaceRegionText(before, reread, regions, 1);
        QCOMPARE(QString::fromStdString(merged.plainText()), QString("oldL1 oldL2\n\nnewR1 newR2"));
    }

    // Outside the regions read, the page is the paper's tone; inside it is the scan, untouched,
    // except where an image or ignore region is drawn over it.
    void theEngineSeesOnlyTheRegions() {
        cv::Mat page(400, 400, CV_8UC1, cv::Scalar(230));
        cv::rectangle(page, {20, 20, 360, 360}, cv::Scalar(0), 3);
        page(cv::Rect(100, 100, 50, 50)).setTo(10);
        const cv::Mat masked = maskOutsideRegions(page, {{{90, 90, 200, 200}, RegionKind::Text}, {{200, 200, 60, 60}, RegionKind::Ignore}});
        QCOMPARE(masked.at<uchar>(20, 20), uchar(230));  // the frame, outside: painted over
        QCOMPARE(masked.at<uchar>(120, 120), uchar(10));   // inside: the scan
        QCOMPARE(masked.at<uchar>(220, 220), uchar(230));  // the ignore region
    }

    // End to end with quire-cli: a page read as the engine sees it, then regions drawn (heading,
    // right column, left column; the stamp ignored) and the page read again in them: the text in
    // that order without the stamp, the earlier reading kept, the kinds in PAGE and ALTO (valid
    // against their schemas), the heading a heading in Markdown.
    void aPageIsReadInItsRegions() {
        const QString png = m_dir.filePath("columns.png"), project = m_dir.filePath("regions.quire");
        QVERIFY(cv::imwrite(png.toStdString(), twoColumnPage()));
        auto r = runCli({"transcribe", png, "--project", project, "--no-deskew"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        r = runCli({"export", "--project", project, "--format", "txt", "--out", m_dir.filePath("before")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QString before = QString::fromStdString(readFile(m_dir.filePath("before/book.txt")));
        QVERIFY2(before.contains("STAMPED"), qPrintable(before));
        QVERIFY2(before.indexOf("left column") < before.indexOf("right column"), qPrintable(before));

        // Refused: an unknown kind, a region off the page; nothing is stored.
        r = runCli({"regions", "--project", project, "--page", "1", "--set", "0,0,100,100:footnote"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("region 1") && r.err.contains("heading, marginal-note"), qPrintable(r.err));
        r = runCli({"regions", "--project", project, "--page", "1", "--set", "0,0,100,100;5000,5000,10,10"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("region 2") && r.err.contains("no area on the page"), qPrintable(r.err));
        r = runCli({"regions", "--project", project, "--page", "1", "--json"});
        QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object().value("regions").toArray().size(), 0);

        r = runCli({"regions", "--project", project, "--page", "1", "--set",
                    "560,40,1280,240:heading;1240,380,1140,640;40,380,1140,640:text;560,1780,1280,240:ignore"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("4 region(s)"), qPrintable(r.err));
        r = runCli({"regions", "--project", project, "--page", "1", "--json"});
        const QJsonArray listed = QJsonDocument::fromJson(r.out.toUtf8()).object().value("regions").toArray();
        QCOMPARE(listed.size(), 4);
        QCOMPARE(listed.at(0).toObject().value("kind").toString(), QString("heading"));
        QCOMPARE(listed.at(3).toObject().value("kind").toString(), QString("ignore"));

        r = runCli({"transcribe", "--project", project, "--reread", "1", "--no-deskew"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("read in its 4 region(s) drawn by hand"), qPrintable(r.err));
        r = runCli({"export", "--project", project, "--format", "txt,md,alto,page", "--out", m_dir.filePath("after")});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        const QString after = QString::fromStdString(readFile(m_dir.filePath("after/book.txt")));
        QVERIFY2(!after.contains("STAMPED"), qPrintable(after));
        const int heading = after.indexOf("CHAPTER"), right = after.indexOf("right column"), left = after.indexOf("left column");
        QVERIFY2(heading >= 0 && right > heading && left > right, qPrintable(after));
        // Each column whole, not interleaved line by line with the other.
        QVERIFY2(after.contains("The right column holds a later account of the flood of that year."), qPrintable(after));
        QVERIFY2(after.contains("The left column begins the story of the mill beside the old river."), qPrintable(after));
        const QString md = QString::fromStdString(readFile(m_dir.filePath("after/book.md")));
        QVERIFY2(QRegularExpression("(^|\\n)#+ THE SECOND CHAPTER").match(md).hasMatch(), qPrintable(md));
        r = runCli({"history", "--project", project, "--page", "1", "--json"});
        QVERIFY2(r.out.contains("earlier reading") && r.out.contains("STAMPED"), qPrintable(r.out));

        const QString page = QString::fromStdString(readFile(m_dir.filePath("after/book.page/0001.xml")));
        QVERIFY2(page.contains("type=\"heading\"") && page.contains("points=\"560,40 1840,40 1840,280 560,280\""), qPrintable(page));
        const QString alto = QString::fromStdString(readFile(m_dir.filePath("after/book.alto/0001.xml")));
        QVERIFY2(alto.contains("<LayoutTag ID=\"region_heading\" LABEL=\"heading\"/>") && alto.contains("TAGREFS=\"region_heading\""),
                 qPrintable(alto));
        const QString shared = sharedDir();
        if (!shared.isEmpty())
            for (const auto& [file, xsd] : {std::pair{"after/book.alto/0001.xml", "alto44.xsd"}, std::pair{"after/book.page/0001.xml", "page2019.xsd"}}) {
                const auto v = runProgram("xmllint", {"--noout", "--nonet", "--schema", shared + "/schemas/" + xsd, m_dir.filePath(file)});
                QVERIFY2(v.exitCode == 0, qPrintable(v.err));
            }

        // Turned, the page's regions no longer fit it: they stay stored, unused, until it is turned back.
        QCOMPARE(runCli({"pages", "--project", project, "--rotate", "1", "--by", "90"}).exitCode, 0);
        r = runCli({"regions", "--project", project, "--page", "1", "--json"});
        QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object().value("regions").toArray().size(), 0);
        QCOMPARE(runCli({"pages", "--project", project, "--undo"}).exitCode, 0);
        r = runCli({"regions", "--project", project, "--page", "1", "--json"});
        QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8()).object().value("regions").toArray().size(), 4);
        r = runCli({"regions", "--project", project, "--page", "1", "--clear"});
        QVERIFY2(r.exitCode == 0 && r.out.contains("no regions drawn"), qPrintable(r.err + r.out));
    }

    // quire-cli transcribe --reread N --region K: a page read in two regions (the heading and the
    // left column), then the right column drawn too. Reading the left column again alone leaves
    // the right one unread (a whole re-read would read it); reading the right one alone adds it,
    // in its place in the order.
    void aRegionIsReadAgainAlone() {
        const QString png = m_dir.filePath("columns2.png"), project = m_dir.filePath("one-region.quire");
        QVERIFY(cv::imwrite(png.toStdString(), twoColumnPage()));
        auto r = runCli({"transcribe", png, "--project", project, "--no-deskew"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        auto text = [&](const QString& out) {
            const auto e = runCli({"export", "--project", project, "--format", "txt", "--out", m_dir.filePath(out)});
            return e.exitCode == 0 ? QString::fromStdString(readFile(m_dir.filePath(out + "/book.txt"))) : e.err;
        };
        QCOMPARE(runCli({"regions", "--project", project, "--page", "1", "--set", "560,40,1280,240:heading;40,380,1140,640"}).exitCode, 0);
        QCOMPARE(runCli({"transcribe", "--project", project, "--reread", "1", "--no-deskew"}).exitCode, 0);
        QVERIFY2(!text("a").contains("right column"), qPrintable(text("a")));
        QCOMPARE(runCli({"regions", "--project", project, "--page", "1", "--set",
                         "560,40,1280,240:heading;1240,380,1140,640;40,380,1140,640"}).exitCode, 0);
        r = runCli({"transcribe", "--project", project, "--reread", "1", "--region", "5", "--no-deskew"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("3 region(s) drawn; region 5 is not one of them"), qPrintable(r.err));
        r = runCli({"transcribe", "--project", project, "--reread", "1", "--region", "3", "--no-deskew"});
        QVERIFY2(r.exitCode == 0, qPrintable(r.err));
        QVERIFY2(r.err.contains("its region 3 (text) read again; the rest of its text kept"), qPrintable(r.err));
        const QString leftAgain = text("b");
        QVERIFY2(leftAgain.contains("The left column begins") && !leftAgain.contains("right column"), qPrintable(leftAgain));
        QVERIFY2(leftAgain.contains("CHAPTER"), qPrintable(leftAgain));  // kept from the reading before
        QCOMPARE(runCli({"transcribe", "--project", project, "--reread", "1", "--region", "2", "--no-deskew"}).exitCode, 0);
        const QString all = text("c");
        const int heading = all.indexOf("CHAPTER"), right = all.indexOf("right column"), left = all.indexOf("left column");
        QVERIFY2(heading >= 0 && right > heading && left > right, qPrintable(all));
    }
};

QTEST_GUILESS_MAIN(TestRegions)
#include "tst_regions.moc"
