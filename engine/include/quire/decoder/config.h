// The decoder family's configuration (config.json beside the weights; docs/MODEL_FORMAT.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "quire/core/status.h"

namespace quire::decoder {

// The SR-SWA pattern a model was trained under (config.json's "srswa", written by tools/train from
// its training config, docs/MODEL_FORMAT.md): a reader runs the model with it, look-ahead included.
struct TrainedPattern {
    int windowBefore = 0, windowAfter = 0;  // pages before and after the current one in the window
    int gatedPages = 4, blocksPerGatedPage = 8, gateRefreshSteps = 8, gateQueryTokens = 16;
    float gateHold = 0.05f;
    int recentTokens = 128;
};

struct ModelConfig {
    int vocabSize = 0;
    int hiddenSize = 0;
    int numLayers = 0;
    int numHeads = 0;
    int numKvHeads = 0;
    int headDim = 0;
    int intermediateSize = 0;
    int visualDim = 0;  // width of the visual tokens entering the projector
    // Each visual token also carries a vocabulary id (a front-end's hypothesis for it), stored after
    // its visualDim features; its embedding is added to the projection.
    bool visualTokenIds = false;
    // With visualTokenIds: more ids after that one, a second recogniser's reading of the token (the
    // reader's Tesseract evidence, docs/MODEL_FORMAT.md), -1 where it has none; each id's embedding,
    // scaled by its row of the visual_evidence_gain tensor, is added to the projection too.
    int visualEvidenceIds = 0;
    // Positions (docs/DECODING.md): a page's visual tokens start at the next unused position and
    // the text generated after that page starts at the same position (trained that way).
    bool pageAlignedPositions = false;
    // Line-aligned positions (page-aligned, with visual token ids): the k-th of these tokens written
    // on a page sits just past the page's k-th visual token whose id is visualLineEndTokenId, where
    // the next line's visual tokens start; the tokens after it follow on from there.
    std::vector<int> lineEndTokenIds;
    int visualLineEndTokenId = -1;
    float rmsNormEps = 1e-5f;
    double ropeTheta = 10000.0;
    int maxPositions = 4096;  // the rotary range the model was trained on
    bool tieWordEmbeddings = true;
    int bosTokenId = 1, eosTokenId = 2, pageBreakTokenId = 3;
    std::optional<TrainedPattern> srswa;  // absent: trained without the runtime's SR-SWA (R-SWA masks)
    // Text lines per recognizer call of the front-end whose visual tokens the model was trained on:
    // the padding to a batch's widest line changes them (docs/MODEL_FORMAT.md). Absent from the
    // file: 8, the batch of every model before 2026-12-05 evening.
    int frontEndLineBatch = 8;

    static Result<ModelConfig> fromJson(const std::string& json, const std::string& where);
    static Result<ModelConfig> load(const std::filesystem::path& file);
    std::string toJson() const;
    Status validate(const std::string& where) const;
    // Floats per visual token: its features, then its id and evidence ids.
    int visualStride() const { return visualDim + (visualTokenIds ? 1 + visualEvidenceIds : 0); }
    bool lineAlignedPositions() const { return !lineEndTokenIds.empty(); }
    bool isLineEnd(int token) const {
        for (int t : lineEndTokenIds)
            if (t == token) return true;
        return false;
    }
    int groupSize() const { return numHeads / numKvHeads; }
    size_t kvBytesPerToken() const { return size_t(2) * numLayers * numKvHeads * headDim * sizeof(float); }
};

}  // namespace quire::decoder
