// What an engine that carries context from page to page (the reader's decoder) needs to continue
// after the process dies: its own state and the inputs of the pages in its context. The
// transcriber saves a checkpoint with each page, in the page's transaction, so a run killed at any
// moment resumes with exactly the context it had after its last committed page.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace quire {

struct DecoderCheckpoint {
    std::string state;           // the engine's own serialised state (opaque to the store)
    bool restartPages = false;   // a new context began: the stored context pages are dropped first
    int firstNewPage = 0;        // index of newPages[0] among the context's pages
    // What the pages added since the last checkpoint bring back at resume: their inputs, then the
    // decoder's summary of each (DecodeSession::PageProvider).
    std::vector<std::vector<float>> newPages;
};

}  // namespace quire
