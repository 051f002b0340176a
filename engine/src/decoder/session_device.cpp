// A session on a device (AttentionParams::device): opening it, keeping its copy of the pool in
// step, staging gated blocks, and the device's prefill and steps.
#include "decoder/session_impl.h"
#include "decoder/shared_device.h"

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

namespace {

// The next smaller SR-SWA budgets for a device short of memory: the larger of the selector's
// blocks per page and the gate's pages halved (each cut halves the staging slots and the pool's
// gated part), down to no gated pages. False: nothing left to cut.
bool smallerBudgets(AttentionParams& p) {
    if (p.gatedPages <= 0 || p.blocksPerGatedPage <= 0) return false;
    if (p.blocksPerGatedPage > p.gatedPages) p.blocksPerGatedPage /= 2;
    else p.gatedPages /= 2;
    if (p.gatedPages == 0 || p.blocksPerGatedPage == 0) p.gatedPages = 0, p.blocksPerGatedPage = 0;
    return true;
}

std::string mib(size_t bytes) { return std::to_string((bytes + (size_t(1) << 19)) >> 20) + " MiB"; }

}  // namespace

void DecodeSession::Impl::openDevice() {
    if (p.measureRecall || p.referencePrefill) {
        deviceStatus = Status(ErrorCode::InvalidArgument,
                              std::string("decoder: the ") + stepDeviceName(p.device) +
                                  " device computes plain steps only (no recall probe or reference prefill)");
        return;
    }
    if (p.sharedDevice) {
        SharedDevice::Impl& sd = p.sharedDevice->impl();
        if (sd.model != model || sd.kind != p.device || p.mode != AttentionMode::SrSwa) {
            deviceStatus = Status(ErrorCode::InvalidArgument,
                                  "decoder: a shared device takes SR-SWA sessions on its own model and of its own kind");
            return;
        }
        device = sd.backend;
    } else {
        auto made = makeBackend(model, p.device, p.deviceBf16, p.deviceFaultAtStep, p.deviceMemoryLimit);
        if (!made) {
            if (p.deviceFallback) deviceNotice = "decoding on the CPU: " + made.status().message();
            else deviceStatus = made.status();
            return;
        }
        device = std::move(*made);
    }
    // The session's device memory, reserved now: where the device has not that much, smaller
    // gate and selector budgets (the pool is still empty, so it is sized again), then the CPU.
    const int askedPages = p.gatedPages, askedBlocks = p.blocksPerGatedPage;
    Status reserved = reserveDevice();
    std::string firstRefusal = reserved ? std::string() : reserved.message();
    while (!reserved && reserved.code() == ErrorCode::OutOfMemory && p.mode == AttentionMode::SrSwa && smallerBudgets(p)) {
        ++deviceBudgetCuts;
        sizePool();
        reserved = reserveDevice();
    }
    if (!reserved) {
        device.reset();
        if (deviceBudgetCuts > 0) {  // the CPU needs no cut: it reads with the budgets asked
            p.gatedPages = askedPages, p.blocksPerGatedPage = askedBlocks;
            deviceBudgetCuts = 0;
            sizePool();
        }
        if (p.deviceFallback) deviceNotice = "decoding on the CPU: " + reserved.message();
        else deviceStatus = reserved;
        return;
    }
    if (deviceBudgetCuts > 0)
        deviceNotice = "decoding on the " + std::string(stepDeviceName(p.device)) + " with " + std::to_string(p.gatedPages) +
                       " gated pages of " + std::to_string(p.blocksPerGatedPage) + " blocks instead of " +
                       std::to_string(askedPages) + " of " + std::to_string(askedBlocks) + " (" + firstRefusal +
                       "; the session holds " + mib(device->deviceBytes()) + ")";
    staged.assign(size_t(c.numLayers), std::vector<Staged>(size_t(stagingSlots)));
    devQueries.resize(size_t(c.numLayers) * c.numHeads * c.headDim);
    devKeys.resize(size_t(c.numLayers) * c.numKvHeads * c.headDim);
    devValues.resize(devKeys.size());
}

