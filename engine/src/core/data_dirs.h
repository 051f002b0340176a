// Where the engine looks for installed data (model files), one rule for every kind.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace quire {

// The folders to look in for `quire/<sub>`, in order: `explicitDir` alone if given (an explicit
// setting is the only place looked in: a wrong one is reported, not bypassed), else under
// $XDG_DATA_HOME (or ~/.local/share, the platform's convention), /usr/local/share and /usr/share,
// then `lastResort`.
inline std::vector<std::filesystem::path> dataDirCandidates(const std::string& explicitDir, const std::string& sub,
                                                            std::vector<std::filesystem::path> lastResort = {}) {
    namespace fs = std::filesystem;
    if (!explicitDir.empty()) return {fs::path(explicitDir)};
    std::vector<fs::path> dirs;
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
        dirs.push_back(fs::path(xdg) / "quire" / sub);
    else if (const char* home = std::getenv("HOME"); home && *home)
        dirs.push_back(fs::path(home) / ".local/share/quire" / sub);
    dirs.push_back(fs::path("/usr/local/share/quire") / sub);
    dirs.push_back(fs::path("/usr/share/quire") / sub);
    dirs.insert(dirs.end(), lastResort.begin(), lastResort.end());
    return dirs;
}

}  // namespace quire
