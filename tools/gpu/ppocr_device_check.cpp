// The PP-OCR front-end's CUDA path on the GPU machine, which cannot build Quire: built here and
// packed with its libraries and the model files by tools/gpu-carry.sh ppocr, run by
// tools/gpu-check.sh. The front-end with its graphs on the GPU against the CPU on rendered
// pages — the same lines and characters, character probabilities within 1e-3 — and the pages/min
// of each, side by side in one run. Prints PASS/FAIL lines and "N passed, M failed"; exits 0
// with a note where no GPU is present.
//
//   ppocr_device_check [MODEL_DIR] [--pages N] [--device mirror]
// (MODEL_DIR: the installed models' search order without it, as the ctest ppocr_device_check,
// label gpu, uses; mirror: this program's own check on a machine without a GPU)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include <opencv2/imgproc.hpp>

#include "quire/core/backend.h"
#include "quire/ppocr/ppocr.h"
#include "check_report.h"

using namespace quire;

namespace {

using gpucheck::report;

// A page of printed lines (Hershey glyphs; Latin), `lines` of them on a 300 dpi A4-sized sheet.
cv::Mat renderedPage(int lines, uint32_t seed) {
    static const char* words[] = {"register", "of", "the", "parish", "1847", "names", "binding", "books", "paper",
                                  "folded", "gathered", "sewn", "cords", "calf", "vellum", "edges", "gilt", "red"};
    std::mt19937 rng(seed);
    cv::Mat page(3508, 2480, CV_8UC1, cv::Scalar(255));
    for (int l = 0; l < lines; ++l) {
        std::string text;
        while (text.size() < 48) text += std::string(text.empty() ? "" : " ") + words[rng() % (sizeof words / sizeof *words)];
        cv::putText(page, text, cv::Point(200, 260 + l * 78), cv::FONT_HERSHEY_COMPLEX, 1.6, cv::Scalar(0), 3, cv::LINE_AA);
    }
    return page;
}

void frontEnd(const std::string& dir, int pages, const std::string& device) {
    PpocrOptions cpuOptions, gpuOptions;
    cpuOptions.modelDir = gpuOptions.modelDir = dir;
    gpuOptions.device = device;
    auto cpu = PpocrEngine::load(cpuOptions);
    auto gpu = PpocrEngine::load(gpuOptions);
    if (!cpu || !gpu) return report("PP-OCR load", false, (!cpu ? cpu.status() : gpu.status()).message());
    if (!(*gpu)->deviceNotice().empty()) return report("PP-OCR on the GPU", false, (*gpu)->deviceNotice());
    double cpuS = 0, gpuS = 0, worst = 0;
    int lines = 0, sameLines = 0;
    for (int p = 0; p < pages; ++p) {
        const cv::Mat page = renderedPage(36 + p % 3 * 4, uint32_t(p));
        const auto t0 = std::chrono::steady_clock::now();
        auto a = (*cpu)->read(page, true);
        const auto t1 = std::chrono::steady_clock::now();
        auto b = (*gpu)->read(page, true);
        const auto t2 = std::chrono::steady_clock::now();
        if (!a || !b) return report("PP-OCR page " + std::to_string(p), false, (!a ? a.status() : b.status()).message());
        cpuS += std::chrono::duration<double>(t1 - t0).count(), gpuS += std::chrono::duration<double>(t2 - t1).count();
        lines += int(a->lines.size());
        for (size_t k = 0; k < std::min(a->lines.size(), b->lines.size()); ++k) {
            sameLines += a->lines[k].text == b->lines[k].text;
            if (a->lines[k].charProbs.size() == b->lines[k].charProbs.size())
                for (size_t c = 0; c < a->lines[k].charProbs.size(); ++c)
                    worst = std::max(worst, double(std::abs(a->lines[k].charProbs[c] - b->lines[k].charProbs[c])));
        }
        if (a->lines.size() != b->lines.size())
            return report("PP-OCR page " + std::to_string(p), false,
                          std::to_string(a->lines.size()) + " lines on the CPU, " + std::to_string(b->lines.size()) +
                              " on the device");
    }
    const auto [onGpu, onCpu] = (*gpu)->deviceNodeCounts();
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%d pages, %d lines, %d read the same; worst character probability difference %.2e; %.2f pages/min on the "
                  "CPU, %.2f with the %s device (front-end only, same run); %lld nodes on the device, %lld on the CPU",
                  pages, lines, sameLines, worst, pages * 60.0 / cpuS, pages * 60.0 / gpuS, device.c_str(), (long long)onGpu,
                  (long long)onCpu);
    const bool same = lines > 0 && sameLines == lines && worst <= 1e-3 && (*gpu)->deviceNotice().empty();
    report("PP-OCR on the " + device + " device against the CPU", same, buf);
}

}  // namespace

int main(int argc, char** argv) {
    int pages = 6;
    std::string device = "cuda", dir;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--pages") && i + 1 < argc) pages = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else dir = argv[i];
    }
    if (device != "mirror") {
        std::string why;
        const auto devices = gpuDevices(&why);
        if (devices.empty()) {
            std::printf("no GPU (%s): the front-end's CUDA check is skipped\n0 passed, 0 failed\n", why.c_str());
            return 0;
        }
        std::printf("GPU: %s\n", devices[0].name.c_str());
    }
    frontEnd(dir, pages, device);
    return gpucheck::summary();
}
