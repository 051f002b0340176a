// Boxes and page text (lines, words, confidences): unions, plain text, confidence statistics.
#include "quire/core/geometry.h"

#include <algorithm>

namespace quire {

Box Box::united(const Box& o) const {
    if (empty()) return o;
    if (o.empty()) return *this;
    const int l = std::min(x, o.x), t = std::min(y, o.y);
    const int r = std::max(right(), o.right()), b = std::max(bottom(), o.bottom());
    return {l, t, r - l, b - t};
}

std::string Line::text() const {
    std::string out;
    for (const auto& w : words) {
        if (!out.empty()) out += ' ';
        out += w.text;
    }
    return out;
}

std::string PageText::plainText() const {
    std::string out;
    const Line* prev = nullptr;
    for (const auto& line : lines) {
        if (prev) out += (prev->paragraph != line.paragraph) ? "\n\n" : "\n";
        out += line.text();
        prev = &line;
    }
    return out;
}

double PageText::meanConfidence() const {
    double sum = 0;
    int n = 0;
    for (const auto& l : lines)
        for (const auto& w : l.words) sum += w.confidence, ++n;
    return n ? sum / n : 0.0;
}

double PageText::lowConfidenceShare(float threshold) const {
    int low = 0, n = 0;
    for (const auto& l : lines)
        for (const auto& w : l.words) low += w.confidence < threshold, ++n;
    return n ? double(low) / n : 0.0;
}

int PageText::wordCount() const {
    int n = 0;
    for (const auto& l : lines) n += int(l.words.size());
    return n;
}

}  // namespace quire
