// Pages behind the SR-SWA window: their inputs spilled to disk, their slots given back, and the
// gated pages computed again into a cache of those the gate picks most.
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

std::vector<const Block*> DecodeSession::Impl::gatedPageBlocks(int page) const {
    std::vector<const Block*> out;
    if (auto it = gatedCache.find(page); it != gatedCache.end()) {
        for (const Block& b : it->second.blocks) out.push_back(&b);
    } else if (auto ids = pageBlocks.find(page); ids != pageBlocks.end()) {
        for (int id : ids->second) out.push_back(&blocks[size_t(id)]);
    }
    return out;
}

Status DecodeSession::Impl::spillInputs(int page, const float* visual, int count) {
    auto at = spill.append(visual, size_t(count) * c.visualStride());
    if (!at) return at.status();
    spillOffset[page] = *at;
    return Status::ok();
}

Status DecodeSession::Impl::addSpilledPage(int page, const float* visual, int count, int64_t pos0, std::vector<float> summary) {
    if (Status s = spillInputs(page, visual, count); !s) return s;
    pagePos0[page] = pos0;
    pageTokens[page] = count;
    addGateSummary(page, summary);
    return Status::ok();
}

Status DecodeSession::Impl::materializeGated() {
    if (!spilling) return Status::ok();
    constexpr double kDecay = 0.98;  // per refresh: a pick counts half after 34 refreshes
    for (auto& [page, gp] : gatedCache) gp.uses *= kDecay;
    for (int page : gated) {
        if (pageBlocks.count(page)) continue;
        auto it = gatedCache.find(page);
        if (it == gatedCache.end()) {
            const auto at = spillOffset.find(page);
            const auto count = pageTokens.find(page);
            if (at == spillOffset.end() || count == pageTokens.end())
                return Status(ErrorCode::Internal, "decoder: the gate picked page " + std::to_string(page) + ", which it was never fed");
            std::vector<float> visual(size_t(count->second) * c.visualStride());
            if (Status s = spill.read(at->second, visual.data(), visual.size()); !s) return s;
            GatedPage gp;
            const int64_t pos0 = pagePos0.at(page);
            for (int i = 0; i < count->second; i += kBlockTokens) {
                gp.blocks.push_back(makeBlock(BlockKind::Visual, page, pos0 + i));
                gp.blocks.back().host.assign(blockFloats, 0.f);
            }
            std::vector<Block*> into;
            for (Block& b : gp.blocks) into.push_back(&b);
            if (Status s = computePage(into, visual.data(), count->second, pos0, nullptr); !s) return s;
            ++recomputedPages;
            it = gatedCache.emplace(page, std::move(gp)).first;
        }
        it->second.uses += 1;
    }
    const size_t keep = size_t(std::max<int>(p.gatedCachePages, int(gated.size())));
    while (gatedCache.size() > keep) {
        auto least = gatedCache.end();
        for (auto it = gatedCache.begin(); it != gatedCache.end(); ++it)
            if (std::find(gated.begin(), gated.end(), it->first) == gated.end() &&
                (least == gatedCache.end() || it->second.uses < least->second.uses))
                least = it;
        if (least == gatedCache.end()) break;
        gatedCache.erase(least);
    }
    return Status::ok();
}

void DecodeSession::Impl::offloadLeftPages() {
    if (p.mode != AttentionMode::SrSwa) return;
    if (!spilling) {
        for (auto& [page, ids] : pageBlocks)
            if (!inWindow(page))
                for (int id : ids) offload(blocks[size_t(id)]);
        return;
    }
    while (!pageBlocks.empty() && pageBlocks.begin()->first < currentPage - p.windowBefore) {
        const int page = pageBlocks.begin()->first;
        if (p.gatedPages > 0 && !gatedCache.count(page)) {
            // Its keys and values go to the gated pages' cache as they are (the page just left
            // the window, and the gate's next pick is often this page: computing it again from
            // its inputs gave the same values at the cost of a whole page's forward pass). Not
            // yet a pick: the next materializeGated() drops it first if the gate does not take it.
            GatedPage gp;
            for (int id : pageBlocks.begin()->second) {
                offload(blocks[size_t(id)]);
                gp.blocks.push_back(std::move(blocks[size_t(id)]));
                freeBlock(id);  // (its slot went with offload())
            }
            gatedCache.emplace(page, std::move(gp));
        } else {
            for (int id : pageBlocks.begin()->second) freeBlock(id);
        }
        pageBlocks.erase(pageBlocks.begin());
        ++pageLayout;
    }
}

}  // namespace quire::decoder
