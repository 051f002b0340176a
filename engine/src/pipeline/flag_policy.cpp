// Why a page is flagged for proofreading: its words' confidences, ink without words, or type
// that the run's engine and languages do not read.
#include "quire/pipeline/transcriber.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "quire/preprocess/orientation.h"

namespace quire {

std::string FlagPolicy::reason(const PageText& text, double inkShare) const {
    if (text.wordCount() == 0) return inkShare > 0.01 ? "ink on the page but no words read" : "";
    std::string why;
    if (const double mean = text.meanConfidence(); mean < meanBelow)
        why = "mean word confidence " + std::to_string(int(mean)) + " is below " + std::to_string(int(meanBelow));
    if (const double share = text.lowConfidenceShare(lowWordConfidence); share > lowShareAbove)
        why += (why.empty() ? "" : "; ") + std::to_string(int(std::lround(share * 100))) + "% of words are below confidence " +
               std::to_string(int(lowWordConfidence)) + " (more than " + std::to_string(int(std::lround(lowShareAbove * 100))) + "%)";
    return why;
}

std::string scriptDoubt(const std::string& script, double confidence, const std::string& engine,
                        const std::string& languages) {
    if (script != "Fraktur" || confidence < kScriptConfidence) return {};
    bool fraktur = false;
    std::stringstream codes(languages);
    for (std::string code; std::getline(codes, code, '+');)
        fraktur |= code == "frk" || code == "deu_latf" || code == "script/Fraktur" || code == "Fraktur";
    const bool tesseract = engine == "tesseract" || engine == "auto";  // auto reads Latin scripts with Tesseract
    if (tesseract && fraktur) return {};
    char conf[16];
    std::snprintf(conf, sizeof conf, "%.1f", confidence);
    return std::string("the type looks like Fraktur (script confidence ") + conf + "), which " +
           (tesseract ? "the languages " + languages + " do not read"
                                  : engine + " does not read") +
           "; read it again with Tesseract and German (Fraktur), frk";
}

}  // namespace quire
