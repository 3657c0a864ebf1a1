"""How each SA3 engine is built from ONNX: typing, builder flags, and what fp8 needs from the graph.

The recipes (SA3_CONTRACTS section 3), which reproduce the published engines on TensorRT 10:

- fp16 (fp16mixed): STRONGLY_TYPED with no precision flag; the types come from the ONNX. A weakly
  typed FP16 build re-casts the FP32 RMSNorm islands and ruins the audio.
- fp32 (the fidelity reference): weakly typed with no flag at all, TF32 (on by default) cleared.
- fp8 DiT: weakly typed with the FP16 and FP8 flags; strong typing breaks attention fusion.
- fp8 SAME-S codec tiers (`fp8`, `fp8_fast`): weakly typed with the FP8 flag, as the official
  `build_tiers.py --fp8` does.
- fp8 SAME-L codec tiers: the fp8 is in the graph; STRONGLY_TYPED with no precision flag.

FP8 math comes only from the graph: Q/DQ nodes of an fp8 type, or fp8 weights. BuilderFlag.FP8
merely allows plugins with FP8 inputs and outputs (TensorRT 10 NvInfer.h; deprecated in 10.12,
removed in 11.0 with the other precision flags), so an "fp8" build of a graph without fp8
quantization is an fp16 engine under an fp8 name. `onnx_has_fp8` finds out before TensorRT starts.
Strongly typed recipes set no precision flag: TensorRT refuses them there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines import catalog
from engines.lazy import lazy_import

log = logging.getLogger(__name__)
onnx = lazy_import("onnx")

SAME_L_FOLDER = catalog.DECODERS["same-l"].subdir
CODEC_ROLES = ("encoder", "decoder")

# ONNX TensorProto element types of the fp8 formats (FLOAT8E4M3FN, ..FNUZ, FLOAT8E5M2, ..FNUZ).
FP8_ELEMENT_TYPES = frozenset({17, 18, 19, 20})
# Quantize/dequantize ops that the TensorRT ONNX parser imports as fp8 whatever their operand
# types (onnx-tensorrt onnxOpImporters.cpp); older Transformer Engine and ModelOpt exports use them.
FP8_QDQ_OPS = frozenset({"TRT_FP8QuantizeLinear", "TRT_FP8DequantizeLinear"})
# Attributes that name the element type a node produces (Cast "to", QuantizeLinear "output_dtype").
_TYPE_ATTRIBUTES = frozenset({"to", "output_dtype"})


@dataclass(frozen=True)
class BuildRecipe:
    """Network typing and builder flags (BuilderFlag names) of one build."""

    strongly_typed: bool
    set_flags: tuple[str, ...] = ()
    cleared_flags: tuple[str, ...] = ()
    needs_fp8_graph: bool = False

    @property
    def typing(self) -> str:
        return "strongly typed" if self.strongly_typed else "weakly typed"


def recipe_for(role: str, precision: str, folder: str) -> BuildRecipe:
    """The recipe for an engine of `role` at `precision` going into the engine folder `folder`
    (the <subdir> of models/<sm_XX>/<subdir>/, which tells SAME-L from SAME-S)."""
    if precision == "fp16":
        return BuildRecipe(strongly_typed=True)
    if precision == "fp32":
        return BuildRecipe(strongly_typed=False, cleared_flags=("TF32",))
    if precision != "fp8":
        raise ValueError(f"unknown build precision {precision!r}")
    if role in CODEC_ROLES and folder == SAME_L_FOLDER:
        return BuildRecipe(strongly_typed=True, needs_fp8_graph=True)
    if role in CODEC_ROLES:
        return BuildRecipe(strongly_typed=False, set_flags=("FP8",), needs_fp8_graph=True)
    return BuildRecipe(strongly_typed=False, set_flags=("FP16", "FP8"), needs_fp8_graph=True)


def apply_recipe(trt: Any, config: Any, recipe: BuildRecipe) -> None:
    """Set and clear the recipe's builder flags on `config` (TensorRT 10 names)."""
    for name in recipe.set_flags:
        config.set_flag(getattr(trt.BuilderFlag, name))
    for name in recipe.cleared_flags:
        config.clear_flag(getattr(trt.BuilderFlag, name))


# ---- fp8 in the graph -------------------------------------------------------------------------

def onnx_has_fp8(path: Path) -> bool | None:
    """Whether the ONNX graph at `path` carries fp8 quantization: an fp8 tensor anywhere (weights,
    constants, inputs, outputs, annotated values), a Cast/QuantizeLinear producing fp8, or the
    TensorRT fp8 Q/DQ ops. None when the file is not readable ONNX (the parser then says why).
    Reads the graph only: the weights in a .onnx.data file are never loaded."""
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as err:  # DecodeError, OSError: not ONNX, or unreadable
        log.debug("could not read %s as ONNX to look for fp8 (%s)", path, err)
        return None
    return _graph_has_fp8(model.graph) or any(
        _node_has_fp8(node) for function in model.functions for node in function.node)


def _graph_has_fp8(graph: Any) -> bool:
    if any(tensor.data_type in FP8_ELEMENT_TYPES for tensor in _graph_tensors(graph)):
        return True
    values = (*graph.input, *graph.output, *graph.value_info)
    if any(v.type.tensor_type.elem_type in FP8_ELEMENT_TYPES for v in values):
        return True
    return any(_node_has_fp8(node) for node in graph.node)


def _graph_tensors(graph: Any) -> Iterator[Any]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values


def _node_has_fp8(node: Any) -> bool:
    if node.op_type in FP8_QDQ_OPS:
        return True
    return any(_attribute_has_fp8(attribute) for attribute in node.attribute)


def _attribute_has_fp8(attribute: Any) -> bool:
    kind = onnx.AttributeProto
    if attribute.type == kind.INT and attribute.name in _TYPE_ATTRIBUTES:
        return attribute.i in FP8_ELEMENT_TYPES
    if attribute.type == kind.TENSOR:  # a Constant's value
        return attribute.t.data_type in FP8_ELEMENT_TYPES
    if attribute.type == kind.TENSORS:
        return any(t.data_type in FP8_ELEMENT_TYPES for t in attribute.tensors)
    subgraphs: Iterable[Any] = ()
    if attribute.type == kind.GRAPH:  # If/Loop/Scan bodies
        subgraphs = (attribute.g,)
    elif attribute.type == kind.GRAPHS:
        subgraphs = attribute.graphs
    return any(_graph_has_fp8(graph) for graph in subgraphs)
