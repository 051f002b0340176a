// quire-cli: the headless driver of Quire's engine.
//
// Exit codes: 0 ok; 2 bad usage or unreadable input; 3 pages of this run failed; 1 internal error.
#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "bench_command.h"
#include "features_command.h"
#include "find_command.h"
#include "history_command.h"
#include "cli_args.h"
#include "command_support.h"
#include "pages_command.h"
#include "regions_command.h"
#include "escaping_sink.h"
#include "measurement_env.h"
#include "quire/core/process_tuning.h"
#include "quire/core/backend.h"
#include "quire/export/exporters.h"
#include "quire/store/project_backups.h"
#include "quire/store/project_properties.h"
#include "quire/pipeline/transcriber.h"
#include "quire/preprocess/preprocess.h"

namespace fs = std::filesystem;
using namespace quire;
using namespace quire::cli;

namespace {

std::atomic<bool> g_cancel{false};

const char* kUsageText =
    "Usage:\n"
    "  quire-cli features INPUT... --out DIR [--dpi 300] [--lang eng] [--evidence] [--json]\n"
    "                                   (PP-OCR visual tokens per page; --evidence: Tesseract's glyphs laid on them)\n"
    "  quire-cli transcribe [INPUT...] --project P.quire [--lang eng] [--engine tesseract|ppocr|reader|auto]\n"
    "            [--reader-model DIR (default: $QUIRE_READER_MODEL, else the installed reader)] [--device cpu|cuda]\n"
    "            [--gpu-memory MIB] [--threads N] [--dpi 300] [--pdf-text recognize|keep] [--split none|auto]\n"
    "            [--no-deskew] [--no-normalize] [--no-orient] [--no-invert] [--binarize] [--flag-below 80] [--retry-failed]\n"
    "            [--pages 3-17 | --reread 3-17 [--replace-corrections] [--region K]]\n"
    "            [--export md,docx,txt,hocr,alto,page,pdf --out DIR [--page-markers] [--pdfa]] [--json]\n"
    "      Adds the inputs (PDF, TIFF, PNG/JPEG/BMP images, folders of page images) to the project and\n"
    "      transcribes every page not yet done. Without inputs it resumes the project's queued pages.\n"
    "      --pages: only those pages of the book are read (and retried), as status --pages numbers them.\n"
    "      --reread: those pages are read again with this run's settings (--engine, --lang, ...); each page's\n"
    "      reading now stays a version (history). Corrections stay the text unless --replace-corrections (then\n"
    "      the new reading is the text, the corrections kept in the history). --region K (with one page): only\n"
    "      its region K is read again (as quire-cli regions numbers them); the rest of its text stays.\n"
    "      --gpu-memory: the most GPU memory the reader's decoder takes (short of it: smaller gate budgets, then the CPU).\n"
    "  quire-cli export --project P.quire --format md,docx,... --out DIR [--name book] [--pages 3-17] [--page-markers] [--pdfa]\n"
    "      --pages: only those pages of the book (as status --pages numbers them).\n"
    "      --page-markers: [p. 12] where each page begins in DOCX, Markdown and text (the printed number\n"
    "      where the book shows one, else [scan N]), so passages can be cited.\n"
    "      --pdfa: the searchable PDF as PDF/A-2b, for long-term archiving (every page an image).\n"
    "  quire-cli status --project P.quire [--json] [--pages]\n"
    "      --pages: a line for each page (with --json, each page's text too).\n"
    "  quire-cli correct --project P.quire --page N (--text-file F | --text T)\n"
    "  quire-cli history --project P.quire --page N [--diff V] [--revert V] [--json]\n"
    "      A page's versions: 0 the engine's reading, then each correction with its time. --diff V: what\n"
    "      changed from version V to the current text; --revert V: V becomes the current text again (saved\n"
    "      as a new correction: no version is lost).\n"
    "  quire-cli regions --project P.quire --page N [--set \"X,Y,W,H[:KIND];...\" | --clear] [--json]\n"
    "      The regions drawn on a page, in reading order (page pixels, as ALTO gives them); KIND is text,\n"
    "      heading, marginal-note, table, image or ignore. With regions only they are read, in their order:\n"
    "      transcribe --reread N reads the page again in them (the earlier reading is kept as a version).\n"
    "  quire-cli properties --project P.quire [--title T] [--author A] [--language BCP47] [--json]\n"
    "      The book's title, author and language, written into the exports' metadata; the options set them.\n"
    "  quire-cli find --project P.quire (--text T | --regex R) [--whole-word] [--match-case] [--replace S] [--json]\n"
    "      Every hit in the book's text (corrections included): page, line and the line around it.\n"
    "      --replace: each changed page gets a correction (with --regex, \\1..\\9 are the groups).\n"
    "  quire-cli pages --project P.quire (--retry N | --skip N | --delete N | --move N --before K | --rotate N [--by 90|180|270]\n"
    "            | --undo | --removed [--json] | --restore R)   (N: page numbers and ranges, e.g. 3,17,20-25)\n"
    "      --retry queues failed pages again (a page quarantined after crashing the engine twice, too);\n"
    "      --skip marks queued pages failed, so runs leave them alone until retried; --delete takes pages\n"
    "      out of the book (their work is kept); --move puts pages before page K (K = the page count + 1:\n"
    "      at the end); --rotate turns pages clockwise (default 90) and queues them to be read again (their\n"
    "      corrections are kept); --undo undoes the last delete, move, rotate or restore, also after reopening.\n"
    "      --removed lists the removed pages, numbered; --restore R puts back removed pages by those numbers\n"
    "      (any of them, not only the last removed), each where it stood among the pages in the book.\n"
    "  quire-cli restore --project P.quire [--from BACKUP]   (the newest sound backup of a damaged project)\n"
    "  quire-cli devices\n"
    "  quire-cli bench decode --pages N --mode full|rswa|srswa [--device cpu|cuda] [--batch B]\n"
    "            [--shape reader|unlimited-ocr | --config FILE | --model DIR [--volume FILE]] [--page-tokens T]\n"
    "            [--tokens-per-page G]\n"
    "            [--recent N] [--gated-pages K] [--blocks-per-page K] [--recall] [--max-kv-gb G] [--threads 1|2]\n"
    "            [--gpu-memory MIB] [--json]\n"
    "      A batch (--batch B) is B volumes stepped together: each weight read once a step for all.\n"
    "      --model DIR: a trained model (resources/models/reader) with the reader's budgets; --volume: its\n"
    "      pages as the reader's front-end reads them (with their ids), fed in turn to make --pages pages.\n"
    "  quire-cli bench reader IMAGE... [--lang eng] [--repeat R] [--dpi 300] [--threads 2] [--device cpu|cuda]\n"
    "      The reader's decoder against Tesseract, page by page on one core each, side by side.\n"
    "  quire-cli bench find [--pages 300] [--json]\n"
    "      Find all (three modes) and Replace All with its undo, timed on a generated book.\n"
    "  quire-cli --version\n"
    "\nExit codes: 0 ok, 2 bad usage or unreadable input, 3 pages of this run failed, 1 internal error.\n"
    "\nEnvironment: QUIRE_PPOCR_DIR, QUIRE_READER_MODEL (where the models are); for measurements\n"
    "(docs/BENCHMARKS.md, docs/ACCURACY.md): QUIRE_PPOCR_DET_MAX_SIDE=320..4096, QUIRE_PPOCR_REC_BATCH=1..64,\n"
    "QUIRE_PPOCR_LAYOUT=tesseract|rows, "
    "QUIRE_PPOCR_SCORE=contour|box, QUIRE_READER_DRAFT=0, QUIRE_READER_PRIOR=NATS, QUIRE_READER_EVIDENCE=NATS, QUIRE_READER_WINDOW=B,G[,A],\n"
    "QUIRE_READER_RARE=BELOW,NATS, "
    "QUIRE_READER_PRINTED=S,D, QUIRE_READER_LINES=E,H,J, QUIRE_READER_CONTEXT=volume|page, QUIRE_READER_STATS=1,\n"
    "QUIRE_READER_{LAYOUT_PARAGRAPHS,TYPESET_PARAGRAPHS,PAGE_HYPHEN,SKIP_RULE,LANGUAGE_LETTERS}=0|1,\n"
    "QUIRE_READER_PIPELINE=0, QUIRE_READER_PREPARERS=1|2, QUIRE_REPAIR_LIGATURES=0, QUIRE_UNEVEN_LIGHT=SHARE,\n"
    "QUIRE_NN_PROFILE=1.\n";

std::string duration(double secs) {
    if (secs < 0) return "?";
    const int s = int(secs + 0.5);
    char buf[32];
    if (s >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", s / 3600, (s / 60) % 60);
    else std::snprintf(buf, sizeof buf, "%dm%02ds", s / 60, s % 60);
    return buf;
}

// The usage lines of one command (`quire-cli CMD --help`): its entries in kUsageText with their
// continuation lines, then the exit codes.
std::string usageOf(const std::string& cmd) {
    std::istringstream in(kUsageText);
    std::string line, out = "Usage:\n";
    bool mine = false;
    while (std::getline(in, line)) {
        if (line.rfind("  quire-cli ", 0) == 0) mine = line.rfind("  quire-cli " + cmd + " ", 0) == 0;
        else if (line.rfind("      ", 0) != 0 && line.rfind("    ", 0) != 0) mine = false;
        if (mine) out += line + "\n";
        if (line.rfind("Exit codes:", 0) == 0) out += "\n" + line + "\n";
    }
    return out;
}

// The export: formats, folder, --name, --page-markers and --pdfa from `args`; `pages` a range or all.
int doExport(ProjectStore& store, const std::string& formats, const cli::Args& args,
             const std::optional<std::pair<int, int>>& pages, bool json) {
    auto fmts = parseExportFormats(formats);
    if (!fmts) return fail(kUsage, fmts.status().message());
    ExportOptions opt;
    if (pages) opt.firstPage = pages->first, opt.lastPage = pages->second;
    opt.outDir = *args.value("out");
    opt.baseName = args.value("name", "book");
    opt.formats = *fmts;
    opt.pageMarkers = args.has("page-markers");
    opt.pdfA = args.has("pdfa");
    if (opt.pdfA && std::find(fmts->begin(), fmts->end(), ExportFormat::Pdf) == fmts->end())
        return fail(kUsage, "--pdfa is for the searchable PDF: add pdf to the formats");
    opt.cancel = &g_cancel;
    opt.onProgress = [&](int done, int total, const std::string& what) {
        if (!json && what != "done") spdlog::info("export {}/{}: {}", done + 1, total, what);
    };
    auto written = exportProject(store, opt);
    if (!written) return fail(exitFor(written.status()), written.status().message());
    QJsonArray files;
    for (const auto& f : *written) {
        files.append(QString::fromStdString(f.string()));
        if (!json) spdlog::info("wrote {}", f.string());
    }
    if (json) printJson({{"event", "export"}, {"files", files}});
    return kOk;
}

// A project this command created and leaves without a page is removed with the files beside it:
// a mistyped option or a missing input must not leave an empty project behind.
struct NewProjectCleanup {
    fs::path path;
    bool created = false;
    std::unique_ptr<ProjectStore>* store = nullptr;
    ~NewProjectCleanup() {
        if (!created || !store || !*store) return;
        auto c = (*store)->counts();
        if (!c || c->pages > 0) return;
        store->reset();  // closed first (its lock and clean-close backup go with it)
        std::error_code ec;
        for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock", ".inflight", ".crashed"})
            fs::remove(path.string() + suffix, ec);
        fs::remove_all(backupFolder(path), ec);
    }
};

int cmdTranscribe(const cli::Args& args) {
    TranscribeParams p;
    if (Status st = cli::applyMeasurementEnvironment(p); !st) return fail(kUsage, st.message());
    for (const auto& in : args.positionals()) p.inputs.emplace_back(in);
    std::error_code ec;
    const bool existed = args.value("project") && fs::exists(*args.value("project"), ec);
    auto store = openProject(args, ProjectStore::Mode::OpenOrCreate);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    NewProjectCleanup cleanup{*args.value("project"), !existed, &*store};
    // Resume: settings of the last run apply unless given again.
    QJsonObject last;
    if (auto run = (*store)->lastRun(); run && run->has_value())
        last = QJsonDocument::fromJson(QByteArray::fromStdString((*run)->params)).object();
    const std::string engine = args.value("engine", last.value("engine").toString("tesseract").toStdString());
    if (engine != "auto" && engine != "tesseract" && engine != "ppocr" && engine != "reader")
        return fail(kUsage, "unknown --engine '" + engine + "' (choose tesseract, ppocr, reader or auto)");
    p.recognizer.engine = engine;
    p.recognizer.readerModel = args.value("reader-model", last.value("readerModel").toString().toStdString());
    // Where the reader decodes belongs to this machine, not to the project: not kept for a resume.
    p.recognizer.device = args.value("device", "cpu");
    p.recognizer.languages = args.value("lang", last.value("languages").toString("eng").toStdString());
    cli::applyModelLocations(p.recognizer);
    if (engine == "auto") {
        std::string why;
        chooseEngine(engine, p.recognizer.languages, &why, p.recognizer.readerModel);
        spdlog::info("engine auto: chose {}", why);
    }
    p.source.pdfHelper = pdfHelperIn(QCoreApplication::applicationDirPath().toStdString());
    try {
        p.threads = std::stoi(args.value("threads", std::to_string(last.value("threads").toInt(0))));
        p.source.pdfDpi = std::stoi(args.value("dpi", std::to_string(last.value("pdfDpi").toInt(300))));
        p.flag.meanBelow = std::stod(args.value("flag-below", std::to_string(p.flag.meanBelow)));
        p.recognizer.deviceMemoryMiB = size_t(std::stoul(args.value("gpu-memory", "0")));
    } catch (const std::exception&) {
        return fail(kUsage, "--threads, --dpi, --flag-below and --gpu-memory take numbers");
    }
    if (p.threads < 0 || p.source.pdfDpi < 50 || p.source.pdfDpi > 1200)
        return fail(kUsage, "--threads must be >= 0 and --dpi between 50 and 1200");
    const std::string pdfText = args.value("pdf-text", last.value("pdfText").toString("recognize").toStdString());
    if (pdfText != "recognize" && pdfText != "keep") return fail(kUsage, "--pdf-text takes recognize or keep");
    p.pdfText = pdfText == "keep" ? PdfTextPolicy::Keep : PdfTextPolicy::Recognize;
    if (last.contains("preprocess")) {
        if (auto pre = PreprocessParams::fromJson(QJsonDocument(last.value("preprocess").toObject()).toJson().toStdString()))
            p.preprocess = *pre;
    }
    if (args.has("no-deskew")) p.preprocess.deskew = false;
    if (args.has("no-normalize")) p.preprocess.normalizeBackground = false;
    if (args.has("no-orient")) p.preprocess.orient = false;
    if (args.has("no-invert")) p.preprocess.invertNegative = false;
    if (args.has("binarize")) p.preprocess.binarize = true;
    if (Status st = cli::applyPreprocessEnvironment(p.preprocess); !st) return fail(kUsage, st.message());
    if (auto split = args.value("split")) {
        if (*split != "none" && *split != "auto") return fail(kUsage, "--split takes none or auto");
        p.preprocess.split = *split == "auto" ? SplitMode::Auto : SplitMode::None;
    }
    p.retryFailed = args.has("retry-failed");
    if (args.has("pages") && args.has("reread")) return fail(kUsage, "--reread names the pages to read; --pages is not needed with it");
    if (args.has("replace-corrections") && !args.has("reread")) return fail(kUsage, "--replace-corrections goes with --reread");
    if (args.has("region") && !args.has("reread")) return fail(kUsage, "--region goes with --reread of one page");
    const auto range = pageRangeOption(args, args.has("reread") ? "reread" : "pages");
    if (!range) return fail(kUsage, range.status().message());
    if (*range) p.firstPage = (*range)->first, p.lastPage = (*range)->second;
    if (args.has("reread")) {
        auto pages = (*store)->pages();
        if (!pages) return fail(kInternal, pages.status().message());
        std::vector<int> numbers;
        for (int n = p.firstPage; n <= p.lastPage; ++n) numbers.push_back(n);
        auto ids = idsOfPages(*pages, numbers);
        if (!ids) return fail(kUsage, "--reread: " + ids.status().message());
        p.rereadPages = std::move(*ids);
        p.rereadReplacesCorrections = args.has("replace-corrections");
        if (args.has("region")) {
            bool ok = false;
            const int k = QString::fromStdString(args.value("region", "")).toInt(&ok);
            if (!ok || k < 1) return fail(kUsage, "--region takes a region's number (1, 2, ...), as quire-cli regions lists them");
            if (p.rereadPages.size() != 1) return fail(kUsage, "--region goes with --reread of one page");
            p.rereadRegion[p.rereadPages.front()] = k - 1;
        }
    }
    const auto exportFormats = args.value("export");
    if (exportFormats && !args.value("out")) return fail(kUsage, "--export needs --out DIR");
    if (exportFormats)
        if (auto f = parseExportFormats(*exportFormats); !f) return fail(kUsage, f.status().message());

    const bool json = args.has("json");
    const bool tty = !json && isatty(STDERR_FILENO);
    p.cancel = &g_cancel;
    p.onLog = [&](const std::string& m) {
        if (json) printJson({{"event", "log"}, {"message", QString::fromStdString(m)}});
        else {
            if (tty) std::fprintf(stderr, "\r\033[K");
            spdlog::warn("{}", m);
        }
    };
    p.onPage = [&](const PageEvent& e) {
        if (json) {
            printJson({{"event", "page"}, {"sequence", e.page.sequence}, {"status", pageStatusName(e.page.status)},
                       {"flagged", e.page.flagged}, {"confidence", e.page.meanConfidence},
                       {"file", QString::fromStdString(e.page.sourceFile)}, {"filePage", e.page.filePage + 1},
                       {"failure", QString::fromStdString(e.failure)}});
        } else if (!tty) {
            spdlog::info("page {} ({} p.{}): {}{}", e.page.sequence, fs::path(e.page.sourceFile).filename().string(),
                         e.page.filePage + 1, pageStatusName(e.page.status), e.page.flagged ? ", flagged" : "");
        }
    };
    p.onProgress = [&](const RunProgress& r) {
        if (json) {
            printJson({{"event", "progress"}, {"total", r.total}, {"done", r.done}, {"failed", r.failed},
                       {"flagged", r.flagged}, {"pagesPerMinute", r.pagesPerMinute}, {"etaSeconds", r.etaSeconds}});
        } else if (tty) {
            const int width = 30;
            const int filled = r.total ? (r.done + r.failed) * width / r.total : 0;
            std::fprintf(stderr, "\r\033[K[%s%s] %d/%d pages  %d flagged  %d failed  %.1f pages/min  ETA %s",
                         std::string(size_t(filled), '#').c_str(), std::string(size_t(width - filled), '.').c_str(),
                         r.done + r.failed, r.total, r.flagged, r.failed, r.pagesPerMinute, duration(r.etaSeconds).c_str());
            std::fflush(stderr);
        }
    };
    auto summary = runTranscription(**store, p);
    if (tty) std::fprintf(stderr, "\n");
    if (!summary) return fail(exitFor(summary.status()), summary.status().message());
    const auto& s = *summary;
    if (json) {
        printJson({{"event", "summary"}, {"total", s.total}, {"done", s.done}, {"failed", s.failed},
                   {"flagged", s.flagged}, {"processed", s.processed}, {"cancelled", s.cancelled},
                   {"orientationChecks", s.orientationChecks},
                   {"matrixKernels", QString::fromStdString(quire::blasKernels())},
                   {"productKernel", QString::fromStdString(quire::productKernel())}});
    } else {
        spdlog::info("{}: {} of {} pages done, {} flagged for proofreading, {} failed{}", (*store)->path().string(),
                     s.done, s.total, s.flagged, s.failed, s.cancelled ? "; cancelled (run again to resume)" : "");
    }
    if (s.cancelled) return kInternal;
    if (exportFormats) {
        const int rc = doExport(**store, *exportFormats, args, std::nullopt, json);
        if (rc != kOk) return rc;
    }
    // The exit code describes this run's pages; pages that failed in earlier runs are the
    // project's state (`status`), not this run's outcome.
    if (s.inputFailures > 0) return kUsage;
    return s.engineFailures > 0 ? kFailedPages : kOk;
}

int cmdExport(const cli::Args& args) {
    auto store = openProject(args, ProjectStore::Mode::OpenExisting);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    auto formats = args.value("format");
    auto out = args.value("out");
    if (!formats || !out) return fail(kUsage, "export needs --format FORMATS and --out DIR");
    const auto range = pageRangeOption(args, "pages");
    if (!range) return fail(kUsage, range.status().message());
    return doExport(**store, *formats, args, *range, args.has("json"));
}

int cmdStatus(const cli::Args& args) {
    auto store = openProject(args, ProjectStore::Mode::ReadOnly);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    if (!(*store)->openNote().empty()) spdlog::warn("{}: {}", (*store)->path().string(), (*store)->openNote());
    // A damaged file is said first, with its newest sound backup: counting pages may fail on it.
    auto integrity = (*store)->integrityCheck();
    if (!integrity || *integrity != "ok")
        return fail(kUsage, damagedProject((*store)->path(), integrity ? *integrity : integrity.status().message()).message());
    auto c = (*store)->counts();
    if (!c) return fail(kInternal, c.status().message());
    const bool json = args.has("json");
    QJsonObject o{{"project", QString::fromStdString((*store)->path().string())},
                  {"pages", c->pages}, {"done", c->done}, {"queued", c->queued}, {"failed", c->failed},
                  {"flagged", c->flagged}, {"corrected", c->corrected}, {"proofread", c->proofread},
                  {"integrity", QString::fromStdString(integrity ? *integrity : integrity.status().message())}};
    auto pages = (*store)->pages();
    if (!pages) return fail(kInternal, pages.status().message());
    QJsonArray list;
    for (const auto& pg : *pages) {
        QJsonObject po{{"sequence", pg.sequence}, {"id", qint64(pg.id)}, {"file", QString::fromStdString(pg.sourceFile)},
                       {"filePage", pg.filePage + 1}, {"part", pg.part}, {"status", pageStatusName(pg.status)},
                       {"flagged", pg.flagged}, {"corrected", pg.corrected}, {"proofread", pg.proofread},
                       {"confidence", pg.meanConfidence}, {"skewDegrees", pg.skewDegrees},
                       {"hasTextLayer", pg.textLayer.has_value()}, {"rotation", pg.rotation}};
        if (!pg.failure.empty()) po["failure"] = QString::fromStdString(pg.failure);
        if (pg.flagged && !pg.flagReason.empty()) po["flagReason"] = QString::fromStdString(pg.flagReason);
        if (args.has("pages")) {
            auto text = (*store)->effectiveText(pg.id);
            po["text"] = QString::fromStdString(text ? *text : std::string());
            if (pg.status == PageStatus::Done)
                if (auto layout = (*store)->layout(pg.id); layout && !layout->engine.empty())
                    po["engine"] = QString::fromStdString(layout->engine + " " + layout->engineVersion);
        }
        list.append(po);
        if (!json && args.has("pages")) {  // one line a page: where it stands, then what it came from
            std::cout << "page " << pg.sequence << ": " << pageStatusName(pg.status) << (pg.flagged ? ", flagged" : "")
                      << (pg.flagged && !pg.flagReason.empty() ? " (" + pg.flagReason + ")" : "")
                      << (pg.corrected ? ", corrected" : "") << (pg.proofread ? ", proofread" : "");
            if (pg.status == PageStatus::Done) std::cout << ", confidence " << int(std::lround(pg.meanConfidence));
            std::cout << " (" << pg.sourceFile << " p." << pg.filePage + 1
                      << (pg.rotation ? ", turned " + std::to_string(pg.rotation) + "°" : std::string()) << ")";
            if (!pg.failure.empty()) std::cout << ": " << pg.failure;
            std::cout << "\n";
        } else if (!json && pg.status == PageStatus::Failed) {
            std::cout << "failed: page " << pg.sequence << " (" << pg.sourceFile << " p." << pg.filePage + 1
                      << "): " << pg.failure << "\n";
        }
    }
    if (json) {
        o["pageList"] = list;
        printJson(o);
    } else {
        std::cout << (*store)->path().string() << ": " << c->pages << " pages, " << c->done << " done, " << c->queued
                  << " queued, " << c->failed << " failed, " << c->flagged << " flagged, " << c->corrected
                  << " corrected, " << c->proofread << " proofread; integrity " << o["integrity"].toString().toStdString()
                  << "\n";
    }
    return kOk;
}

// Puts the newest sound backup (or --from FILE) in place of a damaged project.
int cmdRestore(const cli::Args& args) {
    const auto project = args.value("project");
    if (!project) return fail(kUsage, "--project P.quire is required");
    std::optional<BackupInfo> backup;
    if (const auto from = args.value("from")) backup = BackupInfo{*from, *from};
    else backup = newestSoundBackup(*project);
    if (!backup) return fail(kUsage, *project + ": there is no sound backup in " + backupFolder(*project).string());
    auto damaged = ProjectStore::restore(*project, backup->path);
    if (!damaged) return fail(exitFor(damaged.status()), damaged.status().message());
    spdlog::info("{}: restored from the backup taken at {}; the damaged file is kept as {}", *project, backup->takenAt,
                 damaged->string());
    auto store = ProjectStore::open(*project, ProjectStore::Mode::ReadOnly);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    return kOk;
}

int cmdCorrect(const cli::Args& args) {
    auto store = openProject(args, ProjectStore::Mode::OpenExisting);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    int seq = 0;
    try {
        seq = std::stoi(args.value("page", "0"));
    } catch (const std::exception&) {
    }
    std::string text;
    if (auto f = args.value("text-file")) {
        std::ifstream in(*f, std::ios::binary);
        if (!in) return fail(kUsage, *f + ": cannot read");
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    } else if (auto t = args.value("text")) {
        text = *t;
    } else {
        return fail(kUsage, "correct needs --text-file F or --text T");
    }
    auto pages = (*store)->pages();
    if (!pages) return fail(kInternal, pages.status().message());
    if (seq < 1 || seq > int(pages->size()))
        return fail(kUsage, "--page must be between 1 and " + std::to_string(pages->size()));
    auto id = (*store)->addCorrection((*pages)[size_t(seq - 1)].id, text);
    if (!id) return fail(kInternal, id.status().message());
    spdlog::info("page {}: correction {} saved", seq, *id);
    return kOk;
}

int cmdProperties(const cli::Args& args) {
    const bool change = args.has("title") || args.has("author") || args.has("language");
    auto store = openProject(args, change ? ProjectStore::Mode::OpenExisting : ProjectStore::Mode::ReadOnly);
    if (!store) return fail(exitFor(store.status()), store.status().message());
    auto p = loadProperties(**store);
    if (!p) return fail(kInternal, p.status().message());
    if (auto v = args.value("title")) p->title = *v;
    if (auto v = args.value("author")) p->author = *v;
    if (auto v = args.value("language")) p->language = *v;
    if (change)
        if (Status s = saveProperties(**store, *p); !s) return fail(exitFor(s), s.message());
    if (args.has("json")) {
        printJson({{"title", QString::fromStdString(p->title)}, {"author", QString::fromStdString(p->author)},
                   {"language", QString::fromStdString(p->language)}});
        return kOk;
    }
    auto shown = [](const std::string& v, const char* unset) { return v.empty() ? std::string(unset) : v; };
    std::cout << "title: " << shown(p->title, "(not set: exports use the project's name)") << "\n"
              << "author: " << shown(p->author, "(not set)") << "\n"
              << "language: " << shown(p->language, "(not set: exports use the languages it was read in)") << "\n";
    return kOk;
}

int cmdDevices() {
    std::string why;
    const auto devs = gpuDevices(&why);
    if (devs.empty()) std::cout << "no GPU: " << why << "; the CPU path is used\n";
    for (const auto& d : devs)
        std::cout << "GPU " << d.index << ": " << d.name << ", sm_" << d.computeMajor << d.computeMinor << ", "
                  << d.totalBytes / (1 << 20) << " MiB (" << d.freeBytes / (1 << 20) << " MiB free)\n";
    return kOk;
}

}  // namespace

int main(int argc, char** argv) {
    quire::runTesseractSingleThreaded(argv);
    quire::tuneHeapForLargeBuffers();
    quire::cli::applyProfilingEnvironment();
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName("quire-cli");
    QCoreApplication::setApplicationVersion(QUIRE_VERSION_STRING);
    auto logger = std::make_shared<spdlog::logger>(
        "quire", std::make_shared<quire::cli::EscapingSink>(std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
    logger->set_pattern("%^%l%$: %v");
    spdlog::set_default_logger(logger);
    std::signal(SIGINT, [](int) { g_cancel = true; });
    std::signal(SIGTERM, [](int) { g_cancel = true; });

    if (argc < 2) {
        std::cerr << kUsageText;
        return kUsage;
    }
    const std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        std::cout << kUsageText;
        return kOk;
    }
    if (cmd == "--version") {
        std::cout << "quire-cli " << QUIRE_VERSION_STRING << "\n";
        return kOk;
    }
    static const std::map<std::string, std::pair<std::set<std::string>, std::set<std::string>>> kOptions = {
        {"transcribe",
         {{"project", "lang", "engine", "reader-model", "device", "gpu-memory", "threads", "dpi", "pdf-text", "split", "flag-below",
           "export", "out", "name", "pages", "reread", "region"},
          {"json", "no-deskew", "no-normalize", "no-orient", "no-invert", "binarize", "retry-failed", "page-markers",
           "replace-corrections", "pdfa"}}},
        {"export", {{"project", "format", "out", "name", "pages"}, {"json", "page-markers", "pdfa"}}},
        {"status", {{"project"}, {"json", "pages"}}},
        {"correct", {{"project", "page", "text-file", "text"}, {}}},
        {"pages", {{"project", "retry", "skip", "delete", "move", "before", "rotate", "by", "restore"}, {"undo", "removed", "json"}}},
        {"find", {{"project", "text", "regex", "replace"}, {"whole-word", "match-case", "json"}}},
        {"properties", {{"project", "title", "author", "language"}, {"json"}}},
        {"history", {{"project", "page", "diff", "revert"}, {"json"}}},
        {"regions", {{"project", "page", "set"}, {"clear", "json"}}},
        {"restore", {{"project", "from"}, {}}},
        {"devices", {{}, {}}},
        {"features", {{"out", "dpi", "lang"}, {"json", "evidence"}}},
        {"bench", {{"pages", "mode", "device", "batch", "config", "model", "volume", "shape", "page-tokens", "tokens-per-page", "recent",
                    "gated-pages", "blocks-per-page", "max-kv-gb", "lang", "repeat", "dpi", "threads", "gpu-memory"},
                   {"json", "recall"}}},
    };
    auto it = kOptions.find(cmd);
    if (it == kOptions.end()) {
        std::cerr << "quire-cli: unknown command '" << cmd << "'\n\n" << kUsageText;
        return kUsage;
    }
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
            std::cout << usageOf(cmd);
            return kOk;
        }
    cli::Args args;
    std::string error;
    if (!args.parse(argc, argv, 2, it->second.first, it->second.second, &error)) {
        std::cerr << "quire-cli " << cmd << ": " << error << "\n\n" << kUsageText;
        return kUsage;
    }
    if (cmd == "bench") return benchCommand(args);
    if (cmd != "transcribe" && cmd != "features" && !args.positionals().empty()) {
        std::cerr << "quire-cli " << cmd << ": unexpected argument '" << args.positionals().front() << "'\n";
        return kUsage;
    }
    try {
        if (cmd == "transcribe") return cmdTranscribe(args);
        if (cmd == "export") return cmdExport(args);
        if (cmd == "status") return cmdStatus(args);
        if (cmd == "correct") return cmdCorrect(args);
        if (cmd == "pages") return pagesCommand(args);
        if (cmd == "find") return findCommand(args, &g_cancel);
        if (cmd == "properties") return cmdProperties(args);
        if (cmd == "history") return historyCommand(args);
        if (cmd == "regions") return regionsCommand(args);
        if (cmd == "restore") return cmdRestore(args);
        if (cmd == "features") return featuresCommand(args);
        return cmdDevices();
    } catch (const std::exception& e) {
        return fail(kInternal, std::string("internal error: ") + e.what());
    }
}
