// openUnnamedFile: a scratch file that cannot outlive its process.
#include "core/unnamed_file.h"

#include <fcntl.h>
#include <stdlib.h>  // mkostemp
#include <unistd.h>

#include <cstdlib>

namespace quire {

int openUnnamedFile(std::string& folder) {
    // $TMPDIR (the platform's convention for scratch files), else /tmp; one that cannot be used is
    // an error that names it, not a quiet move elsewhere.
    const char* tmp = std::getenv("TMPDIR");
    folder = tmp && *tmp ? tmp : "/tmp";
    int fd = ::open(folder.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    std::string name = folder + "/quire-XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
    return fd;
}

}  // namespace quire
