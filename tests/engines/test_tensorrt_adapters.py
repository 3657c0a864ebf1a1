"""The adapter path on TensorRT without a GPU: the branch engine found beside a set's engines (and
refused where it is missing), its map checked against the engine's inputs, the stacked-rank
maximum read from the engine's profile, and which buffer writes a stack change makes (a strength
change writes the strengths only; a file change the whole stack; nothing is captured again)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.adapters.choice import AdapterChoice
from engines.adapters.errors import AdapterError
from engines.backends.tensorrt import branch_dit
from engines.backends.tensorrt.branch_dit import BranchDit, check_branch_engine
from engines.backends.tensorrt.engine import TrtEngine
from engines.backends.tensorrt.engine_error import EngineError
from engines.backends.tensorrt.tensor_spec import TensorSpec
from engines.catalog import Catalog, get_model_set
from engines.catalog.search import Choice
from engines.errors import ModelUnavailableError
from engines.gpu import GpuInfo
from tests import fake_tensorrt
from tests.fake_tensorrt import make_engine_bytes
from tests.gpu_branch_doubles import small_branch_map, write_adapter

H200 = GpuInfo("NVIDIA H200", 9, 0, 141 * 2**30, "12.8")
TRT = "10.15.1.29"


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return path


def trt_set(root: Path, branch: bool = True, map_name: str = "branch_map_medium_lora.json"
            ) -> Path:
    base = root / "sm_90"
    for rel in ("t5gemma/t5gemma_fp16mixed.trt", "t5gemma/tokenizer.json", "sa3-m/dit_fp16.trt",
                "same-l/dec_fp16_chunkable_limiter.trt", "same-l/enc_fp16_chunkable.trt"):
        touch(base / rel)
    if branch:
        touch(base / "sa3-m" / "dit_fp16_lora.trt")
        touch(base / "sa3-m" / map_name)
    return base


def catalog(root: Path, extra: tuple[Path, ...] = ()) -> Catalog:
    return Catalog(root, extra_roots=extra, gpu=H200, tensorrt_version=TRT,
                   onnxruntime_available=True)


def choice(adapters: bool, precision: str = "fp16") -> Choice:
    return Choice(get_model_set("medium"), "same-l", precision, False, None, adapters)


# ---- the catalog -----------------------------------------------------------------------------

def test_a_set_with_adapters_selects_the_branch_engine_and_its_official_map(tmp_path):
    base = trt_set(tmp_path)
    found = catalog(tmp_path).require_choice(choice(adapters=True), "tensorrt")
    assert found.files.branch_dit == base / "sa3-m" / "dit_fp16_lora.trt"
    assert found.files.branch_map == base / "sa3-m" / "branch_map_medium_lora.json"
    assert found.files.dit == base / "sa3-m" / "dit_fp16.trt"  # takes without adapters


def test_the_map_named_after_the_engine_is_found_too(tmp_path):
    base = trt_set(tmp_path, map_name="dit_fp16_lora.json")
    found = catalog(tmp_path).require_choice(choice(adapters=True), "tensorrt")
    assert found.files.branch_map == base / "sa3-m" / "dit_fp16_lora.json"


def test_an_official_install_added_as_a_folder_serves_its_branch_engine(tmp_path):
    trt_set(tmp_path / "ours", branch=False)
    official = tmp_path / "official" / "models"  # models/<arch>/<slug>/ as build_branch writes
    touch(official / "sm_90" / "sa3-m" / "dit_fp16_lora.trt")
    touch(official / "sm_90" / "sa3-m" / "branch_map_medium_lora.json")
    found = catalog(tmp_path / "ours", (official,)).require_choice(choice(True), "tensorrt")
    assert found.files.branch_dit == official / "sm_90" / "sa3-m" / "dit_fp16_lora.trt"


def test_an_engine_without_its_map_is_not_a_branch_engine(tmp_path):
    base = trt_set(tmp_path, branch=False)
    touch(base / "sa3-m" / "dit_fp16_lora.trt")
    plain = catalog(tmp_path).require_choice(choice(adapters=False), "tensorrt")
    assert plain.files.branch_dit is None
    with pytest.raises(ModelUnavailableError) as err:
        catalog(tmp_path).require_choice(choice(adapters=True), "tensorrt")
    message = str(err.value)
    assert "branch_map_medium_lora.json" in message and "dit_fp16_lora.trt" in message
    assert "build_branch.py" in message and message.count(". ") == 0


def test_takes_without_adapters_run_where_the_branch_engine_is_missing(tmp_path):
    trt_set(tmp_path, branch=False)
    found = catalog(tmp_path).require_choice(choice(adapters=False), "tensorrt")
    assert found.runnable and found.files.branch_dit is None


def test_adapters_at_another_precision_are_refused_with_the_precision_to_choose(tmp_path):
    base = trt_set(tmp_path)
    touch(base / "sa3-m" / "dit_fp32.trt")
    with pytest.raises(ModelUnavailableError) as err:
        catalog(tmp_path).require_choice(choice(True, "fp32"), "tensorrt")
    assert "fp16 branch engine" in str(err.value)
    assert [r.values for r in err.value.args[0].remedies] == [("fp16",)]


def test_list_models_says_whether_the_branch_engine_is_there(tmp_path):
    trt_set(tmp_path)
    lines = [str(line) for line in catalog(tmp_path).format_lines()]
    medium = next(line for line in lines if line.startswith("medium") and "tensorrt" in line)
    assert "adapters: branch engine dit_fp16_lora.trt" in medium
    trt_set(tmp_path / "bare", branch=False)
    lines = [str(line) for line in catalog(tmp_path / "bare").format_lines()]
    medium = next(line for line in lines if line.startswith("medium") and "tensorrt" in line)
    assert "adapters: no branch engine dit_fp16_lora.trt" in medium


# ---- the engine and its map ------------------------------------------------------------------

def branch_io(bmap, rank_max: int, drop: str | None = None, extra: str | None = None
              ) -> list[dict]:
    io = [{"name": "x", "mode": "INPUT", "dtype": "FLOAT", "shape": [1, 256, -1],
           "profile": [[1, 256, 1], [1, 256, 1292], [1, 256, 4096]]},
          {"name": "velocity", "mode": "OUTPUT", "dtype": "FLOAT", "shape": [1, 256, -1],
           "rule": {"2": ["x", 2, 1, 1]}}]
    names = [(layer.a_input, layer.in_features) for layer in bmap.layers.values()]
    names += [(layer.b_input, layer.out_features) for layer in bmap.layers.values()]
    if extra:
        names.append((extra, 256))
    for name, width in names:
        if name != drop:
            io.append({"name": name, "mode": "INPUT", "dtype": "HALF", "shape": [1, -1, width],
                       "profile": [[1, 1, width], [1, 32, width], [1, rank_max, width]]})
    for layer in bmap.layers.values():
        io.append({"name": layer.p_input, "mode": "INPUT", "dtype": "HALF",
                   "shape": [1, 1, layer.out_features]})
    io.append({"name": "lora_srow", "mode": "INPUT", "dtype": "HALF", "shape": [1, 1, -1],
               "profile": [[1, 1, 1], [1, 1, 32], [1, 1, rank_max]]})
    return io


@pytest.fixture
def trt(monkeypatch: pytest.MonkeyPatch):
    return fake_tensorrt.install(monkeypatch)


def load_branch(tmp_path: Path, io: list[dict]) -> TrtEngine:
    path = tmp_path / "sm_90" / "sa3-m" / "dit_fp16_lora.trt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(make_engine_bytes(io))
    return TrtEngine(path, gpu_sm="sm_90")


def test_the_rank_maximum_is_read_from_the_engine_profile_not_the_map(tmp_path, trt):
    bmap = small_branch_map(rank_max=512)  # the map says 512; the engine was built for 96
    engine = load_branch(tmp_path, branch_io(bmap, rank_max=96))
    assert check_branch_engine(engine.specs, bmap, engine.name, "map.json") == 96
    assert ("lora_srow", 0) in trt.STATE.engines[-1].profile_queries


@pytest.mark.parametrize(("drop", "extra", "says"), [
    ("loraA::project_in", None, "has no input 'loraA::project_in'"),
    (None, "loraA::layers.0.ff.ff.2", "lacks the engine's input 'loraA::layers.0.ff.ff.2'"),
])
def test_an_engine_and_a_map_of_two_builds_are_refused(tmp_path, trt, drop, extra, says):
    bmap = small_branch_map()
    engine = load_branch(tmp_path, branch_io(bmap, 64, drop=drop, extra=extra))
    with pytest.raises(EngineError) as err:
        check_branch_engine(engine.specs, bmap, engine.name, "branch_map_medium_lora.json")
    message = str(err.value)
    assert says in message and "do not match" in message
    assert message.endswith(".") and message.count(". ") == 0


def test_a_layer_of_another_size_is_refused(tmp_path, trt):
    bmap = small_branch_map()
    io = branch_io(bmap, 64)
    for entry in io:
        if entry["name"] == "loraB::project_in":
            entry["shape"] = [1, -1, 1024]
            entry["profile"] = [[1, 1, 1024], [1, 32, 1024], [1, 64, 1024]]
    engine = load_branch(tmp_path, io)
    with pytest.raises(EngineError, match="loraB::project_in"):
        check_branch_engine(engine.specs, bmap, engine.name, "map.json")


# ---- which writes a stack change makes ------------------------------------------------------

class RecordingOperands:
    """Stands in for the device buffers: records what BranchDit writes, in order."""

    def __init__(self, layers, rank, dtype, stream, srow_input="lora_srow", make_fold=None):
        self.rank, self.dtype, self.stream = rank, dtype, stream
        self.writes: list[tuple[str, object]] = []
        self.prepared: list[tuple[dict, dict]] = []

    def prepare(self, operands, rank, dora_rows=None):
        self.prepared.append((dict(operands), dict(dora_rows or {})))
        return _Prepared(rank)

    def write_factors(self, prepared):
        self.writes.append(("factors", prepared.rank))

    def write_strengths(self, srow, weights, everything=False):
        self.writes.append(("everything" if everything else "strengths",
                            (np.array(srow), tuple(weights))))

    def free(self):
        pass


class _Prepared:
    def __init__(self, rank):
        self.rank = rank

    def free(self):
        pass


class _Stream:
    def synchronize(self):
        pass


class _Engine:
    def __init__(self, bmap, rank_max: int):
        self.name = "dit_fp16_lora.trt"
        self.specs = {}
        for layer in bmap.layers.values():
            for name, width in ((layer.a_input, layer.in_features),
                                (layer.b_input, layer.out_features)):
                self.specs[name] = TensorSpec(name, True, "float16", (1, -1, width),
                                              ((1, 1, width), (1, 8, width),
                                               (1, rank_max, width)))
            self.specs[layer.p_input] = TensorSpec(layer.p_input, True, "float16",
                                                   (1, 1, layer.out_features))
        self.specs["lora_srow"] = TensorSpec("lora_srow", True, "float16", (1, 1, -1),
                                             ((1, 1, 1), (1, 1, 8), (1, 1, rank_max)))
        self.closed = False

    def close(self):
        self.closed = True


@pytest.fixture
def branch(monkeypatch, tmp_path):
    monkeypatch.setattr(branch_dit, "BranchOperands", RecordingOperands)
    bmap = small_branch_map(rank_max=512)
    return BranchDit(_Engine(bmap, rank_max=24), bmap, _Stream(), "map.json")


def adapters(tmp_path: Path, *specs: tuple[str, int, float]) -> list[AdapterChoice]:
    bmap = small_branch_map()
    out = []
    for name, rank, strength in specs:
        path = tmp_path / name
        if not path.exists():
            write_adapter(path, bmap, rank, seed=len(name) + rank,
                          variant="dora-rows" if "dora" in name else "lora")
        out.append(AdapterChoice(path, strength))
    return out


def test_graphs_are_bound_at_the_engine_maximum_in_the_engine_type(branch):
    assert branch.capture_rank == 24 and branch.operands.rank == 24
    assert branch.operands.dtype == "float16"


def test_a_strength_change_writes_only_the_strengths(branch, tmp_path):
    branch.apply(adapters(tmp_path, ("a.safetensors", 4, 1.0)))
    assert [w[0] for w in branch.operands.writes] == ["factors", "everything"]
    operands, dora = branch.operands.prepared[0]
    assert operands["loraA::project_in"].dtype == np.float16 and dora == {}  # a lora: no P
    branch.operands.writes.clear()
    branch.apply(adapters(tmp_path, ("a.safetensors", 4, 0.25)))
    (kind, (srow, weights)), = branch.operands.writes
    assert kind == "strengths" and weights == (0.25,)
    np.testing.assert_array_equal(srow, [0.25] * 4)
    assert (branch.swaps, branch.strength_writes) == (1, 1)
    branch.operands.writes.clear()
    branch.apply(adapters(tmp_path, ("a.safetensors", 4, 0.25)))
    assert branch.operands.writes == []  # nothing changed: nothing written


def test_a_dora_stack_hands_its_row_rescales_to_the_gpu_fold(branch, tmp_path):
    from engines.adapters.stack import AdapterStack

    choices = adapters(tmp_path, ("a.safetensors", 4, 1.0), ("dora.safetensors", 4, 0.5))
    branch.apply(choices)
    _, rows = branch.operands.prepared[0]
    assert set(rows) == {"loraP::preprocess_conv", "loraP::project_in", "loraP::project_out"}
    # P = strengths @ rows is what the engine core computes for these strengths.
    reference = AdapterStack.build(choices, small_branch_map()).strength_operands([0.3, 0.7])
    for name, value in rows.items():
        assert value.shape == (2, reference[name].shape[-1])
        np.testing.assert_array_equal(value[0], 0.0)  # the lora adds no rescale
        np.testing.assert_allclose(np.array([0.3, 0.7]) @ value, reference[name][0, 0],
                                   rtol=1e-6, atol=1e-7)
    branch.operands.writes.clear()
    branch.apply(adapters(tmp_path, ("a.safetensors", 4, 0.3), ("dora.safetensors", 4, 0.7)))
    (kind, (srow, weights)), = branch.operands.writes
    assert kind == "strengths" and weights == (0.3, 0.7)
    np.testing.assert_array_equal(srow, np.float32([0.3] * 4 + [0.7] * 4))


def test_a_swap_and_a_rank_change_within_the_maximum_write_buffers_only(branch, tmp_path):
    branch.apply(adapters(tmp_path, ("a.safetensors", 4, 1.0)))
    branch.apply(adapters(tmp_path, ("b.safetensors", 4, 0.7)))  # same rank, other file
    branch.apply(adapters(tmp_path, ("a.safetensors", 4, 1.0), ("c.safetensors", 16, 0.5)))
    kinds = [w for w in branch.operands.writes if w[0] == "factors"]
    assert kinds == [("factors", 4), ("factors", 4), ("factors", 20)]
    assert branch.capture_rank == 24 and branch.swaps == 3
    # A swap rewrites every strength and P (a DoRA's P left behind would change the model).
    swaps = [w[1] for w in branch.operands.writes if w[0] == "everything"]
    assert len(swaps) == 3
    np.testing.assert_array_equal(swaps[-1][0], [1.0] * 4 + [0.5] * 16)


def test_swapping_back_to_a_loaded_stack_reads_no_file_again(branch, tmp_path, monkeypatch):
    first = adapters(tmp_path, ("a.safetensors", 4, 1.0))
    second = adapters(tmp_path, ("b.safetensors", 4, 1.0))
    branch.apply(first)
    branch.apply(second)
    built = []
    real = branch_dit.AdapterStack.build
    monkeypatch.setattr(branch_dit.AdapterStack, "build",
                        classmethod(lambda cls, *a, **k: built.append(a) or real(*a, **k)))
    branch.apply(first)
    branch.apply(second)
    assert built == [] and branch.swaps == 4


def test_a_stack_over_the_engine_maximum_is_refused_in_one_sentence(branch, tmp_path):
    with pytest.raises(AdapterError) as err:
        branch.apply(adapters(tmp_path, ("a.safetensors", 16, 1.0), ("c.safetensors", 16, 1.0)))
    message = str(err.value)
    assert "32" in message and "maximum of 24" in message  # the engine's, not the map's 512
    assert message.count(". ") == 0 and branch.operands.writes == []


# ---- the hub ---------------------------------------------------------------------------------

def listing(branch: bool, map_name: str = "branch_map_medium_lora.json"):
    from engines.models.hub_files import RemoteFile

    names = ["t5gemma/t5gemma_fp16mixed.trt", "t5gemma/tokenizer.json", "sa3-m/dit_fp16.trt",
             "same-l/dec_fp16_chunkable_limiter.trt", "same-l/enc_fp16_chunkable.trt"]
    if branch:
        names += ["sa3-m/dit_fp16_lora.trt", f"sa3-m/{map_name}"]
    return [RemoteFile(f"tensorRT/sm_90/{name}", 1000) for name in names]


def test_download_with_adapters_fetches_the_branch_engine_and_its_map_beside_the_dit():
    from engines.models.hub_files import plan_files

    plain = {f.local_rel for f in plan_files(["medium"], "sm_90", [], "trt", listing(True))}
    assert "sm_90/sa3-m/dit_fp16_lora.trt" not in plain  # 3 GB nobody asked for
    files = {f.local_rel for f in plan_files(["medium"], "sm_90", [], "trt", listing(True),
                                             adapters=True)}
    assert {"sm_90/sa3-m/dit_fp16_lora.trt", "sm_90/sa3-m/branch_map_medium_lora.json"} <= files


@pytest.mark.parametrize("fmt", ["trt", "onnx"])
def test_download_with_adapters_where_the_hub_has_no_branch_engine_is_one_sentence(fmt):
    from engines.models.hub_files import RemoteFile, plan_files

    hub = listing(False)
    if fmt == "onnx":
        hub = [RemoteFile(p, 10) for p in ("onnx/t5gemma/t5gemma_fp16.onnx",
                                            "onnx/t5gemma/tokenizer.json",
                                            "onnx/sa3-sm-sfx/dit_fp16.onnx",
                                            "onnx/same-s/dec_bf16_chunkable_limiter.onnx")]
    with pytest.raises(ModelUnavailableError) as err:
        plan_files(["medium" if fmt == "trt" else "sm-sfx"], "sm_90", [], fmt, hub,
                   adapters=True)
    message = str(err.value)
    assert message.endswith(".") and "\n" not in message
    if fmt == "trt":
        assert "build_branch.py (its sa3-m preset" in message
    else:
        assert "no ONNX form" in message


def test_adapters_on_onnx_runtime_need_the_set_branch_graph(tmp_path, monkeypatch):
    import engines.catalog.search as search_module

    onnx = tmp_path / "onnx"
    for rel in ("t5gemma/t5gemma_fp16.onnx", "t5gemma/tokenizer.json", "sa3-sm-sfx/dit_fp16.onnx",
                "same-s/dec_bf16_chunkable_limiter.onnx"):
        touch(onnx / rel)
    # The touched files are no ONNX graphs: their operator check is not what is tested here.
    monkeypatch.setattr(search_module.EngineSearch, "_check_onnx_ops", lambda *a: None)
    cat = Catalog(tmp_path, gpu=None, tensorrt_version=None, onnxruntime_available=True)
    sfx = Choice(get_model_set("sm-sfx"), "same-s", "fp16", False, None, True)
    with pytest.raises(ModelUnavailableError) as err:
        cat.require_choice(sfx, "auto")
    assert "only for the demo" in str(err.value) and str(err.value).count(". ") == 0
    plain = Choice(get_model_set("sm-sfx"), "same-s", "fp16", False, None, False)
    assert cat.require_choice(plain, "onnxruntime").runnable
    touch(onnx / "sa3-sm-sfx" / "dit_fp16_lora.onnx")
    touch(onnx / "sa3-sm-sfx" / "dit_fp16_lora.json")
    assert cat.require_choice(sfx, "onnxruntime").runnable  # a branch graph beside it
