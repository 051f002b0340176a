// NoticeOnce: a recognizer's device notice for the run's log, given once each time it changes.
#pragma once

#include <string>

namespace quire {

// A device notice for the run's log (Recognizer::takeNotice): given once, when it changes.
class NoticeOnce {
public:
    std::string take(const std::string& notice, const char* engine) {
        if (notice.empty() || notice == m_reported) return {};
        m_reported = notice;
        return std::string(engine) + ": " + notice;
    }

private:
    std::string m_reported;
};

}  // namespace quire
