// Runs an ONNX inference graph on the CPU, in Quire's own runtime.
//
// Parsing uses Debian's libonnx (the generated protobuf classes of onnx.proto): the file format
// is protobuf, and a maintained parser beats a hand-written wire-format reader. Execution is
// Quire's: OpenCV 4.6's DNN importer cannot run the PP-OCRv4 graphs (3-input Clip in the
// detector, dynamic Shape in the recognizer), and onnxruntime is not in Debian.
//
// Supported operators are the ones the PP-OCR detector, recognizer and direction classifier use
// (listed by supportedOps()); a graph with any other operator is refused at load, naming the
// node. Batch normalisations that follow a convolution are folded into its weights at load.
// Convolutions run as im2col + OpenBLAS SGEMM (1×1 ones as a plain GEMM), depthwise ones as a
// direct kernel.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "quire/nn/tensor.h"
#include "quire/core/status.h"

namespace quire::nn {

struct Graph;      // the loaded, validated, folded graph (internal)
class NnDevice;    // a device the graph's heavy nodes can run on (internal: engine/src/nn/device.h)

class OnnxModel {
public:
    ~OnnxModel();
    OnnxModel(OnnxModel&&) noexcept;
    OnnxModel& operator=(OnnxModel&&) noexcept;

    // Loads and validates `path`. Errors name the file and, for a graph problem, the node.
    static Result<OnnxModel> load(const std::string& path);
    // The same from bytes already in memory (`label` names them in messages).
    static Result<OnnxModel> fromBytes(const std::string& bytes, const std::string& label);

    std::vector<std::string> inputNames() const;
    std::vector<std::string> outputNames() const;
    int nodeCount() const;
    int foldedBatchNorms() const;
    int fusedNodes() const;  // elementwise operators merged into chains or convolutions
    // The constant (initializer) named `name`, as loaded (after folding); nullptr if there is none.
    const Tensor* constant(const std::string& name) const;

    // Runs the graph. `fetch` lists the values to return (graph outputs or any intermediate value
    // by name); empty means the graph outputs. Only the nodes the fetched values depend on run.
    // Intermediate tensors are freed after their last use, so peak memory is a few activations,
    // not the whole graph's.
    Result<std::map<std::string, Tensor>> run(std::map<std::string, Tensor> inputs,
                                              const std::vector<std::string>& fetch = {}) const;
    // The same with convolutions, fused elementwise chains and Add/Sub/Mul/Div of same-shaped or
    // per-channel operands on `device` (null: the CPU alone), the other nodes on the CPU with their
    // inputs copied back. One run at a time per device. With `cancel`, a run whose flag is set
    // stops before its next node (ErrorCode::Cancelled): a page's detector is a second of work.
    Result<std::map<std::string, Tensor>> run(std::map<std::string, Tensor> inputs, const std::vector<std::string>& fetch,
                                              NnDevice* device, const std::atomic<bool>* cancel = nullptr) const;

private:
    OnnxModel();
    Result<std::map<std::string, Tensor>> runOn(std::map<std::string, Tensor> inputs, const std::vector<std::string>& fetch,
                                                NnDevice* device, const std::atomic<bool>* cancel) const;
    std::unique_ptr<Graph> m_graph;
};

std::vector<std::string> supportedOps();

// For measurements (quire-cli maps QUIRE_NN_PROFILE=1 onto it): every graph run from now on adds
// its seconds per operator kind to a table printed on stderr when the process exits.
void setOperatorProfiling(bool on);

}  // namespace quire::nn
