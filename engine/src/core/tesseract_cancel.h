// A Tesseract monitor that stops recognition when a cancel flag is set (shared by the recognizer
// and the orientation check, which both run Tesseract on the engine's cancel flag).
#pragma once

#include <tesseract/ocrclass.h>

#include <atomic>

namespace quire {

// `monitor` asks Tesseract to stop as soon as `cancel` (may be null: never) is set.
inline void watchCancel(tesseract::ETEXT_DESC& monitor, const std::atomic<bool>* cancel) {
    monitor.cancel = [](void* flag, int) {
        return flag && static_cast<const std::atomic<bool>*>(flag)->load(std::memory_order_relaxed);
    };
    monitor.cancel_this = const_cast<std::atomic<bool>*>(cancel);
}

}  // namespace quire
