// An ICC v2 display profile for sRGB (IEC 61966-2-1), written by Quire: the output intent a PDF/A
// file names for its DeviceRGB and DeviceGray scans.
#pragma once

#include <string>

namespace quire {

// The profile's bytes: D50 white point, the sRGB primaries adapted to D50 (Bradford), and the sRGB
// tone curve as a 1024-entry table for each channel.
std::string srgbIccProfile();

}  // namespace quire
