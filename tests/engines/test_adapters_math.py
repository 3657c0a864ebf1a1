"""Adapter math against the exact merged-weight reference (tests/adapter_reference.py, written
from SA3's own variant definitions): the fold alone in numpy on a random base weight, and the
demo DiT's branch graph on ONNX Runtime against the plain graph with the merged weights put in."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from engines.adapters.bases import BasesFromWeights
from engines.adapters.branch_map import BranchLayer, BranchMap
from engines.adapters.choice import AdapterChoice
from engines.adapters.stack import AdapterStack
from engines.catalog.search import demo_files
from engines.demo import demo_dir
from engines.demo.dit_graph import dit_model
from engines.demo.dit_linears import LinearForm, base_weights, demo_bases, demo_branch_map
from engines.tokenizer import PromptTokenizer
from tests.adapter_reference import random_layer, stacked_weight, write_native

# (variant, rank, alpha, strength): every variant the branch serves, ranks that differ.
STACK = [("lora", 3, 6.0, 0.8), ("dora-rows", 5, 5.0, 0.5), ("lora-xs", 4, 4.0, 1.3),
         ("dora-rows-xs", 2, 4.0, 0.6)]


def _stack_files(tmp_path, weights: dict[str, np.ndarray], spread: float = 0.05):
    """Write the STACK's adapters for the layers in `weights`; (choices, reference terms)."""
    rng = np.random.default_rng(35)
    choices, terms = [], {key: [] for key in weights}
    for i, (variant, rank, alpha, strength) in enumerate(STACK):
        scaling = alpha / rank
        layers = {key: random_layer(rng, w0, variant, rank, scaling, spread)
                  for key, w0 in weights.items()}
        path = write_native(tmp_path / f"a{i}-{variant}.safetensors", layers, variant, rank,
                            alpha)
        choices.append(AdapterChoice(path, strength))
        for key in weights:
            terms[key].append((layers[key], variant, scaling, strength))
    return choices, terms


def _branch_weight(stack: AdapterStack, layer: BranchLayer, w0: np.ndarray, rank=None):
    """The weight the branch computes: W0.(1 + P) + Bp.diag(srow).A, from the operands."""
    ops = stack.operands(rank)
    a, bt = ops[layer.a_input][0].astype(np.float64), ops[layer.b_input][0].astype(np.float64)
    srow = ops["lora_srow"][0, 0].astype(np.float64)
    pout = ops[layer.p_input][0, 0].astype(np.float64)
    return w0 * (1.0 + pout)[:, None] + bt.T @ (srow[:, None] * a)


def test_fold_of_every_served_variant_equals_the_exact_merge(tmp_path) -> None:
    rng = np.random.default_rng(7)
    w0 = rng.standard_normal((24, 16)).astype(np.float32)  # a real SVD, not the identity
    layer = BranchLayer("lora::x", 16, 24, "model.x", "loraA::x", "loraB::x", "loraP::x")
    bmap = BranchMap({layer.name: layer}, rank_max=32)
    choices, terms = _stack_files(tmp_path, {"model.x": w0}, spread=0.2)
    stack = AdapterStack.build(choices, bmap, BasesFromWeights({"model.x": w0}))
    want = stacked_weight(w0, terms["model.x"])
    got = _branch_weight(stack, layer, w0.astype(np.float64))
    assert stack.rank == sum(rank for _, rank, _, _ in STACK)
    assert np.linalg.norm(want - w0) > 0.1 * np.linalg.norm(w0)  # the adapters do something
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-6


