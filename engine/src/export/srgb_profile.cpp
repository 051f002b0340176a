// The sRGB profile, built tag by tag as ICC.1:2001-04 (version 2.1) lays it out.
#include "export/srgb_profile.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace quire {

namespace {

void be32(std::string& out, uint32_t v) {
    for (int shift : {24, 16, 8, 0}) out += char((v >> shift) & 0xFF);
}
void be16(std::string& out, uint16_t v) {
    out += char(v >> 8);
    out += char(v & 0xFF);
}
void s15(std::string& out, double v) { be32(out, uint32_t(int32_t(std::lround(v * 65536.0)))); }

std::string xyzTag(double x, double y, double z) {
    std::string t = "XYZ ";
    be32(t, 0);
    s15(t, x), s15(t, y), s15(t, z);
    return t;
}

std::string textTag(const std::string& text) {
    std::string t = "text";
    be32(t, 0);
    return t + text + '\0';
}

// textDescriptionType: the ASCII description; empty Unicode and ScriptCode parts.
std::string descTag(const std::string& text) {
    std::string t = "desc";
    be32(t, 0);
    be32(t, uint32_t(text.size() + 1));
    t += text + '\0';
    be32(t, 0);  // Unicode language
    be32(t, 0);  // Unicode count
    be16(t, 0);  // ScriptCode code
    t += '\0';   // ScriptCode count
    t += std::string(67, '\0');
    return t;
}

std::string curveTag() {
    constexpr int n = 1024;
    std::string t = "curv";
    be32(t, 0);
    be32(t, n);
    for (int i = 0; i < n; ++i) {
        const double v = double(i) / (n - 1);
        const double linear = v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4);
        be16(t, uint16_t(std::lround(linear * 65535.0)));
    }
    return t;
}

}  // namespace

std::string srgbIccProfile() {
    struct Tag {
        const char* sig;
        std::string data;
    };
    const std::string curve = curveTag();
    const std::vector<Tag> tags = {
        {"desc", descTag("sRGB IEC61966-2.1 (Quire)")},
        {"cprt", textTag("No copyright; written by Quire from IEC 61966-2-1")},
        {"wtpt", xyzTag(0.9642, 1.0, 0.8249)},
        {"rXYZ", xyzTag(0.4361, 0.2225, 0.0139)},
        {"gXYZ", xyzTag(0.3851, 0.7169, 0.0971)},
        {"bXYZ", xyzTag(0.1431, 0.0606, 0.7141)},
        {"rTRC", curve},
        {"gTRC", curve},
        {"bTRC", curve},
    };
    // Tag data after the header and the tag table, each on a 4-byte boundary.
    std::string table, data;
    size_t offset = 128 + 4 + 12 * tags.size();
    for (const auto& tag : tags) {
        table += tag.sig;
        be32(table, uint32_t(offset + data.size()));
        be32(table, uint32_t(tag.data.size()));
        data += tag.data;
        data.append((4 - data.size() % 4) % 4, '\0');
    }
    const size_t size = offset + data.size();
    std::string h;
    be32(h, uint32_t(size));
    be32(h, 0);                // preferred CMM
    be32(h, 0x02100000);       // version 2.1
    h += "mntr";               // display device
    h += "RGB ";
    h += "XYZ ";
    for (uint16_t v : {2026, 1, 1, 0, 0, 0}) be16(h, v);  // date of the profile's definition
    h += "acsp";
    be32(h, 0);                // platform
    be32(h, 0);                // flags
    be32(h, 0);                // manufacturer
    be32(h, 0);                // model
    be32(h, 0), be32(h, 0);    // attributes
    be32(h, 0);                // perceptual intent
    s15(h, 0.9642), s15(h, 1.0), s15(h, 0.8249);  // the PCS illuminant, D50
    be32(h, 0);                // creator
    h.append(128 - h.size(), '\0');
    std::string out = h;
    be32(out, uint32_t(tags.size()));
    return out + table + data;
}

}  // namespace quire
