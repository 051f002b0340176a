#!/usr/bin/python3
"""Writes small ONNX graphs that use the PP-OCR graphs' operators, as libFuzzer seeds for
fuzz_onnx (the real models are megabytes; seeds must stay small)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(1)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))


def save(name, nodes, inputs, outputs, opset):
    g = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
f32 = np.float32

# Detector-like: conv + batch norm + hard-swish (3-input Clip), SE gate, depthwise, upsampling.
nodes = [
    const("w1", rng.standard_normal((4, 3, 3, 3)).astype(f32)),
    helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=1),
    const("s", np.ones(4, f32)), const("b", np.zeros(4, f32)), const("m", np.zeros(4, f32)), const("v", np.ones(4, f32)),
    helper.make_node("BatchNormalization", ["c1", "s", "b", "m", "v"], ["bn"], epsilon=1e-5),
    const("three", np.array(3.0, f32)), const("zero", np.array(0.0, f32)), const("six", np.array(6.0, f32)),
    helper.make_node("Add", ["bn", "three"], ["a3"]),
    helper.make_node("Clip", ["a3", "zero", "six"], ["cl"]),
    helper.make_node("Mul", ["bn", "cl"], ["mu"]),
    helper.make_node("Div", ["mu", "six"], ["hs"]),
    const("wd", rng.standard_normal((4, 1, 5, 5)).astype(f32)),
    helper.make_node("Conv", ["hs", "wd"], ["dw"], kernel_shape=[5, 5], pads=[2, 2, 2, 2], group=4),
    helper.make_node("GlobalAveragePool", ["dw"], ["gap"]),
    helper.make_node("HardSigmoid", ["gap"], ["hsig"], alpha=0.2, beta=0.5),
    helper.make_node("Mul", ["dw", "hsig"], ["se"]),
    const("roi", np.zeros(0, f32)), const("sc", np.array([1, 1, 2, 2], f32)),
    helper.make_node("Resize", ["se", "roi", "sc"], ["up"], mode="nearest", coordinate_transformation_mode="asymmetric",
                     nearest_mode="floor"),
    const("wt", rng.standard_normal((4, 2, 2, 2)).astype(f32)),
    helper.make_node("ConvTranspose", ["dw", "wt"], ["ct"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Concat", ["up", "ct"], ["cat"], axis=1),
    helper.make_node("Sigmoid", ["cat"], ["y"]),
]
save("det_like", nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 11)

# Recognizer-like: pooling, shape arithmetic, attention, layer norm, softmax (opset 9 attributes).
nodes = [
    helper.make_node("AveragePool", ["x"], ["ap"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]),
    helper.make_node("MaxPool", ["ap"], ["mp"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0]),
    helper.make_node("Relu", ["mp"], ["r"]),
    helper.make_node("Clip", ["r"], ["rc"], min=0.0, max=6.0),
    helper.make_node("Shape", ["rc"], ["sh"]),
    helper.make_node("Cast", ["sh"], ["shi"], to=6),
    helper.make_node("Slice", ["shi"], ["s01"], axes=[0], starts=[0], ends=[2]),
    helper.make_node("Cast", ["s01"], ["s01l"], to=7),
    const("m1", np.array([-1], np.int64)),
    helper.make_node("Concat", ["s01l", "m1"], ["newshape"], axis=0),
    helper.make_node("Reshape", ["rc", "newshape"], ["flat"]),
    helper.make_node("Transpose", ["flat"], ["tok"], perm=[0, 2, 1]),
    helper.make_node("ReduceMean", ["tok"], ["mean"], axes=[-1]),
    helper.make_node("Sub", ["tok", "mean"], ["cen"]),
    const("two", np.array(2.0, f32)),
    helper.make_node("Pow", ["cen", "two"], ["sq"]),
    helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
    helper.make_node("Sqrt", ["var"], ["sd"]),
    helper.make_node("Div", ["cen", "sd"], ["ln"]),
    const("wq", rng.standard_normal((3, 3)).astype(f32)),
    helper.make_node("MatMul", ["ln", "wq"], ["q"]),
    helper.make_node("Transpose", ["q"], ["kt"], perm=[0, 2, 1]),
    helper.make_node("MatMul", ["q", "kt"], ["att"]),
    helper.make_node("Softmax", ["att"], ["p"], axis=2),
    helper.make_node("Unsqueeze", ["p"], ["p4"], axes=[1]),
    helper.make_node("Squeeze", ["p4"], ["y"], axes=[1]),
]
save("rec_like", nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], 9)
