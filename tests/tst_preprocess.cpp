#include <QTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <atomic>

#include "quire/preprocess/orientation.h"
#include "quire/preprocess/preprocess.h"
#include "test_util.h"

using namespace quire;
using namespace quire::test;

namespace {
std::vector<std::string> someLines(int n) {
    std::vector<std::string> lines;
    for (int i = 0; i < n; ++i) lines.push_back("The quick brown fox jumps over the lazy dog " + std::to_string(i));
    return lines;
}
cv::Mat rotated(const cv::Mat& page, double deg) {
    cv::Mat out;
    const cv::Mat m = cv::getRotationMatrix2D(cv::Point2f(page.cols / 2.f, page.rows / 2.f), deg, 1.0);
    cv::warpAffine(page, out, m, page.size(), cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar(255));
    return out;
}
}  // namespace

class TestPreprocess : public QObject {
    Q_OBJECT
private slots:
    // An upright two-column page (generated, binarised) that Tesseract's OSD takes for upside down
    // at a confidence above kOrientationConfidence: alone, OSD turns it; read both ways, it stays.
    void aTurnOsdProposesIsReadBeforeItIsMade() {
        const cv::Mat page = cv::imread((sourceDir() + "/tests/fixtures/two_columns_osd_upside_down.png").toStdString(),
                                        cv::IMREAD_GRAYSCALE);
        QVERIFY(!page.empty());
        const OrientationGuess alone = detectOrientation(page);
        if (!alone.available) QSKIP("osd.traineddata is not installed");
        QCOMPARE(alone.proposedQuarterTurns, 2);
        QCOMPARE(alone.clockwiseQuarterTurns, 2);  // the trap: OSD alone turns an upright page
        const OrientationGuess read = detectOrientation(page, "eng");
        QCOMPARE(read.proposedQuarterTurns, 2);
        QCOMPARE(read.clockwiseQuarterTurns, 0);
        QVERIFY(read.uprightReading >= read.turnedReading + kTurnReadingMargin);
    }

    // The reading check of a proposed turn (seconds of Tesseract, far more under the sanitizers)
    // stops at a set cancel flag: nothing read, no turn.
    void aSetCancelStopsTheReadingCheck() {
        const cv::Mat page = cv::imread((sourceDir() + "/tests/fixtures/two_columns_osd_upside_down.png").toStdString(),
                                        cv::IMREAD_GRAYSCALE);
        QVERIFY(!page.empty());
        std::atomic<bool> cancel{true};
        const OrientationGuess stopped = detectOrientation(page, "eng", &cancel);
        if (!stopped.available) QSKIP("osd.traineddata is not installed");
        QCOMPARE(stopped.proposedQuarterTurns, 2);
        QCOMPARE(stopped.clockwiseQuarterTurns, 0);
        QCOMPARE(stopped.uprightReading, -1.0);
        QCOMPARE(stopped.turnedReading, -1.0);
        PreprocessParams p;
        p.orientLanguages = "eng";
        QVERIFY(preprocessPage(page, p, &cancel).cancelled);
    }

    // A page read first and checked after (orientPreparedPage) ends as one checked first: upright,
    // the first pass's regions stand; upside down, it is prepared again turned.
    void aPageCheckedAfterItWasPreparedEndsAsOneCheckedFirst() {
        if (!detectOrientation(textPage(someLines(3))).available) QSKIP("osd.traineddata is not installed");
        const cv::Mat upright = rotated(textPage(someLines(24)), 0.8);
        cv::Mat upsideDown;
        cv::rotate(upright, upsideDown, cv::ROTATE_180);
        PreprocessParams checking, unturned;
        checking.orientLanguages = "eng";
        unturned.orient = false;
        for (const cv::Mat& page : {upright, upsideDown}) {
            const PreprocessResult first = preprocessPage(page, checking);
            const PreprocessResult unchecked = preprocessPage(page, unturned);
            QVERIFY(!unchecked.orientationChecked);
            const PreprocessResult after = orientPreparedPage(page, unchecked, checking);
            QVERIFY(first.orientationChecked && after.orientationChecked);
            QCOMPARE(after.quarterTurns, first.quarterTurns);
            QCOMPARE(after.orientationConfidence, first.orientationConfidence);
            QCOMPARE(after.script, first.script);
            QCOMPARE(after.uprightReading, first.uprightReading);
            QCOMPARE(int(after.regions.size()), int(first.regions.size()));
            for (size_t i = 0; i < first.regions.size(); ++i) {
                QCOMPARE(after.regions[i].skewDegrees, first.regions[i].skewDegrees);
                QCOMPARE(after.regions[i].quarterTurns, first.regions[i].quarterTurns);
                QCOMPARE(cv::norm(after.regions[i].image, first.regions[i].image, cv::NORM_INF), 0.0);
            }
        }
        QCOMPARE(preprocessPage(upsideDown, checking).quarterTurns, 2);
        QCOMPARE(preprocessPage(upright, checking).quarterTurns, 0);
    }

