// A log sink that keeps every record on one line: control characters in a message (a file name
// with a newline) are written as \n, \t or \xNN, and bytes that are not UTF-8 as \xNN.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <string>

namespace quire::cli {

std::string escapeForLog(std::string_view text);

class EscapingSink : public spdlog::sinks::base_sink<std::mutex> {
public:
    explicit EscapingSink(std::shared_ptr<spdlog::sinks::sink> inner) : m_inner(std::move(inner)) {}

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override;
    void flush_() override { m_inner->flush(); }
    // The logger's pattern is the inner sink's: this one only rewrites the message.
    void set_pattern_(const std::string& pattern) override { m_inner->set_pattern(pattern); }
    void set_formatter_(std::unique_ptr<spdlog::formatter> f) override { m_inner->set_formatter(std::move(f)); }

private:
    std::shared_ptr<spdlog::sinks::sink> m_inner;
};

}  // namespace quire::cli
