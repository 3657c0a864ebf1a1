"""Adapters end to end on the demo set (ONNX Runtime, any CPU): the shipped demo adapters change
the sound the way their names say, strength 0 or switched off is the plain take to the sample,
and the demo set carries its branch DiT, map and bases."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors import safe_open

from engines import demo
from engines.adapters import stack_cache
from engines.adapters.branch_files import branch_files
from engines.adapters.branch_map import load_branch_map
from engines.adapters.choice import AdapterChoice
from engines.catalog import Catalog
from engines.demo.demo_adapters import BRIGHT, DARK, demo_adapter_path, write_demo_adapters
from engines.demo.dit_linears import demo_branch_map
from engines.errors import BackendError
from engines.generator import Generator
from engines.request import GenerationRequest
from tests.adapter_reference import random_layer, write_native


@pytest.fixture(scope="module")
def generator(models):
    gen = Generator(Catalog(models))
    yield gen
    gen.close()


def _take(generator, *adapters: AdapterChoice):
    request = GenerationRequest(prompt="rain on a tin roof", model="demo", seconds=3.0,
                                steps=6, seed=11, adapters=adapters)
    return generator.generate(request)


def _centroid_hz(pcm: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(pcm.astype(np.float64).mean(axis=1)))
    freqs = np.fft.rfftfreq(pcm.shape[0], 1 / 44100)
    return float((spectrum * freqs).sum() / spectrum.sum())


def _level_db(pcm: np.ndarray, reference: np.ndarray) -> float:
    diff = pcm.astype(np.float64) - reference
    return float(10 * np.log10((diff**2).mean() / (reference.astype(np.float64) ** 2).mean()))


def test_demo_adapters_sound_brighter_and_darker(generator) -> None:
    plain = _take(generator)
    bright = _take(generator, AdapterChoice(demo_adapter_path(BRIGHT), 1.0))
    dark = _take(generator, AdapterChoice(demo_adapter_path(DARK), 1.0))
    assert _centroid_hz(bright.pcm) > 1.1 * _centroid_hz(plain.pcm)
    assert _centroid_hz(dark.pcm) < 0.9 * _centroid_hz(plain.pcm)
    assert _level_db(bright.pcm, plain.pcm) > -12 and _level_db(dark.pcm, plain.pcm) > -12
    assert bright.warnings == [] and dark.warnings == []


def test_strength_zero_or_switched_off_is_the_plain_take(generator) -> None:
    plain = _take(generator)
    bright = demo_adapter_path(BRIGHT)
    assert np.array_equal(_take(generator, AdapterChoice(bright, 0.0)).pcm, plain.pcm)
    off = _take(generator, AdapterChoice(bright, 1.0, enabled=False),
                AdapterChoice(demo_adapter_path(DARK), 0.0))
    assert np.array_equal(off.pcm, plain.pcm)
    half = _take(generator, AdapterChoice(bright, 0.5))
    full = _take(generator, AdapterChoice(bright, 1.0))
    assert _centroid_hz(plain.pcm) < _centroid_hz(half.pcm) < _centroid_hz(full.pcm)


def test_a_strength_change_reuses_the_folded_adapters(generator, monkeypatch) -> None:
    _take(generator, AdapterChoice(demo_adapter_path(BRIGHT), 1.0))
    builds = []
    real_build = stack_cache.AdapterStack.build
    monkeypatch.setattr(stack_cache.AdapterStack, "build",
                        lambda *a, **k: builds.append(1) or real_build(*a, **k))
    _take(generator, AdapterChoice(demo_adapter_path(BRIGHT), 0.3))
    assert builds == []
    _take(generator, AdapterChoice(demo_adapter_path(DARK), 0.3))
    assert builds == [1]


def test_adapters_that_blow_the_model_up_say_so(generator, tmp_path) -> None:
    rng = np.random.default_rng(0)
    layers = {key: random_layer(rng, np.eye(256, dtype=np.float32), "lora", 4, 1.0)
              for key in demo_branch_map().by_adapter_key()}
    for params in layers.values():
        params["lora_B"] = params["lora_B"] * np.float32(1e36)
    path = write_native(tmp_path / "loud.safetensors", layers, "lora", 4, 4.0)
    with pytest.raises(BackendError) as caught:
        _take(generator, AdapterChoice(path, 1.0))
    assert "adapters made the model produce invalid values" in str(caught.value)


def test_the_demo_set_has_its_branch_dit_map_and_bases(models) -> None:
    folder = demo.demo_dir(models)
    found = branch_files(folder / demo.DIT_FILE)
    assert found is not None and found.dit.name == demo.DIT_BRANCH_FILE
    assert found.bases.name == demo.DIT_BRANCH_BASES_FILE and found.bases.is_file()
    assert load_branch_map(found.map) == demo_branch_map()
    assert json.loads(found.map.read_text())["layers"]["lora::band_mean"]["A"] == \
        "loraA::band_mean"


def test_shipped_demo_adapters_are_what_the_script_makes(tmp_path) -> None:
    for made in write_demo_adapters(tmp_path):
        shipped = demo_adapter_path(made.name)
        with safe_open(str(made), "numpy") as new, safe_open(str(shipped), "numpy") as old:
            assert new.metadata() == old.metadata()
            assert "demo adapter" in new.metadata()["note"].lower()
            assert sorted(new.keys()) == sorted(old.keys())
            for key in new.keys():
                assert np.array_equal(new.get_tensor(key), old.get_tensor(key))


def test_the_branch_dit_takes_the_official_operand_inputs(models) -> None:
    import onnxruntime as ort

    path = demo.demo_dir(models) / demo.DIT_BRANCH_FILE
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    shapes = {i.name: i.shape for i in session.get_inputs()}
    for name in ("band_mean", "band_spread"):
        assert shapes[f"loraA::{name}"] == [1, "R", 256]
        assert shapes[f"loraB::{name}"] == [1, "R", 256]
        assert shapes[f"loraP::{name}"] == [1, 1, 256]
    assert shapes["lora_srow"] == [1, 1, "R"] and shapes["x"] == [1, 256, "L"]


def test_the_demo_bases_file_holds_the_canonical_svd_of_its_weights(models) -> None:
    from engines.adapters.bases import BasesFile, canonical_svd
    from engines.demo.dit_linears import base_weights

    shipped = BasesFile(demo.demo_dir(models) / demo.DIT_BRANCH_BASES_FILE)
    for key, w0 in base_weights().items():
        u, v = canonical_svd(w0)
        got_u, got_v = shipped.get(key, 8)
        assert np.allclose(got_u, u[:, :8]) and np.allclose(got_v, v[:, :8])


def test_a_set_without_a_branch_dit_says_adapters_cannot_run(models, tmp_path) -> None:
    import shutil

    from engines.backends.onnxruntime import OnnxRuntimeBackend
    from engines.catalog.search import demo_files
    from engines.cli.words import say
    from engines.errors import ModelUnavailableError
    from engines.request import checked_request

    branch = {demo.DIT_BRANCH_FILE, demo.DIT_BRANCH_MAP_FILE, demo.DIT_BRANCH_BASES_FILE}
    for path in demo.demo_dir(models).iterdir():
        if path.name not in branch:
            shutil.copy(path, tmp_path / path.name)
    backend = OnnxRuntimeBackend(demo_files(tmp_path))
    request = checked_request(GenerationRequest(
        prompt="rain", model="demo", seconds=1.0, steps=2, seed=1,
        adapters=(AdapterChoice(demo_adapter_path(BRIGHT), 1.0),)))
    try:
        with pytest.raises(ModelUnavailableError) as caught:
            backend.generate(request)
        assert "no branch DiT" in say(caught.value) and "--lora" in say(caught.value)
        plain = backend.generate(checked_request(GenerationRequest(
            prompt="rain", model="demo", seconds=1.0, steps=2, seed=1)))
        assert plain.pcm.shape[0] > 0  # the set itself still makes takes without adapters
    finally:
        backend.close()
