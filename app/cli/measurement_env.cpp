// The measurement variables (QUIRE_*) parsed onto the engine's options; see measurement_env.h.
#include "measurement_env.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "quire/nn/onnx_graph.h"

namespace quire::cli {
namespace {

const char* variable(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

Status malformed(const char* name, const std::string& takes, const char* got) {
    return Status(ErrorCode::InvalidArgument, std::string(name) + ": expected " + takes + ", got \"" + got + "\"");
}

// A prior in nats, 0-100, from the variable `name` (its value `v`).
Status readNats(const char* name, const char* v, float& out) {
    char* end = nullptr;
    const float nats = std::strtof(v, &end);
    if (*end != '\0' || !(nats >= 0.f && nats <= 100.f)) return malformed(name, "nats, 0-100", v);
    out = nats;
    return Status::ok();
}

// A whole number in [lo, hi] from the variable `name` (its value `v`); `unit` names what it counts.
Status readInteger(const char* name, const char* v, long lo, long hi, const char* unit, int& out) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < lo || n > hi)
        return malformed(name, std::string(unit) + ", " + std::to_string(lo) + "-" + std::to_string(hi), v);
    out = int(n);
    return Status::ok();
}

// A switch, 0 or 1, from the variable `name` (its value `v`).
Status readSwitch(const char* name, const char* v, bool& out) {
    if (std::string(v) != "0" && std::string(v) != "1") return malformed(name, "0 or 1", v);
    out = *v == '1';
    return Status::ok();
}

// "1,0,1": `n` switches, each 0 or 1, comma-separated; empty where `v` is not that.
std::vector<bool> switches(const std::string& v, size_t n) {
    std::vector<bool> on;
    for (size_t i = 0; i < v.size(); i += 2) {
        if ((v[i] != '0' && v[i] != '1') || (i + 1 < v.size() && v[i + 1] != ',')) return {};
        on.push_back(v[i] == '1');
    }
    return on.size() == n && v.size() == 2 * n - 1 ? on : std::vector<bool>{};
}

}  // namespace

void applyModelLocations(RecognizerOptions& o) {
    if (const char* v = variable("QUIRE_PPOCR_DIR"); v && o.ppocrDir.empty()) o.ppocrDir = v;
    if (const char* v = variable("QUIRE_READER_MODEL"); v && o.readerModel.empty()) o.readerModel = v;
}

