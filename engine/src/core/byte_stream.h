// ByteWriter / ByteReader: the one binary format of saved engine state (the decoder session's
// state, the reader's checkpoint): plain values in the machine's byte order, float vectors and
// strings with their length first. The reader checks every length against what is left, so a
// damaged or hostile state fails cleanly instead of allocating or reading past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace quire {

class ByteWriter {
public:
    template <typename T>
    void put(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        m_out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    }
    // A u64 count, then the floats.
    void putFloats(const std::vector<float>& v) {
        put(uint64_t(v.size()));
        m_out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    }
    // A u32 length, then the bytes.
    void putString(const std::string& s) {
        put(uint32_t(s.size()));
        m_out += s;
    }
    std::string take() { return std::move(m_out); }

private:
    std::string m_out;
};

class ByteReader {
public:
    explicit ByteReader(const std::string& s) : m_s(s) {}
    template <typename T>
    bool get(T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (sizeof(T) > remaining()) return false;
        std::memcpy(&v, m_s.data() + m_pos, sizeof(T));
        m_pos += sizeof(T);
        return true;
    }
    bool getFloats(std::vector<float>& v, uint64_t maxCount) {
        uint64_t n = 0;
        if (!get(n) || n > maxCount || n > remaining() / sizeof(float)) return false;
        v.resize(size_t(n));
        if (n > 0) std::memcpy(v.data(), m_s.data() + m_pos, size_t(n) * sizeof(float));  // an empty vector's data() may be null
        m_pos += size_t(n) * sizeof(float);
        return true;
    }
    bool getString(std::string& out) {
        uint32_t n = 0;
        if (!get(n) || n > remaining()) return false;
        out.assign(m_s, m_pos, n);
        m_pos += n;
        return true;
    }
    size_t remaining() const { return m_s.size() - m_pos; }
    bool atEnd() const { return m_pos == m_s.size(); }

private:
    const std::string& m_s;
    size_t m_pos = 0;
};

}  // namespace quire
