// The quire-render helper's side: opens one PDF and answers render and text requests on its
// standard input and output until that closes. The engine's PDF source starts it, so that a file
// that loops or exhausts memory ends the helper, not the run.
#pragma once

#include <string>

namespace quire {

// Returns the process's exit status. Needs a QCoreApplication (QtPdf).
int servePdfRendering(const std::string& file);

}  // namespace quire
