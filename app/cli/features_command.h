// quire-cli features: the front-end's visual tokens of every page, for training the reader (tools/train/data.py).
#pragma once

#include "cli_args.h"

namespace quire::cli {

int featuresCommand(const Args& args);

}  // namespace quire::cli