def test_a_strength_change_writes_only_srow_and_the_dora_rescales(tmp_path) -> None:
    rng = np.random.default_rng(8)
    w0 = rng.standard_normal((24, 16)).astype(np.float32)
    layer = BranchLayer("lora::x", 16, 24, "model.x", "loraA::x", "loraB::x", "loraP::x")
    bmap = BranchMap({layer.name: layer}, rank_max=32)
    choices, terms = _stack_files(tmp_path, {"model.x": w0}, spread=0.2)
    stack = AdapterStack.build(choices, bmap, BasesFromWeights({"model.x": w0}))
    strengths = [0.1, 2.0, 0.0, 1.0]
    moved = stack.with_strengths(strengths)
    written = moved.strength_operands()
    assert set(written) == {"lora_srow", "loraP::x"}
    # The packed form an engine may write in one copy holds the same P, where its layout says.
    (name, offset, rows), = moved.rescale_layout
    assert np.array_equal(moved.packed_rescales()[offset : offset + rows], written[name][0, 0])
    factors = moved.rescale_factors()[name]
    assert np.allclose(np.asarray(strengths, np.float32) @ factors, written[name][0, 0])
    assert all(np.array_equal(moved.operands()[k], stack.operands()[k])
               for k in ("loraA::x", "loraB::x"))
    want = stacked_weight(w0, [(p, v, s, k) for (p, v, s, _), k in
                               zip(terms["model.x"], strengths, strict=True)])
    got = _branch_weight(moved, layer, w0.astype(np.float64))
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-6


@pytest.fixture(scope="module")
def dit_inputs(models):
    """Real DiT inputs of the demo: a prompt's hidden states, a noisy latent at t = 0.6."""
    files = demo_files(demo_dir(models))
    tokens = PromptTokenizer(files.tokenizer).encode("warm rain on a tin roof")
    text = ort.InferenceSession(str(files.text_encoder), providers=["CPUExecutionProvider"])
    hidden = text.run(["hidden_states"], {"input_ids": tokens.input_ids,
                                          "attention_mask": tokens.attention_mask})[0]
    length = 40
    rng = np.random.default_rng(1)
    return {"x": rng.standard_normal((1, 256, length)).astype(np.float32),
            "t": np.array([0.6], np.float32), "t5_hidden": hidden.astype(np.float32),
            "t5_mask": tokens.attention_mask.astype(np.float32),
            "seconds_total": np.array([length * 4096 / 44100], np.float32),
            "local_add_cond": np.zeros((1, 257, length), np.float32)}


def _velocity(form: LinearForm, feeds: dict) -> np.ndarray:
    session = ort.InferenceSession(dit_model(form).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    return session.run(["velocity"], {k: v for k, v in feeds.items() if k in names})[0]


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


def test_demo_branch_graph_equals_the_plain_graph_with_merged_weights(tmp_path,
                                                                      dit_inputs) -> None:
    choices, terms = _stack_files(tmp_path, base_weights())
    stack = AdapterStack.build(choices, demo_branch_map(), demo_bases())
    merged = {key: stacked_weight(w0, terms[key]).astype(np.float32)
              for key, w0 in base_weights().items()}
    reference = _velocity(LinearForm("merged", merged), dit_inputs)
    plain = _velocity(LinearForm(), dit_inputs)
    branch = _velocity(LinearForm("branch"), {**dit_inputs, **stack.operands()})
    assert _relative(plain, reference) > 1e-2  # the stack changes the model's output
    assert _relative(branch, reference) < 1e-5


def test_zero_strength_stack_and_rank_padding_change_nothing(tmp_path, dit_inputs) -> None:
    choices, _ = _stack_files(tmp_path, base_weights())
    stack = AdapterStack.build(choices, demo_branch_map(), demo_bases())
    plain = _velocity(LinearForm(), dit_inputs)
    silent = stack.with_strengths([0.0] * len(choices))
    branch = _velocity(LinearForm("branch"), {**dit_inputs, **silent.operands()})
    assert np.array_equal(branch, plain)
    own = _velocity(LinearForm("branch"), {**dit_inputs, **stack.operands()})
    padded = _velocity(LinearForm("branch"), {**dit_inputs, **stack.operands(rank=64)})
    assert _relative(padded, own) < 1e-6
