"""Generator keeps at most `max_loaded` backends: the least recently used goes first, and it
is freed before the new one loads. Fake backends record loads and frees; no real model runs.

Also the progress and cancel contract of engines.backends.base as the TensorRT backend keeps
it (with its loading and graph replaced by stand-ins), and the window's Cancel words."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.generate.controller import cancel_words
from engines.backends.tensorrt import backend as trt_module
from engines.backends.tensorrt.pipeline_data import PipelineOutputs
from engines.catalog import Availability, EngineFiles
from engines.errors import CancelledError
from engines.generation_result import GenerationResult
from engines.generator import Generator
from engines.request import GenerationRequest, validate_request

# Three model sets stand for three large text encoder + DiT sets.
SETS = {"A": "medium", "B": "sm-sfx", "C": "sm-music"}


def files_for(model: str) -> EngineFiles:
    root = Path("/fake") / model
    return EngineFiles(format="onnx", text_encoder=root / "text.onnx", tokenizer=root / "tok",
                       dit=root / "dit.onnx", decoder=root / "decoder.onnx", encoder=None,
                       codec_tier="canonical")


class FakeCatalog:
    """Answers every request with its model set's own (fake) files."""

    gpu = None

    def require(self, model, decoder=None, precision=None, backend="auto", need_encoder=False,
                codec_tier=None) -> Availability:
        return Availability(model=model, decoder=decoder or "same-l", precision="fp16",
                            backend="onnxruntime", runnable=True, files=files_for(model))

    def require_choice(self, choice, backend: str) -> Availability:
        """What Generator asks for a checked request: the same answer."""
        return self.require(choice.model.key, choice.decoder, choice.precision, backend)


class Ledger:
    """What happened, in order: ("load", model) and ("free", model); and the most loaded."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.loaded: set[str] = set()
        self.peak = 0

    def make(self, name: str, files: EngineFiles) -> FakeBackend:
        model = files.dit.parent.name
        self.events.append(("load", model))
        self.loaded.add(model)
        self.peak = max(self.peak, len(self.loaded))
        return FakeBackend(self, model, files)


class FakeBackend:
    name = "onnxruntime"

    def __init__(self, ledger: Ledger, model: str, files: EngineFiles) -> None:
        self.ledger, self.model, self.files = ledger, model, files

    def use_codec(self, files: EngineFiles) -> None:
        self.files = files

    def generate(self, request, progress=None, cancel=None) -> GenerationResult:
        assert self.model in self.ledger.loaded, "generated on a freed backend"
        return GenerationResult(
            pcm=np.zeros((1024, 2), np.int16), latents=np.zeros((256, 1), np.float32),
            step_latents=np.zeros((1, 256, 1), np.float32), seed=request.seed,
            timings_ms={"total": 1.0}, backend=self.name, request=request, files=self.files)

    def decode_latents(self, latents, request, files):
        raise NotImplementedError

    def close(self) -> None:
        self.ledger.events.append(("free", self.model))
        self.ledger.loaded.discard(self.model)


def switch(max_loaded: int, order: str) -> Ledger:
    ledger = Ledger()
    generator = Generator(FakeCatalog(), max_loaded=max_loaded, make_backend=ledger.make)
    for letter in order:
        generator.generate(GenerationRequest(prompt="rain", model=SETS[letter], seconds=1.0,
                                             seed=1))
    generator.close()
    return ledger


def test_the_least_recently_used_set_is_evicted_and_the_limit_holds() -> None:
    ledger = switch(2, "ABAC")
    a, b, c = SETS["A"], SETS["B"], SETS["C"]
    # A was used after B, so C replaces B; A is never loaded twice.
    assert ledger.events[:4] == [("load", a), ("load", b), ("free", b), ("load", c)]
    assert ledger.peak == 2


def test_the_oldest_goes_not_the_newest() -> None:
    ledger = switch(2, "ABCB")
    a, b, c = SETS["A"], SETS["B"], SETS["C"]
    # C replaces A (used longest ago), so going back to B loads nothing.
    assert ledger.events[:4] == [("load", a), ("load", b), ("free", a), ("load", c)]
    assert [e for e in ledger.events if e[0] == "load"] == [("load", a), ("load", b),
                                                           ("load", c)]


def test_a_use_keeps_a_set_loaded_across_many_switches() -> None:
    ledger = switch(2, "ABABAB")
    assert [e for e in ledger.events if e[0] == "load"] == [("load", SETS["A"]),
                                                           ("load", SETS["B"])]
    assert ledger.peak == 2


@pytest.mark.parametrize("order", ["AB", "ABA", "ABCA"])
def test_with_room_for_one_the_old_set_is_freed_before_the_new_loads(order: str) -> None:
    ledger = switch(1, order)
    loads_and_frees = ledger.events[:-1]  # the last free is Generator.close()
    expected = [("load", SETS[order[0]])]
    for before, after in zip(order, order[1:], strict=False):
        expected += [("free", SETS[before]), ("load", SETS[after])]
    assert loads_and_frees == expected
    assert ledger.peak == 1


def test_close_frees_every_loaded_set() -> None:
    ledger = switch(2, "AB")
    assert ledger.loaded == set()
    assert sorted(e for e in ledger.events if e[0] == "free") == sorted(
        [("free", SETS["A"]), ("free", SETS["B"])])


# ---------------------------------------------------------------- progress and cancel contract
# engines.backends.base says what each backend reports and where it looks at cancel; the
# window's Cancel words must say the same.

class _Graph:
    """Stands in for the one enqueue of a TensorRT take (graph replay or eager run)."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self, cache, key, factory, inputs):
        self.runs += 1
        out = PipelineOutputs(pcm=np.zeros((1024, 2), np.int16),
                              step_latents=np.zeros((4, 256, 1), np.float32),
                              gpu_ms={"text": 1.0, "encode": 1.0, "sample": 1.0, "decode": 1.0,
                                      "total": 4.0}, nonfinite=False)
        return out, "replay"


