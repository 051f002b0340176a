// A JPEG's decoder warnings (a damaged or cut stream that libjpeg pads with grey), found by a fast
// reduced-size decode of the whole stream, so that such a page is flagged, not accepted silently.
#pragma once

#include <filesystem>
#include <string>

namespace quire {

// libjpeg's first warning or error for the file, empty when it decodes cleanly.
std::string jpegDamage(const std::filesystem::path& path);

}  // namespace quire
