// quire-cli bench decode | reader | find: the engine's benchmarks (docs/BENCHMARKS.md).
#pragma once

#include "cli_args.h"

namespace quire::cli {

int benchCommand(const Args& args);

}  // namespace quire::cli
