// What the GPU machine's check programs share: PASS/FAIL lines, flushed as they come (a run cut by
// its timeout still reports what it did), and the closing count.
#pragma once

#include <cstdio>
#include <string>

namespace quire::gpucheck {

inline int g_passed = 0, g_failed = 0;

inline void report(const std::string& name, bool ok, const std::string& detail) {
    if (ok) ++g_passed;
    else ++g_failed;
    std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
    std::fflush(stdout);
}

// Prints "N passed, M failed"; the program's exit status.
inline int summary() {
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}

}  // namespace quire::gpucheck