Status applyMeasurementEnvironment(RecognizerOptions& o) {
    if (const char* v = variable("QUIRE_PPOCR_DET_MAX_SIDE"))
        if (Status s = readInteger("QUIRE_PPOCR_DET_MAX_SIDE", v, 320, 4096, "pixels", o.ppocrDetMaxSide); !s) return s;
    if (const char* v = variable("QUIRE_PPOCR_REC_BATCH"))
        if (Status s = readInteger("QUIRE_PPOCR_REC_BATCH", v, 1, 64, "lines", o.ppocrRecBatch); !s) return s;
    if (const char* v = variable("QUIRE_PPOCR_LAYOUT")) {
        if (std::string(v) != "tesseract" && std::string(v) != "rows") return malformed("QUIRE_PPOCR_LAYOUT", "tesseract or rows", v);
        o.ppocrLayout = v;
    }
    if (const char* v = variable("QUIRE_PPOCR_SCORE")) {
        if (std::string(v) != "contour" && std::string(v) != "box") return malformed("QUIRE_PPOCR_SCORE", "contour or box", v);
        o.ppocrContourScore = std::string(v) == "contour";
    }
    ReaderTuning& t = o.readerTuning;
    if (const char* v = variable("QUIRE_READER_DRAFT")) t.draft = std::string(v) != "0";
    if (const char* v = variable("QUIRE_READER_PRIOR"))
        if (Status s = readNats("QUIRE_READER_PRIOR", v, t.prior); !s) return s;
    if (const char* v = variable("QUIRE_READER_EVIDENCE"))
        if (Status s = readNats("QUIRE_READER_EVIDENCE", v, t.evidencePrior); !s) return s;
    if (const char* v = variable("QUIRE_READER_WINDOW")) {
        // "B,G[,A]": pages before the current one in the window, gated pages, pages after it.
        char* end = nullptr;
        const long before = std::strtol(v, &end, 10);
        const long gated = *end == ',' ? std::strtol(end + 1, &end, 10) : -1;
        const bool hasAfter = *end == ',';
        const long after = hasAfter ? std::strtol(end + 1, &end, 10) : -1;
        if (*end != '\0' || before < 0 || before > 8 || gated < 0 || gated > 16 || (hasAfter && (after < 0 || after > 8)))
            return malformed("QUIRE_READER_WINDOW",
                             "B,G[,A] (pages before the current one, 0-8; gated pages, 0-16; pages after it, 0-8)", v);
        t.windowBefore = int(before), t.gatedPages = int(gated), t.windowAfter = int(after);
    }
    if (const char* v = variable("QUIRE_READER_RARE")) {
        // "BELOW,NATS": the count under which a character is rare, and its prior.
        char* end = nullptr;
        const long below = std::strtol(v, &end, 10);
        const float nats = *end == ',' ? std::strtof(end + 1, &end) : -1.f;
        if (*end != '\0' || below < 0 || below > 1000000 || !(nats >= 0.f && nats <= 100.f))
            return malformed("QUIRE_READER_RARE", "BELOW,NATS (a count, 0-1000000; nats, 0-100)", v);
        t.rareBelow = int(below), t.rarePrior = nats;
    }
    if (const char* v = variable("QUIRE_READER_PRINTED")) {
        // "S,D": the spacing and dash rules on (1) or off (0).
        const auto on = switches(v, 2);
        if (on.empty()) return malformed("QUIRE_READER_PRINTED", "S,D (each 0 or 1: the spacing and dash rules)", v);
        t.spacingRule = on[0], t.dashRule = on[1];
    }
    if (const char* v = variable("QUIRE_READER_STATS")) t.printStats = std::string(v) == "1";
    if (const char* v = variable("QUIRE_READER_LINES")) {
        // "E,H,J": the line-end, hyphen and line-join rules on (1) or off (0).
        const auto on = switches(v, 3);
        if (on.empty()) return malformed("QUIRE_READER_LINES", "E,H,J (each 0 or 1: the line-end, hyphen and line-join rules)", v);
        t.lineEndRule = on[0], t.hyphenRule = on[1], t.joinRule = on[2];
    }
    if (const char* v = variable("QUIRE_READER_LAYOUT_PARAGRAPHS"))
        if (Status s = readSwitch("QUIRE_READER_LAYOUT_PARAGRAPHS", v, t.layoutParagraphs); !s) return s;
    if (const char* v = variable("QUIRE_READER_PAGE_HYPHEN"))
        if (Status s = readSwitch("QUIRE_READER_PAGE_HYPHEN", v, t.pageEndHyphen); !s) return s;
    if (const char* v = variable("QUIRE_READER_LANGUAGE_LETTERS"))
        if (Status s = readSwitch("QUIRE_READER_LANGUAGE_LETTERS", v, t.languageLetters); !s) return s;
    if (const char* v = variable("QUIRE_READER_SKIP_RULE"))
        if (Status s = readSwitch("QUIRE_READER_SKIP_RULE", v, t.skipRule); !s) return s;
    if (const char* v = variable("QUIRE_READER_WHOLE_PAGE"))
        if (Status s = readSwitch("QUIRE_READER_WHOLE_PAGE", v, t.wholePageRule); !s) return s;
    if (const char* v = variable("QUIRE_READER_TYPESET_PARAGRAPHS"))
        if (Status s = readSwitch("QUIRE_READER_TYPESET_PARAGRAPHS", v, t.typesetParagraphs); !s) return s;
    if (const char* v = variable("QUIRE_READER_CONTEXT")) {
        // "volume" (the default: one context across the pages) or "page" (a fresh one at every page).
        if (std::string(v) != "volume" && std::string(v) != "page") return malformed("QUIRE_READER_CONTEXT", "volume or page", v);
        t.contextPerPage = std::string(v) == "page";
    }
    return Status::ok();
}

Status applyPreprocessEnvironment(PreprocessParams& p) {
    if (const char* v = variable("QUIRE_UNEVEN_LIGHT")) {
        // The paper's brightness spread above which a page is flattened (kUnevenLight).
        char* end = nullptr;
        const double share = std::strtod(v, &end);
        if (*end != '\0' || !(share >= 0.0 && share <= 1.0)) return malformed("QUIRE_UNEVEN_LIGHT", "a share, 0-1", v);
        p.unevenLight = share;
    }
    return Status::ok();
}

Status applyMeasurementEnvironment(TranscribeParams& p) {
    if (Status s = applyMeasurementEnvironment(p.recognizer); !s) return s;
    if (const char* v = variable("QUIRE_READER_PREPARERS")) {
        if (std::string(v) != "1" && std::string(v) != "2") return malformed("QUIRE_READER_PREPARERS", "1 or 2", v);
        p.preparers = *v - '0';
    }
    if (const char* v = variable("QUIRE_READER_PIPELINE"); v && std::string(v) == "0") p.preparers = 0;
    if (const char* v = variable("QUIRE_REPAIR_LIGATURES"))
        if (Status s = readSwitch("QUIRE_REPAIR_LIGATURES", v, p.repairLigatures); !s) return s;
    return Status::ok();
}

void applyProfilingEnvironment() {
    if (const char* v = variable("QUIRE_NN_PROFILE"); v && std::string(v) != "0") nn::setOperatorProfiling(true);
}

}  // namespace quire::cli
