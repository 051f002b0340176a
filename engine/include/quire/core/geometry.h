// Page geometry and recognized text with layout: what every recognizer produces and every
// exporter consumes. Coordinates are pixels of the source page as rendered/decoded (not of the
// deskewed image), so boxes line up with the original scan.
#pragma once

#include <string>
#include <vector>

namespace quire {

struct Box {
    int x = 0, y = 0, w = 0, h = 0;
    int right() const { return x + w; }
    int bottom() const { return y + h; }
    bool empty() const { return w <= 0 || h <= 0; }
    Box united(const Box& o) const;
};

// One of a recogniser's readings of a glyph, with its confidence (0..100).
struct GlyphChoice {
    std::string text;  // UTF-8
    float confidence = 0;
};

// A recognised character with its box and the recogniser's alternatives (Tesseract's LSTM
// choices): the evidence the reader weighs beside its front-end's reading (issue #29, item 2).
struct Glyph {
    std::string text;  // UTF-8
    Box box;
    float confidence = 0;               // 0..100
    std::vector<GlyphChoice> choices;   // best first; the first is `text` itself
};

struct Word {
    std::string text;  // UTF-8
    Box box;
    float confidence = 0;  // 0..100
    std::vector<Glyph> glyphs;  // filled only where asked (RecognizerOptions::glyphChoices)
};

struct Line {
    Box box;
    int block = 0;      // text block (column/region) index in reading order
    int paragraph = 0;  // paragraph index, unique within the page
    std::vector<Word> words;
    std::string text() const;  // words joined by single spaces
};

struct PageText {
    int width = 0, height = 0;  // source page size in pixels
    int dpi = 300;
    std::vector<Line> lines;  // reading order
    std::string engine, engineVersion, language;

    // Lines joined by '\n', paragraphs separated by an empty line.
    std::string plainText() const;
    double meanConfidence() const;  // word mean, 0..100; 0 when there are no words
    double lowConfidenceShare(float threshold) const;  // share of words below threshold
    int wordCount() const;
};

}  // namespace quire
