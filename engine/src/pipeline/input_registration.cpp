// registerInputs: a run's input files added to the project as documents and pages, or queued
// again where a file changed on disk since it was added.
#include "quire/pipeline/transcriber.h"

namespace quire {

Status registerInputs(ProjectStore& store, const TranscribeParams& params) {
    for (const auto& input : params.inputs) {
        auto src = openSource(input, params.source);
        if (!src) return src.status();
        const std::string abs = canonicalPath(input);
        auto hash = (*src)->contentSha256();
        if (!hash) return hash.status();
        std::vector<std::pair<std::string, int>> files;
        for (int i = 0; i < (*src)->pageCount(); ++i)
            files.emplace_back(canonicalPath((*src)->pageFile(i)), (*src)->pageIndexInFile(i));
        auto existing = store.findDocument(abs);
        if (!existing) return existing.status();
        if (!existing->has_value()) {
            DocumentRecord doc;
            doc.path = abs;
            doc.kind = sourceKindName((*src)->kind());
            doc.sha256 = *hash;
            doc.sizeBytes = (*src)->sizeBytes();
            if (auto id = store.addDocument(doc, files); !id) return id.status();
        } else if ((*existing)->sha256 != *hash) {
            if (params.onLog)
                params.onLog(abs + ": the file changed on disk since it was added; its pages are queued again "
                                   "(corrections made so far are kept)");
            if (Status s = store.requeueDocument((*existing)->id, *hash, (*src)->sizeBytes(), files); !s) return s;
        }
    }
    return Status::ok();
}

}  // namespace quire
