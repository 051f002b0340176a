// A safetensors file, memory-mapped and validated: every tensor's dtype, shape and byte range are
// checked against the header and the file size before anything is read.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "quire/core/status.h"

namespace quire::decoder {

enum class DType { F32, F16, BF16 };
const char* dtypeName(DType d);
size_t dtypeSize(DType d);

struct TensorView {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    const uint8_t* data = nullptr;  // into the mapping
    size_t bytes = 0;
    int64_t elements() const;
    // Converts (or copies) to fp32.
    std::vector<float> toFloat() const;
};

class SafeTensors {
public:
    static Result<std::unique_ptr<SafeTensors>> open(const std::filesystem::path& path);
    ~SafeTensors();
    SafeTensors(const SafeTensors&) = delete;
    SafeTensors& operator=(const SafeTensors&) = delete;

    const std::filesystem::path& path() const { return m_path; }
    bool has(const std::string& name) const { return m_tensors.count(name) > 0; }
    // The tensor with this name and shape, or an error naming the tensor and what is wrong.
    Result<TensorView> get(const std::string& name, const std::vector<int64_t>& shape) const;
    const std::map<std::string, TensorView>& tensors() const { return m_tensors; }
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }

private:
    SafeTensors() = default;
    std::filesystem::path m_path;
    void* m_map = nullptr;
    size_t m_size = 0;
    std::map<std::string, TensorView> m_tensors;
    std::map<std::string, std::string> m_metadata;
};

// Writes fp32 tensors as a safetensors file (tests and tools generate models with it).
Status writeSafeTensors(const std::filesystem::path& path,
                        const std::vector<std::pair<std::string, std::pair<std::vector<int64_t>, std::vector<float>>>>& tensors,
                        DType storeAs = DType::F32, const std::map<std::string, std::string>& metadata = {});

float bf16ToFloat(uint16_t v);
uint16_t floatToBf16(float f);
float f16ToFloat(uint16_t v);
uint16_t floatToF16(float f);

}  // namespace quire::decoder
