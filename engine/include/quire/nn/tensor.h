// A dense host tensor for the neural front-end: float data for activations and weights, int64
// data for the small shape tensors that ONNX graphs compute (Shape → Slice → Concat → Reshape).
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <string>
#include <vector>

#include "quire/nn/buffer_cache.h"

namespace quire::nn {

using Shape = std::vector<int64_t>;

// An allocator that leaves new floats uninitialised: activation buffers are written in full by
// the kernel that produces them, and zero-filling them first cost ~8 % of a page's time. Its
// memory comes from the buffer cache, which keeps large freed buffers for reuse.
template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
    template <typename U>
    struct rebind {
        using other = DefaultInitAllocator<U>;
    };
    using value_type = T;
    using std::allocator<T>::allocator;
    T* allocate(size_t n) {
        if (n > size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
        return static_cast<T*>(bufferCacheAllocate(n * sizeof(T)));
    }
    void deallocate(T* p, size_t n) noexcept { bufferCacheFree(p, n * sizeof(T)); }
    template <typename U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};
using FloatBuffer = std::vector<float, DefaultInitAllocator<float>>;

int64_t numel(const Shape& shape);
std::string shapeString(const Shape& shape);

struct Tensor {
    Shape shape;
    bool isInt = false;
    FloatBuffer f;           // when !isInt, numel(shape) values, row-major
    std::vector<int64_t> i;  // when isInt

    static Tensor floats(Shape s) {  // zero-filled
        Tensor t;
        t.f.assign(static_cast<size_t>(numel(s)), 0.f);
        t.shape = std::move(s);
        return t;
    }
    static Tensor uninit(Shape s) {  // for outputs a kernel writes in full
        Tensor t;
        t.f.resize(static_cast<size_t>(numel(s)));
        t.shape = std::move(s);
        return t;
    }
    static Tensor ints(Shape s, std::vector<int64_t> v) {
        Tensor t;
        t.shape = std::move(s);
        t.isInt = true;
        t.i = std::move(v);
        return t;
    }
    int64_t size() const { return numel(shape); }
    int rank() const { return int(shape.size()); }
    float* data() { return f.data(); }
    const float* data() const { return f.data(); }
};

}  // namespace quire::nn
