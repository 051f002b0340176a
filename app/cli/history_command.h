// quire-cli history: a page's versions, what changed since one of them, and going back to one.
#pragma once

#include "cli_args.h"

namespace quire::cli {

int historyCommand(const Args& args);

}  // namespace quire::cli
