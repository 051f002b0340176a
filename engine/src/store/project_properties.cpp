// Project properties as meta rows (keys title, author, language).
#include "quire/store/project_properties.h"

#include <map>
#include <sstream>

namespace quire {

Result<ProjectProperties> loadProperties(ProjectStore& store) {
    ProjectProperties p;
    for (auto [key, field] : {std::pair{"title", &p.title}, {"author", &p.author}, {"language", &p.language}}) {
        auto v = store.meta(key);
        if (!v) return v.status();
        *field = *v;
    }
    return p;
}

Status saveProperties(ProjectStore& store, const ProjectProperties& p) {
    for (auto [key, value] : {std::pair{"title", &p.title}, {"author", &p.author}, {"language", &p.language}})
        if (Status s = store.setMeta(key, *value); !s) return s;
    return Status::ok();
}

std::string languageTagOf(const std::string& tesseractLanguages) {
    static const std::map<std::string, std::string> kTags = {
        {"eng", "en"}, {"deu", "de"},      {"frk", "de"},      {"fra", "fr"}, {"spa", "es"}, {"ita", "it"},
        {"nld", "nl"}, {"por", "pt"},      {"lat", "la"},      {"rus", "ru"}, {"pol", "pl"}, {"swe", "sv"},
        {"dan", "da"}, {"chi_sim", "zh-Hans"}, {"chi_tra", "zh-Hant"}, {"jpn", "ja"}, {"kor", "ko"}};
    std::stringstream in(tesseractLanguages);
    for (std::string code; std::getline(in, code, '+');)
        if (auto it = kTags.find(code); it != kTags.end()) return it->second;
    return "";
}

}  // namespace quire