Status DecodeSession::Impl::reserveDevice() {
    stagingSlots = p.mode == AttentionMode::SrSwa ? std::max(0, p.gatedPages) * std::max(0, p.blocksPerGatedPage) : 0;
    prefillSlots = (p.maxPageTokens + kBlockTokens - 1) / kBlockTokens;
    if (p.sharedDevice) {
        deviceRange = prefillSlots + stagingSlots + capacitySlots;
        deviceBase = p.sharedDevice->impl().take(deviceRange);
    }
    Status s = device->reserveSlots(poolBase() + capacitySlots);
    if (s) s = device->reservePrefill(prefillSlots * kBlockTokens);
    if (!s && p.sharedDevice) {
        p.sharedDevice->impl().give(deviceBase, deviceRange);
        deviceBase = deviceRange = 0;
    }
    return s;
}

void DecodeSession::Impl::markDirty(const Block& b) {
    if (!device || b.slot < 0) return;
    if (slotDirty.size() <= size_t(b.slot)) slotDirty.resize(size_t(capacitySlots), 0);
    slotDirty[size_t(b.slot)] = 1;
}

Status DecodeSession::Impl::syncDevice() {
    if (Status s = device->reserveSlots(poolBase() + capacitySlots); !s) return s;
    for (size_t slot = 0; slot < slotDirty.size(); ++slot)
        if (slotDirty[slot]) {
            if (Status s = device->writeSlot(poolBase() + int(slot), &pool[slot * blockFloats]); !s) return s;
            slotDirty[slot] = 0;
            ++deviceUploads;
        }
    return Status::ok();
}

Status DecodeSession::Impl::toDevice(int layer, const std::vector<Span>& spans, std::vector<DeviceSpan>& out) {
    out.clear();
    std::vector<Staged>& st = staged[size_t(layer)];
    for (const Span& s : spans) {
        const Block& b = *s.block;
        int slot;
        if (b.slot >= 0) {
            slot = poolBase() + b.slot;
        } else {
            int at = -1;
            for (int j = 0; j < stagingSlots && at < 0; ++j)
                if (st[size_t(j)].page == b.page && st[size_t(j)].pos0 == b.pos0) at = j;
            if (at < 0) {  // the least recently used staging slot not used by this step
                for (int j = 0; j < stagingSlots; ++j)
                    if (st[size_t(j)].lastUse < deviceSteps && (at < 0 || st[size_t(j)].lastUse < st[size_t(at)].lastUse)) at = j;
                if (at < 0 || b.host.empty())
                    return Status(ErrorCode::Internal, "decoder: more gated blocks than the device's staging slots");
                if (Status e = device->writeSlotLayer(stagingSlot(at), layer, b.host.data()); !e) return e;
                ++deviceUploads;
                st[size_t(at)].page = b.page, st[size_t(at)].pos0 = b.pos0;
            }
            st[size_t(at)].lastUse = deviceSteps;
            slot = stagingSlot(at);
        }
        // Attention tracking: the current page's visual tokens, by their index on the page.
        const int32_t track = trackingStep && b.kind == BlockKind::Visual && b.page == currentPage
                                  ? int32_t(b.pos0 - trackedPagePos0 + s.first)
                                  : -1;
        out.push_back({int32_t(slot), int32_t(s.first), int32_t(s.last - s.first), s.queryPos, track});
    }
    return Status::ok();
}

