// libFuzzer target: a model folder's files on arbitrary bytes — the safetensors loader, and the
// reader's character_counts.tsv. Each must refuse or load, never crash.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "quire/decoder/safetensors.h"
#include "quire/reader/reader.h"
#include "scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = writeScratchFile(".safetensors", data, size);
    if (path.empty()) return 0;
    auto st = quire::decoder::SafeTensors::open(path);
    if (st) {
        for (const auto& [name, t] : (*st)->tensors())
            if (t.elements() < (1 << 20)) {
                volatile float sink = 0;
                for (float v : t.toFloat()) sink = sink + v;
            }
        (void)(*st)->get("embed_tokens.weight", {4, 4});
    }
    static const std::vector<std::string> chars = {"", "a", "b", "\xe7\xa0\x94", " ", "\t", ""};
    auto rare = quire::readRareCharacters(path, 30, chars);
    if (rare && rare->size() != chars.size()) __builtin_trap();
    return 0;
}
