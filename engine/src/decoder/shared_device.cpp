// SharedDevice: one GPU (or the mirror) for several decode sessions on one model, and the maker of
// a session's own device (makeBackend).
#include <mutex>

#include "decoder/shared_device.h"

namespace quire::decoder {

Result<std::unique_ptr<StepBackend>> makeBackend(const std::shared_ptr<const ModelWeights>& model, StepDevice d,
                                                 bool bf16Weights, int64_t faultAtStep, size_t memoryLimit) {
    if (d == StepDevice::Mirror) {
        auto mirror = makeMirrorBackend(model, faultAtStep, memoryLimit);
        if (memoryLimit > 0 && mirror->deviceBytes() > memoryLimit)
            return Status(ErrorCode::OutOfMemory, "device mirror: out of memory for the weights");
        return mirror;
    }
    return makeCudaBackend(model, bf16Weights, memoryLimit);
}

// The backend of a SharedDevice: one call at a time, whichever session's thread makes it. (A
// step's spansFor calls back into the device, on the same thread, to stage gated blocks: the
// lock is recursive.) Each call is whole — it leaves nothing half done for the next — so
// sessions on several threads interleave their calls safely; their slots are their own.
class LockedBackend final : public StepBackend {
public:
    explicit LockedBackend(std::unique_ptr<StepBackend> b) : inner(std::move(b)) {}
    const char* name() const override { return inner->name(); }
    Status reserveSlots(int n) override {
        std::lock_guard lock(mutex);
        return inner->reserveSlots(n);
    }
    int slots() const override {
        std::lock_guard lock(mutex);
        return inner->slots();
    }
    Status writeSlot(int slot, const float* block) override {
        std::lock_guard lock(mutex);
        return inner->writeSlot(slot, block);
    }
    Status writeSlotLayer(int slot, int layer, const float* block) override {
        std::lock_guard lock(mutex);
        return inner->writeSlotLayer(slot, layer, block);
    }
    Status step(const DeviceStepIO& io, const SpansFor& spansFor, bool perLayer) override {
        std::lock_guard lock(mutex);
        return inner->step(io, spansFor, perLayer);
    }
    Status stepBatch(const std::vector<DeviceStepIO>& ios, const BatchSpansFor& spansFor, bool perLayer) override {
        std::lock_guard lock(mutex);
        return inner->stepBatch(ios, spansFor, perLayer);
    }
    Status prefill(const DevicePrefillIO& io, int maxTokens) override {
        std::lock_guard lock(mutex);
        return inner->prefill(io, maxTokens);
    }
    Status reservePrefill(int maxTokens) override {
        std::lock_guard lock(mutex);
        return inner->reservePrefill(maxTokens);
    }
    size_t deviceBytes() const override {
        std::lock_guard lock(mutex);
        return inner->deviceBytes();
    }

private:
    std::unique_ptr<StepBackend> inner;
    mutable std::recursive_mutex mutex;
};


SharedDevice::SharedDevice(std::unique_ptr<Impl> d) : d(std::move(d)) {}
SharedDevice::~SharedDevice() = default;
StepDevice SharedDevice::device() const { return d->kind; }

Result<std::shared_ptr<SharedDevice>> SharedDevice::open(std::shared_ptr<const ModelWeights> model, StepDevice device,
                                                          bool bf16Weights, int64_t faultAtStep, size_t memoryLimit) {
    auto d = std::make_unique<Impl>();
    d->model = model, d->kind = device;
    if (device == StepDevice::Cpu)
        return Status(ErrorCode::InvalidArgument, "a shared device is a GPU's (the CPU's sessions share their weights anyway)");
    auto made = makeBackend(model, device, bf16Weights, faultAtStep, memoryLimit);
    if (!made) return made.status();
    d->backend = std::make_shared<LockedBackend>(std::move(*made));
    return std::shared_ptr<SharedDevice>(new SharedDevice(std::move(d)));
}

}  // namespace quire::decoder
