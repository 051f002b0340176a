// PP-OCR's page layout (engine/src/ppocr/page_layout.cpp) on given line boxes: reading order by
// rows and columns, bridges across a column gutter cut, Tesseract's blocks put top-down and cut
// where they interleave, and a page's lines read in its layout's order. No model is loaded.
#include <QtTest>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <set>

#include "quire/ppocr/ppocr.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

class TestPageLayout : public QObject {
    Q_OBJECT

private slots:
    void readingOrderColumnsThenRows() {
        // A title across the page, two columns of three lines, a footer across the page.
        std::vector<Box> boxes = {
            {100, 50, 800, 40},                                            // 0 title
            {520, 120, 380, 30}, {520, 160, 380, 30}, {520, 200, 380, 30},  // 1-3 right column
            {100, 120, 380, 30}, {100, 160, 380, 30}, {100, 200, 380, 30},  // 4-6 left column
            {100, 300, 800, 30},                                           // 7 footer
        };
        std::vector<int> block;
        const auto order = readingOrder(boxes, &block);
        QCOMPARE(order, (std::vector<int>{0, 4, 5, 6, 1, 2, 3, 7}));
        QVERIFY(block[4] == block[6] && block[1] == block[3] && block[4] != block[1]);
    }

    // A report's front page: a title, then a side bar of short lines beside a text column wider
    // than 60 % of the page, their rows not lined up; a table of figures under the text column
    // while the side bar goes on. Bands of rows read these interleaved (side bar, text, side
    // bar...); the XY-cut reads the side bar, then the text, then the table row by row.
    void readingOrderSideBarTextAndTable() {
        std::vector<Box> boxes;
        std::vector<int> expect;
        boxes.push_back({100, 40, 900, 40});  // title
        std::vector<int> side, text, table;
        for (int r = 0; r < 24; ++r) side.push_back(int(boxes.size())), boxes.push_back({100, 140 + r * 40, 250 + (r % 3) * 20, 30});
        for (int r = 0; r < 14; ++r) text.push_back(int(boxes.size())), boxes.push_back({440, 150 + r * 40, 620, 30});
        for (int r = 0; r < 4; ++r)  // header row and three rows of figures, four narrow cells each
            for (int c = 0; c < 4; ++c) table.push_back(int(boxes.size())), boxes.push_back({440 + c * 160, 760 + r * 40, c == 0 ? 120 : 80, 30});
        std::vector<int> block;
        const auto order = readingOrder(boxes, &block);
        expect.push_back(0);
        for (const auto* part : {&side, &text, &table}) expect.insert(expect.end(), part->begin(), part->end());
        QCOMPARE(order, expect);
        QVERIFY(block[size_t(side.front())] != block[size_t(text.front())]);
        QVERIFY(block[size_t(text.back())] != block[size_t(table.front())]);
        QCOMPARE(block[size_t(table.front())], block[size_t(table.back())]);  // one table, one block
    }

    // Whatever the boxes (overlapping, empty, one on another, a single one), every line comes out
    // once and blocks are numbered in reading order, each block's lines together: the exporters
    // and the paragraph grouping rely on both.
    void readingOrderIsAPermutationWithContiguousBlocks() {
        std::mt19937 rng(11);
        for (int trial = 0; trial < 300; ++trial) {
            const int n = 1 + int(rng() % 60);
            std::vector<Box> boxes;
            for (int i = 0; i < n; ++i) {
                const int w = trial % 7 == 0 ? 0 : 1 + int(rng() % 400), h = trial % 11 == 0 ? 0 : 1 + int(rng() % 60);
                boxes.push_back({int(rng() % 1200), int(rng() % 1600), w, h});
            }
            if (trial % 5 == 0) boxes.push_back(boxes.front());  // the same box twice
            std::vector<int> block;
            const auto order = readingOrder(boxes, &block);
            std::vector<int> sortedOrder = order;
            std::sort(sortedOrder.begin(), sortedOrder.end());
            std::vector<int> all(boxes.size());
            std::iota(all.begin(), all.end(), 0);
            QCOMPARE(sortedOrder, all);
            for (size_t k = 1; k < order.size(); ++k) QVERIFY(block[size_t(order[k])] >= block[size_t(order[k - 1])]);
        }
    }

