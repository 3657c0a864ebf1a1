"""What a user asks for (GenerationRequest) and the checked, resolved form the engines run
(ValidatedRequest). Every refusal is one RequestError sentence naming the value, the allowed
range and the fix; every accepted-but-questionable choice becomes a warning the UI shows."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR
from pathlib import Path

import numpy as np

from engines import audio_io  # read through the module at call time: tests replace readers there
from engines.adapters.choice import AdapterChoice
from engines.catalog import (
    get_model_set,
    normalize_backend,
    normalize_precision,
    normalize_tier,
    paired_decoder,
)
from engines.constants import (
    CHANNELS,
    DEFAULT_LIMITER_CEILING,
    SAMPLE_RATE,
    SAMPLES_PER_LATENT,
    SIGMA_MIN,
    codec_length,
    output_samples,
)
from engines.durations import duration_text, same_when_shown
from engines.error_sentences import printable
from engines.errors import Advice, Remedy, RequestError
from engines.request_adapters import checked_adapters
from engines.request_checks import (
    SECONDS_PLACES,
    checked_integer,
    checked_number,
    checked_text,
    echo,
    fmt,
)
from engines.sampling import keep_mask, span_to_latents

# The length a request gets when it names none and has no init audio, by model set: a game
# sound effect is a second or two, a music cue needs time for a phrase. One rule for the window
# (its Length box follows the model) and for the command line and batch lists.
SFX_SECONDS = 2.0
MUSIC_SECONDS = 30.0
MIXED_SECONDS = 10.0  # medium makes music and sound effects alike
DEFAULT_SECONDS_BY_MODEL = {"demo": SFX_SECONDS, "sm-sfx": SFX_SECONDS,
                            "sm-music": MUSIC_SECONDS, "medium": MIXED_SECONDS}
MIN_SECONDS = 0.1
MAX_STEPS = 50
MAX_SEED = 2**32 - 1
MAX_CFG = 15.0
MAX_LIMITER_CEILING = 100.0
DEFAULT_A2A_NOISE_LEVEL = 0.6
LATENT_MS = SAMPLES_PER_LATENT / SAMPLE_RATE * 1000.0  # about 92.9 ms

AudioInput = str | Path | np.ndarray | None


@dataclass
class GenerationRequest:
    prompt: str
    negative_prompt: str = ""
    model: str = "demo"
    decoder: str | None = None
    precision: str | None = None
    seconds: float | None = None  # None: the init audio's length if given, else default_seconds
    steps: int = 8
    seed: int | None = None  # None: random, reported back
    cfg: float = 1.0
    apg: float = 1.0
    init_audio: AudioInput = None  # path, or float32 (N, 2) array at 44.1 kHz
    init_noise_level: float | None = None
    inpaint_spans: Sequence[tuple[float, float]] = ()
    limiter_ceiling: float = DEFAULT_LIMITER_CEILING
    backend: str = "auto"
    # canonical | fp8 | fp8_fast | legacy (SA3 codecs), canonical | coarse (demo); None: the
    # catalog's default rule (engines.catalog.tiers.DEFAULT_RULE) picks it.
    codec_tier: str | None = None
    adapters: Sequence[AdapterChoice] = ()  # LoRA/DoRA files with strengths, stacked in order


@dataclass(frozen=True, eq=False)
class ValidatedRequest:
    """A request every engine can run as is: names canonical, numbers in range, seed fixed."""

    prompt: str
    negative_prompt: str
    model: str
    decoder: str
    precision: str
    seconds: float
    steps: int
    seed: int
    seed_was_random: bool
    cfg: float
    apg: float
    init_audio: np.ndarray | None  # float32 (latent_len * 4096, 2), zero padded / trimmed
    init_noise_level: float | None  # the effective level for a2a, else None
    inpaint_spans: tuple[tuple[float, float], ...]  # merged, seconds
    limiter_ceiling: float
    backend: str
    mode: str  # "t2a" | "a2a" | "inpaint"
    sigma_max: float
    use_cfg: bool
    latent_len: int
    dit_latents: int
    out_samples: int
    # Latent index ranges [start, end) to REGENERATE (the keep mask is 0 there), merged.
    regen_spans_latent: tuple[tuple[int, int], ...] = ()
    codec_tier: str | None = None  # as asked (checked against the decoder); None: default rule
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # Paths absolute, strengths checked; adapter_infos[i] says what adapters[i] is (name,
    # SHA-256, variant, rank) for provenance. Empty: the plain engine runs.
    adapters: tuple[AdapterChoice, ...] = ()
    adapter_infos: tuple = ()

    def keep_mask(self) -> np.ndarray:
        """(latent_len,) float32: 1 where init latents are kept, 0 where regenerated."""
        return keep_mask(self.regen_spans_latent, self.latent_len)


def default_seconds(model: str) -> float:
    """The length (seconds) a request for `model` (any accepted name) gets when it gives none."""
    return DEFAULT_SECONDS_BY_MODEL.get(get_model_set(model).key, SFX_SECONDS)


def default_seconds_help() -> str:
    """The rule in words, for --help: "2 s for demo and sm-sfx, 30 s for sm-music, ..."."""
    by_length: dict[float, list[str]] = {}
    for model, seconds in DEFAULT_SECONDS_BY_MODEL.items():
        by_length.setdefault(seconds, []).append(model)
    return ", ".join(f"{duration_text(seconds)} for {' and '.join(models)}"
                     for seconds, models in sorted(by_length.items()))


# --------------------------------------------------------------------------------------------
# Audio and spans


def init_frames_needed(seconds: float) -> int:
    """Frames of init audio a request of `seconds` uses: whole latents, at least the codec's
    minimum, so reading more of a file than this is wasted memory."""
    return codec_length(seconds) * SAMPLES_PER_LATENT


@dataclass(frozen=True)
class _InitAudio:
    audio: np.ndarray  # float32 (N, 2), at most the frames the request can use
    seconds: float  # the whole file's (or array's) length, for the warnings
    source: str


def _load_init_audio(value: AudioInput, max_frames: int) -> _InitAudio | None:
    """The init audio, of which only the first `max_frames` are read (a long file costs the
    clip's memory, not the file's), with the full length it has."""
    if value is None:
        return None
    if isinstance(value, (str, Path)):
        info = audio_io.audio_info(value)
        # The length read_audio gives a whole file: round(frames * SAMPLE_RATE / rate).
        full_frames = (info.frames * SAMPLE_RATE + info.samplerate // 2) // info.samplerate
        audio = np.asarray(audio_io.read_audio(value, max_seconds=max_frames / SAMPLE_RATE))
        source = f"'{printable(value)}'"
    elif isinstance(value, np.ndarray):
        audio = value
        full_frames = value.shape[0] if value.ndim >= 1 else 0
        source = "the init audio array"
    else:
        raise RequestError(f"init audio must be a file path or a float32 (N, 2) array, got "
                           f"{type(value).__name__}.")
    if audio.ndim != 2 or audio.shape[1] != CHANNELS or audio.shape[0] == 0:
        raise RequestError(f"{source} has shape {audio.shape}; init audio must be stereo "
                           f"frames, shape (N, 2) with N > 0, at {SAMPLE_RATE} Hz.")
    if not np.issubdtype(audio.dtype, np.floating):
        raise RequestError(f"{source} has dtype {audio.dtype}; init audio must be float "
                           f"samples in [-1, 1].")
    # Only the part used is converted and checked; fit_length copies it, so the caller's
    # array is never aliased.
    if audio.shape[0] < max_frames:  # all of it was read: its length is exact
        full_frames = audio.shape[0]
    audio = np.ascontiguousarray(audio[:max_frames], dtype=np.float32)
    if not np.isfinite(audio).all():
        raise RequestError(f"{source} contains NaN or infinite samples; use a clean file.")
    return _InitAudio(audio, full_frames / SAMPLE_RATE, source)


def _merge(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sort and merge overlapping or touching spans."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _check_spans(spans: object, seconds: float) -> list[tuple[float, float]]:
    if isinstance(spans, (str, bytes)) or not isinstance(spans, Sequence):
        raise RequestError(f"inpaint spans must be a list of (start, end) pairs in seconds, "
                           f"got {spans!r}.")
    checked: list[tuple[float, float]] = []
    clip = fmt(seconds, SECONDS_PLACES, ROUND_FLOOR)
    for span in spans:
        if isinstance(span, (str, bytes)) or not isinstance(span, Sequence) or len(span) != 2:
            raise RequestError(f"inpaint span {span!r} is not a (start, end) pair in seconds; "
                               f"write it as START:END, e.g. 1.5:2.25.")
        start = checked_number("inpaint span start", span[0], 0.0, seconds, unit=" s",
                        fix=f"keep spans inside the {clip} s clip")
        end = checked_number("inpaint span end", span[1], 0.0, seconds, unit=" s",
                      fix=f"keep spans inside the {clip} s clip")
        if start >= end:
            raise RequestError(f"inpaint span {echo(start)}:{echo(end)} is empty or reversed; "
                               f"its start must be before its end.")
        checked.append((start, end))
    return checked


def _latent_spans(spans: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    result: list[tuple[int, int]] = []
    for start, end in spans:
        first, stop = span_to_latents(start, end)
        if stop <= first:
            raise RequestError(
                f"inpaint span {echo(start)}:{echo(end)} covers no whole latent: spans are "
                f"snapped to {SAMPLES_PER_LATENT}-sample (~{LATENT_MS:.1f} ms) steps, so make "
                f"it longer or move its edges.")
        if result and first <= result[-1][1]:
            result[-1] = (result[-1][0], max(result[-1][1], stop))
        else:
            result.append((first, stop))
    return result


# --------------------------------------------------------------------------------------------


def checked_request(req: GenerationRequest | ValidatedRequest) -> ValidatedRequest:
    """The request checked against its model's longest length: a front end calls this once at
    its edge and hands the result on; one already checked passes as it is, so the generator
    (which calls this too, for callers that hand it a raw request) never checks it twice."""
    if isinstance(req, ValidatedRequest):
        return req
    return validate_request(req, get_model_set(req.model).max_seconds)


def validate_request(req: GenerationRequest, max_seconds: float) -> ValidatedRequest:
    """Check and resolve every field of `req` for a model allowing up to `max_seconds`."""
    warnings: list[str] = []

    prompt = checked_text("prompt", req.prompt)
    negative = checked_text("negative prompt", req.negative_prompt)
    model = get_model_set(req.model).key
    decoder = paired_decoder(model, req.decoder)
    precision = (get_model_set(model).default_precision if req.precision is None
                 else normalize_precision(req.precision))
    backend = normalize_backend(req.backend)
    codec_tier = normalize_tier(req.codec_tier, decoder)
    adapters = checked_adapters(req.adapters)
    warnings.extend(adapters.warnings)

    steps = checked_integer("steps", req.steps, 1, MAX_STEPS)
    if req.seed is None:
        seed, seed_was_random = secrets.randbelow(MAX_SEED + 1), True
    else:
        seed, seed_was_random = checked_integer("seed", req.seed, 0, MAX_SEED), False
    cfg = checked_number("cfg", req.cfg, 0.0, MAX_CFG, fix="1 turns guidance off")
    apg = checked_number("apg", req.apg, 0.0, 1.0)
    limiter = checked_number("limiter ceiling", req.limiter_ceiling, 0.0, MAX_LIMITER_CEILING,
                      low_open=True, fix="values above 1 bypass the limiter")
    level: float | None = None
    if req.init_noise_level is not None:
        level = checked_number("init noise level", req.init_noise_level, SIGMA_MIN, 1.0,
                        fix=f"below {fmt(SIGMA_MIN)} the model emits NaN")

    asked = None if req.seconds is None else checked_number("seconds", req.seconds, MIN_SECONDS,
                                                     max_seconds, unit=" s")
    init = _load_init_audio(req.init_audio, init_frames_needed(
        max_seconds if asked is None else asked))
    spans_in = req.inpaint_spans if req.inpaint_spans is not None else ()
    if init is None:
        if level is not None:
            raise RequestError(Advice(f"init noise level {echo(level)} needs init audio; "
                                      "pass {0} or leave the level unset.",
                                      Remedy.file("init_audio")))
        if len(spans_in) > 0:
            raise RequestError(Advice("inpainting needs init audio; pass {setting} (the spans "
                                      "say which parts of it to regenerate).",
                                      Remedy.file("init_audio")))

    if asked is not None:
        seconds = asked
    elif init is not None:
        seconds = init.seconds
        if seconds > max_seconds:
            if not same_when_shown(seconds, max_seconds):  # else the cut is too small to say
                warnings.append(f"The init audio is {duration_text(seconds)} long; only its "
                                f"first {duration_text(max_seconds)} are used.")
            seconds = max_seconds
        elif seconds < MIN_SECONDS:
            raise RequestError(f"The init audio is only {fmt(seconds, 3, ROUND_FLOOR)} s "
                               f"long; it must be at least {fmt(MIN_SECONDS)} s.")
    else:
        seconds = default_seconds(model)

    if not prompt:
        warnings.append("The prompt is empty, so the sound is unconditioned.")
    use_cfg = cfg != 1.0
    if negative and not use_cfg:
        warnings.append(Advice("negative prompt has no effect at cfg 1; raise {0} above 1 "
                               "to use it.", Remedy.setting("cfg")))

    latent_len = codec_length(seconds)
    init_audio: np.ndarray | None = None
    if init is not None:
        # Compared as shown, so a warning never reads "1.09 s is shorter than 1.09 s"
        # (rounding is monotone: lengths that read differently compare as they read).
        have, want = duration_text(init.seconds), duration_text(seconds)
        if asked is not None and not same_when_shown(init.seconds, seconds):
            if init.seconds < seconds:
                warnings.append(f"The init audio ({have}) is shorter than {want}; the rest "
                                f"is silence.")
            else:
                warnings.append(f"The init audio ({have}) is longer than {want}; only its "
                                f"first {want} are used.")
        init_audio = audio_io.fit_length(init.audio, latent_len * SAMPLES_PER_LATENT)

    spans: tuple[tuple[float, float], ...] = ()
    latent_spans: tuple[tuple[int, int], ...] = ()
    if init is not None and len(spans_in) > 0:
        mode = "inpaint"
        spans = tuple(_merge(_check_spans(spans_in, seconds)))
        latent_spans = tuple(_latent_spans(spans))
        sigma_max = 1.0
        if level is not None:
            warnings.append(f"init noise level {echo(level)} is ignored: inpainting always "
                            f"starts from full noise.")
            level = None
        if len(spans) == 1 and spans[0][0] <= 0.0 and spans[0][1] >= seconds:
            warnings.append("The inpaint spans cover the whole clip, so nothing of the init "
                            "audio is kept.")
    elif init is not None:
        mode = "a2a"
        level = DEFAULT_A2A_NOISE_LEVEL if level is None else level
        sigma_max = level
    else:
        mode = "t2a"
        sigma_max = 1.0

    return ValidatedRequest(
        prompt=prompt,
        negative_prompt=negative,
        model=model,
        decoder=decoder,
        precision=precision,
        seconds=seconds,
        steps=steps,
        seed=seed,
        seed_was_random=seed_was_random,
        cfg=cfg,
        apg=apg,
        init_audio=init_audio,
        init_noise_level=level,
        inpaint_spans=spans,
        limiter_ceiling=limiter,
        backend=backend,
        mode=mode,
        sigma_max=sigma_max,
        use_cfg=use_cfg,
        latent_len=latent_len,
        dit_latents=latent_len,
        out_samples=output_samples(seconds),
        regen_spans_latent=latent_spans,
        codec_tier=codec_tier,
        warnings=tuple(warnings),
        adapters=adapters.choices,
        adapter_infos=adapters.infos,
    )
