// quire-cli pages: the book's pages managed from the command line: retried, skipped, removed,
// moved, turned, and the last such change undone.
#pragma once

#include "cli_args.h"

namespace quire::cli {

int pagesCommand(const Args& args);

}  // namespace quire::cli
