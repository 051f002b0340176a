// Execution of one node on the CPU: one compute function per operator (cpu_exec.cpp), chosen
// by the node's operator from a table.
#pragma once

#include <memory>
#include <vector>

#include "nn/graph.h"

namespace quire::nn {

// One node's inputs and outputs in a run: `v` holds the live tensors; outputs are written into it.
struct Exec {
    const Graph& g;
    Values& v;
    int nodeIndex;
    const std::vector<bool>* keep = nullptr;  // values the caller fetches: never modified in place
    const std::vector<int>* lastUse = nullptr;  // per value: the last node of this run reading it (run() only)

    const Tensor* in(const Node& n, size_t k) const {
        if (k >= n.in.size() || n.in[k] < 0) return nullptr;
        return v[size_t(n.in[k])].get();
    }
    // Whether input k may be modified: nobody reads it after this node.
    bool canTake(const Node& n, size_t k) const {
        const int id = n.in[k];
        return lastUse && lastReader(g, n, nodeIndex, id, *lastUse, keep) && v[size_t(id)].use_count() == 1;
    }
    // A tensor that may be modified: the input itself when nobody else needs it afterwards.
    std::shared_ptr<Tensor> takeInput(const Node& n, size_t k) const {
        if (canTake(n, k)) return std::const_pointer_cast<Tensor>(v[size_t(n.in[k])]);
        return copyOf(*v[size_t(n.in[k])]);
    }
    void set(const Node& n, size_t k, Tensor t) const { v[size_t(n.out[k])] = std::make_shared<Tensor>(std::move(t)); }
    void set(const Node& n, size_t k, std::shared_ptr<Tensor> t) const { v[size_t(n.out[k])] = std::move(t); }
};

// Runs node n, writing its outputs into e.v; an error names the node.
Status execNode(const Exec& e, const Node& n);

}  // namespace quire::nn
