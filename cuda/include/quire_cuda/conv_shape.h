// The shape of a 2-D convolution or transposed convolution: the one description the front-end's
// CPU kernels (engine/src/nn/cpu_ops.h), its devices (nn/device.h) and the CUDA kernels
// (nn_ops.h) share. Plain C++: the engine includes it whether or not the CUDA backend is built.
#pragma once

namespace quire::cuda::nn {

// A graph node holds the kernel, stride, dilation, pads and group; n, c, h, w and m are filled in
// when the node runs.
struct ConvShape {
    int n = 1, c = 1, h = 1, w = 1;  // input x[n, c, h, w]
    int m = 1;                       // output channels
    int kh = 1, kw = 1, strideH = 1, strideW = 1, dilH = 1, dilW = 1;
    int padT = 0, padL = 0, padB = 0, padR = 0;
    int group = 1;                   // 1, or c (depthwise, m == c)
    int outH() const { return (h + padT + padB - dilH * (kh - 1) - 1) / strideH + 1; }
    int outW() const { return (w + padL + padR - dilW * (kw - 1) - 1) / strideW + 1; }
};

}  // namespace quire::cuda::nn
