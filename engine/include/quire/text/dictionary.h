// The spelling dictionaries of a book's languages (hunspell, as Debian installs them) and the
// words the project added: used by the editor to underline and suggest, and by the exporters to
// decide whether a word hyphenated at a line end is one word.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

class Hunspell;

namespace quire {

class Dictionary {
public:
    Dictionary();
    ~Dictionary();
    Dictionary(Dictionary&&) noexcept;
    Dictionary& operator=(Dictionary&&) noexcept;

    // The installed dictionaries of the Tesseract languages ("eng+deu"), searched in `dir`:
    // English has American and British spelling both (en_US, en_GB), German Fraktur (frk) de_DE.
    static Dictionary forLanguages(const std::string& tesseractLanguages,
                                   const std::filesystem::path& dir = "/usr/share/hunspell");
    // The hunspell names of the dictionaries for a language code, installed or not.
    static std::vector<std::string> variantsOf(const std::string& tesseractLanguage);

    bool available() const { return !m_spellers.empty(); }
    const std::vector<std::string>& loaded() const { return m_names; }  // e.g. {"en_US", "en_GB"}
    // Some dictionary, or the project's own words, knows the word (UTF-8). Without a dictionary,
    // only the project's words are known.
    bool knows(const std::string& word) const;
    // Corrections hunspell offers, best first, without duplicates across dictionaries.
    std::vector<std::string> suggestions(const std::string& word, int max = 8) const;
    // A word the project knows (a name, an old spelling); the store keeps the list.
    void addWord(const std::string& word);
    const std::set<std::string>& addedWords() const { return m_added; }

private:
    struct Speller;
    std::vector<std::unique_ptr<Speller>> m_spellers;
    std::vector<std::string> m_names;
    std::set<std::string> m_added;
};

}  // namespace quire
