// A file in the temporary folder with no name there: made with O_TMPFILE, or where the file system
// lacks it, named and unlinked at once. Nothing is left behind however the process ends.
#pragma once

#include <string>

namespace quire {

// A read-write descriptor (close-on-exec), or -1 with errno set; `folder` gets the temporary
// folder it was made in, for messages.
int openUnnamedFile(std::string& folder);

}  // namespace quire
