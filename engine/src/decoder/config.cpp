// A decoder model's config.json: reading, validating and writing it (docs/MODEL_FORMAT.md).
#include "quire/decoder/config.h"

#include <cmath>
#include <tuple>

#include <QFile>
#include <QJsonDocument>
#include <QJsonArray>
#include <QJsonObject>

namespace quire::decoder {

Result<ModelConfig> ModelConfig::fromJson(const std::string& json, const std::string& where) {
    QJsonParseError err{};
    const auto doc = QJsonDocument::fromJson(QByteArray::fromStdString(json), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return Status(ErrorCode::Corrupt, where + ": not a JSON object (" + err.errorString().toStdString() + ")");
    const QJsonObject o = doc.object();
    ModelConfig c;
    auto integer = [&](const char* key, int& out, bool required) -> Status {
        if (!o.contains(key)) return required ? Status(ErrorCode::Corrupt, where + ": '" + key + "' is missing") : Status::ok();
        const double v = o.value(key).toDouble(-1);
        if (v < 0 || v > 1e9 || v != std::floor(v)) return Status(ErrorCode::Corrupt, where + ": '" + key + "' must be a non-negative integer");
        out = int(v);
        return Status::ok();
    };
    for (auto [key, field] : std::initializer_list<std::pair<const char*, int*>>{
             {"vocab_size", &c.vocabSize}, {"hidden_size", &c.hiddenSize}, {"num_layers", &c.numLayers},
             {"num_heads", &c.numHeads}, {"num_kv_heads", &c.numKvHeads}, {"head_dim", &c.headDim},
             {"intermediate_size", &c.intermediateSize}, {"visual_dim", &c.visualDim}})
        if (Status s = integer(key, *field, true); !s) return s;
    for (auto [key, field] : std::initializer_list<std::pair<const char*, int*>>{
             {"max_position_embeddings", &c.maxPositions}, {"bos_token_id", &c.bosTokenId},
             {"eos_token_id", &c.eosTokenId}, {"page_break_token_id", &c.pageBreakTokenId},
             {"visual_evidence_ids", &c.visualEvidenceIds}, {"front_end_line_batch", &c.frontEndLineBatch}})
        if (Status s = integer(key, *field, false); !s) return s;
    c.rmsNormEps = float(o.value("rms_norm_eps").toDouble(c.rmsNormEps));
    c.ropeTheta = o.value("rope_theta").toDouble(c.ropeTheta);
    c.tieWordEmbeddings = o.value("tie_word_embeddings").toBool(c.tieWordEmbeddings);
    c.visualTokenIds = o.value("visual_token_ids").toBool(c.visualTokenIds);
    c.pageAlignedPositions = o.value("page_aligned_positions").toBool(c.pageAlignedPositions);
    if (o.contains("line_end_token_ids")) {
        if (!o.value("line_end_token_ids").isArray())
            return Status(ErrorCode::Corrupt, where + ": 'line_end_token_ids' must be a list of token ids");
        for (const QJsonValue& v : o.value("line_end_token_ids").toArray()) {
            const double id = v.toDouble(-1);
            if (id < 0 || id > 1e9 || id != std::floor(id))
                return Status(ErrorCode::Corrupt, where + ": 'line_end_token_ids' must be a list of token ids");
            c.lineEndTokenIds.push_back(int(id));
        }
    }
    if (o.contains("visual_line_end_token_id") && o.value("visual_line_end_token_id").toDouble(-1) >= 0)
        if (Status s = integer("visual_line_end_token_id", c.visualLineEndTokenId, false); !s) return s;
    if (o.contains("srswa")) {
        if (!o.value("srswa").isObject()) return Status(ErrorCode::Corrupt, where + ": 'srswa' must be an object");
        const QJsonObject a = o.value("srswa").toObject();
        TrainedPattern t;
        for (auto [key, field, most] : std::initializer_list<std::tuple<const char*, int*, int>>{
                 {"window_before", &t.windowBefore, 8}, {"window_after", &t.windowAfter, 8},
                 {"gated_pages", &t.gatedPages, 64}, {"blocks_per_gated_page", &t.blocksPerGatedPage, 1024},
                 {"gate_refresh_steps", &t.gateRefreshSteps, 4096}, {"gate_query_tokens", &t.gateQueryTokens, 4096},
                 {"recent", &t.recentTokens, 1 << 20}}) {
            if (!a.contains(key)) continue;
            const double v = a.value(key).toDouble(-1);
            if (v < 0 || v > most || v != std::floor(v))
                return Status(ErrorCode::Corrupt, where + ": 'srswa." + key + "' must be a whole number from 0 to " +
                                                      std::to_string(most));
            *field = int(v);
        }
        if (t.gateRefreshSteps < 1 || t.recentTokens < 1)
            return Status(ErrorCode::Corrupt, where + ": 'srswa.gate_refresh_steps' and 'srswa.recent' must be at least 1");
        const double hold = a.value("gate_hold").toDouble(t.gateHold);
        if (!(hold >= 0 && hold <= 100)) return Status(ErrorCode::Corrupt, where + ": 'srswa.gate_hold' must lie in 0..100");
        t.gateHold = float(hold);
        c.srswa = t;
    }
    if (Status s = c.validate(where); !s) return s;
    return c;
}

Status ModelConfig::validate(const std::string& where) const {
    auto bad = [&](const std::string& why) { return Status(ErrorCode::Corrupt, where + ": " + why); };
    if (vocabSize < 4 || hiddenSize < 1 || numLayers < 1 || numHeads < 1 || numKvHeads < 1 || headDim < 2 ||
        intermediateSize < 1 || visualDim < 1)
        return bad("sizes must be positive (vocab at least 4)");
    if (numHeads % numKvHeads) return bad("num_heads must be a multiple of num_kv_heads");
    if (headDim % 2) return bad("head_dim must be even for rotary positions");
    if (maxPositions < 16) return bad("max_position_embeddings is too small");
    for (int id : {bosTokenId, eosTokenId, pageBreakTokenId})
        if (id < 0 || id >= vocabSize) return bad("special token ids must lie inside the vocabulary");
    if (lineAlignedPositions()) {
        if (!pageAlignedPositions || !visualTokenIds)
            return bad("line_end_token_ids needs page_aligned_positions and visual_token_ids");
        if (visualLineEndTokenId < 0 || visualLineEndTokenId >= vocabSize)
            return bad("line_end_token_ids needs visual_line_end_token_id inside the vocabulary");
        for (int id : lineEndTokenIds)
            if (id < 0 || id >= vocabSize || id == pageBreakTokenId) return bad("line_end_token_ids must be vocabulary ids other than the page break");
    }
    if (!(ropeTheta > 1) || !(rmsNormEps > 0)) return bad("rope_theta and rms_norm_eps must be positive");
    if (visualEvidenceIds < 0 || visualEvidenceIds > 8) return bad("visual_evidence_ids must lie in 0..8");
    if (visualEvidenceIds && !visualTokenIds) return bad("visual_evidence_ids needs visual_token_ids");
    if (frontEndLineBatch < 1 || frontEndLineBatch > 64) return bad("front_end_line_batch must lie in 1..64");
    return Status::ok();
}

Result<ModelConfig> ModelConfig::load(const std::filesystem::path& file) {
    QFile f(QString::fromStdString(file.string()));
    if (!f.open(QIODevice::ReadOnly)) return Status(ErrorCode::NotFound, file.string() + ": cannot read the model config");
    return fromJson(f.readAll().toStdString(), file.string());
}

std::string ModelConfig::toJson() const {
    QJsonObject o{{"model_type", "quire-srswa-decoder"}, {"vocab_size", vocabSize}, {"hidden_size", hiddenSize},
                  {"num_layers", numLayers}, {"num_heads", numHeads}, {"num_kv_heads", numKvHeads},
                  {"head_dim", headDim}, {"intermediate_size", intermediateSize}, {"visual_dim", visualDim},
                  {"rms_norm_eps", double(rmsNormEps)}, {"rope_theta", ropeTheta},
                  {"max_position_embeddings", maxPositions}, {"tie_word_embeddings", tieWordEmbeddings},
                  {"bos_token_id", bosTokenId}, {"eos_token_id", eosTokenId}, {"page_break_token_id", pageBreakTokenId},
                  {"visual_token_ids", visualTokenIds}, {"page_aligned_positions", pageAlignedPositions}};
    if (lineAlignedPositions()) {
        QJsonArray ids;
        for (int id : lineEndTokenIds) ids.append(id);
        o.insert("line_end_token_ids", ids);
        o.insert("visual_line_end_token_id", visualLineEndTokenId);
    }
    if (visualEvidenceIds) o.insert("visual_evidence_ids", visualEvidenceIds);
    if (frontEndLineBatch != 8) o.insert("front_end_line_batch", frontEndLineBatch);  // absent: 8
    if (srswa)
        o.insert("srswa", QJsonObject{{"window_before", srswa->windowBefore}, {"window_after", srswa->windowAfter},
                                      {"gated_pages", srswa->gatedPages}, {"blocks_per_gated_page", srswa->blocksPerGatedPage},
                                      {"gate_refresh_steps", srswa->gateRefreshSteps},
                                      {"gate_query_tokens", srswa->gateQueryTokens}, {"gate_hold", double(srswa->gateHold)},
                                      {"recent", srswa->recentTokens}});
    return QJsonDocument(o).toJson(QJsonDocument::Indented).toStdString();
}

}  // namespace quire::decoder