    // Two wide text columns whose lines sit on the same rows (a book's two-column page) are read
    // column by column, not as a table: a table's columns are narrow.
    void readingOrderAlignedTextColumnsAreNotATable() {
        std::vector<Box> boxes;
        std::vector<int> left, right;
        for (int r = 0; r < 10; ++r) {
            left.push_back(int(boxes.size())), boxes.push_back({100, 100 + r * 40, 600, 30});
            right.push_back(int(boxes.size())), boxes.push_back({740, 100 + r * 40, 600, 30});
        }
        std::vector<int> expect = left;
        expect.insert(expect.end(), right.begin(), right.end());
        QCOMPARE(readingOrder(boxes), expect);
    }

    // Narrower columns (about 8 line heights, 8 Chinese characters) of short paragraphs, each a
    // first line indented two characters, a full line and a short last line: fewer than three in
    // five lines fill the column, yet they are running text, not a table's cells. Seen on a
    // generated Chinese page once its show-through was trimmed (docs/ACCURACY.md).
    void readingOrderIndentedNarrowColumnsAreNotATable() {
        std::vector<Box> boxes;
        std::vector<int> columns[3];
        for (int r = 0; r < 15; ++r)
            for (int c = 0; c < 3; ++c) {
                const int x = 200 + c * 430, kind = (r + c) % 3;  // 0: first line, 1: full, 2: last
                columns[c].push_back(int(boxes.size()));
                boxes.push_back({kind == 0 ? x + 88 : x, 300 + r * 52, kind == 0 ? 272 : (kind == 1 ? 360 : 150), 44});
            }
        std::vector<int> expect;
        for (const auto& col : columns) expect.insert(expect.end(), col.begin(), col.end());
        QCOMPARE(readingOrder(boxes), expect);
    }

    // A magazine's narrow columns (about 10 line heights wide, 15 Chinese characters), their
    // lines on the same rows: read column by column, not as a table, though they are narrower
    // than the wide columns above. A paragraph's last line is short, its first indented.
    void readingOrderNarrowTextColumnsAreNotATable() {
        std::vector<Box> boxes;
        std::vector<int> left, right;
        for (int r = 0; r < 12; ++r) {
            const int indent = r % 5 == 0 ? 100 : 0, w = r % 5 == 4 ? 220 : 500 - indent;
            left.push_back(int(boxes.size())), boxes.push_back({100 + indent, 100 + r * 60, w, 50});
            right.push_back(int(boxes.size())), boxes.push_back({700 + indent, 100 + r * 60, w, 50});
        }
        std::vector<int> expect = left;
        expect.insert(expect.end(), right.begin(), right.end());
        QCOMPARE(readingOrder(boxes), expect);

        // A running head centred over the gutter and set closer to the columns than a line height
        // (its folio beside it), and a footer across the gutter: the columns are still read whole.
        boxes.push_back({520, 70, 160, 25});   // running head, over the gutter (600-700)
        boxes.push_back({1100, 70, 60, 25});   // its folio
        boxes.push_back({500, 830, 300, 30});  // a footer across the gutter
        expect.insert(expect.begin(), {int(boxes.size()) - 3, int(boxes.size()) - 2});
        expect.push_back(int(boxes.size()) - 1);
        QCOMPARE(readingOrder(boxes), expect);
    }

