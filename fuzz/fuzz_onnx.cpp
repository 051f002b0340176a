// libFuzzer target: the ONNX loader (protobuf parsing, graph validation, batch-norm folding,
// constant folding, fusion) on arbitrary bytes, then a run of whatever loads on a small input.
// It must refuse or run, never crash, hang or allocate without bound.
#include <cstdint>
#include <string>

#include "quire/nn/onnx_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto model = quire::nn::OnnxModel::fromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
    if (!model) return 0;
    std::map<std::string, quire::nn::Tensor> inputs;
    for (const auto& name : model->inputNames()) {
        quire::nn::Tensor t = quire::nn::Tensor::floats({1, 3, 16, 16});
        for (size_t k = 0; k < t.f.size(); ++k) t.f[k] = float(k % 7) - 3.f;
        inputs.emplace(name, std::move(t));
    }
    (void)model->run(inputs);
    return 0;
}
