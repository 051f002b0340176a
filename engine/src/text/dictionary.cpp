// Hunspell behind one interface; words cross in UTF-8 and are converted to a dictionary's own
// encoding (Debian's are UTF-8 or ISO 8859-1).
#include "quire/text/dictionary.h"

#include <QString>
#include <QStringList>

#include <hunspell/hunspell.hxx>

#include <algorithm>
#include <map>

namespace quire {

struct Dictionary::Speller {
    std::unique_ptr<Hunspell> hunspell;
    bool latin1 = false;
    std::string encode(const std::string& utf8) const {
        return latin1 ? QString::fromStdString(utf8).toLatin1().toStdString() : utf8;
    }
    std::string decode(const std::string& s) const { return latin1 ? QString::fromLatin1(s.c_str()).toStdString() : s; }
};

Dictionary::Dictionary() = default;
Dictionary::~Dictionary() = default;
Dictionary::Dictionary(Dictionary&&) noexcept = default;
Dictionary& Dictionary::operator=(Dictionary&&) noexcept = default;

std::vector<std::string> Dictionary::variantsOf(const std::string& lang) {
    static const std::map<std::string, std::vector<std::string>> kVariants = {
        {"eng", {"en_US", "en_GB"}}, {"deu", {"de_DE", "de_AT", "de_CH"}}, {"frk", {"de_DE"}},
        {"fra", {"fr_FR", "fr"}},    {"spa", {"es_ES", "es"}},             {"ita", {"it_IT"}},
        {"nld", {"nl"}},             {"por", {"pt_PT", "pt_BR"}},          {"lat", {"la"}}};
    auto it = kVariants.find(lang);
    return it == kVariants.end() ? std::vector<std::string>() : it->second;
}

Dictionary Dictionary::forLanguages(const std::string& languages, const std::filesystem::path& dir) {
    Dictionary d;
    const QStringList langs = QString::fromStdString(languages).split('+', Qt::SkipEmptyParts);
    for (const QString& lang : langs)
        for (const std::string& name : variantsOf(lang.toStdString())) {
            const auto aff = dir / (name + ".aff"), dic = dir / (name + ".dic");
            std::error_code ec;
            if (!std::filesystem::exists(aff, ec) || !std::filesystem::exists(dic, ec)) continue;
            if (std::find(d.m_names.begin(), d.m_names.end(), name) != d.m_names.end()) continue;
            auto s = std::make_unique<Speller>();
            s->hunspell = std::make_unique<Hunspell>(aff.c_str(), dic.c_str());
            const std::string enc = s->hunspell->get_dict_encoding();
            s->latin1 = enc == "ISO8859-1" || enc == "ISO-8859-1";
            d.m_spellers.push_back(std::move(s));
            d.m_names.push_back(name);
        }
    return d;
}

bool Dictionary::knows(const std::string& word) const {
    if (word.empty()) return false;
    if (m_added.count(word)) return true;
    for (const auto& s : m_spellers)
        if (s->hunspell->spell(s->encode(word))) return true;
    return false;
}

std::vector<std::string> Dictionary::suggestions(const std::string& word, int max) const {
    std::vector<std::string> out;
    for (const auto& s : m_spellers)
        for (const std::string& c : s->hunspell->suggest(s->encode(word))) {
            std::string u = s->decode(c);
            if (std::find(out.begin(), out.end(), u) == out.end()) out.push_back(std::move(u));
            if (int(out.size()) >= max) return out;
        }
    return out;
}

void Dictionary::addWord(const std::string& word) {
    if (!word.empty()) m_added.insert(word);
}

}  // namespace quire
