"""validate_request: every refusal, every derived number, every warning."""

from __future__ import annotations

import math
import types
from pathlib import Path

import numpy as np
import pytest

from engines import request as request_module
from engines.catalog import MAX_SECONDS
from engines.cli.generate import parse_span
from engines.cli.words import say
from engines.constants import DEFAULT_LIMITER_CEILING
from engines.errors import AudioFileError, RequestError
from engines.request import GenerationRequest, ValidatedRequest, validate_request

SR = 44100


def stereo(seconds: float, value: float = 0.25) -> np.ndarray:
    return np.full((int(round(seconds * SR)), 2), value, dtype=np.float32)


def check(**fields: object) -> ValidatedRequest:
    fields.setdefault("prompt", "rain on a tin roof")
    return validate_request(GenerationRequest(**fields), MAX_SECONDS)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Defaults and normalisation


def test_defaults_give_the_demos_two_second_text_to_audio() -> None:
    v = check(seed=7)
    assert v.mode == "t2a"
    assert v.seconds == 2.0  # engines.request.default_seconds("demo"): a short sound effect
    assert v.latent_len == v.dit_latents == 32  # the codec's minimum; trimmed after decoding
    assert v.out_samples == 88200
    assert (v.model, v.decoder, v.precision, v.backend) == ("demo", "demo", "fp32", "auto")
    assert v.steps == 8 and v.seed == 7 and not v.seed_was_random
    assert v.sigma_max == 1.0 and v.use_cfg is False
    assert v.init_audio is None and v.init_noise_level is None
    assert v.inpaint_spans == () and v.regen_spans_latent == ()
    assert v.limiter_ceiling == DEFAULT_LIMITER_CEILING
    assert v.warnings == ()


def test_names_are_normalised() -> None:
    v = check(model=" SM-SFX", precision="bf16", backend="TRT", prompt="  kick drum  ", seed=1)
    assert (v.model, v.decoder, v.precision, v.backend) == ("sm-sfx", "same-s", "fp16", "tensorrt")
    assert v.prompt == "kick drum"
    medium = check(model="medium", decoder="SAME-S", precision="fp16mixed", seed=1)
    assert (medium.decoder, medium.precision) == ("same-s", "fp16")
    assert check(model="medium", seed=1).decoder == "same-l"


@pytest.mark.parametrize("seconds, latents, samples", [
    (0.1, 32, 4410), (0.5, 32, 22050), (2.97, 32, 130977), (3.0, 33, 132300),
    (47.0, 507, 2072700), (MAX_SECONDS, 4096, 16777216),
])
def test_lengths(seconds: float, latents: int, samples: int) -> None:
    v = check(seconds=seconds, seed=0)
    assert v.latent_len == latents and v.dit_latents == latents
    assert v.out_samples == samples


def test_seed_range_and_random_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert check(seed=0).seed == 0
    assert check(seed=2**32 - 1).seed == 2**32 - 1
    assert check(seed=np.uint32(5)).seed == 5
    seen: list[int] = []

    def randbelow(n: int) -> int:
        seen.append(n)
        return 123456789

    monkeypatch.setattr(request_module.secrets, "randbelow", randbelow)
    v = check(seed=None)
    assert v.seed == 123456789 and v.seed_was_random is True
    assert seen == [2**32]


def test_random_seeds_differ_and_stay_in_range() -> None:
    seeds = {check().seed for _ in range(8)}
    assert len(seeds) > 1
    assert all(0 <= s < 2**32 for s in seeds)


def test_cfg_switches_guidance() -> None:
    assert check(cfg=1.0, seed=1).use_cfg is False
    guided = check(cfg=4.5, apg=0.5, seed=1)
    assert guided.use_cfg is True and guided.cfg == 4.5 and guided.apg == 0.5
    assert check(cfg=0, seed=1).use_cfg is True


# ------------------------------------------------------------------------------------------
# Every refusal names the bad value


