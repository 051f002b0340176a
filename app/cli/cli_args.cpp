// quire-cli's argument parser: commands, --options with values, flags and positionals.
#include "cli_args.h"

namespace quire::cli {

bool Args::parse(int argc, char** argv, int first, const std::set<std::string>& valued,
                 const std::set<std::string>& flags, std::string* error) {
    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") {
            for (++i; i < argc; ++i) m_positionals.emplace_back(argv[i]);
            break;
        }
        if (a.rfind("--", 0) != 0 || a.size() == 2) {
            m_positionals.push_back(a);
            continue;
        }
        std::string key = a.substr(2), val;
        const auto eq = key.find('=');
        const bool inlineValue = eq != std::string::npos;
        if (inlineValue) val = key.substr(eq + 1), key = key.substr(0, eq);
        if (valued.count(key)) {
            if (!inlineValue) {
                if (i + 1 >= argc) {
                    *error = "option --" + key + " needs a value";
                    return false;
                }
                val = argv[++i];
            }
            m_values[key] = val;
        } else if (flags.count(key) && !inlineValue) {
            m_flags.insert(key);
        } else {
            *error = "unknown option --" + key;
            return false;
        }
    }
    return true;
}

std::optional<std::string> Args::value(const std::string& key) const {
    auto it = m_values.find(key);
    if (it == m_values.end()) return std::nullopt;
    return it->second;
}

std::string Args::value(const std::string& key, const std::string& fallback) const {
    auto v = value(key);
    return v ? *v : fallback;
}

}  // namespace quire::cli
