// The KV pool: 16-token blocks of keys and values in a pool of slots fixed when an SR-SWA session
// starts (grown as needed under full attention and R-SWA), with their Quest bounds.
#include "decoder/session_impl.h"

#include <cblas.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>

namespace quire::decoder {

size_t DecodeSession::Impl::kIndex(int layer, int g, int t) const {
    return ((size_t(layer) * c.numKvHeads + g) * kBlockTokens + t) * c.headDim;
}

Block DecodeSession::Impl::makeBlock(BlockKind kind, int page, int64_t pos0) const {
    Block b;
    b.kind = kind, b.page = page, b.pos0 = pos0;
    b.kMin.assign(size_t(c.numLayers) * c.numKvHeads * c.headDim, INFINITY);
    b.kMax.assign(b.kMin.size(), -INFINITY);
    return b;
}

Result<int> DecodeSession::Impl::newBlock(BlockKind kind, int page) {
    int slot;
    if (freeSlots.empty()) {
        if (fixedPool)
            return Status(ErrorCode::Internal, "KV pool exhausted: the fixed budget is too small for these settings");
        slot = capacitySlots++;  // full attention and R-SWA grow with the volume
        pool.resize(size_t(capacitySlots) * blockFloats);
    } else {
        slot = freeSlots.back();
        freeSlots.pop_back();
    }
    Block b = makeBlock(kind, page, position);
    b.slot = slot;
    if (!freeIds.empty()) {
        const int id = freeIds.back();
        freeIds.pop_back();
        blocks[size_t(id)] = std::move(b);
        return id;
    }
    blocks.push_back(std::move(b));
    return int(blocks.size()) - 1;
}

void DecodeSession::Impl::freeBlock(int id) {
    Block& b = blocks[size_t(id)];
    releaseSlot(b);
    b = Block();
    freeIds.push_back(id);
}

void DecodeSession::Impl::releaseSlot(Block& b) {
    if (b.slot < 0) return;
    freeSlots.push_back(b.slot);
    b.slot = -1;
}

void DecodeSession::Impl::offload(Block& b) {  // keys and values move to host memory; bounds stay
    if (b.slot < 0) return;
    b.host.assign(data(b), data(b) + blockFloats);
    releaseSlot(b);
}

void DecodeSession::Impl::storeKv(Block& b, int layer, int g, int t, const float* key, const float* value, bool rotated, bool deviceHasIt) {
    if (!deviceHasIt) markDirty(b);
    float* base = data(b);
    float* kk = base + kIndex(layer, g, t);
    std::copy_n(key, c.headDim, kk);
    if (!rotated) rotate(kk, b.pos0 + t);
    std::copy_n(value, c.headDim, base + halfFloats + kIndex(layer, g, t));
    const size_t o = (size_t(layer) * c.numKvHeads + g) * c.headDim;
    for (int i = 0; i < c.headDim; ++i) {
        b.kMin[o + i] = std::min(b.kMin[o + i], kk[i]);
        b.kMax[o + i] = std::max(b.kMax[o + i], kk[i]);
    }
}

}  // namespace quire::decoder
