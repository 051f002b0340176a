// Minimal command-line parsing for quire-cli: "--key value", "--key=value", "--flag", positionals.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace quire::cli {

class Args {
public:
    // `valued` lists the options that take a value; everything else starting with "--" is a flag.
    bool parse(int argc, char** argv, int first, const std::set<std::string>& valued,
               const std::set<std::string>& flags, std::string* error);
    bool has(const std::string& key) const { return m_values.count(key) || m_flags.count(key); }
    std::optional<std::string> value(const std::string& key) const;
    std::string value(const std::string& key, const std::string& fallback) const;
    const std::vector<std::string>& positionals() const { return m_positionals; }

private:
    std::map<std::string, std::string> m_values;
    std::set<std::string> m_flags;
    std::vector<std::string> m_positionals;
};

}  // namespace quire::cli
