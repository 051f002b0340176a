#pragma once

#include <QString>
#include <QStringList>

#include <opencv2/core.hpp>
#include <functional>
#include <string>
#include <vector>

#include "quire/core/geometry.h"
#include "quire/decoder/config.h"
#include "quire/decoder/session.h"

namespace quire::test {

// The same box, field by field (Box has no operator==: its header is also built as C++17).
inline bool sameBox(const Box& a, const Box& b) { return a.x == b.x && a.y == b.y && a.w == b.w && a.h == b.h; }

// A decoder of the supported family small enough to generate in a test (random weights).
inline decoder::ModelConfig tinyDecoderConfig(int vocabSize = 48, int visualDim = 12, int maxPositions = 1 << 20) {
    decoder::ModelConfig c;
    c.vocabSize = vocabSize;
    c.hiddenSize = 32;
    c.numLayers = 2;
    c.numHeads = 4;
    c.numKvHeads = 2;
    c.headDim = 8;
    c.intermediateSize = 48;
    c.visualDim = visualDim;
    c.maxPositions = maxPositions;
    return c;
}

// SR-SWA budgets small enough that the tiny model's volumes leave pages behind the window and
// the gate chooses among them.
inline decoder::AttentionParams smallSrSwaParams() {
    decoder::AttentionParams p;
    p.mode = decoder::AttentionMode::SrSwa;
    p.recentTokens = 24;
    p.maxPageTokens = 40;
    p.gatedPages = 2;
    p.blocksPerGatedPage = 2;
    return p;
}

// Random visual tokens of a page (normal, seeded by the page number): [count, dim].
std::vector<float> pageFeatures(int page, int count, int dim);
// Line-aligned positions (config.h): token 5 ends a visual line, tokens 4 and 6 end written lines.
void makeLineAligned(decoder::ModelConfig& c);
// A page's visual tokens with vocabulary ids after each one's features (visual_token_ids): every
// sixth token (and the last) is `lineEnd` when lineEnd >= 0; then `evidenceIds` evidence ids
// (visual_evidence_ids), every third of them -1 (none).
std::vector<float> pageWithIds(int page, int count, int dim, int lineEnd, int evidenceIds = 0);
// Largest absolute difference relative to the largest magnitude of b.
double relDiff(const std::vector<float>& a, const std::vector<float>& b);

QString sourceDir();
QString samplePdf();
// ../shared beside the checkout; empty when absent.
QString sharedDir();

struct CliResult {
    int exitCode = -1;
    QString out, err;
};
CliResult runCli(const QStringList& args, int timeoutMs = 600000);
// Runs any program; exit code -1 when it could not start.
CliResult runProgram(const QString& program, const QStringList& args, int timeoutMs = 600000);

// Levenshtein distance between two texts, in UTF-16 code units (the accuracy figures' measure).
int editDistance(const QString& a, const QString& b);

// A white page with `lines` of black text (Hershey font), at roughly 300 dpi proportions.
cv::Mat textPage(const std::vector<std::string>& lines, int width = 1700, int height = 2200, double scale = 1.4);

// A multi-page deflate TIFF whose page p shows lines(p) on a white page of the given size.
void writeTiffVolume(const QString& file, int pages, const std::function<std::vector<std::string>(int)>& lines,
                     int width, int height, double scale, bool bigTiff = false);

std::string readFile(const QString& path);
void writeFile(const QString& path, const std::string& data);

}  // namespace quire::test
