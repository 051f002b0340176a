// A second recogniser's reading of a front-end line, character by character (issue #29, item 2):
// Tesseract's glyphs laid on PP-OCR's characters by position, so that at each visual token the
// reader can see what the other engine read there, how sure it was, and what else it considered.
#pragma once

#include <string>
#include <vector>

#include "quire/core/geometry.h"
#include "quire/ppocr/ppocr.h"

namespace quire {

struct CharEvidence {
    int glyph = -1;           // the paired glyph (LineEvidence::glyphs), -1: the other engine has none here
    bool breakBefore = false; // the other engine starts a word between the previous character and this one
    std::string before;       // the other engine's unpaired glyphs just before this character
};

struct LineEvidence {
    std::vector<Glyph> glyphs;       // the other engine's glyphs on the line, left to right
    std::vector<bool> wordStarts;    // per glyph: it begins a word
    std::vector<CharEvidence> chars; // one per front-end character
    std::string trailing;            // unpaired glyphs after the last character (the line end's)
};

// `chars` (UTF-8, " " for a word space) and `xs` (each character's x centre) are the front-end's
// line; `line` is its box and `other` a page read in the same pixel frame with glyphs
// (RecognizerOptions::glyphChoices). Glyphs whose centre lies in the line's box (widened by a line
// height at each end) are paired with characters by an alignment that prefers equal characters
// and near positions; a pair never spans more than three character widths.
LineEvidence alignLineEvidence(const std::vector<std::string>& chars, const std::vector<float>& xs, const Box& line,
                               const PageText& other);
// The same for a line of the PP-OCR front-end (its CTC characters at their frames' x), in the
// pixel frame it was read in.
LineEvidence alignLineEvidence(const PpocrLine& line, const PpocrEngine& front, const PageText& other);

}  // namespace quire
