// The visual tokens of a real volume's pages as the reader's front-end reads them, for
// `quire-cli bench decode --model DIR --volume FILE` (the shipped reader on real pages).
#pragma once

#include <string>
#include <vector>

#include "quire/core/status.h"

namespace quire::cli {

// Every page (each region of a split spread) of `volume`, preprocessed as a transcription would,
// read by the front-end of the reader in `modelDir`: [tokens, stride] row-major, with the tokens'
// vocabulary ids when `withIds`.
Result<std::vector<std::vector<float>>> readerPageInputs(const std::string& volume, const std::string& modelDir,
                                                         bool withIds, int dpi);

}  // namespace quire::cli
