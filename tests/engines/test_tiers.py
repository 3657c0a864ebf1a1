"""Speed and quality tiers (issue 14): choosing a codec tier, seeing what each costs and gives,
the default rule, and comparing tiers by ear on the same latents.

The machine is faked per test (conftest's `no_gpu` / `h200_gpu`, and an sm_86 card here); the
demo set runs everywhere, with its coarse codec tier standing in for a fast low-precision one.
test_tiers_cli runs the commands, test_tiers_gpu the TensorRT path (with engine doubles).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from engines import demo
from engines.catalog import Catalog, codec_tiers
from engines.catalog.tier_choice import codec_tier_options, default_pick, precision_options
from engines.catalog.tiers import CODEC_INFO, PRECISION_INFO, codec_infos
from engines.cli.words import say
from engines.errors import ModelUnavailableError, RequestError
from engines.generator import Generator
from engines.gpu import GpuInfo
from engines.request import GenerationRequest, validate_request
from tests.conftest import fake_gpu_probe

TRT = "10.15.1.29"
A6000 = GpuInfo("NVIDIA RTX A6000", 8, 6)  # sm_86: no FP8 tensor cores
SAME_S = {"canonical": ("dec_bf16_chunkable_limiter", "enc_bf16_chunkable"),
          "fp8": ("dec_fp8", "enc_fp8"), "fp8_fast": ("dec_fp8_fast", "enc_fp8_fast"),
          "legacy": ("dec_dynamic_bf16", "enc_dynamic_bf16")}


def one_sentence(text: str) -> bool:
    """A refusal a user reads at once: one sentence, ending with a full stop."""
    return text.endswith(".") and not re.search(r"\.\s+[A-Z]", text) and "\n" not in text


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"engine")


def engines_tree(root: Path, sm: str, tiers=("canonical",), dits=("dit_fp16",)) -> Path:
    """TensorRT files of sm-sfx for one arch: T5, the DiT precisions and SAME-S codec tiers."""
    base = root / sm
    touch(base / "t5gemma" / "t5gemma_fp16mixed.trt")
    touch(base / "t5gemma" / "tokenizer.json")
    for dit in dits:
        touch(base / "sa3-sm-sfx" / f"{dit}.trt")
    for tier in tiers:
        for stem in SAME_S[tier]:
            touch(base / "same-s" / f"{stem}.trt")
    return root


# --------------------------------------------------------------------------------------------
# The table: every tier has its speed and quality in words, from the published figures


def test_every_tier_says_its_speed_and_quality_in_words() -> None:
    for decoder in ("same-s", "same-l", "demo"):
        infos = codec_infos(decoder)
        assert [i.name for i in infos] == list(codec_tiers(decoder))
        assert all(i.speed and i.quality for i in infos)
        assert [i.name for i in infos if i.default] == ["canonical"]
    # The published figures, as the issue gives them.
    assert CODEC_INFO[("same-s", "fp8_fast")].summary == \
        "about 1.2x faster decode, audible artifacts"
    assert "26.1 / 36.5 dB" in CODEC_INFO[("same-s", "fp8_fast")].figures
    assert "near-transparent" in CODEC_INFO[("same-s", "fp8")].quality
    assert "30.9 / 41.0 dB" in CODEC_INFO[("same-s", "fp8")].figures
    assert "43.4 dB" in CODEC_INFO[("same-l", "fp8")].figures
    assert ("same-l", "fp8_fast") not in CODEC_INFO  # SAME-L has no fast tier
    assert PRECISION_INFO["fp16"].default and not PRECISION_INFO["fp8"].default
    assert "not a fidelity upgrade" in PRECISION_INFO["fp8"].quality
    assert all(i.needs_fp8 == (i.name in ("fp8", "fp8_fast"))
               for i in [*CODEC_INFO.values(), *PRECISION_INFO.values()])


# --------------------------------------------------------------------------------------------
# Choosing: the request checks the tier against the decoder it pairs with


@pytest.mark.parametrize(("model", "decoder", "tier", "expected"), [
    ("sm-sfx", None, "fp8_fast", "fp8_fast"),
    ("sm-sfx", None, "FP8-Fast", "fp8_fast"),
    ("sm-music", "same-l", "fp8", "fp8"),
    ("medium", None, "canonical", "canonical"),
    ("demo", None, "coarse", "coarse"),
    ("demo", None, None, None),
])
def test_a_tier_the_decoder_has_is_accepted(model, decoder, tier, expected) -> None:
    req = validate_request(GenerationRequest(prompt="x", model=model, decoder=decoder,
                                             codec_tier=tier, seconds=1.0), 380.0)
    assert req.codec_tier == expected


@pytest.mark.parametrize(("model", "decoder", "tier", "says"), [
    ("medium", None, "fp8_fast", "Codec tier 'fp8_fast' does not exist for same-l; choose one "
                                 "of: canonical, fp8."),
    ("sm-music", "same-l", "legacy", "Codec tier 'legacy' does not exist for same-l"),
    ("demo", None, "fp8", "Codec tier 'fp8' does not exist for demo; choose one of: canonical, "
                          "coarse."),
    ("sm-sfx", None, "coarse", "Codec tier 'coarse' does not exist for same-s"),
    ("sm-sfx", None, "turbo", "Unknown codec tier 'turbo'"),
])
def test_a_tier_the_decoder_lacks_is_refused_in_one_sentence(model, decoder, tier,
                                                             says) -> None:
    with pytest.raises(RequestError) as caught:
        validate_request(GenerationRequest(prompt="x", model=model, decoder=decoder,
                                           codec_tier=tier, seconds=1.0), 380.0)
    assert str(caught.value).startswith(says) and one_sentence(str(caught.value))


def _resolve(models: Path, tier: str | None, backend: str = "tensorrt", precision=None):
    generator = Generator(Catalog(models, tensorrt_version=TRT))
    req = generator.validate(GenerationRequest(prompt="x", model="sm-sfx", codec_tier=tier,
                                               precision=precision, seconds=1.0,
                                               backend=backend))
    return generator.resolve(req, backend)


def test_fp8_tiers_run_on_an_h200(tmp_path: Path, h200_gpu) -> None:
    models = engines_tree(tmp_path, "sm_90", tiers=("canonical", "fp8", "fp8_fast"))
    for tier in ("canonical", "fp8", "fp8_fast"):
        answer = _resolve(models, tier)
        assert answer.files.decoder.name == SAME_S[tier][0] + ".trt"
        assert answer.files.codec_tier == tier


def test_fp8_tiers_are_refused_on_an_sm86_card_with_what_to_do(tmp_path: Path,
                                                               monkeypatch) -> None:
    fake_gpu_probe(monkeypatch, A6000)
    models = engines_tree(tmp_path, "sm_86", tiers=("canonical", "fp8", "fp8_fast"))
    assert _resolve(models, "canonical").files.codec_tier == "canonical"
    for tier in ("fp8", "fp8_fast"):
        for backend in ("tensorrt", "auto"):
            with pytest.raises(ModelUnavailableError) as caught:
                _resolve(models, tier, backend)
            reason = say(caught.value)
            assert f"The {tier} decoder tier needs FP8 tensor cores" in reason, reason
            assert "8.9" in reason and "8.6" in reason and "--codec-tier canonical" in reason
            assert one_sentence(reason), reason
    with pytest.raises(ModelUnavailableError) as caught:  # both asked: both fixes named
        _resolve(models, "fp8", precision="fp8")
    assert "--precision fp16 and --codec-tier canonical" in say(caught.value)


def test_without_a_gpu_fp8_tiers_are_refused_and_the_demo_tiers_run(tmp_path: Path,
                                                                    no_gpu) -> None:
    models = engines_tree(tmp_path, "sm_90", tiers=("canonical", "fp8"))
    with pytest.raises(ModelUnavailableError) as caught:
        _resolve(models, "fp8", backend="onnxruntime")
    assert "--codec-tier canonical" in say(caught.value) and one_sentence(str(caught.value))
    catalog = Catalog(tmp_path / "demo-models", tensorrt_version=None)
    options = {o.name: o for o in codec_tier_options(catalog, "demo")}
    assert set(options) == {"canonical", "coarse"}
    assert all(o.available for o in options.values()) and options["canonical"].default


# --------------------------------------------------------------------------------------------
# Seeing: which tiers a picker offers here, and what the default rule picks and why


def test_tier_options_say_which_run_here_and_why_the_rest_do_not(tmp_path: Path,
                                                                 monkeypatch) -> None:
    fake_gpu_probe(monkeypatch, A6000)
    models = engines_tree(tmp_path, "sm_86", tiers=("canonical", "fp8"))
    options = {o.name: o for o in codec_tier_options(Catalog(models, tensorrt_version=TRT),
                                                     "sm-sfx", backend="tensorrt")}
    assert list(options) == ["canonical", "fp8", "fp8_fast", "legacy"]
    assert options["canonical"].available and options["canonical"].default
    assert not options["fp8"].available and "FP8 tensor cores" in options["fp8"].reason
    assert "dec_dynamic_bf16.trt" in options["legacy"].reason  # not installed: names the file
    assert all(one_sentence(o.reason) for o in options.values() if not o.available)
    assert options["fp8"].info.summary == "about 1.14x faster decode, near-transparent"
    precisions = {o.name: o for o in precision_options(Catalog(models, tensorrt_version=TRT),
                                                       "sm-sfx", backend="tensorrt")}
    assert precisions["fp16"].available and precisions["fp16"].default
    assert not precisions["fp8"].available and "8.9" in precisions["fp8"].reason


def test_default_pick_is_fp16mixed_with_the_canonical_codec_and_says_why(
        tmp_path: Path, h200_gpu) -> None:
    models = engines_tree(tmp_path, "sm_90", tiers=("canonical", "fp8", "fp8_fast"),
                          dits=("dit_fp16", "dit_fp8"))
    catalog = Catalog(models, tensorrt_version=TRT)
    answer, reason = default_pick(catalog, "sm-sfx")
    assert (answer.precision, answer.files.codec_tier) == ("fp16", "canonical")
    assert reason.startswith("fp16mixed (default) DiT + canonical SAME-S codec on TensorRT")
    assert "--precision fp8" in say(reason) and "--codec-tier fp8_fast" in say(reason)
    # Asking for the fp8 DiT brings the fp8 codec tier with it when that is installed.
    fast = {o.name: o for o in codec_tier_options(catalog, "sm-sfx", precision="fp8")}
    assert fast["fp8"].default and not fast["canonical"].default


def test_default_pick_falls_back_to_the_legacy_codec_and_says_so(tmp_path: Path,
                                                                 h200_gpu) -> None:
    models = engines_tree(tmp_path, "sm_90", tiers=("legacy",))
    answer, reason = default_pick(Catalog(models, tensorrt_version=TRT), "sm-sfx")
    assert answer.files.codec_tier == "legacy"
    assert "canonical codec is not installed" in reason



# --------------------------------------------------------------------------------------------
# Comparing by ear: the same latents through another codec tier (demo set, any machine)


@pytest.fixture(scope="module")
def generator(tmp_path_factory: pytest.TempPathFactory):
    gen = Generator(Catalog(tmp_path_factory.mktemp("tier-models"), gpu=None,
                            tensorrt_version=None))
    yield gen
    gen.close()


def _take(generator: Generator, **extra):
    return generator.generate(GenerationRequest(prompt="glass chime, bright, reverb", seed=21,
                                                seconds=2.0, **extra))


def _snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    ref = reference.astype(np.float64)
    return 10 * np.log10(np.sum(ref**2) / np.sum((ref - other.astype(np.float64)) ** 2))


def test_decoding_a_take_again_gives_its_own_samples_and_another_tier_differs(
        generator: Generator) -> None:
    take = _take(generator)
    assert take.codec_tier == "canonical" and take.files.decoder.name == demo.DECODER_FILE
    dit_session = generator._backends[next(iter(generator._backends))]._dit

    again = generator.decode_with_tier(take, "canonical")
    np.testing.assert_array_equal(again.pcm, take.pcm)  # bit for bit
    coarse = generator.decode_with_tier(take, "coarse")
    assert coarse.files.decoder.name == demo.DECODER_COARSE_FILE
    assert coarse.codec_tier == "coarse" and coarse.request.codec_tier == "coarse"
    assert coarse.pcm.shape == take.pcm.shape and not np.array_equal(coarse.pcm, take.pcm)
    # Audibly different, yet the same sound: a fast tier, not another take.
    assert 10.0 < _snr_db(take.pcm, coarse.pcm) < 40.0
    assert coarse.latents is take.latents and coarse.seed == take.seed
    assert set(coarse.timings_ms) == {"decode", "total"}  # nothing was sampled again
    assert coarse.details["decoded_from"]["tier"] == "canonical"
    # The DiT stayed loaded: one backend, the same DiT session, for both tiers.
    assert len(generator._backends) == 1
    assert generator._backends[next(iter(generator._backends))]._dit is dit_session


def test_a_take_made_with_a_tier_equals_the_decode_only_comparison(
        generator: Generator) -> None:
    canonical = _take(generator)
    made_coarse = _take(generator, codec_tier="coarse")
    np.testing.assert_array_equal(made_coarse.latents, canonical.latents)
    np.testing.assert_array_equal(generator.decode_with_tier(canonical, "coarse").pcm,
                                  made_coarse.pcm)
    np.testing.assert_array_equal(generator.decode_with_tier(made_coarse, "canonical").pcm,
                                  canonical.pcm)


def test_an_inpainted_take_keeps_the_users_audio_outside_its_spans_in_every_tier(
        generator: Generator) -> None:
    source = _take(generator)
    init = source.pcm.astype(np.float32) / 32767
    take = _take(generator, init_audio=init, inpaint_spans=[(0.6, 1.2)])
    again = generator.decode_with_tier(take, "canonical")
    np.testing.assert_array_equal(again.pcm, take.pcm)
    coarse = generator.decode_with_tier(take, "coarse")
    outside = np.ones(take.pcm.shape[0], bool)
    outside[int(0.55 * 44100):int(1.25 * 44100)] = False  # the span with its crossfades
    np.testing.assert_array_equal(coarse.pcm[outside], take.pcm[outside])
    assert not np.array_equal(coarse.pcm[~outside], take.pcm[~outside])


def test_decode_only_refusals_are_one_sentence(generator: Generator) -> None:
    take = _take(generator)
    with pytest.raises(RequestError) as caught:
        generator.decode_with_tier(take, "fp8")
    assert "does not exist for demo" in str(caught.value) and one_sentence(str(caught.value))
    no_latents = dataclasses.replace(take, latents=np.zeros((256, 0), np.float32))
    with pytest.raises(RequestError) as caught:
        generator.decode_with_tier(no_latents, "coarse")
    assert "only takes made in this session" in str(caught.value)
    assert one_sentence(str(caught.value))


def test_the_sidecar_of_a_comparison_names_both_tiers(generator: Generator,
                                                      tmp_path: Path) -> None:
    from engines.provenance import take_provenance

    take = _take(generator)
    meta = take_provenance(generator.decode_with_tier(take, "coarse"))
    assert meta["decoder_tier"] == "coarse" and meta["request"]["codec_tier"] == "coarse"
    assert meta["decoded_from"]["tier"] == "canonical"
    assert meta["tiers"]["codec_summary"] == CODEC_INFO[("demo", "coarse")].summary
    decoder = next(f for f in meta["model_files"] if f["role"] == "decoder")
    assert decoder["path"].endswith(demo.DECODER_COARSE_FILE)
