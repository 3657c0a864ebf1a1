"""The small ONNX graph builder every demo graph is written with, and the pins they share.

The demo files are pinned to ONNX IR version 8 and opset 17 (ONNX Runtime in some environments
refuses newer IR versions), and every operator must be one TensorRT 10's ONNX parser imports, so
`models selftest` can build the same graphs into engines (test_demo_models keeps that list).
"""

from __future__ import annotations

import numpy as np

from engines.lazy import lazy_import

onnx = lazy_import("onnx")
helper = lazy_import("onnx.helper")
numpy_helper = lazy_import("onnx.numpy_helper")

OPSET = 17


class GraphBuilder:
    """Appends nodes with generated names; each method returns the output tensor name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def _fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, value, dtype=np.float32, hint: str = "c") -> str:
        name = self._fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def ints(self, *values: int) -> str:
        return self.const(list(values), np.int64, "i")

    def op(self, op_type: str, *inputs: str, out: str | None = None, **attrs) -> str:
        output = out or self._fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], **attrs))
        return output

    # Shorthands for the arithmetic below.
    def add(self, a: str, b: str) -> str:
        return self.op("Add", a, b)

    def sub(self, a: str, b: str) -> str:
        return self.op("Sub", a, b)

    def mul(self, *xs: str) -> str:
        acc = xs[0]
        for x in xs[1:]:
            acc = self.op("Mul", acc, x)
        return acc

    def div(self, a: str, b: str) -> str:
        return self.op("Div", a, b)

    def f(self, value: float) -> str:
        return self.const(value)

    def slice(self, x: str, starts, ends, axes) -> str:
        return self.op("Slice", x, self.ints(*starts), self.ints(*ends), self.ints(*axes))

    def column(self, x: str, index: int) -> str:
        """x[:, index:index+1] of a 2-D tensor."""
        return self.slice(x, [index], [index + 1], [1])

    def model(self, inputs, outputs, doc: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, inputs, outputs, self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="sa3-studio-demo",
            doc_string=doc,
        )
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def f32_info(name: str, shape) -> onnx.ValueInfoProto:
    """A float32 graph input or output of `shape` (strings for dynamic dims)."""
    return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)
