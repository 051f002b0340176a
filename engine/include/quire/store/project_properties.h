// What a catalogue needs to know of the book: title, author and language, kept in the project and
// written into the exports' metadata (DOCX core properties, PDF document information, hOCR).
#pragma once

#include <string>

#include "quire/core/status.h"
#include "quire/store/project_store.h"

namespace quire {

struct ProjectProperties {
    std::string title;     // empty: the project file's name
    std::string author;
    std::string language;  // BCP 47 ("en", "de", "zh-Hans"); empty: from the languages it was read in
};

Result<ProjectProperties> loadProperties(ProjectStore& store);
Status saveProperties(ProjectStore& store, const ProjectProperties& properties);

// The BCP 47 tag of Tesseract's language codes ("eng+deu" -> "en"): the first one known, else "".
std::string languageTagOf(const std::string& tesseractLanguages);

}  // namespace quire
