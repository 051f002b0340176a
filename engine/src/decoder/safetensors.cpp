// Reading and writing safetensors files, with every offset and size checked against the file.
#include "quire/decoder/safetensors.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace quire::decoder {

const char* dtypeName(DType d) {
    switch (d) {
        case DType::F32: return "F32";
        case DType::F16: return "F16";
        case DType::BF16: return "BF16";
    }
    return "?";
}

size_t dtypeSize(DType d) { return d == DType::F32 ? 4 : 2; }

float bf16ToFloat(uint16_t v) {
    const uint32_t bits = uint32_t(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t floatToBf16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffff) > 0x7f800000) return uint16_t((bits >> 16) | 0x40);  // NaN stays NaN
    bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
    return uint16_t(bits >> 16);
}

float f16ToFloat(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) bits = sign;
        else {  // subnormal
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) mant <<= 1, --exp;
            bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000 | (mant << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t floatToF16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000);
    const int exp = int((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));
    if (exp >= 31) return uint16_t(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -10) return sign;
        mant |= 0x800000;
        const int shift = 14 - exp;
        uint32_t half = mant >> shift;
        if ((mant >> (shift - 1)) & 1) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = uint32_t(sign) | uint32_t(exp << 10) | (mant >> 13);
    if (mant & 0x1000) ++half;  // round half up
    return uint16_t(half);
}

int64_t TensorView::elements() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

std::vector<float> TensorView::toFloat() const {
    const size_t n = size_t(elements());
    std::vector<float> out(n);
    if (dtype == DType::F32) {
        std::memcpy(out.data(), data, n * 4);
    } else {
        for (size_t i = 0; i < n; ++i) {
            uint16_t v;
            std::memcpy(&v, data + 2 * i, 2);
            out[i] = dtype == DType::BF16 ? bf16ToFloat(v) : f16ToFloat(v);
        }
    }
    return out;
}

Result<std::unique_ptr<SafeTensors>> SafeTensors::open(const fs::path& path) {
    const std::string where = path.string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status(errno == ENOENT ? ErrorCode::NotFound : ErrorCode::Unreadable, where + ": " + std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return Status(ErrorCode::Unreadable, where + ": not a regular file");
    }
    const size_t size = size_t(st.st_size);
    if (size < 8) {
        ::close(fd);
        return Status(ErrorCode::Corrupt, where + ": too short for a safetensors header (" + std::to_string(size) + " bytes)");
    }
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return Status(ErrorCode::Unreadable, where + ": cannot map: " + std::strerror(errno));
    std::unique_ptr<SafeTensors> st2(new SafeTensors());
    st2->m_path = path;
    st2->m_map = map;
    st2->m_size = size;
    const auto* bytes = static_cast<const uint8_t*>(map);
    uint64_t headerLen = 0;
    for (int i = 7; i >= 0; --i) headerLen = (headerLen << 8) | bytes[i];
    if (headerLen > size - 8 || headerLen > 100'000'000)
        return Status(ErrorCode::Corrupt, where + ": header claims " + std::to_string(headerLen) +
                                              " bytes but the file has " + std::to_string(size - 8) + " after it");
    QJsonParseError err{};
    const auto doc = QJsonDocument::fromJson(
        QByteArray::fromRawData(reinterpret_cast<const char*>(bytes + 8), qsizetype(headerLen)), &err);
    if (err.error != QJsonParseError::NoError || !doc.isObject())
        return Status(ErrorCode::Corrupt, where + ": header is not a JSON object (" + err.errorString().toStdString() + ")");
    const size_t dataStart = 8 + headerLen;
    const size_t dataSize = size - dataStart;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    const QJsonObject obj = doc.object();
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        const std::string name = it.key().toStdString();
        if (name == "__metadata__") {
            const QJsonObject meta = it.value().toObject();
            for (auto m = meta.begin(); m != meta.end(); ++m)
                st2->m_metadata[m.key().toStdString()] = m.value().toString().toStdString();
            continue;
        }
        const QJsonObject t = it.value().toObject();
        TensorView v;
        v.name = name;
        const QString dtype = t.value("dtype").toString();
        if (dtype == "F32") v.dtype = DType::F32;
        else if (dtype == "F16") v.dtype = DType::F16;
        else if (dtype == "BF16") v.dtype = DType::BF16;
        else
            return Status(ErrorCode::UnsupportedFormat, where + ": tensor '" + name + "' has dtype '" +
                                                            dtype.toStdString() + "' (supported: F32, F16, BF16)");
        const QJsonArray shape = t.value("shape").toArray();
        int64_t elements = 1;
        for (const auto& d : shape) {
            const double dim = d.toDouble(-1);
            if (dim < 0 || dim > 1e12 || dim != std::floor(dim))
                return Status(ErrorCode::Corrupt, where + ": tensor '" + name + "' has an invalid shape");
            v.shape.push_back(int64_t(dim));
            elements *= int64_t(dim);
            if (elements > int64_t(1) << 40) return Status(ErrorCode::Corrupt, where + ": tensor '" + name + "' is absurdly large");
        }
        const QJsonArray offs = t.value("data_offsets").toArray();
        if (offs.size() != 2) return Status(ErrorCode::Corrupt, where + ": tensor '" + name + "' has no data_offsets");
        const double b = offs[0].toDouble(-1), e = offs[1].toDouble(-1);
        // Offsets as written (they may be far beyond any integer type: no conversion before the check).
        auto offset = [](double x) { return QString::number(x, 'g', 15).toStdString(); };
        if (b < 0 || e < b || e > double(dataSize))
            return Status(ErrorCode::Corrupt, where + ": tensor '" + name + "' lies outside the file (offsets " +
                                                  offset(b) + ".." + offset(e) + ", data size " +
                                                  std::to_string(dataSize) + "): truncated?");
        v.bytes = size_t(e - b);
        if (v.bytes != size_t(elements) * dtypeSize(v.dtype))
            return Status(ErrorCode::Corrupt, where + ": tensor '" + name + "' has " + std::to_string(v.bytes) +
                                                  " bytes but its shape and dtype need " +
                                                  std::to_string(size_t(elements) * dtypeSize(v.dtype)));
        v.data = bytes + dataStart + size_t(b);
        ranges.emplace_back(uint64_t(b), uint64_t(e));
        st2->m_tensors[name] = std::move(v);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].first < ranges[i - 1].second)
            return Status(ErrorCode::Corrupt, where + ": tensors overlap in the file");
    return st2;
}

