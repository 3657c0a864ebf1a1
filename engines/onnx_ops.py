"""Which operators of an ONNX graph ONNX Runtime lacks, read without loading the weights."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from pathlib import Path

from engines.lazy import lazy_import, real_module

log = logging.getLogger(__name__)
onnx = lazy_import("onnx")

# Operator domains ONNX Runtime implements; a node in any other domain is a custom op it lacks.
ORT_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "com.microsoft"})


def foreign_onnx_ops(path: Path) -> tuple[str, ...]:
    """Operators ("domain::op") in an ONNX file that ONNX Runtime does not implement.

    Reads the graph only (no external weights); cached by (path, mtime, size).
    Raises OSError or onnx's DecodeError when the file cannot be read.
    """
    stat = Path(path).stat()
    return _foreign_ops_cached(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=128)
def _foreign_ops_cached(path: str, mtime_ns: int, size: int) -> tuple[str, ...]:
    try:
        real_module(onnx)
    except ImportError:
        log.debug("onnx is not installed; cannot check %s for custom operators", path)
        return ()
    model = onnx.load(path, load_external_data=False)
    # A call to a model-local function carries the function's own (custom) domain.
    local_functions = {(f.domain, f.name) for f in model.functions}
    found: dict[str, None] = {}

    def visit(nodes: Iterable[onnx.NodeProto]) -> None:
        for node in nodes:
            if (node.domain, node.op_type) not in local_functions and \
                    node.domain not in ORT_DOMAINS:
                found[f"{node.domain}::{node.op_type}"] = None
            for attr in node.attribute:
                if attr.HasField("g"):
                    visit(attr.g.node)
                for graph in attr.graphs:
                    visit(graph.node)

    visit(model.graph.node)
    for function in model.functions:
        visit(function.node)
    return tuple(found)
