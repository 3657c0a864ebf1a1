"""Adapters on the captured GPU pipeline, with a branch DiT double (needs a CUDA GPU; skipped
elsewhere): the operands live in the graph's input buffers, so a strength change, a swap and a
rank change within the engine's maximum are buffer writes followed by one replay - never another
capture - and the replay gives exactly what a fresh capture with those adapters gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines import demo
from engines.adapters.choice import AdapterChoice
from engines.backends.tensorrt.pipeline import GenerationPipeline
from engines.catalog import EngineFiles
from engines.request import GenerationRequest, validate_request
from tests.gpu_branch_doubles import small_branch_map, write_adapter, write_map

pytestmark = pytest.mark.gpu

RANK_MAX = 64


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo.ensure_demo_models(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory):
    from engines.cuda.api import ensure_context
    from tests import gpu_branch_doubles, gpu_doubles

    ensure_context()
    folder = tmp_path_factory.mktemp("nvrtc")
    mods = (gpu_doubles.load_module(folder), gpu_branch_doubles.load_module(folder))
    yield mods
    for mod in mods:
        mod.free()


@pytest.fixture(scope="module")
def stack_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("adapters")
    bmap = small_branch_map(RANK_MAX)
    made = {"map": write_map(bmap, folder / "dit_fp16_lora.json")}
    for name, rank, seed in (("a", 4, 1), ("b", 4, 2), ("c", 16, 3)):
        made[name] = write_adapter(folder / f"{name}.safetensors", bmap, rank, seed, gain=0.2)
    made["dora"] = write_adapter(folder / "dora.safetensors", bmap, 8, 4, "dora-rows", gain=0.2)
    return made


@pytest.fixture(scope="module")
def files(demo_folder: Path, stack_files) -> EngineFiles:
    # Only the tokenizer and the map are read; the doubles stand in for the engines.
    return EngineFiles(format="trt", text_encoder=demo_folder / demo.TEXT_ENCODER_FILE,
                       tokenizer=demo_folder / demo.TOKENIZER_FILE,
                       dit=demo_folder / demo.DIT_FILE, decoder=demo_folder / demo.DECODER_FILE,
                       encoder=demo_folder / demo.ENCODER_FILE, codec_tier="canonical",
                       branch_dit=demo_folder / demo.DIT_FILE, branch_map=stack_files["map"])


def make_backend(files, modules, tmp_path, loads: list | None = None):
    from engines.backends.tensorrt.backend import TensorRTBackend
    from tests.gpu_branch_doubles import BranchDitDouble
    from tests.gpu_doubles import make_runners

    module, branch_module = modules

    def load_branch(path, sm):
        if loads is not None:
            loads.append(path)
        return BranchDitDouble(module, branch_module, small_branch_map(RANK_MAX))

    return TensorRTBackend(files, kernel_cache_dir=tmp_path, load_branch=load_branch,
                           load_runners=lambda f, sm: make_runners(module))


def request(stack_files, *stack: tuple[str, float], seed: int = 5):
    choices = [AdapterChoice(stack_files[name], strength) for name, strength in stack]
    return validate_request(GenerationRequest(prompt="laser sweep", seconds=3.0, seed=seed,
                                              steps=8, adapters=choices), 380.0)


@pytest.fixture
def captures(monkeypatch) -> list:
    """Every graph capture made, of any key."""
    made: list = []
    real = GenerationPipeline.capture

    def counted(self):
        made.append(self.key)
        return real(self)

    monkeypatch.setattr(GenerationPipeline, "capture", counted)
    return made


def test_without_adapters_the_branch_engine_is_never_loaded(files, modules, tmp_path,
                                                            stack_files):
    loads: list = []
    backend = make_backend(files, modules, tmp_path, loads)
    try:
        for seed in (1, 2):
            backend.generate(request(stack_files, seed=seed))
    finally:
        backend.close()
    assert loads == [] and backend.branch is None


def test_a_zero_strength_stack_gives_the_plain_graph_output(files, modules, tmp_path,
                                                            stack_files):
    backend = make_backend(files, modules, tmp_path)
    try:
        plain = backend.generate(request(stack_files))
        zero = backend.generate(request(stack_files, ("a", 0.0), ("dora", 0.0)))
        on = backend.generate(request(stack_files, ("a", 1.0), ("dora", 1.0)))
    finally:
        backend.close()
    assert zero.details["path"] == "capture"  # the branch graph, captured once
    np.testing.assert_allclose(zero.step_latents, plain.step_latents, rtol=0, atol=1e-6)
    assert np.max(np.abs(zero.pcm.astype(int) - plain.pcm.astype(int))) <= 1
    assert not np.array_equal(on.pcm, plain.pcm)  # the double's branch really acts


def test_strength_changes_are_buffer_writes_and_one_replay(files, modules, tmp_path,
                                                           stack_files, captures):
    backend = make_backend(files, modules, tmp_path)
    try:
        full = backend.generate(request(stack_files, ("a", 1.0)))
        half = backend.generate(request(stack_files, ("a", 0.5)))
        again = backend.generate(request(stack_files, ("a", 1.0)))
        writes = (backend.branch.swaps, backend.branch.strength_writes)
    finally:
        backend.close()
    assert [r.details["path"] for r in (full, half, again)] == ["capture", "replay", "replay"]
    assert len(captures) == 1 and writes == (1, 2)
    assert not np.array_equal(half.pcm, full.pcm)
    np.testing.assert_array_equal(again.step_latents, full.step_latents)


def test_swaps_and_rank_changes_never_capture_again_and_leave_nothing_stale(
        files, modules, tmp_path, stack_files, captures):
    stacks = [(("a", 1.0),), (("b", 0.8),), (("a", 1.0), ("c", 0.6)), (("c", 0.6),),
              (("dora", 0.9),), (("b", 0.8),)]
    backend = make_backend(files, modules, tmp_path)
    try:
        results = [backend.generate(request(stack_files, *stack)) for stack in stacks]
    finally:
        backend.close()
    assert [r.details["path"] for r in results] == ["capture"] + ["replay"] * (len(stacks) - 1)
    assert len(captures) == 1
    np.testing.assert_array_equal(results[-1].step_latents, results[1].step_latents)
    # Each replay equals a fresh capture of its own stack: rows an earlier, larger stack wrote
    # and strengths an earlier DoRA left were all cleared.
    for stack, replayed in zip(stacks[2:], results[2:], strict=True):
        fresh = make_backend(files, modules, tmp_path)
        try:
            alone = fresh.generate(request(stack_files, *stack))
        finally:
            fresh.close()
        np.testing.assert_array_equal(replayed.step_latents, alone.step_latents)


def test_rows_beyond_a_smaller_stack_are_zero_on_the_device(modules):
    from engines.backends.tensorrt.branch_operands import BranchOperands, OperandLayer
    from engines.cuda.api import call
    from engines.cuda.stream import Stream

    stream = Stream()
    layer = OperandLayer("A", "B", "P", 8, 4)
    operands = BranchOperands([layer], 6, "float16", stream)
    try:
        rng = np.random.default_rng(0)
        big = {"A": rng.standard_normal((1, 5, 8)), "B": rng.standard_normal((1, 5, 4)),
               "P": np.full((1, 1, 4), 0.5), "lora_srow": np.ones((1, 1, 5))}
        operands.write_stack(big, 5)
        small = {"A": np.ones((1, 2, 8)), "B": np.ones((1, 2, 4)), "P": np.zeros((1, 1, 4)),
                 "lora_srow": np.full((1, 1, 2), 0.25)}
        operands.write_stack(small, 2)
        stream.synchronize()
        got = {}
        for name, shape in operands.shapes().items():
            host = np.empty(shape, np.float16)
            call("cuMemcpyDtoH", host.ctypes.data, operands.addresses()[name], host.nbytes)
            got[name] = host.astype(np.float32)
    finally:
        operands.free()
        stream.free()
    np.testing.assert_array_equal(got["A"][0, :2], 1.0)
    np.testing.assert_array_equal(got["A"][0, 2:], 0.0)
    np.testing.assert_array_equal(got["B"][0, 2:], 0.0)
    np.testing.assert_array_equal(got["lora_srow"][0, 0], [0.25, 0.25, 0, 0, 0, 0])
    np.testing.assert_array_equal(got["P"], 0.0)


def test_the_gpu_fold_of_dora_rescales_matches_the_engine_core(files, modules, tmp_path,
                                                               stack_files):
    from engines.adapters.stack import AdapterStack
    from engines.cuda.api import call

    backend = make_backend(files, modules, tmp_path)
    try:
        backend.generate(request(stack_files, ("a", 0.4), ("dora", 0.8)))
        changed = backend.generate(request(stack_files, ("a", 0.4), ("dora", 0.3)))
        assert changed.details["path"] == "replay" and backend.branch.strength_writes == 1
        operands = backend.branch.operands
        operands.stream.synchronize()
        got = {}
        for name, address in operands.addresses().items():
            if name.startswith("loraP::"):
                host = np.empty(operands.shapes()[name], np.float16)
                call("cuMemcpyDtoH", host.ctypes.data, address, host.nbytes)
                got[name] = host.astype(np.float32)
    finally:
        backend.close()
    choices = [AdapterChoice(stack_files["a"], 0.4), AdapterChoice(stack_files["dora"], 0.3)]
    reference = AdapterStack.build(choices, small_branch_map(RANK_MAX)).strength_operands(
        dtype=np.float16, all_layers=True)
    assert got and set(got) <= set(reference)
    for name, value in got.items():
        # fp32 sums in another order, then float16: at most one float16 step apart.
        np.testing.assert_allclose(value, reference[name].astype(np.float32), rtol=1e-3,
                                   atol=1e-7)
