"""Reading adapter files, and every refusal and warning the official branch runtime has, each
one sentence with its remedy in the command line's words."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from engines.adapters.choice import AdapterChoice
from engines.adapters.errors import AdapterError
from engines.adapters.files import check_servable, read_adapter, read_adapter_info
from engines.adapters.stack import AdapterStack
from engines.cli.words import say
from engines.demo.dit_linears import base_weights, demo_bases, demo_branch_map
from tests.adapter_reference import random_layer, write_native

SECONDS_EMBEDDER = "conditioners.seconds_total.embedder.embedding.1"
MEDIUM_LAYER = "model.transformer.layers.0.ff.ff.2"


def _adapter(tmp_path: Path, name: str, variant: str = "lora", rank: int = 4, seed: int = 0,
             extra: dict | None = None, spread: float = 0.05, alpha: float | None = None,
             **edits) -> Path:
    rng = np.random.default_rng(seed)
    alpha = float(rank) if alpha is None else alpha
    layers = {key: random_layer(rng, w0, variant, rank, alpha / rank, spread)
              for key, w0 in base_weights().items()}
    for params in layers.values():
        for param, edit in edits.items():
            params[param] = edit(params[param]) if callable(edit) else edit
    layers.update(extra or {})
    return write_native(tmp_path / name, layers, variant, rank, alpha)


def _build(*paths_and_strengths) -> AdapterStack:
    choices = [AdapterChoice(p, s) for p, s in paths_and_strengths]
    return AdapterStack.build(choices, demo_branch_map(), demo_bases())


def _one_sentence(exc: BaseException) -> str:
    text = say(exc)
    assert text.count(". ") == 0 and text.endswith("."), text
    return text


def test_info_names_the_file_its_hash_variant_and_rank(tmp_path) -> None:
    path = _adapter(tmp_path, "warm.safetensors", "dora-rows", rank=6, alpha=12.0)
    info = read_adapter_info(path)
    assert (info.file_name, info.variant, info.rank, info.format) == \
        ("warm.safetensors", "dora-rows", 6, "sa3")
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert info.scaling == pytest.approx(2.0) and info.baked_norms and info.served
    assert set(info.layer_keys) == set(base_weights())


def test_peft_adapters_and_bf16_tensors_are_read(tmp_path) -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 256)).astype(np.float32)
    bits = (a.view(np.uint32) >> 16).astype(np.uint16)  # bf16 by truncation
    tensors = {"base_model.model.model.demo.band_mean.lora_B.weight":
               rng.standard_normal((256, 8)).astype(np.float32)}
    folder = tmp_path / "peft"
    folder.mkdir()
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    # safetensors' numpy API has no bfloat16: write the A tensor's header entry by hand.
    raw = (folder / "adapter_model.safetensors").read_bytes()
    header_len = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + header_len])
    body = raw[8 + header_len :]
    header["base_model.model.model.demo.band_mean.lora_A.weight"] = {
        "dtype": "BF16", "shape": [8, 256], "data_offsets": [len(body), len(body) + bits.nbytes]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    (folder / "adapter_model.safetensors").write_bytes(
        len(text).to_bytes(8, "little") + text + body + bits.tobytes())
    (folder / "adapter_config.json").write_text(json.dumps(
        {"r": 8, "lora_alpha": 16, "use_rslora": True, "use_dora": False}))
    adapter = read_adapter(folder)
    assert (adapter.info.format, adapter.info.variant, adapter.info.rank) == ("peft", "lora", 8)
    assert adapter.info.scaling == pytest.approx(16 / np.sqrt(8))
    widened = adapter.layers["model.demo.band_mean"]["lora_A"]
    assert np.allclose(widened, a, rtol=1e-2) and widened.dtype == np.float32


@pytest.mark.parametrize("name, content", [
    ("style.pt", b"\x80\x04pickle"),
    ("style.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!"),
])
def test_pickles_and_damaged_files_are_refused(tmp_path, name, content) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(AdapterError) as caught:
        read_adapter_info(path)
    assert "--lora FILE" in _one_sentence(caught.value) and name in str(caught.value)


def test_a_file_without_adapter_tensors_is_refused(tmp_path) -> None:
    path = tmp_path / "weights.safetensors"
    save_file({"model.demo.band_mean.weight": np.eye(4, dtype=np.float32)}, str(path))
    with pytest.raises(AdapterError, match="not a LoRA adapter"):
        read_adapter_info(path)


@pytest.mark.parametrize("variant", ["dora-cols", "dora-cols-xs", "bora", "bora-xs"])
def test_variants_the_branch_cannot_serve_are_refused_with_the_reason(tmp_path, variant) -> None:
    rng = np.random.default_rng(0)
    params = {"M_xs" if variant.endswith("xs") else "lora_A": rng.standard_normal((4, 4)),
              "magnitude_r" if variant.startswith("bora") else "magnitude": np.ones(256)}
    path = write_native(tmp_path / "cols.safetensors",
                        {"model.demo.band_mean": {k: np.asarray(v, np.float32)
                                                  for k, v in params.items()}}, variant, 4, 4.0)
    info = read_adapter_info(path)
    assert info.variant == variant and not info.served
    with pytest.raises(AdapterError) as caught:
        check_servable(info)
    text = _one_sentence(caught.value)
    assert "per input column" in text and variant in text and "--lora FILE" in text
    with pytest.raises(AdapterError):
        _build((path, 1.0))


def test_a_dora_without_baked_row_norms_is_refused(tmp_path) -> None:
    path = _adapter(tmp_path, "raw.safetensors", "dora-rows")
    layers = read_adapter(path).layers
    for params in layers.values():
        params.pop("baked_vnorm_row")
    raw = write_native(tmp_path / "unbaked.safetensors", layers, "dora-rows", 4, 4.0)
    with pytest.raises(AdapterError) as caught:
        _build((raw, 1.0))
    assert "without baked row norms" in _one_sentence(caught.value)


def test_a_stack_over_the_engines_maximum_rank_is_refused(tmp_path) -> None:
    first = _adapter(tmp_path, "a.safetensors", rank=40)
    second = _adapter(tmp_path, "b.safetensors", rank=40, seed=1)
    assert _build((first, 1.0)).rank == 40
    with pytest.raises(AdapterError) as caught:
        _build((first, 1.0), (second, 0.5))
    text = _one_sentence(caught.value)
    assert "stacked rank 80" in text and "maximum of 64" in text and "--lora" in text


def test_the_seconds_embedder_is_dropped_with_a_warning(tmp_path) -> None:
    extra = {SECONDS_EMBEDDER: {"lora_A": np.ones((4, 256), np.float32),
                                "lora_B": np.ones((768, 4), np.float32)}}
    path = _adapter(tmp_path, "dur.safetensors", extra=extra)
    clean = _adapter(tmp_path, "clean.safetensors")
    stack = _build((path, 1.0))
    assert len(stack.warnings) == 1 and SECONDS_EMBEDDER in stack.warnings[0]
    assert "ignored" in stack.warnings[0]
    # Dropped entirely: the operands are those of the same adapter without that layer.
    for name, value in _build((clean, 1.0)).operands().items():
        assert np.array_equal(stack.operands()[name], value)


def test_layers_this_engine_has_no_branch_for_are_ignored_with_a_warning(tmp_path) -> None:
    extra = {MEDIUM_LAYER: {"lora_A": np.ones((4, 6144), np.float32),
                            "lora_B": np.ones((1536, 4), np.float32)}}
    stack = _build((_adapter(tmp_path, "mixed.safetensors", extra=extra), 1.0))
    assert stack.warnings == [
        "1 of the 3 layers the adapter 'mixed.safetensors' adapts have no branch in this engine "
        "and are ignored, so it may not sound as trained."]


def test_an_adapter_for_another_model_is_refused(tmp_path) -> None:
    only_medium = {MEDIUM_LAYER: {"lora_A": np.ones((4, 6144), np.float32),
                                  "lora_B": np.ones((1536, 4), np.float32)}}
    path = write_native(tmp_path / "medium.safetensors", only_medium, "lora", 4, 4.0)
    with pytest.raises(AdapterError, match="adapts none of this model's layers"):
        _build((path, 1.0))
    misfit = _adapter(tmp_path, "narrow.safetensors",
                      lora_A=np.ones((4, 128), np.float32))
    with pytest.raises(AdapterError, match="does not fit this model's layer"):
        _build((misfit, 1.0))


def test_dora_stacks_that_flip_the_base_weights_sign_are_warned_about(tmp_path) -> None:
    def overfit(magnitude):
        return magnitude * 0.0 + 0.2  # row norms are ~1 on the demo: c ~ 0.2

    first = _adapter(tmp_path, "over1.safetensors", "dora-rows", magnitude=overfit)
    second = _adapter(tmp_path, "over2.safetensors", "dora-rows", seed=1, magnitude=overfit)
    assert _build((first, 1.0)).warnings == []  # one alone keeps 1 + (c - 1) = c > 0
    stack = _build((first, 1.0), (second, 1.0))
    assert len(stack.warnings) == 1
    text = _one_sentence(stack.warnings[0])
    assert "sign-flipped" in text and "--lora FILE:STRENGTH" in text
    assert stack.with_strengths([0.3, 0.3]).warnings == []  # gentle strengths keep the base


def test_non_finite_operands_are_refused(tmp_path) -> None:
    bad = _adapter(tmp_path, "inf.safetensors", lora_B=lambda b: b * np.float32(np.inf))
    with pytest.raises(AdapterError) as caught:
        _build((bad, 1.0))
    assert "not finite" in _one_sentence(caught.value)
    huge = _adapter(tmp_path, "huge.safetensors", lora_B=lambda b: b * np.float32(1e7))
    stack = _build((huge, 1.0))  # finite in float32 ...
    with pytest.raises(AdapterError, match="not finite"):
        stack.operands(dtype=np.float16)  # ... but an fp16 engine would overflow


def test_xs_adapters_need_their_models_frozen_bases(tmp_path) -> None:
    path = _adapter(tmp_path, "xs.safetensors", "lora-xs")
    assert _build((path, 1.0)).rank == 4
    with pytest.raises(AdapterError, match="frozen SVD bases"):
        AdapterStack.build([AdapterChoice(path, 1.0)], demo_branch_map(), None)


def test_missing_files_are_refused(tmp_path) -> None:
    with pytest.raises(AdapterError, match="does not exist"):
        read_adapter_info(tmp_path / "nowhere.safetensors")