@pytest.mark.parametrize("fields, named", [
    ({"prompt": 42}, "42"),
    ({"prompt": None}, "None"),
    ({"negative_prompt": ["x"]}, "['x']"),
    ({"seconds": 0.05}, "0.05"),
    ({"seconds": 0.0}, "0 s"),
    ({"seconds": -3}, "-3"),
    ({"seconds": 400.0}, "400"),
    ({"seconds": "5"}, "'5'"),
    ({"seconds": True}, "True"),
    ({"steps": 0}, "0"),
    ({"steps": 51}, "51"),
    ({"steps": 8.0}, "8.0"),
    ({"steps": True}, "True"),
    ({"steps": "8"}, "'8'"),
    ({"seed": -1}, "-1"),
    ({"seed": 2**32}, "4294967296"),
    ({"seed": 1.5}, "1.5"),
    ({"seed": False}, "False"),
    ({"cfg": -0.5}, "-0.5"),
    ({"cfg": 15.5}, "15.5"),
    ({"apg": 1.5}, "1.5"),
    ({"apg": -0.1}, "-0.1"),
    ({"limiter_ceiling": 0.0}, "0"),
    ({"limiter_ceiling": -1.0}, "-1"),
    ({"limiter_ceiling": 101.0}, "101"),
    ({"model": "huge"}, "'huge'"),
    ({"decoder": "same-s"}, "'same-s'"),  # the demo pairs only with its own decoder
    ({"precision": "int8"}, "'int8'"),
    ({"backend": "metal"}, "'metal'"),
])
def test_out_of_range_values_are_refused(fields: dict, named: str) -> None:
    with pytest.raises(RequestError) as err:
        check(**fields)
    assert named in str(err.value)