Status DecodeSession::Impl::devicePrefill(const std::vector<Block*>& into, const float* visual, int T, int64_t pos0, std::vector<float>* summary) {
    if (Status s = syncDevice(); !s) return s;  // the sinks the page attends to
    std::vector<int32_t> blockSlots;
    for (size_t i = 0; i < into.size(); ++i)
        blockSlots.push_back(into[i]->slot >= 0 ? poolBase() + into[i]->slot : scratchSlot(int(i)));  // host blocks: the scratch
    std::vector<DeviceSpan> spans;
    std::vector<int32_t> offsets{0};
    for (int t = 0; t < T; ++t) {
        std::vector<Span> sp = causalPageSpans(into, t);
        frame(sp, pos0 + t);
        for (const Span& s : sp) {
            const auto at = std::find(into.begin(), into.end(), s.block);
            const int32_t slot = at != into.end() ? blockSlots[size_t(at - into.begin())] : poolBase() + s.block->slot;
            if (at == into.end() && s.block->slot < 0) return Status(ErrorCode::Internal, "prefill: a sink outside the pool");
            spans.push_back({slot, int32_t(s.first), int32_t(s.last - s.first), s.queryPos});
        }
        offsets.push_back(int32_t(spans.size()));
    }
    const int KV = c.numKvHeads * c.headDim;
    std::vector<float> keys(size_t(c.numLayers) * T * KV), values(keys.size());
    DevicePrefillIO io;
    io.tokens = T, io.pos0 = pos0, io.visual = visual, io.blockSlots = blockSlots.data(), io.spans = spans.data();
    io.offsets = offsets.data(), io.keys = keys.data(), io.values = values.data();
    if (Status s = device->prefill(io, prefillSlots * kBlockTokens); !s) return s;
    for (int l = 0; l < c.numLayers; ++l)
        for (int t = 0; t < T; ++t)
            storePageToken(into, l, t, T, &keys[(size_t(l) * T + t) * KV], &values[(size_t(l) * T + t) * KV], summary, true);
    return Status::ok();
}

void DecodeSession::Impl::dropDevice(const std::string& what, const Status& why) {
    const std::string before = deviceNotice.empty() ? std::string() : deviceNotice + "; then ";
    deviceNotice = before + "decoding on the CPU from " + what + ": " + why.message();
    device.reset();
}

Status DecodeSession::Impl::deviceBegin(const PendingStep& ps, DeviceStepIO& io, bool& perLayer) {
    Block& b = blocks[size_t(ps.blockId)];
    b.count = std::max(b.count, ps.t + 1);
    ++deviceSteps;
    if (Status s = syncDevice(); !s) return s;
    perLayer = ps.refresh;
    if (p.mode == AttentionMode::SrSwa)
        for (const Selection& sel : selection) perLayer = perLayer || sel.size() != gated.size();
    io = DeviceStepIO{};
    io.token = ps.input, io.slot = poolBase() + b.slot, io.t = ps.t, io.pos = b.pos0 + ps.t;
    io.logits = logits.data(), io.queries = devQueries.data(), io.keys = devKeys.data(), io.values = devValues.data();
    if (trackingStep) io.trackTokens = int(attendedMass.size()), io.attendedMass = attendedMass.data();
    return Status::ok();
}

Status DecodeSession::Impl::deviceSpans(const PendingStep& ps, int l, const float* query, std::vector<DeviceSpan>& out) {
    std::vector<Span> spans = generatedSet(l, generated, query ? query : q.data(), position, selection[size_t(l)], ps.refresh);
    frame(spans, blocks[size_t(ps.blockId)].pos0 + ps.t);
    lastPositions[size_t(l)] = positionRuns(spans);
    return toDevice(l, spans, out);
}

void DecodeSession::Impl::deviceEnd(PendingStep& ps) {
    Block& b = blocks[size_t(ps.blockId)];
    const int Q = c.numHeads * c.headDim, KV = c.numKvHeads * c.headDim, D = c.headDim;
    for (int l = 0; l < c.numLayers; ++l) {
        addGateQuery(ps.gq, l, &devQueries[size_t(l) * Q]);
        for (int g = 0; g < c.numKvHeads; ++g)
            storeKv(b, l, g, ps.t, &devKeys[size_t(l) * KV + size_t(g) * D], &devValues[size_t(l) * KV + size_t(g) * D], true,
                    true);
    }
}

Status DecodeSession::Impl::deviceForward(PendingStep& ps) {
    DeviceStepIO io;
    bool perLayer = false;
    if (Status s = deviceBegin(ps, io, perLayer); !s) return s;
    auto spansFor = [&](int l, const float* query, std::vector<DeviceSpan>& out) { return deviceSpans(ps, l, query, out); };
    if (Status s = device->step(io, spansFor, perLayer); !s) return s;
    deviceEnd(ps);
    return Status::ok();
}

}  // namespace quire::decoder
