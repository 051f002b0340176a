// quire-cli find: every hit of a text or pattern in the book, and Replace All.
#pragma once

#include <atomic>

#include "cli_args.h"

namespace quire::cli {

// `cancel`: set (by a signal) to stop the search.
int findCommand(const Args& args, const std::atomic<bool>* cancel);

}  // namespace quire::cli
