// quire-cli regions: the regions drawn on a page (page_region.h) listed, set or cleared; the next
// read of the page (transcribe --reread N) reads only them, in their order.
#pragma once

#include "cli_args.h"

namespace quire::cli {

int regionsCommand(const Args& args);

}  // namespace quire::cli
