// Page orientation: a page scanned on its side or upside down is turned upright before it is read,
// and a negative (white text on black) is inverted. Tesseract's orientation and script detection
// (osd.traineddata) proposes the quarter turns; reading a band of the page each way confirms them.
#pragma once

#include <opencv2/core.hpp>

#include <atomic>
#include <string>

namespace quire {

struct OrientationGuess {
    int clockwiseQuarterTurns = 0;  // turns that make the page upright (0-3): the decision
    int proposedQuarterTurns = 0;   // OSD's proposal, before its confidence and the reading check
    double confidence = 0;          // Tesseract's orientation confidence
    bool available = true;          // false: osd.traineddata is not installed
    std::string script;             // the script Tesseract's OSD sees: "Latin", "Fraktur", "Han", ...
    double scriptConfidence = 0;
    // Where a turn was proposed and checked: Tesseract's mean word confidence reading the page's
    // densest band as it is and turned (-1: not checked). A turn that does not read better is dropped.
    double uprightReading = -1, turnedReading = -1;
};

// A script is believed at or above this confidence: on 34 generated Latin pages (every font of
// this machine) OSD's wrong-script guesses reached 1.5 (docs/ACCURACY.md, 2026-12-02).
constexpr double kScriptConfidence = 2.0;

// Without a reading check a turn is made only at or above this confidence: upright generated book pages scored 0° (conf
// 2-23); the same pages turned 90/180/270° were found at 17-22, a four-line page at 9.
constexpr double kOrientationConfidence = 5.0;

// A proposed turn is made only when the turned page reads at least this much better (mean word
// confidence, 0-100). On 8 generated pages in four orientations the upright reading scored 90-96 and
// every other 20-50; OSD had turned one upright page upside down at confidence 9.7 (docs/ACCURACY.md).
constexpr double kTurnReadingMargin = 15.0;
// With that check, OSD's proposals from this confidence are checked (below kOrientationConfidence
// it missed 5 of 20 turned generated pages; an upright page was proposed turned at 3.7).
constexpr double kCheckedProposalConfidence = 1.0;

// Tesseract's own reading shows a page upright from this mean word confidence (and its lines
// level: a page on its side can read as vertical text at 95). Generated pages (docs/BENCHMARKS.md, 2026-12-07): upright English 90–95 (a page of one
// line and a folio 39; smaller 825 x 1,275 pages 76–90), the same upside down 28–37, Fraktur read with `eng`
// 66–80, Chinese 18–26 — so a page in a script its languages miss still meets OSD's script check.
// PP-OCR's reading is judged by the same figure (its words level): English 91–100, upside down 20–35.
constexpr double kUprightReadingConfidence = 85.0;

// Reading first skips OSD's script check too, and a clean Fraktur page can read at 85 with `eng`
// (a generated one did, its "looks like Fraktur" warning lost). So the first page of the book and
// every tenth after it are checked first whatever their reading: a volume in a type its languages
// miss is named at its start, for a tenth of the check's cost.
constexpr int kScriptCheckEvery = 10;

// The orientation of a gray page (downscaled inside to about 1,800 px a side). With `languages`
// (Tesseract's, '+'-separated; empty: OSD alone decides) a proposed turn is confirmed by reading;
// a set `cancel` stops that reading, and then no turn is made.
OrientationGuess detectOrientation(const cv::Mat& gray, const std::string& languages = {},
                                   const std::atomic<bool>* cancel = nullptr);

// True for a negative page: most of it dark, as white-on-black microfilm prints are.
bool looksNegative(const cv::Mat& gray);

}  // namespace quire