@pytest.fixture
def trt(monkeypatch):
    """A TensorRTBackend with no GPU: loading and the enqueue are stand-ins."""
    graph = _Graph()
    monkeypatch.setattr(trt_module, "PromptTokenizer", lambda path: None)
    monkeypatch.setattr(trt_module, "run_generation", graph)
    monkeypatch.setattr(trt_module, "resident_vram_bytes", lambda: None)
    backend = trt_module.TensorRTBackend(files_for("medium"), kernel_cache_dir=Path("/fake"))
    loads: list[str] = []
    monkeypatch.setattr(backend, "_activate", lambda: loads.append("load"))
    monkeypatch.setattr(backend, "inputs_for", lambda req, warnings: None)
    monkeypatch.setattr(backend, "key_for", lambda req: None)
    backend.scratch, backend.cache = None, {}
    return backend, graph, loads


def _request(**extra):
    return validate_request(GenerationRequest(prompt="rain", seconds=1.0, seed=1, steps=4,
                                              **extra), 10.0)


@pytest.mark.parametrize(("extra", "stages"), [
    ({}, ["sample", "text", "sample", "decode"]),
    ({"init_audio": np.zeros((44100, 2), np.float32), "init_noise_level": 0.5},
     ["sample", "text", "encode", "sample", "decode"])])
def test_tensorrt_reports_one_start_then_every_stage_end_in_order(trt, extra, stages) -> None:
    backend, graph, _ = trt
    seen: list[tuple[str, int, int]] = []
    backend.generate(_request(**extra), progress=lambda *p: seen.append(p))
    assert [p[0] for p in seen] == stages
    assert seen[0] == ("sample", 0, 4) and seen[-2:] == [("sample", 4, 4), ("decode", 1, 1)]
    assert graph.runs == 1


def test_tensorrt_looks_at_cancel_before_loading_and_before_the_enqueue_only(trt) -> None:
    backend, graph, loads = trt
    with pytest.raises(CancelledError):
        backend.generate(_request(), cancel=lambda: True)
    assert loads == [] and graph.runs == 0
    asked: list[int] = []

    def cancel_once_loaded() -> bool:
        asked.append(len(loads))
        return bool(loads)

    with pytest.raises(CancelledError):
        backend.generate(_request(), cancel=cancel_once_loaded)
    assert loads == ["load"] and graph.runs == 0
    asked.clear()
    backend.generate(_request(), cancel=lambda: asked.append(1) or False)
    assert len(asked) == 2 and graph.runs == 1  # never during the take


def test_the_windows_cancel_words_follow_the_backend() -> None:
    assert cancel_words("onnxruntime") == "Cancelling after the current step..."
    trt_words = cancel_words("tensorrt")
    assert "current step" not in trt_words and "take under way" in trt_words
    unknown = cancel_words(None)
    assert "current step" in unknown and "graphics card" in unknown
    assert "TensorRT" not in trt_words + unknown  # the status bar speaks plainly