    // Narrow columns with a gutter about a character wide (as Chinese books set them), the
    // detector's boxes bridging it on some rows: the two first rows joined whole, a fragment
    // across the gutter beside a row's two pieces. Each bridge is cut at the gutter, the running
    // head over the gutter and the footer under the columns stay whole, and the page is read
    // column by column. Pages without bridges, or in one column, keep their boxes.
    void columnGutterBridgesAreCut() {
        const auto quadOf = [](const Box& b) {
            return std::vector<cv::Point2f>{{float(b.x), float(b.y)}, {float(b.right()), float(b.y)},
                                            {float(b.right()), float(b.bottom())}, {float(b.x), float(b.bottom())}};
        };
        const auto same = [](const std::vector<Box>& a, const std::vector<Box>& b) {
            return std::equal(a.begin(), a.end(), b.begin(), b.end(), sameBox);
        };
        size_t quadCount = 0;
        const auto cut = [&](std::vector<Box> boxes) {
            std::vector<std::vector<cv::Point2f>> quads;
            for (const auto& b : boxes) quads.push_back(quadOf(b));
            cutAtColumnGutters(quads, boxes, 1500, 1600);
            quadCount = quads.size();
            return boxes;
        };
        std::vector<Box> clean;  // columns 100-700 and 740-1340: a 40-pixel gutter, lines 44 high
        for (int r = 0; r < 20; ++r) clean.push_back({100, 100 + r * 60, 600, 44}), clean.push_back({740, 100 + r * 60, 600, 44});
        QVERIFY(same(cut(clean), clean));
        std::vector<Box> speck = clean;  // a speck across the gutter, lower than a line: not a row's
        speck.push_back({690, 585, 60, 20});
        QVERIFY(same(cut(speck), speck));

        std::vector<Box> boxes = {{640, 40, 160, 30}};  // 0: the running head, over the gutter
        for (int r = 0; r < 20; ++r) {
            if (r < 2) boxes.push_back({100, 100 + r * 60, 1240, 44});  // the row's two lines as one box
            else boxes.push_back({100, 100 + r * 60, 600, 44}), boxes.push_back({740, 100 + r * 60, 600, 44});
        }
        boxes.push_back({668, 402, 104, 32});  // a fragment across the gutter on row 5
        boxes.push_back({500, 1330, 500, 40});  // the footer, under both columns
        const size_t head = 0, fragment = boxes.size() - 2, footer = boxes.size() - 1;
        const std::vector<Box> got = cut(boxes);
        QCOMPARE(got.size(), boxes.size() + 3);  // each bridge in two pieces
        QCOMPARE(quadCount, got.size());
        QCOMPARE(got[head].w, boxes[head].w);
        QCOMPARE(got[footer].w, boxes[footer].w);
        for (size_t i = 0; i < got.size(); ++i) {
            if (i == head || i == footer) continue;
            QVERIFY2(got[i].right() <= 705 || got[i].x >= 735, qPrintable(QString::number(i)));  // none in the gutter
        }
        QVERIFY(got[1].right() <= 705 && got[fragment].right() <= 705);
        std::vector<int> order = readingOrder(got);
        QCOMPARE(order.front(), int(head));
        QCOMPARE(order.back(), int(footer));
        std::vector<int> xs;  // the lines' sides in reading order: every left one before any right one
        for (size_t k = 1; k + 1 < order.size(); ++k) xs.push_back(got[size_t(order[k])].x < 720 ? 0 : 1);
        QVERIFY(std::is_sorted(xs.begin(), xs.end()));

        std::vector<Box> single;  // one column, paragraphs' first lines indented, last lines short
        for (int r = 0; r < 20; ++r)
            single.push_back({r % 4 == 0 ? 160 : 100, 100 + r * 60, r % 4 == 3 ? 420 : (r % 4 == 0 ? 1180 : 1240), 44});
        QVERIFY(same(cut(single), single));
    }

    // Blocks put top-down within a column, the given order kept otherwise: a column's short lines
    // that came out of turn (as Tesseract gave a generated page's, y 1056, 1105, 1035, 1080),
    // two columns read one after the other, a heading over both given last.
    void blocksTopDownWithinAColumn() {
        const std::vector<Box> column = {{150, 1056, 640, 28}, {114, 1105, 680, 28}, {115, 1035, 360, 21}, {115, 1080, 680, 28}};
        QCOMPARE(blocksTopDown(column), (std::vector<int>{2, 0, 3, 1}));
        const std::vector<Box> columns = {{100, 300, 400, 800}, {100, 1150, 400, 600}, {560, 300, 400, 700}, {560, 1050, 400, 700}};
        QCOMPARE(blocksTopDown(columns), (std::vector<int>{0, 1, 2, 3}));
        const std::vector<Box> headed = {{100, 300, 400, 800}, {560, 300, 400, 800}, {100, 150, 860, 60}};
        QCOMPARE(blocksTopDown(headed), (std::vector<int>{2, 0, 1}));
        QVERIFY(blocksTopDown({}).empty());
    }

