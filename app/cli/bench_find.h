// quire-cli bench find: find and replace across a generated book, timed.
#pragma once

#include "cli_args.h"

namespace quire::cli {

int benchFind(const Args& args);

}  // namespace quire::cli
