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

}  // namespace quire