    // A block whose lines lie above and below another block's line in their column is cut there
    // (a generated page's paragraph end, y 1035, between Tesseract's block of 1007 and 1059);
    // a block beside another column's lines is left whole.
    void interleavedBlocksAreCut() {
        const std::vector<Box> lines = {{111, 1007, 676, 25}, {147, 1059, 640, 22}, {112, 1035, 361, 18}, {111, 1083, 679, 22}};
        std::vector<int> from;
        QCOMPARE(cutInterleavedBlocks({{0, 1}, {2}, {3}}, lines, &from),
                 (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
        QCOMPARE(from, (std::vector<int>{0, 0, 1, 2}));
        const std::vector<Box> columns = {{100, 300, 400, 22}, {100, 330, 400, 22}, {560, 315, 400, 22}};
        QCOMPARE(cutInterleavedBlocks({{1, 0}, {2}}, columns, &from), (std::vector<std::vector<int>>{{0, 1}, {2}}));
        QCOMPARE(from, (std::vector<int>{0, 1}));
    }

    // Two columns with a pull quote across the gutter halfway down: no x range is empty in every
    // row, so rows alone read the columns interleaved; Tesseract's layout analysis finds the
    // columns above and below the quote, and the lines are read column by column in each.
    void layoutOrderReadsColumnsAcrossAPullQuote() {
        cv::Mat page(1400, 1700, CV_8UC1, cv::Scalar(255));
        const std::vector<std::string> words = {"archive", "register", "parish", "ledger", "volume", "scan"};
        std::vector<Box> boxes;
        std::vector<int> column, band;  // column: 0 left, 1 right, 2 the quote; band: 0 above it, 1 below
        auto line = [&](int x, int y, const std::string& text, int col, int b) {
            int base = 0;
            const cv::Size sz = cv::getTextSize(text, cv::FONT_HERSHEY_DUPLEX, 1.1, 2, &base);
            cv::putText(page, text, {x, y}, cv::FONT_HERSHEY_DUPLEX, 1.1, cv::Scalar(0), 2, cv::LINE_AA);
            boxes.push_back({x - 4, y - sz.height - 6, sz.width + 8, sz.height + base + 12});
            column.push_back(col);
            band.push_back(b);
        };
        for (int r = 0; r < 16; ++r) {
            const int y = 120 + r * 70;
            if (r == 7) {
                line(520, y, "a quote across the columns", 2, 0);
                continue;
            }
            std::string left, right;
            for (int k = 0; k < 3; ++k) left += words[size_t((r + k) % 6)] + " ", right += words[size_t((r + 2 * k + 1) % 6)] + " ";
            line(100, y, left + std::to_string(r), 0, r < 7 ? 0 : 1);
            line(900, y, right + std::to_string(r), 1, r < 7 ? 0 : 1);
        }
        // Where each line is read; "a before b" for every line of the two groups.
        auto readsBefore = [&](const std::vector<int>& order, auto a, auto b) {
            std::vector<int> at(order.size());
            for (int k = 0; k < int(order.size()); ++k) at[size_t(order[size_t(k)])] = k;
            for (size_t i = 0; i < boxes.size(); ++i)
                for (size_t j = 0; j < boxes.size(); ++j)
                    if (a(i) && b(j) && at[i] > at[j]) return false;
            return true;
        };
        auto inOrder = [&](const std::vector<int>& order) {
            auto is = [&](int col, int b) { return [&, col, b](size_t i) { return column[i] == col && band[i] == b; }; };
            auto quote = [&](size_t i) { return column[i] == 2; };
            return readsBefore(order, is(0, 0), is(1, 0)) && readsBefore(order, is(1, 0), quote) &&
                   readsBefore(order, quote, is(0, 1)) && readsBefore(order, is(0, 1), is(1, 1));
        };
        std::vector<int> block;
        const auto byLayout = layoutReadingOrder(page, boxes, &block);
        QCOMPARE(std::set<int>(byLayout.begin(), byLayout.end()).size(), boxes.size());
        QCOMPARE(byLayout.size(), boxes.size());
        QVERIFY(inOrder(byLayout));
        QVERIFY(!inOrder(readingOrder(boxes)));  // what rows alone do with this page
        // Top to bottom inside each column.
        int prevLeftY = -1;
        for (int i : byLayout)
            if (column[size_t(i)] == 0) {
                QVERIFY(boxes[size_t(i)].y > prevLeftY);
                prevLeftY = boxes[size_t(i)].y;
            }
        QVERIFY(block[size_t(byLayout.front())] != block[size_t(byLayout.back())]);
        QCOMPARE(ppocrLayoutFor("eng"), std::string("tesseract"));
        QCOMPARE(ppocrLayoutFor("eng+chi_sim"), std::string("rows"));
    }
};

QTEST_GUILESS_MAIN(TestPageLayout)
#include "tst_page_layout.moc"
