// What the reader engines of one process share to decode as one batch (quire-server's concurrent
// jobs, issue #31): each model folder loaded once while engines use it (sessions batch only on one
// model; the front-end is shared already, PpocrEngine::load), and the StepBatcher that computes
// their drafts together — each decoder weight read once a pass for all the volumes. Engines given
// the same ReaderSharing (ReaderOptions::sharing) join its batch while they decode a page; each
// volume keeps its own session, context and pace, and its text is what it would be alone.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "quire/core/status.h"
#include "quire/decoder/model.h"
#include "quire/decoder/step_batcher.h"

namespace quire {

class ReaderSharing {
public:
    explicit ReaderSharing(std::chrono::microseconds gather = std::chrono::microseconds(2000)) : m_batcher(gather) {}

    decoder::StepBatcher& batcher() { return m_batcher; }

    // The decoder model in `dir` (a folder findReaderModel() returned), loaded on first use and
    // kept while an engine holds it.
    Result<std::shared_ptr<const decoder::ModelWeights>> model(const std::string& dir);

private:
    std::mutex m_mutex;
    std::map<std::string, std::weak_ptr<const decoder::ModelWeights>> m_models;
    decoder::StepBatcher m_batcher;
};

}  // namespace quire
