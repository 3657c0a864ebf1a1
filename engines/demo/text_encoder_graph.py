"""The demo text encoder as an ONNX graph: input_ids, attention_mask (1,256) int64 ->
hidden_states (1,256,768) fp32, the SA3 engine contract's names and shapes (SA3_CONTRACTS
section 2), so no backend can tell it from the real text encoder."""

from __future__ import annotations

import numpy as np

from engines.constants import TEXT_HIDDEN, TEXT_TOKENS
from engines.demo import layout as lay
from engines.demo.graph_builder import GraphBuilder, f32_info
from engines.lazy import lazy_import

onnx = lazy_import("onnx")
helper = lazy_import("onnx.helper")


def text_encoder_model(embeddings: np.ndarray, bigrams: np.ndarray) -> onnx.ModelProto:
    """Embedding lookup; spelled-out pieces (letters, bytes) take the texture of their letter
    pair, so made-up words sound distinct rather than like an average of the alphabet."""
    g = GraphBuilder("demo_t5")
    table = g.const(embeddings, hint="embedding")
    hidden = g.op("Gather", table, "input_ids", axis=0)  # (1, 256, 768)
    previous = g.op("Concat", g.const([[0]], np.int64),
                    g.slice("input_ids", [0], [-1], [1]), axis=1)
    bucket = g.op("Mod", g.add(g.mul(previous, g.const(7919, np.int64)),
                               g.mul("input_ids", g.const(104729, np.int64))),
                  g.const(lay.BIGRAM_BUCKETS, np.int64))
    pair = g.op("Gather", g.const(bigrams, hint="bigrams"), bucket, axis=0)  # (1, 256, 304)
    pair = g.op("Pad", pair, g.ints(0, 0, 0, 0, 0, TEXT_HIDDEN - bigrams.shape[1]))
    spelled = g.slice(hidden, [lay.SPELLED_DIM], [lay.SPELLED_DIM + 1], [2])
    hidden = g.add(g.mul(hidden, g.sub(g.f(1.0), spelled)), g.mul(pair, spelled))
    mask = g.op("Unsqueeze", g.op("Cast", "attention_mask", to=onnx.TensorProto.FLOAT), g.ints(-1))
    g.op("Mul", hidden, mask, out="hidden_states")
    return g.model(
        [helper.make_tensor_value_info("input_ids", onnx.TensorProto.INT64, [1, TEXT_TOKENS]),
         helper.make_tensor_value_info("attention_mask", onnx.TensorProto.INT64, [1, TEXT_TOKENS])],
        [f32_info("hidden_states", [1, TEXT_TOKENS, TEXT_HIDDEN])],
        "Demo text encoder (procedural, not Stable Audio 3): embedding lookup.",
    )