    void measuresSkew_data() {
        QTest::addColumn<double>("angle");
        QTest::addColumn<int>("lines");
        QTest::newRow("level") << 0.0 << 25;
        QTest::newRow("+2.5") << 2.5 << 25;
        QTest::newRow("-1.2") << -1.2 << 25;
        QTest::newRow("+4 few lines") << 4.0 << 4;
        QTest::newRow("-0.4") << -0.4 << 25;
    }
    void measuresSkew() {
        QFETCH(double, angle);
        QFETCH(int, lines);
        const cv::Mat page = rotated(textPage(someLines(lines)), angle);
        const double est = estimateSkewDegrees(page, 5.0);
        QVERIFY2(std::abs(est - angle) < 0.15, qPrintable(QString("estimated %1 for %2").arg(est).arg(angle)));
    }

    void skewIsMeasuredUnderUnevenLight() {
        cv::Mat page = rotated(textPage(someLines(3)), 1.5);
        // A dark shadow band along the left edge, as a book gutter casts.
        for (int y = 0; y < page.rows; ++y)
            for (int x = 0; x < 200; ++x) page.at<uchar>(y, x) = uchar(page.at<uchar>(y, x) * (0.3 + 0.7 * x / 200.0));
        const double est = estimateSkewDegrees(page, 5.0);
        QVERIFY2(std::abs(est - 1.5) < 0.2, qPrintable(QString::number(est)));
    }

    void deskewedBoxesMapBackToTheSource() {
        const cv::Mat page = rotated(textPage(someLines(20)), 2.0);
        PreprocessParams p;
        const auto r = preprocessPage(page, p);
        QCOMPARE(int(r.regions.size()), 1);
        const auto& region = r.regions[0];
        QVERIFY(std::abs(region.skewDegrees - 2.0) < 0.15);
        // The centre of the image is the rotation's fixed point.
        const Box c = region.toSource({page.cols / 2 - 5, page.rows / 2 - 5, 10, 10});
        QVERIFY(std::abs(c.x + c.w / 2 - page.cols / 2) <= 2);
        QVERIFY(std::abs(c.y + c.h / 2 - page.rows / 2) <= 2);
    }

    void normalizesUnevenBackground() {
        cv::Mat page = textPage(someLines(10));
        cv::Mat lit;
        page.convertTo(lit, CV_32F);
        for (int y = 0; y < lit.rows; ++y)
            for (int x = 0; x < lit.cols; ++x) lit.at<float>(y, x) *= 0.55f + 0.45f * x / lit.cols;
        lit.convertTo(lit, CV_8U);
        const cv::Mat flat = normalizeBackground(lit);
        // Paper on the dark and the bright side ends up nearly equally white.
        const double left = cv::mean(flat(cv::Rect(5, lit.rows - 300, 60, 200)))[0];
        const double right = cv::mean(flat(cv::Rect(lit.cols - 65, lit.rows - 300, 60, 200)))[0];
        QVERIFY2(std::abs(left - right) < 12 && left > 230, qPrintable(QString("%1 vs %2").arg(left).arg(right)));
    }

    void binarizes() {
        const cv::Mat bin = binarizeAdaptive(textPage(someLines(5)));
        for (int y = 0; y < bin.rows; y += 37)
            for (int x = 0; x < bin.cols; x += 41) QVERIFY(bin.at<uchar>(y, x) == 0 || bin.at<uchar>(y, x) == 255);
        QVERIFY(cv::countNonZero(255 - bin) > 1000);  // the text survived
    }

    void splitsSpreads() {
        const cv::Mat left = textPage(someLines(20), 1200, 1700, 1.0);
        const cv::Mat right = textPage(someLines(18), 1200, 1700, 1.0);
        cv::Mat spread;
        cv::hconcat(left, right, spread);
        const int gutter = findSpreadGutter(spread);
        QVERIFY2(gutter > 1000 && gutter < 1400, qPrintable(QString::number(gutter)));
        QCOMPARE(findSpreadGutter(left), -1);  // portrait: one page
        PreprocessParams p;
        p.split = SplitMode::Auto;
        p.deskew = false;
        QCOMPARE(int(preprocessPage(spread, p).regions.size()), 2);
    }

    // A cancel stops preprocessing between stages and says so; the regions are then not whole.
    void cancelStopsBetweenStages() {
        const cv::Mat page = textPage(someLines(10));
        std::atomic<bool> cancel{false};
        const PreprocessResult whole = preprocessPage(page, PreprocessParams{}, &cancel);
        QVERIFY(!whole.cancelled);
        QCOMPARE(int(whole.regions.size()), 1);
        cancel = true;
        const PreprocessResult stopped = preprocessPage(page, PreprocessParams{}, &cancel);
        QVERIFY(stopped.cancelled);
        QVERIFY(stopped.regions.empty());
    }

    void paramsRoundTrip() {
        PreprocessParams p;
        p.deskew = false;
        p.binarize = true;
        p.split = SplitMode::Auto;
        p.maxSkewDegrees = 3;
        auto back = PreprocessParams::fromJson(p.toJson());
        QVERIFY(back);
        QCOMPARE(back->toJson(), p.toJson());
        QVERIFY(!PreprocessParams::fromJson("{nonsense"));
    }
};

QTEST_GUILESS_MAIN(TestPreprocess)
#include "tst_preprocess.moc"
