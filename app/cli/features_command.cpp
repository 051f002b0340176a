// quire-cli features: the front-end's visual tokens of every page, for training the reader (tools/train/data.py).
#include "features_command.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "command_support.h"
#include "measurement_env.h"
#include "quire/decoder/safetensors.h"
#include "quire/ppocr/ppocr.h"
#include "quire/preprocess/preprocess.h"
#include "quire/recognizers/line_evidence.h"
#include "quire/recognizers/ppocr_options.h"
#include "quire/recognizers/recognizer.h"
#include "quire/source/document_source.h"

namespace fs = std::filesystem;

namespace quire::cli {

// The PP-OCR recognizer's visual tokens for the reader model: per page one safetensors file with a
// [frames, 120] tensor per line and, in its metadata, the lines' boxes, CTC hypotheses, per-character
// probabilities and frames, and each frame's x on the source page. Pages are preprocessed as
// `transcribe` does, so training and inference see the same encoder outputs. With --evidence, each
// line also carries Tesseract's reading of it laid on its characters (alignLineEvidence).
namespace {

QJsonObject evidenceJson(const LineEvidence& ev, const PreparedRegion& region) {
    QJsonArray glyphs, paired, breaks, before;
    for (size_t j = 0; j < ev.glyphs.size(); ++j) {
        const Glyph& g = ev.glyphs[j];
        QJsonArray choices;
        for (const auto& c : g.choices) choices.append(QJsonArray{QString::fromStdString(c.text), double(c.confidence)});
        const Box b = region.toSource(g.box);
        glyphs.append(QJsonObject{{"text", QString::fromStdString(g.text)}, {"confidence", double(g.confidence)},
                                  {"choices", choices}, {"word_start", bool(ev.wordStarts[j])},
                                  {"box", QJsonArray{b.x, b.y, b.w, b.h}}});
    }
    for (const auto& c : ev.chars) {
        paired.append(c.glyph);
        breaks.append(c.breakBefore ? 1 : 0);
        before.append(QString::fromStdString(c.before));
    }
    return {{"glyphs", glyphs}, {"char_glyph", paired}, {"char_break_before", breaks}, {"char_before", before},
            {"trailing", QString::fromStdString(ev.trailing)}};
}

}  // namespace

int featuresCommand(const Args& args) {
    if (args.positionals().empty()) return fail(kUsage, "features: give at least one input document");
    const std::string outDir = args.value("out", "");
    if (outDir.empty()) return fail(kUsage, "features: --out DIR is required");
    const bool json = args.has("json");
    SourceOptions so;
    so.pdfHelper = pdfHelperIn(QCoreApplication::applicationDirPath().toStdString());
    try {
        so.pdfDpi = std::stoi(args.value("dpi", "300"));
    } catch (const std::exception&) {
        return fail(kUsage, "--dpi takes a number");
    }
    std::error_code ec;
    fs::create_directories(outDir, ec);
    if (ec) return fail(kUsage, outDir + ": cannot create the output folder (" + ec.message() + ")");
    RecognizerOptions ro;
    ro.languages = args.value("lang", "eng");
    if (Status st = applyMeasurementEnvironment(ro); !st) return fail(kUsage, st.message());
    applyModelLocations(ro);
    const PpocrOptions po = ppocrOptionsFor(ro);  // the reader's front-end, as transcribe sets it up
    auto engine = PpocrEngine::load(po);
    if (!engine) return fail(exitFor(engine.status()), engine.status().message());
    std::unique_ptr<Recognizer> tesseract;
    if (args.has("evidence")) {
        RecognizerOptions to = ro;
        to.engine = "tesseract";
        to.glyphChoices = true;
        auto rec = createRecognizer(to);
        if (!rec) return fail(exitFor(rec.status()), rec.status().message());
        tesseract = std::move(*rec);
    }
    // Pages prepared as a transcription run prepares them: a turn OSD proposes is confirmed by
    // reading (alone, OSD turned a clean two-column page upside down).
    PreprocessParams pp;
    pp.orientLanguages = orientationCheckLanguages(ro.languages, ro.tessdataDir);
    int pageNo = 0;
    for (const auto& input : args.positionals()) {
        auto src = openSource(input, so);
        if (!src) return fail(exitFor(src.status()), src.status().message());
        for (int i = 0; i < (*src)->pageCount(); ++i) {
            auto img = (*src)->loadPage(i);
            if (!img) return fail(exitFor(img.status()), img.status().message());
            const PreprocessResult pre = preprocessPage(img->image, pp);
            for (const auto& region : pre.regions) {
                ++pageNo;
                auto page = (*engine)->read(region.image, true);
                if (!page) return fail(kInternal, input + " page " + std::to_string(i + 1) + ": " + page.status().message());
                PageText other;
                if (tesseract) {
                    auto read = tesseract->recognize(region.image, img->dpi);
                    if (!read) return fail(kInternal, input + " page " + std::to_string(i + 1) + ": " + read.status().message());
                    other = std::move(*read);
                }
                std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>> tensors;
                QJsonArray lines;
                for (size_t k = 0; k < page->lines.size(); ++k) {
                    const auto& l = page->lines[k];
                    tensors.push_back({"line" + std::to_string(k) + ".features",
                                       {{l.frames, 120}, std::vector<float>(l.features.begin(), l.features.end())}});
                    const Box b = region.toSource(l.box);
                    QJsonArray ids, probs, frames, xs;
                    for (size_t c = 0; c < l.charIds.size(); ++c) {
                        ids.append(l.charIds[c]);
                        probs.append(double(l.charProbs[c]));
                        frames.append(l.charFrames[c]);
                    }
                    for (float x : l.frameX) xs.append(region.toSource({int(x), l.box.y, 1, 1}).x);
                    QJsonObject lineJson{{"box", QJsonArray{b.x, b.y, b.w, b.h}}, {"text", QString::fromStdString(l.text)},
                                         {"char_ids", ids}, {"char_probs", probs}, {"char_frames", frames},
                                         {"frames", l.frames}, {"frame_x", xs}};
                    if (tesseract) lineJson["tesseract"] = evidenceJson(alignLineEvidence(l, **engine, other), region);
                    lines.append(lineJson);
                }
                QJsonObject meta{{"source", QString::fromStdString(input)}, {"source_page", i + 1}, {"page", pageNo},
                                 {"width", img->image.cols}, {"height", img->image.rows}, {"lines", lines},
                                 {"line_batch", po.recBatch}};  // a model trained on these runs with it
                char name[64];
                std::snprintf(name, sizeof name, "page-%05d.safetensors", pageNo);
                const fs::path file = fs::path(outDir) / name;
                if (auto st = decoder::writeSafeTensors(file, tensors, decoder::DType::F32,
                                                        {{"quire.features", QJsonDocument(meta).toJson(QJsonDocument::Compact).toStdString()},
                                                         {"encoder", "PP-OCRv4 rec (ch_PP-OCRv4_rec_infer.onnx), transpose_51"}});
                    !st)
                    return fail(kInternal, st.message());
                if (json) printJson({{"event", "features"}, {"page", pageNo}, {"file", QString::fromStdString(file.string())},
                                     {"lines", int(page->lines.size())}});
                else spdlog::info("{} page {}: {} lines → {}", input, i + 1, page->lines.size(), file.string());
            }
        }
    }
    return kOk;
}

}  // namespace quire::cli
