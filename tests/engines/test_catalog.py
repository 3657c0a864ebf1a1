"""Catalog resolution against fake model trees, and the GPU probe without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from engines import gpu as gpu_module
from engines.catalog import (
    CODEC_FILES,
    JIT_CODEC_FILES,
    MAX_SECONDS,
    MODEL_SETS,
    Catalog,
    foreign_onnx_ops,
    normalize_precision,
    paired_decoder,
)
from engines.cli.words import say
from engines.errors import ModelUnavailableError, RequestError
from engines.gpu import GpuInfo
from tests.fake_cuda_driver import FakeCudaDriver

H200 = GpuInfo("NVIDIA H200", 9, 0, 141 * 2**30, "12.8")
RTX5090 = GpuInfo("NVIDIA GeForce RTX 5090", 12, 0, None, None)
A6000 = GpuInfo("NVIDIA RTX A6000", 8, 6, None, None)
L40 = GpuInfo("NVIDIA L40", 8, 9, None, None)
TRT = "10.15.1.29"
# Pinned like the demo builder's graphs: the installed onnx stamps its newest IR version, which an
# older installed ONNX Runtime refuses.
ONNX_IR_VERSION = 8
ONNX_OPSET = 17


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"engine")
    return path


def write_onnx(path: Path, domain: str = "", op_type: str = "Identity") -> Path:
    """A one-node ONNX graph; `domain` other than "" makes it a custom op."""
    node = helper.make_node(op_type, ["x"], ["y"], domain=domain)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    opsets = [helper.make_opsetid("", ONNX_OPSET)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(pinned_model(graph, opsets), str(path))
    return path


def pinned_model(graph: onnx.GraphProto,
                 opsets: list[onnx.OperatorSetIdProto] | None = None) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=opsets or [
        helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = ONNX_IR_VERSION
    return model


def trt_tree(root: Path, sm: str = "sm_90", subdir: str = "sa3-sm-sfx",
             dit: str = "dit_fp16.trt", codec: str = "same-s",
             dec: str | None = "dec_bf16_chunkable_limiter.trt",
             enc: str | None = "enc_bf16_chunkable.trt",
             t5: str = "t5gemma_fp16mixed.trt") -> Path:
    base = root / sm
    touch(base / "t5gemma" / t5)
    touch(base / "t5gemma" / "tokenizer.json")
    touch(base / subdir / dit)
    if dec:
        touch(base / codec / dec)
    if enc:
        touch(base / codec / enc)
    return base


def onnx_tree(root: Path, subdir: str = "sa3-sm-sfx", dit: str = "dit_fp16.onnx",
              dec_domain: str = "") -> Path:
    base = root / "onnx"
    write_onnx(base / "t5gemma" / "t5gemma_fp16.onnx")
    touch(base / "t5gemma" / "tokenizer.json")
    write_onnx(base / subdir / dit)
    write_onnx(base / "same-s" / "dec_bf16_chunkable_limiter.onnx", domain=dec_domain,
               op_type="diff_attn_swa" if dec_domain else "Identity")
    write_onnx(base / "same-s" / "enc_bf16_chunkable.onnx")
    return base


def demo_tree(root: Path) -> Path:
    demo = root / "onnx" / "demo"
    for name in ("t5gemma.onnx", "dit_fp32.onnx", "enc.onnx", "dec.onnx"):
        write_onnx(demo / name)
    touch(demo / "tokenizer.json")
    return demo


def catalog(root: Path, gpu: GpuInfo | None = H200, trt: str | None = TRT, ort: bool = True,
            extra: tuple[Path, ...] = ()) -> Catalog:
    return Catalog(root, extra_roots=extra, gpu=gpu, tensorrt_version=trt,
                   onnxruntime_available=ort)


# ------------------------------------------------------------------------------------------
# Names and pairing


def test_model_sets_match_the_contract() -> None:
    assert list(MODEL_SETS) == ["medium", "sm-music", "sm-sfx", "demo"]
    assert MODEL_SETS["medium"].subdir == "sa3-m"
    assert MODEL_SETS["medium"].default_decoder == "same-l"
    assert MODEL_SETS["sm-music"].default_decoder == "same-s"
    assert MODEL_SETS["sm-sfx"].subdir == "sa3-sm-sfx"
    assert MODEL_SETS["demo"].label == "Demo (procedural, not Stable Audio 3)"
    assert MODEL_SETS["demo"].default_precision == "fp32"
    assert MODEL_SETS["sm-sfx"].default_precision == "fp16"
    assert MAX_SECONDS == pytest.approx(380.43, abs=0.01)
    assert all(m.max_seconds == MAX_SECONDS for m in MODEL_SETS.values())


@pytest.mark.parametrize("name, expected", [
    ("fp16", "fp16"), ("fp16mixed", "fp16"), ("BF16", "fp16"), (" fp32 ", "fp32"), ("fp8", "fp8"),
])
def test_normalize_precision(name: str, expected: str) -> None:
    assert normalize_precision(name) == expected


def test_unknown_precision_lists_valid_names() -> None:
    with pytest.raises(RequestError, match=r"'int4'.*fp16, fp32, fp8"):
        normalize_precision("int4")


@pytest.mark.parametrize("kwargs, pattern", [
    ({"model": "large"}, r"'large'.*medium, sm-music, sm-sfx, demo"),
    ({"model": "sm-sfx", "decoder": "same-xl"}, r"'same-xl'.*same-l, same-s, demo"),
    ({"model": "sm-sfx", "backend": "cuda"}, r"'cuda'.*auto, tensorrt, onnxruntime"),
    ({"model": "sm-sfx", "codec_tier": "turbo"}, r"'turbo'.*canonical, fp8, fp8_fast, legacy"),
    ({"model": "medium", "codec_tier": "fp8_fast"}, r"'fp8_fast'.*same-l"),
    ({"model": "medium", "codec_tier": "legacy"}, r"'legacy'.*same-l.*canonical, fp8"),
    ({"model": "demo", "decoder": "same-s"}, r"demo decoder|demo model.*'same-s'"),
    ({"model": "sm-sfx", "decoder": "demo"}, r"demo.*'sm-sfx'"),
])
def test_bad_names_raise_request_error(tmp_path: Path, kwargs: dict, pattern: str) -> None:
    with pytest.raises(RequestError, match=pattern):
        catalog(tmp_path).resolve(**kwargs)


def test_pairing_defaults_and_overrides() -> None:
    assert paired_decoder("medium") == "same-l"
    assert paired_decoder("sm-music") == "same-s"
    assert paired_decoder("sm-sfx") == "same-s"
    assert paired_decoder("demo") == "demo"
    assert paired_decoder("medium", "SAME-S") == "same-s"
    assert paired_decoder("sm-sfx", "same-l") == "same-l"
    assert paired_decoder("demo", "demo") == "demo"


# ------------------------------------------------------------------------------------------
# TensorRT files and aliases


def test_canonical_tensorrt_set_resolves(tmp_path: Path) -> None:
    base = trt_tree(tmp_path)
    result = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert result.runnable, result.reason
    assert result.reason is None
    assert (result.model, result.decoder, result.precision, result.backend) == \
        ("sm-sfx", "same-s", "fp16", "tensorrt")
    files = result.files
    assert files is not None
    assert files.format == "trt"
    assert files.dit == base / "sa3-sm-sfx" / "dit_fp16.trt"
    assert files.text_encoder == base / "t5gemma" / "t5gemma_fp16mixed.trt"
    assert files.tokenizer == base / "t5gemma" / "tokenizer.json"
    assert files.decoder == base / "same-s" / "dec_bf16_chunkable_limiter.trt"
    assert files.encoder == base / "same-s" / "enc_bf16_chunkable.trt"
    assert files.codec_tier == "canonical"
    assert files.jit_plugin is False
    assert result.supports_audio_input
    assert files.all_paths() == (files.text_encoder, files.tokenizer, files.dit, files.decoder,
                                 files.encoder)
    assert result.notes == ()


@pytest.mark.parametrize("precision, dit", [
    ("fp16", "dit_fp16.trt"), ("fp16", "dit_fp16mixed.trt"), ("fp16", "dit_bf16.trt"),
    ("fp16mixed", "dit_fp16mixed.trt"), ("bf16", "dit_bf16.trt"),
    ("fp32", "dit_fp32.trt"), ("fp8", "dit_fp8.trt"),
])
def test_every_dit_alias(tmp_path: Path, precision: str, dit: str) -> None:
    trt_tree(tmp_path, dit=dit)
    result = catalog(tmp_path).resolve("sm-sfx", precision=precision, backend="tensorrt")
    assert result.runnable, result.reason
    assert result.files is not None and result.files.dit.name == dit
    assert result.precision == normalize_precision(precision)


def test_dit_alias_preference_order(tmp_path: Path) -> None:
    base = trt_tree(tmp_path, dit="dit_bf16.trt")
    touch(base / "sa3-sm-sfx" / "dit_fp16mixed.trt")
    result = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert result.files is not None and result.files.dit.name == "dit_fp16mixed.trt"
    touch(base / "sa3-sm-sfx" / "dit_fp16.trt")
    result = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert result.files is not None and result.files.dit.name == "dit_fp16.trt"


@pytest.mark.parametrize("t5", ["t5gemma_fp16mixed.trt", "t5gemma_fp16.trt"])
def test_every_text_encoder_alias(tmp_path: Path, t5: str) -> None:
    trt_tree(tmp_path, t5=t5)
    result = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert result.files is not None and result.files.text_encoder.name == t5


def test_tokenizer_beside_the_model_set_is_accepted(tmp_path: Path) -> None:
    base = trt_tree(tmp_path)
    (base / "t5gemma" / "tokenizer.json").unlink()
    touch(base / "sa3-sm-sfx" / "tokenizer.json")
    result = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert result.files is not None
    assert result.files.tokenizer == base / "sa3-sm-sfx" / "tokenizer.json"


CODEC_ALIASES = [
    ("same-s", "canonical", "dec_bf16_chunkable_limiter.trt", "enc_bf16_chunkable.trt"),
    ("same-s", "legacy", "dec_dynamic_bf16.trt", "enc_dynamic_bf16.trt"),
    ("same-s", "fp8", "dec_fp8.trt", "enc_fp8.trt"),
    ("same-s", "fp8_fast", "dec_fp8_fast.trt", "enc_fp8_fast.trt"),
    ("same-l", "canonical", "dec_fp16_chunkable_limiter.trt", "enc_fp16_chunkable.trt"),
    ("same-l", "fp8", "dec_fp8_chunkable_limiter.trt", "enc_fp8_chunkable.trt"),
]


@pytest.mark.parametrize("codec, tier, dec, enc", CODEC_ALIASES)
def test_every_codec_alias_and_tier(tmp_path: Path, codec: str, tier: str, dec: str,
                                    enc: str) -> None:
    trt_tree(tmp_path, codec=codec, dec=dec, enc=enc)
    explicit = catalog(tmp_path).resolve("sm-sfx", decoder=codec, codec_tier=tier,
                                         backend="tensorrt")
    assert explicit.runnable, explicit.reason
    assert explicit.files is not None
    assert explicit.files.decoder.name == dec
    assert explicit.files.encoder is not None and explicit.files.encoder.name == enc
    assert explicit.files.codec_tier == tier
    assert explicit.files.jit_plugin is False
    if tier in ("canonical", "legacy"):  # the automatic order finds these on its own
        auto = catalog(tmp_path).resolve("sm-sfx", decoder=codec, backend="tensorrt")
        assert auto.files is not None and auto.files.decoder.name == dec
        assert auto.files.codec_tier == tier


def test_codec_table_covers_every_published_file() -> None:
    runnable = {s for tiers in CODEC_FILES.values() for t in tiers.values()
                for s in (*t.decoder, *t.encoder)}
    jit = {s for t in JIT_CODEC_FILES.values() for s in (*t.decoder, *t.encoder)}
    assert len(runnable) == 12 and len(jit) == 3 and not runnable & jit
    assert "fp8_fast" not in CODEC_FILES["same-l"]
    assert "legacy" not in CODEC_FILES["same-l"]  # every pre-chunkable SAME-L engine is JIT


# ------------------------------------------------------------------------------------------
# JIT SAME-L engines: recognised only to be refused


AOT_REMEDY = ("get the AOT engines dec_fp16_chunkable_limiter.trt and enc_fp16_chunkable.trt "
              "with `python main.py models download medium`.")


def medium_tree(root: Path, dec: str | None, enc: str | None) -> Path:
    return trt_tree(root, subdir="sa3-m", codec="same-l", dec=dec, enc=enc)


def assert_no_install_advice(reason: str) -> None:
    """Installing packages cannot make a JIT engine load: SA3 Studio registers no plugin."""
    assert "torch" not in reason and "install" not in reason and "eager" not in reason


def test_set_with_only_jit_same_l_engines_is_refused_with_the_aot_files(tmp_path: Path) -> None:
    base = medium_tree(tmp_path, "dec_dynamic_triton_swa.trt", "enc_dynamic_triton_swa.trt")
    result = catalog(tmp_path).resolve("medium", backend="tensorrt")
    assert not result.runnable and result.files is None
    reason = say(result.reason or "")  # as the command line words it
    assert reason == (
        f"'dec_dynamic_triton_swa.trt' and 'enc_dynamic_triton_swa.trt' in {base / 'same-l'} "
        f"are JIT builds of SAME-L that need its Triton plugin registered from Python, which "
        f"SA3 Studio cannot load; {AOT_REMEDY}")
    assert_no_install_advice(reason)


@pytest.mark.parametrize("dec", ["dec_dynamic_triton_swa.trt", "dec_dynamic_fp32.trt"])
def test_a_lone_jit_same_l_decoder_is_refused(tmp_path: Path, dec: str) -> None:
    medium_tree(tmp_path, dec, None)
    for precision in ("fp16", "fp32"):
        reason = say(catalog(tmp_path).resolve("medium", precision=precision,
                                               backend="tensorrt").reason or "")
        assert reason.startswith(f"'{dec}' in ")
        assert "is a JIT build of SAME-L that needs its Triton plugin" in reason
        assert reason.endswith(AOT_REMEDY)
        assert_no_install_advice(reason)
        touch(tmp_path / "sm_90" / "sa3-m" / "dit_fp32.trt")


def test_aot_same_l_engines_are_preferred_over_jit_ones(tmp_path: Path) -> None:
    base = medium_tree(tmp_path, "dec_dynamic_triton_swa.trt", "enc_dynamic_triton_swa.trt")
    touch(base / "same-l" / "dec_dynamic_fp32.trt")
    touch(base / "same-l" / "dec_fp16_chunkable_limiter.trt")
    touch(base / "same-l" / "enc_fp16_chunkable.trt")
    result = catalog(tmp_path).resolve("medium", backend="tensorrt", need_encoder=True)
    assert result.runnable, result.reason
    assert result.files is not None and result.files.jit_plugin is False
    assert result.files.decoder.name == "dec_fp16_chunkable_limiter.trt"
    assert result.files.encoder is not None
    assert result.files.encoder.name == "enc_fp16_chunkable.trt"
    assert result.notes == ()


def test_a_jit_encoder_does_not_stand_in_for_the_aot_one(tmp_path: Path) -> None:
    medium_tree(tmp_path, "dec_fp16_chunkable_limiter.trt", "enc_dynamic_triton_swa.trt")
    cat = catalog(tmp_path)
    t2a = cat.resolve("medium", backend="tensorrt")
    assert t2a.runnable and t2a.files is not None and t2a.files.encoder is None
    a2a = cat.resolve("medium", backend="tensorrt", need_encoder=True)
    assert not a2a.runnable and "'enc_fp16_chunkable.trt'" in (a2a.reason or "")


def test_jit_refusal_names_the_set_that_brings_same_l(tmp_path: Path) -> None:
    trt_tree(tmp_path, codec="same-l", dec="dec_dynamic_triton_swa.trt", enc=None)
    reason = catalog(tmp_path).resolve("sm-sfx", decoder="same-l", backend="tensorrt").reason
    assert say(reason or "").endswith(AOT_REMEDY)  # sm-sfx downloads bring SAME-S, not SAME-L


def test_auto_backend_on_a_gpu_gives_the_jit_refusal(tmp_path: Path) -> None:
    medium_tree(tmp_path, "dec_dynamic_triton_swa.trt", "enc_dynamic_triton_swa.trt")
    result = catalog(tmp_path).resolve("medium")
    assert not result.runnable and result.backend == "tensorrt"
    assert say(result.reason or "").endswith(AOT_REMEDY)


def test_auto_tier_prefers_canonical_over_legacy(tmp_path: Path) -> None:
    base = trt_tree(tmp_path, dec="dec_dynamic_bf16.trt", enc="enc_dynamic_bf16.trt")
    legacy = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert legacy.files is not None and legacy.files.codec_tier == "legacy"
    assert any("legacy decoder 'dec_dynamic_bf16.trt'" in n for n in legacy.notes)
    touch(base / "same-s" / "dec_bf16_chunkable_limiter.trt")
    touch(base / "same-s" / "enc_bf16_chunkable.trt")
    touch(base / "same-s" / "dec_fp8.trt")
    canonical = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert canonical.files is not None
    assert canonical.files.decoder.name == "dec_bf16_chunkable_limiter.trt"


def test_fp8_dit_prefers_fp8_decoder_then_canonical(tmp_path: Path) -> None:
    base = trt_tree(tmp_path, dit="dit_fp8.trt")
    fallback = catalog(tmp_path).resolve("sm-sfx", precision="fp8", backend="tensorrt")
    assert fallback.files is not None and fallback.files.codec_tier == "canonical"
    touch(base / "same-s" / "dec_fp8.trt")
    fast = catalog(tmp_path).resolve("sm-sfx", precision="fp8", backend="tensorrt")
    assert fast.files is not None and fast.files.decoder.name == "dec_fp8.trt"
    assert fast.files.codec_tier == "fp8"


def test_explicit_tier_that_is_missing_names_its_file(tmp_path: Path) -> None:
    trt_tree(tmp_path)
    result = catalog(tmp_path).resolve("sm-sfx", codec_tier="fp8_fast", backend="tensorrt")
    assert not result.runnable
    assert "'dec_fp8_fast.trt'" in (result.reason or "")


def test_missing_encoder_matters_only_for_audio_input(tmp_path: Path) -> None:
    trt_tree(tmp_path, enc=None)
    cat = catalog(tmp_path)
    t2a = cat.resolve("sm-sfx", backend="tensorrt")
    assert t2a.runnable and t2a.files is not None and t2a.files.encoder is None
    assert not t2a.supports_audio_input
    assert any("'enc_bf16_chunkable.trt'" in n and "inpainting" in n for n in t2a.notes)
    a2a = cat.resolve("sm-sfx", backend="tensorrt", need_encoder=True)
    assert not a2a.runnable
    assert "'enc_bf16_chunkable.trt'" in (a2a.reason or "")
    assert str(tmp_path / "sm_90" / "same-s") in (a2a.reason or "")


def test_missing_file_reason_names_file_folder_and_command(tmp_path: Path) -> None:
    base = trt_tree(tmp_path)
    (base / "sa3-sm-sfx" / "dit_fp16.trt").unlink()
    result = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert not result.runnable and result.files is None
    assert say(result.reason) == (
        f"sm-sfx on TensorRT needs 'dit_fp16.trt' in {tmp_path / 'sm_90' / 'sa3-sm-sfx'}; "
        f"download it with `python main.py models download sm-sfx`.")


def test_missing_text_encoder_and_decoder(tmp_path: Path) -> None:
    base = trt_tree(tmp_path, dec=None)
    no_dec = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert "'dec_bf16_chunkable_limiter.trt'" in (no_dec.reason or "")
    (base / "t5gemma" / "t5gemma_fp16mixed.trt").unlink()
    no_t5 = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt")
    assert "'t5gemma_fp16mixed.trt'" in (no_t5.reason or "")
    assert str(base / "t5gemma") in (no_t5.reason or "")


def test_wrong_arch_names_both_archs(tmp_path: Path) -> None:
    trt_tree(tmp_path, sm="sm_120")
    result = catalog(tmp_path, gpu=H200).resolve("sm-sfx", backend="tensorrt")
    assert not result.runnable
    reason = result.reason or ""
    assert str(tmp_path / "sm_120") in reason
    assert "another GPU" in reason and "this GPU is sm_90" in reason
    assert "engines in" in reason and "this GPU is sm_90 (NVIDIA H200)" in reason
    on_blackwell = catalog(tmp_path, gpu=RTX5090).resolve("sm-sfx", backend="tensorrt")
    assert on_blackwell.runnable
    assert on_blackwell.files is not None and "sm_120" in on_blackwell.files.dit.parts


def test_wrong_arch_detected_from_a_partial_set(tmp_path: Path) -> None:
    touch(tmp_path / "sm_120" / "sa3-sm-sfx" / "dit_fp16.trt")  # no text encoder anywhere
    reason = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt").reason or ""
    assert "sm_120" in reason and "this GPU is sm_90" in reason
    trt_tree(tmp_path)  # now sm_90 has the set; a missing file there is just missing
    (tmp_path / "sm_90" / "sa3-sm-sfx" / "dit_fp16.trt").unlink()
    touch(tmp_path / "sm_90" / "sa3-sm-sfx" / "dit_fp32.trt")
    reason = catalog(tmp_path).resolve("sm-sfx", backend="tensorrt").reason or ""
    assert reason.startswith("sm-sfx on TensorRT needs 'dit_fp16.trt'")


def test_fp8_refused_below_cc_8_9_and_allowed_from_it(tmp_path: Path) -> None:
    trt_tree(tmp_path, sm="sm_86", dit="dit_fp8.trt")
    refused = catalog(tmp_path, gpu=A6000).resolve("sm-sfx", precision="fp8", backend="tensorrt")
    assert not refused.runnable
    assert "8.9" in (refused.reason or "") and "8.6" in (refused.reason or "")
    assert "--precision fp16" in say(refused.reason or "")
    tier = catalog(tmp_path, gpu=A6000).resolve("sm-sfx", codec_tier="fp8", backend="tensorrt")
    assert not tier.runnable and "fp8 decoder tier" in (tier.reason or "")

    trt_tree(tmp_path, sm="sm_90", dit="dit_fp8.trt")
    allowed = catalog(tmp_path, gpu=H200).resolve("sm-sfx", precision="fp8", backend="tensorrt")
    assert allowed.runnable, allowed.reason
    assert allowed.files is not None and allowed.files.dit.name == "dit_fp8.trt"
    trt_tree(tmp_path, sm="sm_89", dit="dit_fp8.trt")
    ada = catalog(tmp_path, gpu=L40).resolve("sm-sfx", precision="fp8", backend="tensorrt")
    assert ada.runnable, ada.reason


def test_no_gpu_and_no_tensorrt(tmp_path: Path) -> None:
    trt_tree(tmp_path)
    no_gpu = catalog(tmp_path, gpu=None).resolve("sm-sfx", backend="tensorrt")
    assert not no_gpu.runnable and "No NVIDIA GPU" in (no_gpu.reason or "")
    no_trt = catalog(tmp_path, trt=None).resolve("sm-sfx", backend="tensorrt")
    assert not no_trt.runnable
    assert "pip install 'sa3-studio[tensorrt]'" in (no_trt.reason or "")


def test_extra_roots_are_searched_after_the_models_root(tmp_path: Path) -> None:
    main_root, extra = tmp_path / "main", tmp_path / "extra"
    trt_tree(extra)
    cat = catalog(main_root, extra=(extra,))
    assert cat.roots == (main_root, extra)
    found = cat.resolve("sm-sfx", backend="tensorrt")
    assert found.files is not None and found.files.dit.is_relative_to(extra)
    trt_tree(main_root)
    first = catalog(main_root, extra=(extra,)).resolve("sm-sfx", backend="tensorrt")
    assert first.files is not None and first.files.dit.is_relative_to(main_root)


def test_medium_uses_same_l_and_can_switch_to_same_s(tmp_path: Path) -> None:
    trt_tree(tmp_path, subdir="sa3-m", codec="same-l", dec="dec_fp16_chunkable_limiter.trt",
             enc="enc_fp16_chunkable.trt")
    medium = catalog(tmp_path).resolve("medium", backend="tensorrt")
    assert medium.runnable and medium.decoder == "same-l"
    assert medium.files is not None and medium.files.dit == tmp_path / "sm_90/sa3-m/dit_fp16.trt"
    switched = catalog(tmp_path).resolve("medium", decoder="same-s", backend="tensorrt")
    assert not switched.runnable and "same-s" in (switched.reason or "")


# ------------------------------------------------------------------------------------------
# ONNX Runtime


def test_onnx_set_resolves_on_onnxruntime(tmp_path: Path) -> None:
    base = onnx_tree(tmp_path)
    result = catalog(tmp_path, gpu=None).resolve("sm-sfx", backend="onnxruntime")
    assert result.runnable, result.reason
    assert result.files is not None and result.files.format == "onnx"
    assert result.files.dit == base / "sa3-sm-sfx" / "dit_fp16.onnx"
    assert result.files.decoder == base / "same-s" / "dec_bf16_chunkable_limiter.onnx"
    assert result.files.text_encoder == base / "t5gemma" / "t5gemma_fp16.onnx"


def test_onnx_missing_file_reason(tmp_path: Path) -> None:
    onnx_tree(tmp_path, dit="dit_fp32.onnx")
    result = catalog(tmp_path).resolve("sm-sfx", backend="onnxruntime")
    assert not result.runnable
    assert "'dit_fp16.onnx'" in (result.reason or "")
    assert str(tmp_path / "onnx" / "sa3-sm-sfx") in (result.reason or "")


def test_same_l_refused_on_onnxruntime(tmp_path: Path) -> None:
    onnx_tree(tmp_path, subdir="sa3-m")
    medium = catalog(tmp_path).resolve("medium", backend="onnxruntime")
    assert not medium.runnable
    assert "samel::diff_attn_swa" in (medium.reason or "")
    swapped = catalog(tmp_path).resolve("medium", decoder="same-s", backend="onnxruntime")
    assert swapped.runnable, swapped.reason
    small_on_l = catalog(tmp_path).resolve("sm-sfx", decoder="same-l", backend="onnxruntime")
    assert not small_on_l.runnable and "TensorRT plugin" in (small_on_l.reason or "")


def test_custom_domain_node_refused_on_onnxruntime(tmp_path: Path) -> None:
    onnx_tree(tmp_path, dec_domain="samel")
    result = catalog(tmp_path).resolve("sm-sfx", backend="onnxruntime")
    assert not result.runnable
    assert "samel::diff_attn_swa" in (result.reason or "")
    assert "'dec_bf16_chunkable_limiter.onnx'" in (result.reason or "")


def test_foreign_ops_check_sees_subgraphs_and_refreshes_on_change(tmp_path: Path) -> None:
    path = write_onnx(tmp_path / "m.onnx")
    assert foreign_onnx_ops(path) == ()
    write_onnx(path, domain="com.microsoft", op_type="FusedMatMul")
    assert foreign_onnx_ops(path) == ()
    write_onnx(path, domain="my.custom", op_type="MagicOp")
    assert foreign_onnx_ops(path) == ("my.custom::MagicOp",)

    inner = helper.make_graph(
        [helper.make_node("Secret", ["x"], ["y"], domain="vendor")], "body", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    if_node = helper.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=inner)
    graph = helper.make_graph(
        [if_node], "outer", [helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    nested = tmp_path / "nested.onnx"
    onnx.save(pinned_model(graph), str(nested))
    assert foreign_onnx_ops(nested) == ("vendor::Secret",)


def test_unreadable_onnx_is_reported(tmp_path: Path) -> None:
    onnx_tree(tmp_path)
    (tmp_path / "onnx" / "sa3-sm-sfx" / "dit_fp16.onnx").write_bytes(b"\xff\x00not a model")
    result = catalog(tmp_path).resolve("sm-sfx", backend="onnxruntime")
    assert not result.runnable
    assert "'dit_fp16.onnx'" in (result.reason or "") and "could not be read" in (
        result.reason or "")


def test_fp8_and_missing_onnxruntime(tmp_path: Path) -> None:
    onnx_tree(tmp_path)
    fp8 = catalog(tmp_path).resolve("sm-sfx", precision="fp8", backend="onnxruntime")
    assert not fp8.runnable and "fp8" in (fp8.reason or "")
    no_ort = catalog(tmp_path, ort=False).resolve("sm-sfx", backend="onnxruntime")
    assert not no_ort.runnable and "pip install onnxruntime" in (no_ort.reason or "")


# ------------------------------------------------------------------------------------------
# Demo


def test_demo_runs_on_onnxruntime_only_and_is_not_written_by_queries(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    on_trt = cat.resolve("demo", backend="tensorrt")
    assert not on_trt.runnable and "ONNX Runtime only" in (on_trt.reason or "")
    on_ort = cat.resolve("demo", backend="onnxruntime")
    assert on_ort.runnable and on_ort.decoder == "demo" and on_ort.precision == "fp32"
    assert any("built on first use" in n for n in on_ort.notes)
    assert on_ort.files is not None
    assert on_ort.files.dit == tmp_path / "onnx" / "demo" / "dit_fp32.onnx"
    assert not (tmp_path / "onnx").exists()
    auto = cat.resolve("demo")
    assert auto.backend == "onnxruntime" and auto.runnable


def test_demo_found_on_disk_has_no_build_note(tmp_path: Path) -> None:
    demo = demo_tree(tmp_path)
    result = catalog(tmp_path, gpu=None).resolve("demo")
    assert result.runnable and result.notes == ()
    assert result.files is not None
    assert result.files.decoder == demo / "dec.onnx"
    assert result.files.encoder == demo / "enc.onnx"
    assert result.files.tokenizer == demo / "tokenizer.json"
    assert result.files.text_encoder == demo / "t5gemma.onnx"


def test_demo_refusals(tmp_path: Path) -> None:
    cat = catalog(tmp_path)
    assert "fp32" in (cat.resolve("demo", precision="fp16").reason or "")
    no_ort = catalog(tmp_path, ort=False).resolve("demo")
    assert not no_ort.runnable and "ONNX Runtime is not installed" in (no_ort.reason or "")


def test_require_builds_the_demo_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []

    def ensure_demo_models(models_root: Path) -> Path:
        calls.append(models_root)
        return demo_tree(models_root)

    monkeypatch.setattr("engines.demo.ensure_demo_models", ensure_demo_models)
    result = catalog(tmp_path).require("demo")
    assert calls == [tmp_path]
    assert result.runnable and result.notes == ()
    assert result.files is not None and all(p.is_file() for p in result.files.all_paths())


def test_require_raises_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailableError, match="No NVIDIA GPU"):
        catalog(tmp_path, gpu=None).require("sm-sfx", backend="tensorrt")
    trt_tree(tmp_path)
    ready = catalog(tmp_path).require("sm-sfx")
    assert ready.backend == "tensorrt" and ready.files is not None


# ------------------------------------------------------------------------------------------
# Auto backend, listing


def test_auto_prefers_tensorrt_then_onnxruntime(tmp_path: Path) -> None:
    trt_tree(tmp_path)
    onnx_tree(tmp_path)
    assert catalog(tmp_path).resolve("sm-sfx").backend == "tensorrt"
    cpu = catalog(tmp_path, gpu=None).resolve("sm-sfx")
    assert cpu.runnable and cpu.backend == "onnxruntime"
    assert "TensorRT is not used: no NVIDIA GPU was found for TensorRT." in cpu.notes


def test_auto_reason_prefers_tensorrt_when_gpu_and_tensorrt_exist(tmp_path: Path) -> None:
    result = catalog(tmp_path).resolve("sm-music")
    assert not result.runnable and result.backend == "tensorrt"
    assert "'t5gemma_fp16mixed.trt'" in (result.reason or "")
    assert "ONNX Runtime" not in (result.reason or "")


def test_auto_reason_explains_both_without_a_gpu(tmp_path: Path) -> None:
    result = catalog(tmp_path, gpu=None).resolve("medium")
    assert not result.runnable
    reason = result.reason or ""
    assert reason.startswith("medium cannot run here: no NVIDIA GPU was found for TensorRT, and "
                             "the SAME-L codec uses the samel::diff_attn_swa TensorRT plugin")
    no_trt = catalog(tmp_path, trt=None).resolve("sm-sfx").reason or ""
    assert "TensorRT is not installed" in no_trt
    assert f"'t5gemma_fp16.onnx' in {tmp_path / 'onnx' / 't5gemma'}" in no_trt


def test_tensorrt_11_is_not_offered_as_ready(tmp_path: Path) -> None:
    result = catalog(tmp_path, trt="11.4.0.106").resolve("sm-sfx", backend="tensorrt")
    assert not result.runnable
    reason = result.reason or ""
    assert "TensorRT 11.4.0.106 is installed but SA3 Studio needs TensorRT 10" in reason
    assert "\n" not in reason


def test_entries_cover_every_set_and_backend(tmp_path: Path) -> None:
    entries = catalog(tmp_path).entries()
    assert [(e.model, e.backend) for e in entries] == [
        (m, b) for m in MODEL_SETS for b in ("tensorrt", "onnxruntime")]
    runnable = {(e.model, e.backend) for e in entries if e.runnable}
    assert runnable == {("demo", "onnxruntime")}


def test_format_table(tmp_path: Path) -> None:
    trt_tree(tmp_path)
    table = catalog(tmp_path).format_table()
    lines = table.splitlines()
    assert lines[0] == "GPU: NVIDIA H200 (sm_90), TensorRT 10.15"
    for model in MODEL_SETS.values():
        assert model.key in table and model.label in table
    sfx_trt = [line for line in lines if line.startswith("sm-sfx") and "tensorrt" in line]
    assert len(sfx_trt) == 1 and sfx_trt[0].rstrip().endswith(
        "ready (adapters: no branch engine dit_fp16_lora.trt)")
    assert "'dit_fp16.trt'" in table  # sm-music is missing its DiT
    no_gpu = catalog(tmp_path, gpu=None).format_table()
    assert no_gpu.splitlines()[0] == "GPU: none found - TensorRT backend unavailable"
    no_trt = catalog(tmp_path, trt=None).format_table()
    assert no_trt.splitlines()[0] == "GPU: NVIDIA H200 (sm_90), TensorRT not installed"


# ------------------------------------------------------------------------------------------
# GPU probe


@pytest.mark.parametrize("major, minor, sm, fp8", [
    (9, 0, "sm_90", True), (12, 0, "sm_120", True), (8, 9, "sm_89", True),
    (8, 6, "sm_86", False), (7, 5, "sm_75", False),
])
def test_gpu_info_arch(major: int, minor: int, sm: str, fp8: bool) -> None:
    info = GpuInfo("x", major, minor, None, None)
    assert info.sm == sm and info.has_fp8 is fp8


# What the probe must read from a driver that reports an H200 with a CUDA 12.8 driver.
PROBED_H200 = GpuInfo("NVIDIA H200", 9, 0, 150_000_000_000, "12.8")


def test_probe_reads_the_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    info = gpu_module._probe(FakeCudaDriver(PROBED_H200))
    assert info == GpuInfo("NVIDIA H200", 9, 0, 150_000_000_000, "12.8")
    assert gpu_module._probe(FakeCudaDriver(PROBED_H200, count=0)) is None


def test_probe_gpu_returns_none_on_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_cuda() -> None:
        raise ImportError("No module named 'cuda'")

    monkeypatch.setattr(gpu_module, "_driver_module", no_cuda)
    gpu_module.probe_gpu.cache_clear()
    try:
        assert gpu_module.probe_gpu() is None
        monkeypatch.setattr(gpu_module, "_driver_module", lambda: FakeCudaDriver(None))
        gpu_module.probe_gpu.cache_clear()
        assert gpu_module.probe_gpu() is None
        monkeypatch.setattr(gpu_module, "_driver_module", lambda: FakeCudaDriver(PROBED_H200))
        gpu_module.probe_gpu.cache_clear()
        assert gpu_module.probe_gpu() == GpuInfo("NVIDIA H200", 9, 0, 150_000_000_000, "12.8")
    finally:
        gpu_module.probe_gpu.cache_clear()


def test_tensorrt_version_from_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata as metadata

    def version_of(installed: dict[str, str]):
        def version(name: str) -> str:
            if name not in installed:
                raise metadata.PackageNotFoundError(name)
            return installed[name]
        return version

    monkeypatch.setattr(metadata, "version", version_of({}))
    assert gpu_module.tensorrt_version() is None
    monkeypatch.setattr(metadata, "version", version_of({"tensorrt-cu12": "10.15.1.29"}))
    assert gpu_module.tensorrt_version() == "10.15.1.29"
    assert "tensorrt" not in sys.modules
