// What the reader engines of one process share to decode as one batch (quire-server's concurrent
// jobs, issue #31): each model folder loaded once while engines use it (sessions batch only on one
// model; the front-end is shared already, PpocrEngine::load), the StepBatcher that computes
// their drafts together — each decoder weight read once a pass for all the volumes — and, for
// engines decoding on a GPU, one SharedDevice per model on which their steps run as one device
// batch. Engines given the same ReaderSharing (ReaderOptions::sharing) join its batch while they
// decode a page; each volume keeps its own session, context and pace, and its text is what it
// would be alone.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "quire/core/status.h"
#include "quire/decoder/model.h"
#include "quire/decoder/session.h"
#include "quire/decoder/step_batcher.h"

namespace quire {

class ReaderSharing {
public:
    explicit ReaderSharing(std::chrono::microseconds gather = std::chrono::microseconds(2000)) : m_batcher(gather) {}

    decoder::StepBatcher& batcher() { return m_batcher; }

    // The decoder model in `dir` (a folder findReaderModel() returned), loaded on first use and
    // kept while an engine holds it.
    Result<std::shared_ptr<const decoder::ModelWeights>> model(const std::string& dir);
    // The shared device of `device`'s kind for `model`, opened on first use (weights as bf16 or
    // not, at most `memoryLimit` bytes, 0: all it has) and kept while an engine's sessions use it;
    // the device's reason where it cannot be opened (no GPU).
    Result<std::shared_ptr<decoder::SharedDevice>> device(const std::shared_ptr<const decoder::ModelWeights>& model,
                                                          decoder::StepDevice device, bool bf16, size_t memoryLimit);

private:
    std::mutex m_mutex;
    std::map<std::string, std::weak_ptr<const decoder::ModelWeights>> m_models;
    std::map<std::pair<const decoder::ModelWeights*, decoder::StepDevice>, std::weak_ptr<decoder::SharedDevice>> m_devices;
    decoder::StepBatcher m_batcher;
};

}  // namespace quire
