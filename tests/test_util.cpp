#include "test_util.h"

#include <QDir>
#include <QFile>
#include <QProcess>

#include <opencv2/imgproc.hpp>
#include <tiffio.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

namespace quire::test {

std::vector<float> pageFeatures(int page, int count, int dim) {
    std::mt19937 rng(uint32_t(1000 + page));
    std::normal_distribution<float> n(0.f, 1.f);
    std::vector<float> v(size_t(count) * dim);
    for (auto& x : v) x = n(rng);
    return v;
}

void makeLineAligned(decoder::ModelConfig& c) {
    c.visualTokenIds = c.pageAlignedPositions = true;
    c.lineEndTokenIds = {4, 6};
    c.visualLineEndTokenId = 5;
}

std::vector<float> pageWithIds(int page, int count, int dim, int lineEnd, int evidenceIds) {
    const auto f = pageFeatures(page, count, dim);
    std::vector<float> v;
    for (int t = 0; t < count; ++t) {
        v.insert(v.end(), f.begin() + size_t(t) * dim, f.begin() + size_t(t + 1) * dim);
        v.push_back(float(lineEnd >= 0 && (t % 6 == 5 || t == count - 1) ? lineEnd : 10 + (t + page) % 7));
        for (int k = 0; k < evidenceIds; ++k) v.push_back((t + k) % 3 == 2 ? -1.f : float(8 + (t * 5 + page + k) % 11));
    }
    return v;
}

double relDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) num = std::max(num, double(std::abs(a[i] - b[i]))), den = std::max(den, double(std::abs(b[i])));
    return num / std::max(den, 1e-12);
}

QString sourceDir() { return QStringLiteral(QUIRE_SOURCE_DIR); }
QString samplePdf() { return sourceDir() + "/resources/samples/sample_volume.pdf"; }

QString sharedDir() {
    for (const QString& d : {QStringLiteral(QUIRE_SHARED_DIR), sourceDir() + "/../shared"})
        if (QDir(d).exists("schemas")) return QDir(d).canonicalPath();
    return {};
}

CliResult runProgram(const QString& program, const QStringList& args, int timeoutMs) {
    QProcess p;
    p.start(program, args);
    CliResult r;
    if (!p.waitForStarted(20000)) return r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

CliResult runCli(const QStringList& args, int timeoutMs) {
    return runProgram(QStringLiteral(QUIRE_CLI_PATH), args, timeoutMs);
}

int editDistance(const QString& a, const QString& b) {
    std::vector<int> row(size_t(b.size()) + 1);
    for (int j = 0; j <= b.size(); ++j) row[size_t(j)] = j;
    for (int i = 1; i <= a.size(); ++i) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= b.size(); ++j) {
            const int up = row[size_t(j)];
            row[size_t(j)] = std::min({up + 1, row[size_t(j - 1)] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[size_t(b.size())];
}

cv::Mat textPage(const std::vector<std::string>& lines, int width, int height, double scale) {
    cv::Mat page(height, width, CV_8UC1, cv::Scalar(255));
    int y = int(120 * scale);
    for (const auto& l : lines) {
        cv::putText(page, l, {int(100 * scale), y}, cv::FONT_HERSHEY_DUPLEX, scale, cv::Scalar(0), 2, cv::LINE_AA);
        y += int(60 * scale);
    }
    return page;
}

void writeTiffVolume(const QString& file, int pages, const std::function<std::vector<std::string>(int)>& lines,
                     int width, int height, double scale, bool bigTiff) {
    TIFF* t = TIFFOpen(file.toLocal8Bit().constData(), bigTiff ? "w8" : "w");
    for (int p = 0; p < pages; ++p) {
        const cv::Mat page = textPage(lines(p), width, height, scale);
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, page.cols);
        TIFFSetField(t, TIFFTAG_IMAGELENGTH, page.rows);
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
        TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
        TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
        TIFFSetField(t, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
        for (int y = 0; y < page.rows; ++y) TIFFWriteScanline(t, const_cast<uchar*>(page.ptr(y)), uint32_t(y), 0);
        TIFFWriteDirectory(t);
    }
    TIFFClose(t);
}

std::string readFile(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void writeFile(const QString& path, const std::string& data) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out.write(data.data(), std::streamsize(data.size()));
}

}  // namespace quire::test
