// PackedWeights: a model's weight matrices packed for kernels::gemmPacked, shared by every decode
// session on the model (a batch reads each weight once a step; sixteen sessions on a large model
// hold one copy).
#pragma once

#include <memory>
#include <vector>

#include "decoder/kernels.h"
#include "quire/decoder/model.h"

namespace quire::decoder {

// A weight matrix W [rows][cols] (row-major) packed for kernels::gemmPacked, with its shape: the
// products of a step's one row and a draft's few (Y = X Wᵀ) go through it.
struct PackedMatrix {
    int rows = 0, cols = 0;
    std::vector<float> data;
    PackedMatrix() = default;
    PackedMatrix(const std::vector<float>& w, int r, int c) : PackedMatrix(w.data(), r, c) {}
    PackedMatrix(const float* w, int r, int c) : rows(r), cols(c), data(kernels::packedSize(r, c)) {
        kernels::packRows(w, r, c, size_t(c), data.data());
    }
    void apply(const float* X, int T, float* Y) const {
        kernels::gemmPacked(data.data(), rows, cols, X, size_t(cols), T, Y, size_t(rows));
    }
};
struct PackedLayer {
    PackedMatrix wq, wk, wv, wo, wGate, wUp, wDown;
};

// A model's weights packed for the steps. Holds the model, so a cached entry's address cannot be
// reused.
struct PackedWeights {
    std::shared_ptr<const ModelWeights> model;
    std::vector<PackedLayer> layers;
    PackedMatrix head;
};

// The packed weights of `model`, made on first use and shared while any session holds them.
std::shared_ptr<const PackedWeights> packedWeightsOf(const std::shared_ptr<const ModelWeights>& model);

}  // namespace quire::decoder
