// PDF sources: read in this process, or through the quire-render helper that is killed at its
// deadline (SourceOptions::pdfHelper). Both give the same pages, messages and pixels.
#pragma once

#include <filesystem>
#include <memory>

#include "quire/source/document_source.h"

namespace quire {

Result<std::unique_ptr<DocumentSource>> openPdf(const std::filesystem::path& path, const SourceOptions& options);

}  // namespace quire
