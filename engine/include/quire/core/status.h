// Errors as values: the engine never aborts or exits; every failure carries what failed and where.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace quire {

enum class ErrorCode {
    Ok = 0,
    InvalidArgument,    // bad usage: option values, missing arguments
    NotFound,           // a path that does not exist
    Unreadable,         // permission denied, I/O error while reading
    UnsupportedFormat,  // not a PDF/TIFF/PNG/JPEG/BMP, or a variant we cannot decode
    Corrupt,            // truncated or damaged file
    TooLarge,           // refused to protect memory (huge image)
    Encrypted,          // a PDF that needs a password
    Empty,              // a document with zero pages
    Io,                 // writing failed (disk full, read-only directory)
    Database,           // SQLite error
    NewerSchema,        // project file written by a newer Quire
    Engine,             // recognizer failure
    Cancelled,
    TimedOut,           // a page or file that did not finish within its time budget (it may loop)
    OutOfMemory,        // a device (a GPU) without the memory asked of it; the caller may ask for less
    Internal,
};

// True for errors that are the input's fault (exit code 2 in quire-cli).
bool isInputError(ErrorCode code);
const char* errorCodeName(ErrorCode code);
// The code errorCodeName gave `name`; Internal for a name it never gives.
ErrorCode errorCodeFromName(const std::string& name);

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(ErrorCode code, std::string message) : m_code(code), m_message(std::move(message)) {}
    static Status ok() { return {}; }

    bool isOk() const { return m_code == ErrorCode::Ok; }
    explicit operator bool() const { return isOk(); }
    ErrorCode code() const { return m_code; }
    const std::string& message() const { return m_message; }

private:
    ErrorCode m_code = ErrorCode::Ok;
    std::string m_message;
};

template <typename T>
class [[nodiscard]] Result {
public:
    Result(T value) : m_value(std::move(value)) {}  // NOLINT: implicit on purpose
    Result(Status status) : m_status(std::move(status)) {}  // NOLINT
    Result(ErrorCode code, std::string message) : m_status(code, std::move(message)) {}

    bool isOk() const { return m_value.has_value(); }
    explicit operator bool() const { return isOk(); }
    const Status& status() const { return m_status; }
    T& value() & { return *m_value; }
    const T& value() const& { return *m_value; }
    T&& value() && { return std::move(*m_value); }
    T* operator->() { return &*m_value; }
    const T* operator->() const { return &*m_value; }
    T& operator*() & { return *m_value; }
    const T& operator*() const& { return *m_value; }
    // By value on a temporary, so `for (x : *f())` cannot dangle.
    T operator*() && { return std::move(*m_value); }

private:
    std::optional<T> m_value;
    Status m_status;
};

}  // namespace quire
