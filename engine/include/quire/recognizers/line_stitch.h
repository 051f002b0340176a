// Lines that Tesseract's layout analysis cut in two: a justified line with wide word gaps can have
// its end read as a line of another block, placed before or after the rest of its line.
#pragma once

#include "quire/core/geometry.h"

namespace quire {

// The widest gap joined, in line heights (word gaps of a justified narrow column stay under two).
constexpr double kStitchGapLines = 2.5;

// Joins lines that lie side by side on one text line (a gap of at most kStitchGapLines line
// heights) and together are no wider than the page's column (its widest line in a block of several
// lines) into the first of them in reading order, words left to right. Returns how many were joined.
int stitchSplitLines(PageText& page);

}  // namespace quire
