// Running a loaded graph: the nodes the fetched values need, in order, each on the device when
// one is given and takes it (device_exec.cpp), else on the CPU (cpu_exec.cpp); values freed after
// their last use; the operator profile for measurements.
#include "quire/nn/onnx_graph.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "nn/cpu_exec.h"
#include "nn/device_exec.h"

namespace quire::nn {
namespace {

// setOperatorProfiling(true): seconds per operator kind (and per convolution kind), printed at exit;
// in a run with a device, each kind split by where its nodes ran ([device] or [cpu]).
std::atomic<bool> profiling{false};
struct Profile {
    std::mutex mutex;
    std::map<std::string, std::pair<double, long>> seconds;
    ~Profile() {
        std::vector<std::pair<std::string, std::pair<double, long>>> rows(seconds.begin(), seconds.end());
        std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
        for (const auto& [k, v] : rows) std::fprintf(stderr, "nn-profile %-60s %9.3f s %8ld calls\n", k.c_str(), v.first, v.second);
    }
};
void profileAdd(const std::string& label, const Node& n, double s, const char* where) {
    static Profile p;
    std::string key = std::filesystem::path(label).filename().string() + " " + n.opType;
    if (n.op == Op::Chain) key = std::filesystem::path(label).filename().string() + " fused elementwise";
    if (n.op == Op::Conv) key += n.conv.group > 1 ? " depthwise " + std::to_string(n.conv.kh) + "x" + std::to_string(n.conv.kw)
                                                  : " " + std::to_string(n.conv.kh) + "x" + std::to_string(n.conv.kw);
    if (n.op == Op::Conv && !n.micro.empty()) key += " + elementwise";
    if (where) key += std::string(" [") + where + "]";
    std::lock_guard lock(p.mutex);
    auto& slot = p.seconds[key];
    slot.first += s;
    ++slot.second;
}

}  // namespace

void setOperatorProfiling(bool on) { profiling = on; }

Result<std::map<std::string, Tensor>> OnnxModel::run(std::map<std::string, Tensor> inputs, const std::vector<std::string>& fetch,
                                                     NnDevice* device, const std::atomic<bool>* cancel) const {
    if (!device) return runOn(std::move(inputs), fetch, nullptr, cancel);
    std::lock_guard lock(device->runLock());
    return runOn(std::move(inputs), fetch, device, cancel);
}

Result<std::map<std::string, Tensor>> OnnxModel::run(std::map<std::string, Tensor> inputs,
                                                     const std::vector<std::string>& fetch) const {
    return runOn(std::move(inputs), fetch, nullptr, nullptr);
}

Result<std::map<std::string, Tensor>> OnnxModel::runOn(std::map<std::string, Tensor> inputs, const std::vector<std::string>& fetch,
                                                       NnDevice* device, const std::atomic<bool>* cancel) const {
    const Graph& g = *m_graph;
    Values v(g.constants.begin(), g.constants.end());
    for (int id : g.inputs) {
        auto it = inputs.find(g.valueNames[size_t(id)]);
        if (it == inputs.end()) return Status(ErrorCode::InvalidArgument, g.label + ": input '" + g.valueNames[size_t(id)] + "' not given");
        v[size_t(id)] = std::make_shared<Tensor>(std::move(it->second));  // no copy of a page-sized input
    }
    std::vector<int> want;
    for (const auto& name : fetch.empty() ? outputNames() : fetch) {
        auto it = g.ids.find(name);
        if (it == g.ids.end()) return Status(ErrorCode::InvalidArgument, g.label + ": no value named '" + name + "'");
        want.push_back(it->second);
    }
    std::vector<bool> keep(g.valueNames.size(), false);
    for (int id : want) keep[size_t(id)] = true;
    // Only the nodes the fetched values depend on run (the recognizer's reader features are
    // fetched without its classifier and softmax), each value freed after the last of them reads it.
    std::vector<bool> needed(g.valueNames.size(), false), runs(g.nodes.size(), false);
    for (int id : want) needed[size_t(id)] = true;
    for (size_t k = g.nodes.size(); k-- > 0;) {
        const Node& n = g.nodes[k];
        if (std::none_of(n.out.begin(), n.out.end(), [&](int id) { return id >= 0 && needed[size_t(id)]; })) continue;
        runs[k] = true;
        for (int id : n.in)
            if (id >= 0) needed[size_t(id)] = true;
    }
    std::vector<int> lastUse(g.valueNames.size(), -1);
    for (size_t k = 0; k < g.nodes.size(); ++k)
        if (runs[k])
            for (int id : g.nodes[k].in)
                if (id >= 0) lastUse[size_t(id)] = int(k);
    const bool profile = profiling.load(std::memory_order_relaxed);
    std::vector<std::optional<DeviceValue>> dv(device ? g.valueNames.size() : 0);
    std::optional<DeviceRun> onDev;
    if (device) onDev.emplace(DeviceRun{g, *device, v, dv, keep, lastUse});
    for (size_t k = 0; k < g.nodes.size(); ++k) {
        if (!runs[k]) continue;
        if (cancel && cancel->load(std::memory_order_relaxed)) return Status(ErrorCode::Cancelled, g.label + ": cancelled");
        const Node& n = g.nodes[k];
        const auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
        bool done = false;
        if (onDev) {
            auto r = onDev->tryNode(n, int(k));
            if (!r) {
                device->failed = true;
                return r.status();
            }
            done = *r;
            ++(done ? device->deviceNodes : device->cpuNodes);
            if (!done)
                for (int id : n.in)
                    if (id >= 0)
                        if (Status s = onDev->onHost(id); !s) {
                            device->failed = true;
                            return s;
                        }
        }
        if (!done) {
            Exec e{g, v, int(k), &keep, &lastUse};
            if (auto st = execNode(e, n); !st) return st;
            for (int id : n.out)
                if (v[size_t(id)] && v[size_t(id)]->size() > kMaxElements)
                    return nodeError(g, n, "output " + shapeString(v[size_t(id)]->shape) + " exceeds the runtime's limit");
        }
        if (profile)
            profileAdd(g.label, n, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                       device ? (done ? "device" : "cpu") : nullptr);
        for (int id : n.in)
            if (id >= 0 && lastUse[size_t(id)] == int(k) && !keep[size_t(id)] && !g.constants[size_t(id)]) {
                v[size_t(id)].reset();
                if (device) dv[size_t(id)].reset();
            }
    }
    std::map<std::string, Tensor> out;
    for (int id : want) {
        if (onDev)
            if (Status s = onDev->onHost(id); !s) {
                device->failed = true;
                return s;
            }
        if (out.count(g.valueNames[size_t(id)])) continue;  // asked for twice
        if (!v[size_t(id)]) return Status(ErrorCode::Internal, g.label + ": value '" + g.valueNames[size_t(id)] + "' was not computed");
        // Moved out when nothing else holds it (the recognizer's class probabilities are the
        // largest tensor of a page); copied when it is also a constant or fetched twice.
        if (v[size_t(id)].use_count() == 1 && !g.constants[size_t(id)])
            out.emplace(g.valueNames[size_t(id)], std::move(*std::const_pointer_cast<Tensor>(v[size_t(id)])));
        else
            out.emplace(g.valueNames[size_t(id)], *v[size_t(id)]);
        v[size_t(id)].reset();
    }
    return out;
}

}  // namespace quire::nn
