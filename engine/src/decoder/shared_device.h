// The inside of a SharedDevice (quire/decoder/session.h): its backend and the ranges of slots its
// sessions hold; and makeBackend, the device a session or a SharedDevice steps on.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "decoder/step_backend.h"
#include "quire/decoder/session.h"

namespace quire::decoder {

// A device of kind `d` (Mirror or Cuda) for `model`'s steps; faultAtStep: the mirror's (tests
// only); memoryLimit: the bytes it may hold, 0 all it has.
Result<std::unique_ptr<StepBackend>> makeBackend(const std::shared_ptr<const ModelWeights>& model, StepDevice d,
                                                 bool bf16Weights, int64_t faultAtStep, size_t memoryLimit);

struct SharedDevice::Impl {
    std::shared_ptr<const ModelWeights> model;
    StepDevice kind = StepDevice::Cpu;
    std::shared_ptr<StepBackend> backend;
    // Ranges of slots: those given back, to be taken again (sessions of one batch ask for the
    // same size), and the end of those handed out.
    std::mutex mutex;
    std::vector<std::pair<int, int>> freeRanges;  // (first slot, count)
    int end = 0;
    int take(int n) {
        std::lock_guard lock(mutex);
        for (auto it = freeRanges.begin(); it != freeRanges.end(); ++it)
            if (it->second >= n) {
                const int first = it->first;
                if (it->second == n) freeRanges.erase(it);
                else it->first += n, it->second -= n;
                return first;
            }
        end += n;
        return end - n;
    }
    void give(int first, int n) {
        std::lock_guard lock(mutex);
        freeRanges.push_back({first, n});
    }
};

}  // namespace quire::decoder
