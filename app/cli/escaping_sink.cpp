// EscapingSink: one record, one line, whatever the file names in it hold.
#include "escaping_sink.h"

#include <QString>

namespace quire::cli {

std::string escapeForLog(std::string_view text) {
    std::string out;
    size_t i = 0;
    auto hex = [&](unsigned char c) {
        static const char* digits = "0123456789abcdef";
        out += "\\x";
        out += digits[c >> 4];
        out += digits[c & 15];
    };
    while (i < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\n') out += "\\n", ++i;
        else if (c == '\r') out += "\\r", ++i;
        else if (c == '\t') out += "\\t", ++i;
        else if (c < 0x20 || c == 0x7f) hex(c), ++i;
        else if (c < 0x80) out += char(c), ++i;
        else {
            // A UTF-8 sequence is copied whole when it is valid, else its first byte is escaped.
            const size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
            const std::string_view seq = text.substr(i, len);
            const QByteArray bytes(seq.data(), qsizetype(seq.size()));
            if (len > 1 && seq.size() == len && QString::fromUtf8(bytes).toUtf8() == bytes) out += seq, i += len;
            else hex(c), ++i;
        }
    }
    return out;
}

void EscapingSink::sink_it_(const spdlog::details::log_msg& msg) {
    const std::string escaped = escapeForLog(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg copy(msg);
    copy.payload = escaped;
    m_inner->log(copy);
}

}  // namespace quire::cli