@pytest.mark.parametrize("field", ["seconds", "cfg", "apg", "limiter_ceiling"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_inf_are_refused(field: str, bad: float) -> None:
    with pytest.raises(RequestError, match=r"(nan|inf).*finite"):
        check(**{field: bad})


def test_range_messages_give_the_range() -> None:
    with pytest.raises(RequestError, match=r"seconds 500 s is out of range; choose a value from "
                                           r"0\.1 to 380\.4\d* s"):
        check(seconds=500)
    with pytest.raises(RequestError, match=r"steps 60 .* from 1 to 50"):
        check(steps=60)
    with pytest.raises(RequestError, match=r"seed -1 .* from 0 to 4294967295"):
        check(seed=-1)


def test_model_limit_is_the_callers_max_seconds() -> None:
    with pytest.raises(RequestError, match=r"seconds 31 s .* 0\.1 to 30 s"):
        validate_request(GenerationRequest("x", seconds=31), 30.0)
    assert validate_request(GenerationRequest("x", seconds=30, seed=1), 30.0).seconds == 30.0


def test_init_noise_level_rules() -> None:
    audio = stereo(4.0)
    with pytest.raises(RequestError, match=r"0\.005.*NaN"):
        check(init_audio=audio, init_noise_level=0.005)
    with pytest.raises(RequestError, match=r"1\.2"):
        check(init_audio=audio, init_noise_level=1.2)
    with pytest.raises(RequestError, match=r"init noise level 0\.5 needs init audio"):
        check(init_noise_level=0.5)
    assert check(init_audio=audio, init_noise_level=0.01, seed=1).sigma_max == 0.01
    assert check(init_audio=audio, init_noise_level=1.0, seed=1).sigma_max == 1.0


# ------------------------------------------------------------------------------------------
# Audio-to-audio


def test_a2a_default_level_and_length_from_audio() -> None:
    audio = stereo(4.0)
    v = check(init_audio=audio, seed=3)
    assert v.mode == "a2a"
    assert v.init_noise_level == 0.6 and v.sigma_max == 0.6
    assert v.seconds == 4.0
    assert v.latent_len == 44 and v.out_samples == 176400
    assert v.init_audio is not None
    assert v.init_audio.dtype == np.float32 and v.init_audio.shape == (44 * 4096, 2)
    assert np.all(v.init_audio[:176400] == 0.25)
    assert np.all(v.init_audio[176400:] == 0.0)
    assert v.warnings == ()
    assert check(init_audio=audio, init_noise_level=0.3, seed=1).sigma_max == 0.3


def test_init_audio_is_padded_or_trimmed_with_a_warning() -> None:
    short = check(init_audio=stereo(2.0), seconds=6.0, seed=1)
    assert short.init_audio is not None and short.init_audio.shape == (65 * 4096, 2)
    assert np.all(short.init_audio[88200:] == 0.0)
    assert any("shorter than 6 s" in w for w in short.warnings)
    long = check(init_audio=stereo(10.0), seconds=1.0, seed=1)
    assert long.init_audio is not None and long.init_audio.shape == (32 * 4096, 2)
    assert np.all(long.init_audio == 0.25)  # 32 latents = 2.97 s, all still inside the input
    assert any("only its first 1 s" in w for w in long.warnings)


def test_init_audio_does_not_alias_the_callers_array() -> None:
    audio = stereo(4.0)
    v = check(init_audio=audio, seed=1)
    assert v.init_audio is not None
    v.init_audio[0, 0] = 9.0
    assert audio[0, 0] == np.float32(0.25)


def test_overlong_init_audio_is_cut_to_the_limit_with_a_warning() -> None:
    v = validate_request(GenerationRequest("x", init_audio=stereo(3.5), seed=1), 3.0)
    assert v.seconds == 3.0
    assert "The init audio is 3.5 s long; only its first 3 s are used." in v.warnings


@pytest.mark.parametrize("audio, named", [
    (np.zeros((100,), np.float32), "(100,)"),
    (np.zeros((100, 1), np.float32), "(100, 1)"),
    (np.zeros((0, 2), np.float32), "(0, 2)"),
    (np.zeros((100, 2), np.int16), "int16"),
    (np.full((100, 2), np.nan, np.float32), "NaN"),
    (np.zeros((1000, 2), np.float32), "only 0.022 s"),  # 22.7 ms is under the 0.1 s minimum
    (np.zeros((4409, 2), np.float32), "only 0.099 s"),  # never "0.1 s ... at least 0.1 s"
])
def test_bad_init_arrays(audio: np.ndarray, named: str) -> None:
    with pytest.raises(RequestError) as err:
        check(init_audio=audio)
    assert named in str(err.value)


def test_init_audio_of_wrong_type() -> None:
    with pytest.raises(RequestError, match="list"):
        check(init_audio=[0.0, 0.0])


def _fake_audio_io(monkeypatch: pytest.MonkeyPatch, reader, frames: int = SR) -> None:
    monkeypatch.setattr("engines.audio_io.read_audio", reader)
    monkeypatch.setattr("engines.audio_io.audio_info", lambda path: types.SimpleNamespace(
        frames=frames, samplerate=SR, channels=2))


def test_init_audio_path_is_read_only_as_far_as_needed(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    calls: list[object] = []

    def read_audio(path: object, max_seconds: float | None = None) -> np.ndarray:
        calls.append((path, max_seconds))
        return stereo(1.0, 0.5)

    _fake_audio_io(monkeypatch, read_audio)
    file = tmp_path / "loop.wav"
    v = check(init_audio=file, seed=1)
    # No length asked: at most the model's maximum, in whole latents.
    assert calls == [(file, 4096 * 4096 / SR)]
    assert v.mode == "a2a" and v.seconds == 1.0 and v.out_samples == 44100
    assert v.init_audio is not None and v.init_audio.shape == (32 * 4096, 2)
    assert v.init_audio[0, 0] == 0.5
    calls.clear()
    check(init_audio=file, seed=1, seconds=4.0)
    assert calls == [(file, 44 * 4096 / SR)]  # 4 s is 44 latents


def test_long_file_warns_with_its_whole_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the start is read, yet the warning still tells the file's real length."""
    _fake_audio_io(monkeypatch, lambda path, max_seconds=None: stereo(max_seconds),
                   frames=30 * 60 * SR)
    v = check(init_audio="long.wav", seed=1, seconds=2.0)
    assert "The init audio (30 min) is longer than 2 s; only its first 2 s are used." \
        in v.warnings
    limited = validate_request(GenerationRequest("x", init_audio="long.wav", seed=1), 3.0)
    assert "The init audio is 30 min long; only its first 3 s are used." in limited.warnings


def test_audio_file_errors_propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    def read_audio(path: object, max_seconds: float | None = None) -> np.ndarray:
        raise AudioFileError(f"'{path}' is not an audio file; choose a WAV or FLAC file.")

    _fake_audio_io(monkeypatch, read_audio)
    with pytest.raises(AudioFileError, match="notes.txt"):
        check(init_audio="notes.txt")


# ------------------------------------------------------------------------------------------
# Numbers in messages are for people


def test_computed_limits_are_rounded_into_their_range() -> None:
    audio = np.full((97848, 2), 0.25, np.float32)  # 2.21878 s
    with pytest.raises(RequestError) as err:
        check(init_audio=audio, inpaint_spans=[(0.5, 3.0)], seed=1)
    message = str(err.value)
    assert "2.21878" not in message
    # The limit offered is one the check accepts (2.22 would be refused).
    assert message == ("inpaint span end 3 s is out of range; choose a value from 0 to 2.21 s "
                       "(keep spans inside the 2.21 s clip).")
    assert check(init_audio=audio, inpaint_spans=[(0.5, 2.21)], seed=1).mode == "inpaint"


def test_a_value_just_past_a_limit_never_reads_like_the_limit() -> None:
    with pytest.raises(RequestError, match=r"cfg 15\.0000001 is out of range; choose a value "
                                           r"from 0 to 15 "):
        check(cfg=15.0000001)
    with pytest.raises(RequestError, match=r"seed 4294967296 is out of range; choose a whole "
                                           r"number from 0 to 4294967295\."):
        check(seed=2**32)


def test_length_warnings_compare_what_they_print() -> None:
    just_under = np.full((48065, 2), 0.1, np.float32)  # 1.08991 s
    assert not [w for w in check(init_audio=just_under, seconds=1.09, seed=1).warnings
                if "init audio" in w]
    short = check(init_audio=just_under, seconds=1.1, seed=1)
    assert "The init audio (1.09 s) is shorter than 1.1 s; the rest is silence." in \
        short.warnings
    longer = check(init_audio=just_under, seconds=1.08, seed=1)
    assert "The init audio (1.09 s) is longer than 1.08 s; only its first 1.08 s are used." \
        in longer.warnings


# ------------------------------------------------------------------------------------------
# Inpainting


def test_inpaint_spans_round_to_latents() -> None:
    v = check(init_audio=stereo(5.0), inpaint_spans=[(1.0, 2.0)], seed=1)
    assert v.mode == "inpaint"
    assert v.sigma_max == 1.0 and v.init_noise_level is None
    assert v.inpaint_spans == ((1.0, 2.0),)
    # round(1.0 * 44100 / 4096) = round(10.77) = 11; round(21.53) = 22
    assert v.regen_spans_latent == ((11, 22),)
    mask = v.keep_mask()
    assert mask.dtype == np.float32 and mask.shape == (54,)
    assert mask[:11].tolist() == [1.0] * 11
    assert mask[11:22].tolist() == [0.0] * 11
    assert mask[22:].tolist() == [1.0] * 32


def test_overlapping_and_adjacent_spans_merge() -> None:
    v = check(init_audio=stereo(10.0), seed=1,
              inpaint_spans=[(6.0, 7.0), (1.0, 2.0), (1.5, 3.0), (3.0, 4.0), (8.0, 9.0)])
    assert v.inpaint_spans == ((1.0, 4.0), (6.0, 7.0), (8.0, 9.0))
    assert v.regen_spans_latent == ((11, 43), (65, 75), (86, 97))


def test_spans_touching_after_rounding_merge_in_latents() -> None:
    v = check(init_audio=stereo(5.0), seed=1, inpaint_spans=[(0.0, 1.0), (1.02, 2.0)])
    assert v.inpaint_spans == ((0.0, 1.0), (1.02, 2.0))  # apart in seconds
    assert v.regen_spans_latent == ((0, 22),)  # both edges round to latent 11


def test_spans_from_parse_span_work() -> None:
    v = check(init_audio=stereo(5.0), seed=1, inpaint_spans=[parse_span("0.5:1.5")])
    assert v.regen_spans_latent == ((5, 16),)


@pytest.mark.parametrize("spans, named", [
    ([(2.0, 1.0)], "2:1"),
    ([(1.0, 1.0)], "1:1"),
    ([(4.0, 6.0)], "6 s"),
    ([(-1.0, 2.0)], "-1 s"),
    ([(1.0, math.nan)], "nan"),
    ([(1.0,)], "(1.0,)"),
    ([(1.0, 2.0, 3.0)], "(1.0, 2.0, 3.0)"),
    (["1:2"], "'1:2'"),
    ("1:2", "'1:2'"),
    ([(1.0, 1.02)], "1:1.02"),  # both edges round to latent 11
])
def test_bad_spans(spans: object, named: str) -> None:
    with pytest.raises(RequestError) as err:
        check(init_audio=stereo(5.0), inpaint_spans=spans)
    assert named in str(err.value)


def test_sub_latent_span_explains_the_snapping() -> None:
    with pytest.raises(RequestError, match=r"4096-sample \(~92\.9 ms\) steps"):
        check(init_audio=stereo(5.0), inpaint_spans=[(1.0, 1.02)])


def test_spans_need_init_audio() -> None:
    with pytest.raises(RequestError, match="inpainting needs init audio"):
        check(inpaint_spans=[(1.0, 2.0)])


def test_inpaint_ignores_noise_level_with_a_warning() -> None:
    v = check(init_audio=stereo(5.0), inpaint_spans=[(1.0, 2.0)], init_noise_level=0.4, seed=1)
    assert v.mode == "inpaint" and v.sigma_max == 1.0 and v.init_noise_level is None
    assert any("inpainting always starts from full noise" in w for w in v.warnings)


def test_whole_clip_inpaint_warns() -> None:
    v = check(init_audio=stereo(5.0), inpaint_spans=[(0.0, 5.0)], seed=1)
    assert any("whole clip" in w for w in v.warnings)


# ------------------------------------------------------------------------------------------
# Warnings


def test_negative_prompt_at_cfg_one_warns() -> None:
    v = check(negative_prompt="muffled", seed=1)
    assert "negative prompt has no effect at cfg 1; raise --cfg above 1 to use it." in [
        say(w) for w in v.warnings]
    assert check(negative_prompt="muffled", cfg=3.0, seed=1).warnings == ()


def test_empty_prompt_is_allowed_with_a_warning() -> None:
    v = check(prompt="   ", seed=1)
    assert v.prompt == ""
    assert len(v.warnings) == 1 and "unconditioned" in v.warnings[0]
    unicode = check(prompt="雨の音 🌧", seed=1)
    assert unicode.prompt == "雨の音 🌧" and unicode.warnings == ()


# ------------------------------------------------------------------------------------------
# parse_span


@pytest.mark.parametrize("text, span", [
    ("1.5:2.25", (1.5, 2.25)), ("0:3", (0.0, 3.0)), (" 1 : 2 ", (1.0, 2.0)), ("2:1", (2.0, 1.0)),
])
def test_parse_span(text: str, span: tuple[float, float]) -> None:
    assert parse_span(text) == span


@pytest.mark.parametrize("text", ["1.5", "1:2:3", ":2", "1:", "a:b", "1-2", "", "nan:1", "0:inf"])
def test_parse_span_rejects(text: str) -> None:
    with pytest.raises(RequestError, match="START:END") as err:
        parse_span(text)
    assert f"'{text}'" in str(err.value)


# ------------------------------------------------------------------------------------------
# One rule for runs of seeds; numbers too large for a float; remedies that name a setting


@pytest.mark.parametrize("seed, variations, words", [
    (4294967295, 2, "choose a seed from 0 to 4294967294"),
    (4294967296, 1, "seed 4294967296 is out of range; choose a whole number from 0 to"),
    (-1, 1, "seed -1 is out of range"),
    (10**400, 1, "seed 1e+400 is out of range"),
    (1, 100, "variations 100 is out of range; choose 1 to 99."),
    (1, 0, "variations 0 is out of range"),
])
def test_a_run_of_seeds_past_the_last_is_refused(seed: int, variations: int,
                                                 words: str) -> None:
    from engines.seeds import check_seed_run

    with pytest.raises(RequestError, match=re_escape(words)):
        check_seed_run(seed, variations)


def test_a_run_of_seeds_that_fits_is_accepted() -> None:
    from engines.seeds import MAX_VARIATIONS, check_seed_run, random_seed_run

    check_seed_run(4294967294, 2)
    check_seed_run(None, MAX_VARIATIONS)
    for _ in range(200):
        assert 0 <= random_seed_run(MAX_VARIATIONS) <= 4294967295 - (MAX_VARIATIONS - 1)


def test_numbers_no_float_holds_are_read_and_written_short() -> None:
    from engines.number_text import as_float, json_loads, short

    assert json_loads("[" + "9" * 5000 + ", -" + "9" * 5000 + ", 7]") == [math.inf, -math.inf, 7]
    assert as_float(10**400) == math.inf and as_float(-(10**400)) == -math.inf
    assert [short(v) for v in (12, -0.5, 1e308, -7 * 10**20, 10**5000, math.inf)] == \
        ["12", "-0.5", "1e+308", "-7e+20", "1e+5000", "inf"]


def test_an_integer_of_hundreds_of_digits_is_out_of_range_not_an_overflow() -> None:
    with pytest.raises(RequestError, match="seconds is inf; give a finite number"):
        check(seconds=10**400)
    with pytest.raises(RequestError, match=r"seed 1e\+400 is out of range"):
        check(seed=10**400)


def test_a_remedy_names_the_setting_as_each_front_end_calls_it(tmp_path: Path) -> None:
    import pickle

    from engines.errors import Advice

    with pytest.raises(RequestError) as caught:
        check(inpaint_spans=[(0.1, 0.3)])
    advice = caught.value.args[0]
    assert isinstance(advice, Advice) and advice.setting == "init_audio"
    assert "pass --init-audio FILE (the spans" in say(caught.value)
    assert "pass an init audio file (the spans" in str(caught.value)  # no front end's words
    assert "pass an init_audio file in the row" in advice.worded(
        {"init_audio": "an init_audio file in the row"})
    warning = check(negative_prompt="noise").warnings[0]
    assert say(warning) == "negative prompt has no effect at cfg 1; raise --cfg above 1 to use it."
    again = pickle.loads(pickle.dumps(warning))  # worker processes send warnings back
    assert again == warning and again.worded({"cfg": "the row's cfg"}).startswith(
        "negative prompt has no effect at cfg 1; raise the row's cfg above 1")


def re_escape(text: str) -> str:
    import re

    return re.escape(text)
