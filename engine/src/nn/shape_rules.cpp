// The shape rules of Resize, Reshape/Squeeze/Unsqueeze, Slice, Transpose and Concat (shape_rules.h).
#include "nn/shape_rules.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace quire::nn {

Result<std::vector<int64_t>> intsOf(const Graph& g, const Node& n, const Tensor* t, const char* what) {
    if (!t) return nodeError(g, n, std::string(what) + " missing");
    if (t->isInt) return t->i;
    std::vector<int64_t> out;
    for (float x : t->f) out.push_back(toInt64(x));
    return out;
}


Result<Shape> resizeShape(const Graph& g, const Node& n, const Shape& in, const InputOf& input) {
    if (in.size() != 4) return nodeError(g, n, "needs a 4-D input");
    const Tensor* scales = input(g.opset >= 11 ? 2 : 1);
    const Tensor* sizes = input(3);
    Shape out = in;
    if (sizes && sizes->size() == 4 && sizes->isInt) {
        out = sizes->i;
    } else if (scales && scales->size() == 4 && !scales->isInt) {
        for (int k = 0; k < 4; ++k) out[size_t(k)] = toInt64(std::floor(double(in[size_t(k)]) * scales->f[size_t(k)]));
    } else {
        return nodeError(g, n, "needs 4 scales or 4 sizes");
    }
    if (out[0] != in[0] || out[1] != in[1]) return nodeError(g, n, "resizes batch or channels");
    if (out[2] <= 0 || out[3] <= 0 || out[2] > 100000 || out[3] > 100000 || numel(out) > kMaxElements)
        return nodeError(g, n, "bad output size " + shapeString(out));
    return out;
}

// Reshape, Squeeze and Unsqueeze: the output's shape (the data is the input's, in order).
Result<Shape> reshapedShape(const Graph& g, const Node& n, const Shape& in, const InputOf& input) {
    if (n.op == Op::Reshape) {
        auto target = intsOf(g, n, input(1), "shape");
        if (!target) return target.status();
        Shape s = *target;
        int infer = -1;
        int64_t known = 1;
        for (size_t k = 0; k < s.size(); ++k) {
            if (s[k] == 0) {
                if (k >= in.size()) return nodeError(g, n, "0 in shape beyond the input's rank");
                s[k] = in[k];
            }
            if (s[k] == -1) {
                if (infer >= 0) return nodeError(g, n, "more than one -1 in shape");
                infer = int(k);
            } else if (s[k] < 0) {
                return nodeError(g, n, "negative dimension in shape");
            } else if (s[k] > kMaxElements || (s[k] && known > kMaxElements / s[k])) {
                return nodeError(g, n, "target shape too large");
            } else {
                known *= s[k];
            }
        }
        if (infer >= 0) s[size_t(infer)] = known ? numel(in) / known : 0;
        if (numel(s) != numel(in)) return nodeError(g, n, "cannot reshape " + shapeString(in) + " to " + shapeString(s));
        return s;
    }
    std::vector<int64_t> axes = n.axes;
    if (g.opset >= 13 && input(1)) {
        auto given = intsOf(g, n, input(1), "axes");
        if (!given) return given.status();
        axes = *given;
    }
    Shape s = in;
    if (n.op == Op::Squeeze) {
        s.clear();
        const int r = int(in.size());
        for (int d = 0; d < r; ++d) {
            const bool listed = std::any_of(axes.begin(), axes.end(), [&](int64_t a) { return normAxis(a, r) == d; });
            if (listed && in[size_t(d)] != 1) return nodeError(g, n, "squeezes a dimension that is not 1");
            if (!(listed || (axes.empty() && in[size_t(d)] == 1))) s.push_back(in[size_t(d)]);
        }
        return s;
    }
    const int r = int(in.size() + axes.size());
    std::vector<int64_t> sorted;
    for (auto a : axes) sorted.push_back(normAxis(a, r));
    std::sort(sorted.begin(), sorted.end());
    for (auto a : sorted) {
        if (a < 0 || a > int64_t(s.size())) return nodeError(g, n, "axis out of range");
        s.insert(s.begin() + a, 1);
    }
    return s;
}

// Slice: the kept range [lo, hi) of every axis.
Result<std::pair<std::vector<int64_t>, std::vector<int64_t>>> sliceRange(const Graph& g, const Node& n, const Shape& in,
                                                                         const InputOf& input) {
    std::vector<int64_t> starts = n.starts, ends = n.ends, axes = n.axes, steps;
    if (g.opset >= 10) {
        auto s = intsOf(g, n, input(1), "starts");
        auto en = intsOf(g, n, input(2), "ends");
        if (!s) return s.status();
        if (!en) return en.status();
        starts = *s, ends = *en;
        if (input(3)) {
            auto a = intsOf(g, n, input(3), "axes");
            if (!a) return a.status();
            axes = *a;
        }
        if (input(4)) {
            auto st = intsOf(g, n, input(4), "steps");
            if (!st) return st.status();
            steps = *st;
        }
    }
    if (axes.empty())
        for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
    if (starts.size() != ends.size() || axes.size() != starts.size()) return nodeError(g, n, "starts/ends/axes differ in length");
    const int r = int(in.size());
    std::vector<int64_t> lo(static_cast<size_t>(r), 0), hi(in.begin(), in.end());
    for (size_t k = 0; k < axes.size(); ++k) {
        if (!steps.empty() && steps[k] != 1) return nodeError(g, n, "only step 1 is supported");
        const int a = normAxis(axes[k], r);
        if (a < 0 || a >= r) return nodeError(g, n, "axis out of range");
        const int64_t dim = in[size_t(a)];
        auto clampIdx = [dim](int64_t i) { return std::clamp(i < 0 ? i + dim : i, int64_t(0), dim); };
        lo[size_t(a)] = clampIdx(starts[k]);
        hi[size_t(a)] = std::max(lo[size_t(a)], clampIdx(ends[k]));
    }
    return std::pair{lo, hi};
}

// Transpose: the permutation (reversed axes by default), checked.
Result<std::vector<int64_t>> transposePerm(const Graph& g, const Node& n, int rank) {
    std::vector<int64_t> perm = n.perm;
    if (perm.empty())
        for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
        if (sorted[k] != int64_t(k) || int(perm.size()) != rank) return nodeError(g, n, "bad perm");
    return perm;
}

// Concat of inputs with shapes `in`: the output's shape, and the rows before the axis (outer) and
// the values per unit of the axis after it (inner), each input a block of rows.
Result<ConcatLayout> concatLayout(const Graph& g, const Node& n, const std::vector<const Shape*>& in) {
    ConcatLayout l;
    const Shape& first = *in.front();
    const int r = int(first.size());
    l.axis = normAxis(n.axis, r);
    if (l.axis < 0 || l.axis >= r) return nodeError(g, n, "axis out of range");
    l.out = first;
    l.out[size_t(l.axis)] = 0;
    for (const Shape* s : in) {
        if (int(s->size()) != r) return nodeError(g, n, "inputs differ in rank or type");
        for (int d = 0; d < r; ++d)
            if (d != l.axis && (*s)[size_t(d)] != first[size_t(d)])
                return nodeError(g, n, "input shapes " + shapeString(first) + " and " + shapeString(*s) + " do not concatenate");
        l.out[size_t(l.axis)] += (*s)[size_t(l.axis)];
    }
    for (int d = 0; d < l.axis; ++d) l.outer *= l.out[size_t(d)];
    for (int d = l.axis + 1; d < r; ++d) l.inner *= l.out[size_t(d)];
    return l;
}

}  // namespace quire::nn
