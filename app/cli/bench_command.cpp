// quire-cli bench: the decoder on generated or real pages (decode), the reader against Tesseract
// page by page (reader), and Find and Replace on a generated book (find, bench_find.cpp).
#include "bench_command.h"

#include <QCoreApplication>

#include <cblas.h>

#include <chrono>
#include <iostream>
#include <sstream>

#include "bench_find.h"
#include "bench_pages.h"
#include "command_support.h"
#include "measurement_env.h"
#include "quire/decoder/bench.h"
#include "quire/decoder/model.h"
#include "quire/preprocess/preprocess.h"
#include "quire/reader/reader.h"
#include "quire/recognizers/recognizer.h"
#include "quire/source/document_source.h"

namespace quire::cli {

namespace {

// `bench decode`: a volume of generated pages decoded with the chosen attention, KV and speed per checkpoint.
int benchDecode(const Args& args) {
    using namespace quire::decoder;
    DecodeBenchParams p;
    if (args.has("volume") && !args.has("model")) return fail(kUsage, "bench decode: --volume goes with --model (its front-end reads the pages)");
    if (auto dir = args.value("model")) {
        // A trained model (the shipped reader) with the reader's attention budgets unless given.
        auto m = loadModel(*dir);
        if (!m) return fail(exitFor(m.status()), m.status().message());
        p.model = *m;
        p.config = p.model->config;
        p.attention = readerAttentionDefaults();
        useTrainedPattern(p.attention, p.config);
    } else if (auto cfg = args.value("config")) {
        auto c = ModelConfig::load(*cfg);
        if (!c) return fail(kUsage, c.status().message());
        p.config = *c;
    } else {
        auto c = benchShape(args.value("shape", "reader"));
        if (!c) return fail(kUsage, c.status().message());
        p.config = *c;
    }
    auto mode = parseAttentionMode(args.value("mode", "srswa"));
    if (!mode) return fail(kUsage, mode.status().message());
    p.attention.mode = *mode;
    try {
        p.pages = std::stoi(args.value("pages", "100"));
        p.batch = std::stoi(args.value("batch", "1"));
        p.pageTokens = std::stoi(args.value("page-tokens", args.value("shape", "reader") == "unlimited-ocr" ? "273" : "200"));
        p.tokensPerPage = std::stoi(args.value("tokens-per-page", "24"));
        if (!p.model || args.has("recent")) p.attention.recentTokens = std::stoi(args.value("recent", "128"));
        if (!p.model || args.has("gated-pages")) p.attention.gatedPages = std::stoi(args.value("gated-pages", "4"));
        if (!p.model || args.has("blocks-per-page")) p.attention.blocksPerGatedPage = std::stoi(args.value("blocks-per-page", "8"));
        p.maxKvBytes = std::stod(args.value("max-kv-gb", "8")) * 1e9;
        p.attention.threads = std::stoi(args.value("threads", "1"));
        p.attention.deviceMemoryLimit = size_t(std::stoul(args.value("gpu-memory", "0"))) << 20;
    } catch (const std::exception&) {
        return fail(kUsage, "bench decode: numeric options take numbers");
    }
    if (p.pages < 1 || p.batch < 1 || p.pageTokens < 1 || p.tokensPerPage < 2)
        return fail(kUsage, "bench decode: --pages, --batch, --page-tokens >= 1 and --tokens-per-page >= 2");
    if (p.attention.threads < 1 || p.attention.threads > 2) return fail(kUsage, "bench decode: --threads is 1 or 2");
    p.device = args.value("device", "cpu");
    p.recall = args.has("recall");
    if (auto volume = args.value("volume")) {
        auto pages = readerPageInputs(*volume, *args.value("model"), p.config.visualTokenIds, 300);
        if (!pages) return fail(exitFor(pages.status()), pages.status().message());
        p.pageInputs = std::move(*pages);
        size_t tokens = 0;
        for (const auto& in : p.pageInputs) tokens += in.size() / size_t(p.config.visualStride());
        std::cerr << "volume: " << p.pageInputs.size() << " pages read by the front-end, " << tokens / p.pageInputs.size()
                  << " visual tokens a page on average, fed in turn\n";
    }
    auto r = runDecodeBench(p);
    if (!r) return fail(exitFor(r.status()), r.status().message());
    r->shape = args.value("model", args.value("config", args.value("shape", "reader")));
    if (args.has("json")) {
        std::cout << r->toJson() << std::endl;
        return kOk;
    }
    std::cout << "mode " << r->mode << ", " << r->parameters / 1'000'000.0 << " M parameters, batch " << r->batch
              << ", " << r->pagesDone << " pages, " << r->tokensPerSecond << " tokens/s, peak KV "
              << r->peakKvBytes / 1048576.0 << " MiB, checksum " << std::hex << r->checksum << std::dec << "\n";
    for (const auto& c : r->checkpoints) {
        std::cout << "  page " << c.page << ": " << c.msPerToken << " ms/token, KV " << c.kvBytes / 1048576.0
                  << " MiB (reserved " << c.kvCapacityBytes / 1048576.0 << "), host " << c.hostBytes / 1048576.0
                  << " MiB, attends " << c.attendedTokens << " tokens";
        if (c.recallMean >= 0) std::cout << ", recall mean " << c.recallMean << " p1 " << c.recallP1;
        std::cout << "\n";
    }
    for (size_t b = 0; b < r->budgets.size(); ++b)
        if (r->budgets[b].cuts > 0)
            std::cout << "  session " << b + 1 << ": device short of memory, " << r->budgets[b].gatedPages << " gated pages of "
                      << r->budgets[b].blocksPerGatedPage << " blocks (budgets halved " << r->budgets[b].cuts << " times)\n";
    if (!r->note.empty()) std::cout << "  " << r->note << "\n";
    return kOk;
}

// `bench reader`: the reader's decoding time per page next to Tesseract's on the same page, measured
// in one run, alternating: Tesseract on one core (OMP_THREAD_LIMIT=1, its fastest per page), the
// decoder on --threads (2 by default, the two cores issue 7 allows it; OpenBLAS on one thread, as a
// transcription runs it beside the front-end). The front-end reads every page first, so that
// the decoder's time is its own and nothing else runs beside it; each repeat decodes the pages
// again as one volume with a fresh reader, in order (later pages see the earlier ones through the
// gate). Prints per page both times and their ratio, and the text's checksum per repeat.
int benchReader(const Args& args) {
    const auto& pos = args.positionals();
    if (pos.size() < 2) return fail(kUsage, "bench reader: give at least one page image");
    int repeat = 1, dpi = 300, threads = 2;
    try {
        repeat = std::stoi(args.value("repeat", "1"));
        dpi = std::stoi(args.value("dpi", "300"));
        threads = std::stoi(args.value("threads", "2"));
    } catch (const std::exception&) {
        return fail(kUsage, "bench reader: --repeat, --dpi and --threads take numbers");
    }
    if (repeat < 1) return fail(kUsage, "bench reader: --repeat must be at least 1");
    if (threads < 1 || threads > 2) return fail(kUsage, "bench reader: --threads is 1 or 2 (the decoder's threads)");
    openblas_set_num_threads(1);
    SourceOptions so;
    so.pdfDpi = dpi;
    so.pdfHelper = pdfHelperIn(QCoreApplication::applicationDirPath().toStdString());
    std::vector<cv::Mat> pages;
    std::vector<int> dpis;
    for (size_t i = 1; i < pos.size(); ++i) {
        auto src = openSource(pos[i], so);
        if (!src) return fail(exitFor(src.status()), src.status().message());
        for (int p = 0; p < (*src)->pageCount(); ++p) {
            auto img = (*src)->loadPage(p);
            if (!img) return fail(exitFor(img.status()), img.status().message());
            for (auto& region : preprocessPage(img->image, PreprocessParams{}).regions) {
                pages.push_back(region.image);
                dpis.push_back(img->dpi);
            }
        }
    }
    RecognizerOptions ro;
    if (Status st = applyMeasurementEnvironment(ro); !st) return fail(kUsage, st.message());
    applyModelLocations(ro);
    ro.languages = args.value("lang", "eng");
    ro.engine = "tesseract";
    auto tess = createRecognizer(ro);
    if (!tess) return fail(exitFor(tess.status()), tess.status().message());
    ro.engine = "reader";
    ro.decoderThreads = threads;
    ro.device = args.value("device", "cpu");
    using Clock = std::chrono::steady_clock;
    const auto secondsSince = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
    const size_t n = pages.size();
    std::vector<std::vector<double>> tessS(n), decodeS(n);
    // The front-end's reading of every page, once (a prepared page is not used up by decoding it).
    std::vector<std::unique_ptr<PreparedPage>> prepared;
    {
        auto reader = createRecognizer(ro);
        if (!reader) return fail(exitFor(reader.status()), reader.status().message());
        if (!(*reader)->splitsPages()) return fail(kInternal, "bench reader: the reader does not split its pages");
        const auto f0 = Clock::now();
        for (size_t i = 0; i < n; ++i) prepared.push_back((*reader)->prepare(pages[i], dpis[i], nullptr));
        std::cout << "front-end: " << secondsSince(f0) / double(n) << " s/page (every page read before decoding)\n";
    }
    for (int r = 0; r < repeat; ++r) {
        auto reader = createRecognizer(ro);
        if (!reader) return fail(exitFor(reader.status()), reader.status().message());
        std::string text;
        for (size_t i = 0; i < n; ++i) {
            auto t0 = Clock::now();
            auto t = (*tess)->recognize(pages[i], dpis[i]);
            if (!t) return fail(kInternal, "bench reader: Tesseract, page " + std::to_string(i + 1) + ": " + t.status().message());
            tessS[i].push_back(secondsSince(t0));
            t0 = Clock::now();
            std::vector<PreparedPage*> ahead;  // the pages after it, for a model that reads ahead
            for (size_t j = i + 1; j < n && int(ahead.size()) < (*reader)->pagesAhead(); ++j) ahead.push_back(prepared[j].get());
            auto d = (*reader)->recognizePrepared(*prepared[i], ahead, nullptr, {});
            if (!d) return fail(kInternal, "bench reader: reader, page " + std::to_string(i + 1) + ": " + d.status().message());
            decodeS[i].push_back(secondsSince(t0));
            text += d->plainText() + "\f";
        }
        std::cout << "repeat " << r + 1 << ": text checksum " << std::hex << std::hash<std::string>{}(text) << std::dec << "\n";
    }
    std::cout << "| page | Tesseract s | decoder s | decoder / Tesseract |\n|---|---|---|---|\n";
    const auto fmt = [](const std::vector<double>& v) {
        std::ostringstream o;
        o.precision(2);
        for (size_t i = 0; i < v.size(); ++i) o << (i ? " / " : "") << std::fixed << v[i];
        return o.str();
    };
    for (size_t i = 0; i < n; ++i) {
        std::vector<double> ratio;
        for (size_t r = 0; r < tessS[i].size(); ++r) ratio.push_back(decodeS[i][r] / tessS[i][r]);
        std::cout << "| " << i + 1 << " | " << fmt(tessS[i]) << " | " << fmt(decodeS[i]) << " | " << fmt(ratio) << " |\n";
    }
    return kOk;
}

}  // namespace

int benchCommand(const Args& args) {
    const auto& pos = args.positionals();
    if (!pos.empty() && pos[0] == "reader") return benchReader(args);
    if (pos.size() == 1 && pos[0] == "find") return benchFind(args);
    if (pos.size() != 1 || pos[0] != "decode") {
        std::cerr << "quire-cli bench: the benchmarks are 'decode', 'reader' and 'find'\n";
        return kUsage;
    }
    return benchDecode(args);
}

}  // namespace quire::cli
