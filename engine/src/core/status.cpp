// Error codes by name, and which of them mean bad input rather than an internal failure.
#include "quire/core/status.h"

namespace quire {

bool isInputError(ErrorCode code) {
    switch (code) {
        case ErrorCode::InvalidArgument:
        case ErrorCode::NotFound:
        case ErrorCode::Unreadable:
        case ErrorCode::UnsupportedFormat:
        case ErrorCode::Corrupt:
        case ErrorCode::TooLarge:
        case ErrorCode::Encrypted:
        case ErrorCode::Empty:
        case ErrorCode::NewerSchema:
        case ErrorCode::TimedOut:
            return true;
        default:
            return false;
    }
}

const char* errorCodeName(ErrorCode code) {
    switch (code) {
        case ErrorCode::Ok: return "ok";
        case ErrorCode::InvalidArgument: return "invalid-argument";
        case ErrorCode::NotFound: return "not-found";
        case ErrorCode::Unreadable: return "unreadable";
        case ErrorCode::UnsupportedFormat: return "unsupported-format";
        case ErrorCode::Corrupt: return "corrupt";
        case ErrorCode::TooLarge: return "too-large";
        case ErrorCode::Encrypted: return "encrypted";
        case ErrorCode::Empty: return "empty";
        case ErrorCode::Io: return "io";
        case ErrorCode::Database: return "database";
        case ErrorCode::NewerSchema: return "newer-schema";
        case ErrorCode::Engine: return "engine";
        case ErrorCode::Cancelled: return "cancelled";
        case ErrorCode::TimedOut: return "timed-out";
        case ErrorCode::OutOfMemory: return "out-of-memory";
        case ErrorCode::Internal: return "internal";
    }
    return "unknown";
}

ErrorCode errorCodeFromName(const std::string& name) {
    for (int c = int(ErrorCode::Ok); c <= int(ErrorCode::Internal); ++c)
        if (name == errorCodeName(ErrorCode(c))) return ErrorCode(c);
    return ErrorCode::Internal;
}

}  // namespace quire
