// Colours for confidence and boxes, derived from the palette so light and dark themes both read.
#pragma once

#include <QColor>
#include <QPalette>

#include <algorithm>
#include <cmath>

namespace quire::ui {

inline QColor mix(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(float(a.redF() * (1 - t) + b.redF() * t), float(a.greenF() * (1 - t) + b.greenF() * t),
                            float(a.blueF() * (1 - t) + b.blueF() * t));
}

inline bool isDark(const QPalette& p) { return p.color(QPalette::Base).lightnessF() < 0.5; }

// Background tint of a low-confidence word: a warm hue blended into the base colour.
inline QColor lowConfidenceColor(const QPalette& p) {
    return mix(p.color(QPalette::Base), QColor(230, 120, 20), isDark(p) ? 0.45 : 0.35);
}

// The outline of a low-confidence word on the scan: the scan is paper whatever the theme (white,
// yellowed, grey), so a deep magenta that stands out from all of them, drawn over a light tint.
inline QColor lowConfidenceOutline() { return QColor(176, 0, 120); }

// WCAG contrast ratio of two colours (1 to 21); 3 or more reads as a visible mark.
inline double contrastRatio(const QColor& a, const QColor& b) {
    auto lum = [](const QColor& c) {
        auto ch = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF());
    };
    const double la = lum(a), lb = lum(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

inline QColor boxColor(const QPalette& p, bool word) {
    QColor c = p.color(QPalette::Highlight);
    c.setAlpha(word ? 70 : 140);
    return c;
}

inline QColor statusColor(const QPalette& p, const QString& status) {
    const QColor base = p.color(QPalette::Base);
    const double t = isDark(p) ? 0.55 : 0.75;
    if (status == QLatin1String("failed")) return mix(base, QColor(200, 30, 30), t);
    if (status == QLatin1String("flagged")) return mix(base, QColor(230, 140, 0), t);
    if (status == QLatin1String("proofread")) return mix(base, QColor(30, 150, 60), t);
    if (status == QLatin1String("running")) return p.color(QPalette::Highlight);
    if (status == QLatin1String("done")) return mix(base, p.color(QPalette::Text), 0.35);
    return mix(base, p.color(QPalette::Text), 0.12);  // queued
}

}  // namespace quire::ui
