// ReaderSharing: each model loaded once for the engines of a batch.
#include "quire/reader/reader_sharing.h"

namespace quire {

Result<std::shared_ptr<const decoder::ModelWeights>> ReaderSharing::model(const std::string& dir) {
    std::lock_guard lock(m_mutex);
    if (auto held = m_models[dir].lock()) return held;
    auto loaded = decoder::loadModel(dir);
    if (!loaded) return loaded.status();
    std::shared_ptr<const decoder::ModelWeights> m = std::move(loaded).value();
    m_models[dir] = m;
    return m;
}

Result<std::shared_ptr<decoder::SharedDevice>> ReaderSharing::device(const std::shared_ptr<const decoder::ModelWeights>& model,
                                                                     decoder::StepDevice device, bool bf16, size_t memoryLimit) {
    std::lock_guard lock(m_mutex);
    auto& held = m_devices[{model.get(), device}];
    if (auto d = held.lock()) return d;
    auto opened = decoder::SharedDevice::open(model, device, bf16, -1, memoryLimit);
    if (!opened) return opened.status();
    held = *opened;
    return opened;
}

}  // namespace quire