SafeTensors::~SafeTensors() {
    if (m_map) munmap(m_map, m_size);
}

Result<TensorView> SafeTensors::get(const std::string& name, const std::vector<int64_t>& shape) const {
    auto it = m_tensors.find(name);
    if (it == m_tensors.end()) return Status(ErrorCode::Corrupt, m_path.string() + ": tensor '" + name + "' is missing");
    if (it->second.shape != shape) {
        auto str = [](const std::vector<int64_t>& s) {
            std::string o = "[";
            for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
            return o + "]";
        };
        return Status(ErrorCode::Corrupt, m_path.string() + ": tensor '" + name + "' has shape " + str(it->second.shape) +
                                              ", the config needs " + str(shape));
    }
    return it->second;
}

Status writeSafeTensors(const fs::path& path,
                        const std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>>& tensors,
                        DType storeAs, const std::map<std::string, std::string>& metadata) {
    QJsonObject header;
    if (!metadata.empty()) {
        QJsonObject meta;
        for (const auto& [k, v] : metadata) meta[QString::fromStdString(k)] = QString::fromStdString(v);
        header["__metadata__"] = meta;
    }
    uint64_t offset = 0;
    for (const auto& [name, t] : tensors) {
        QJsonObject o;
        o["dtype"] = dtypeName(storeAs);
        QJsonArray shape;
        for (auto d : t.first) shape.append(qint64(d));
        o["shape"] = shape;
        const uint64_t bytes = t.second.size() * dtypeSize(storeAs);
        o["data_offsets"] = QJsonArray{qint64(offset), qint64(offset + bytes)};
        header[QString::fromStdString(name)] = o;
        offset += bytes;
    }
    QByteArray h = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (h.size() % 8) h.append(' ');
    std::ofstream out(path, std::ios::binary);
    if (!out) return Status(ErrorCode::Io, path.string() + ": cannot create");
    uint64_t len = uint64_t(h.size());
    for (int i = 0; i < 8; ++i) out.put(char((len >> (8 * i)) & 0xff));
    out.write(h.constData(), h.size());
    for (const auto& [name, t] : tensors) {
        if (storeAs == DType::F32) {
            out.write(reinterpret_cast<const char*>(t.second.data()), std::streamsize(t.second.size() * 4));
        } else {
            for (float f : t.second) {
                const uint16_t v = storeAs == DType::BF16 ? floatToBf16(f) : floatToF16(f);
                out.write(reinterpret_cast<const char*>(&v), 2);
            }
        }
    }
    return out ? Status::ok() : Status(ErrorCode::Io, path.string() + ": write failed");
}

}  // namespace quire::decoder
