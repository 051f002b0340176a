// Page versions from the results and corrections tables.
#include "quire/store/page_history.h"

namespace quire {

Result<std::vector<PageVersion>> pageVersions(ProjectStore& store, int64_t pageId) {
    std::vector<PageVersion> out;
    auto engine = store.engineText(pageId);
    if (!engine) return engine.status();
    auto layout = store.layout(pageId);
    if (!layout) return layout.status();
    std::string who = layout->engine.empty() ? std::string() : " (" + layout->engine + " " + layout->engineVersion + ")";
    out.push_back({0, 0, "engine reading" + who, "", *engine});
    auto corrections = store.corrections(pageId);
    if (!corrections) return corrections.status();
    for (auto& c : *corrections) out.push_back({int(out.size()), c.id, "correction", c.createdAt, std::move(c.text)});
    return out;
}

Result<int64_t> revertPage(ProjectStore& store, int64_t pageId, int number) {
    auto versions = pageVersions(store, pageId);
    if (!versions) return versions.status();
    if (number < 0 || number >= int(versions->size()))
        return Status(ErrorCode::InvalidArgument, "the page has versions 0 to " + std::to_string(versions->size() - 1) +
                                                      ", not " + std::to_string(number));
    return store.addCorrection(pageId, (*versions)[size_t(number)].text);
}

}  // namespace quire
