"""Planning a model loop: where the take is cut open, which span the model regenerates, and
the inpainting request that does it (engines.finish.loop assembles the answer).

The take is rotated so its end-to-start junction lies near the middle; a span around the
junction is regenerated with the take's prompt and settings and a new seed. The rotation is not
undone: the loop is the rotated, repaired take, so its wrap point (last frame -> first) is a
place where the take was continuous all along, and the former junction is model-written audio.
Undoing the rotation would put the wrap inside the regenerated span, where the join is only as
good as the model made it; a loop is a circle, so which point comes first in the file changes
nothing for a game engine. The wrap is picked among points within DEFAULT_SEARCH_S of the
take's middle as the one whose join the seam measures find least noticeable (the way a sampler
snaps loop points to a quiet zero crossing).

Length rules. The loop has exactly the take's N frames, whatever N is. Inpainting regenerates
whole latents (4096 frames) counted from the first frame of the request's audio, and a request
returns round(seconds * 44100) frames. So the request's audio is a window of the rotated take,
a whole number of latents long, whose start puts the span exactly on that grid: the span is
`seam_s` rounded to whole latents (0.5 s -> 5 latents = 0.464 s) and centred on the junction,
except that it reaches further on a side where the take's edge is unsteady (`unsteady_edges`:
the fade-in or start burst and the fade-out generative models write at clip edges, which the
model should rewrite rather than join its audio to; cover_edges=False turns this off). The
window adds about DEFAULT_CONTEXT_S of kept audio on each side, at least the codec's 32-latent
minimum (2.97 s), so a loop costs the same for any take length (a 10 s demo take: one 3 s
request). context_s=None makes the whole take the window instead: the model sees all of it and
its true length, which suits a GPU; the span is then snapped outwards to the grid from the
take's first frame. Takes shorter than the window use the whole take too.
"""

from __future__ import annotations

import math
import numbers
import secrets
from dataclasses import dataclass, replace

import numpy as np

from engines.constants import MIN_CODEC_LATENTS, SAMPLE_RATE, SAMPLES_PER_LATENT
from engines.errors import Advice, RequestError
from engines.finish.seam_metrics import MARGIN, steadiest_point
from engines.finish.settings import LOOP_SEAM_RANGE_S
from engines.request import MAX_SEED, GenerationRequest, ValidatedRequest

# The request a take was made with, in either form: both carry every field a loop reads.
TakeRequest = GenerationRequest | ValidatedRequest

DEFAULT_SEAM_S = 0.5
DEFAULT_CONTEXT_S = 1.2  # with the default seam: the 32-latent minimum window
DEFAULT_SEARCH_S = 0.25  # the wrap is picked within this distance of the take's middle
SEARCH_STEP = 256  # frames between wrap candidates (5.8 ms)
EDGE_BLOCK = 2048  # 46 ms blocks for the edge level envelope
EDGE_TOLERANCE_DB = 1.5  # the least level spread counted as settled
MAX_EDGE_S = 1.5  # the seam is never widened further than this on either side
EDGE_PAD = 2048  # settled audio the widened span also covers (the backends' fade is 1024)
MAX_SEAM_S = 10.0
LATENT = SAMPLES_PER_LATENT

# Settings of the take's request that the seam is regenerated with.
_CARRIED = ("prompt", "negative_prompt", "model", "decoder", "precision", "codec_tier", "steps",
            "cfg", "apg", "limiter_ceiling", "backend")


@dataclass(frozen=True)
class LoopPlan:
    """One model loop: the inpainting request to run, and where its answer goes."""

    request: GenerationRequest  # init_audio = the window of the rotated take
    rotation_frames: int  # loop[i] = take[(i + rotation) % N] outside the span
    window_start: int  # frame of the rotated take where the request's audio starts
    span_frames: tuple[int, int]  # the regenerated frames [start, end), in the loop
    length: int  # N, the take's and the loop's frames

    @property
    def window_frames(self) -> int:
        return self.request.init_audio.shape[0]  # type: ignore[union-attr]

    @property
    def seam_span_s(self) -> tuple[float, float]:
        return self.span_frames[0] / SAMPLE_RATE, self.span_frames[1] / SAMPLE_RATE


def stereo_take(audio: np.ndarray) -> np.ndarray:
    audio = np.asarray(audio)
    if audio.ndim != 2 or audio.shape[1] != 2 or not np.issubdtype(audio.dtype, np.floating):
        raise ValueError(f"a loop needs float stereo audio (N, 2), got {audio.dtype} "
                         f"{audio.shape}")
    return np.ascontiguousarray(audio, dtype=np.float32)


def seam_latents(seam_s: float) -> int:
    """The seam width in whole latents (at least one)."""
    if not (isinstance(seam_s, numbers.Real) and 0.0 < seam_s <= MAX_SEAM_S):
        raise RequestError(f"loop seam {seam_s!r} s is out of range; choose a value above 0 "
                           f"to {MAX_SEAM_S:g} s.")
    return max(1, round(seam_s * SAMPLE_RATE / LATENT))


def _new_seed(previous: int | None) -> int:
    seed = secrets.randbelow(MAX_SEED + 1)
    return (seed + 1) % (MAX_SEED + 1) if seed == previous else seed


def wrap_candidates(frames: int, lo: int, hi: int, search_s: float) -> np.ndarray:
    """Rotation candidates near the middle, inside [lo, hi] and measurable."""
    reach = round(max(search_s, 0.0) * SAMPLE_RATE)
    middle = frames // 2
    first = max(lo, MARGIN, middle - reach)
    last = min(hi, frames - MARGIN, middle + reach)
    if first > last:
        return np.array([min(max(middle, lo), hi)])
    step = SEARCH_STEP if reach else 1
    return np.unique(np.r_[np.arange(first, last + 1, step), min(max(middle, first), last)])


def unsteady_edges(take: np.ndarray) -> tuple[int, int]:
    """Frames at the take's start and at its end whose level has not settled yet: the fade-in,
    start burst or fade-out generative models often write at a clip's edges. A block counts as
    settled once its level is within the spread of the take's middle."""
    blocks = take.shape[0] // EDGE_BLOCK
    if blocks < 10:
        return 0, 0
    power = np.mean(take[:blocks * EDGE_BLOCK].astype(np.float64).reshape(blocks, -1) ** 2,
                    axis=1)
    level = 10.0 * np.log10(power + 1e-10)
    middle = level[blocks // 5:blocks - blocks // 5]
    centre = float(np.median(middle))
    tolerance = max(EDGE_TOLERANCE_DB, float(np.percentile(np.abs(middle - centre), 90)))
    steady = np.abs(level - centre) <= tolerance
    limit = min(round(MAX_EDGE_S * SAMPLE_RATE / EDGE_BLOCK), blocks // 4)
    head = int(np.argmax(steady[:limit])) if steady[:limit].any() else limit
    tail = int(np.argmax(steady[::-1][:limit])) if steady[::-1][:limit].any() else limit
    return head * EDGE_BLOCK, tail * EDGE_BLOCK


def _seam_reach(take: np.ndarray, seam_s: float, cover_edges: bool) -> tuple[int, int]:
    """Frames the span must cover (before, after) the junction: half the seam each way, more
    where the take's end (before) or start (after) is unsteady, so the model rewrites a fading
    edge instead of joining its audio to it."""
    k = seam_latents(seam_s)
    before, after = k * LATENT // 2, k * LATENT - k * LATENT // 2
    if cover_edges:
        head, tail = unsteady_edges(take)
        before = max(before, tail + EDGE_PAD if tail else 0)
        after = max(after, head + EDGE_PAD if head else 0)
    return before, after


def check_loop_fits(seconds: float, seam_s: float, method: str) -> None:
    """RequestError (one sentence saying only what can be done) when a take of `seconds` cannot
    be made into a loop by `method` ("model" or "crossfade") with a seam of `seam_s`: checked
    before any render, from the length alone. A model loop may still widen its seam over an
    unsteady edge once the audio is known; this is the least it needs."""
    frames = round(seconds * SAMPLE_RATE)
    shortest = LOOP_SEAM_RANGE_S[0]
    if method == "crossfade":
        if 0 < round(seam_s * SAMPLE_RATE) <= frames // 2:
            return
        if frames // 2 >= round(shortest * SAMPLE_RATE):
            todo = f"use a seam of at most {_down(frames / 2 / SAMPLE_RATE):.2f} s"
        else:
            todo = f"make the take at least {2 * shortest:.2f} s long"
        raise RequestError(f"A crossfade loop of a {seconds:.2f} s take needs a seam of at most "
                           f"half of it, not {seam_s:.2f} s; {todo}.")
    latents = max(1, math.ceil(seam_s * SAMPLE_RATE / LATENT))
    needs = (latents + 2) * LATENT
    if frames >= needs:
        return
    fewest = max(1, math.ceil(shortest * SAMPLE_RATE / LATENT))
    options = []
    if latents > fewest and frames >= (fewest + 2) * LATENT:
        most = _down((frames // LATENT - 2) * LATENT / SAMPLE_RATE)
        options.append(f"use a seam of at most {most:.2f} s")
    options += ["{setting}", f"make the take at least {needs / SAMPLE_RATE:.2f} s long"]
    raise RequestError(Advice(
        f"A model loop of a {seconds:.2f} s take with a {latents * LATENT / SAMPLE_RATE:.2f} s "
        f"seam needs at least {needs / SAMPLE_RATE:.2f} s; " + ", or ".join(options) + ".",
        "loop_method"))


def _down(seconds: float) -> float:
    """Rounded down to what a message shows, so the figure given back always fits."""
    return math.floor(seconds * 100) / 100


def loop_request(base: TakeRequest, audio: np.ndarray, seam_s: float = DEFAULT_SEAM_S,
                 seed: int | None = None, context_s: float | None = DEFAULT_CONTEXT_S,
                 search_s: float = DEFAULT_SEARCH_S, cover_edges: bool = True) -> LoopPlan:
    """Plan a model loop of the take `audio` (float (N, 2) at 44.1 kHz) that `base` made.
    `seed` None picks a new random seed (never the take's own). `cover_edges` widens the
    seam over unsteady take edges (`unsteady_edges`)."""
    take = stereo_take(audio)
    frames = take.shape[0]
    before, after = _seam_reach(take, seam_s, cover_edges)
    latents = math.ceil((before + after) / LATENT)
    if frames < (latents + 2) * LATENT:
        raise RequestError(
            f"The take is {frames / SAMPLE_RATE:.2f} s long; a model loop with a "
            f"{latents * LATENT / SAMPLE_RATE:.2f} s seam needs at least "
            f"{(latents + 2) * LATENT / SAMPLE_RATE:.2f} s; make it by crossfade instead, or "
            f"use a longer take.")
    window_latents = None
    if context_s is not None:
        context = max(1, math.ceil(context_s * SAMPLE_RATE / LATENT))  # always some kept audio
        window_latents = max(MIN_CODEC_LATENTS, latents + 2 * context)
    if window_latents is not None and window_latents * LATENT < frames:
        window = window_latents * LATENT
        first_latent = (window_latents - latents) // 2
        lead = before + (latents * LATENT - before - after) // 2  # span start -> junction
        centre = first_latent * LATENT + lead  # the junction, within the window
        # The junction sits at N - rotation, and the window must fit inside the take.
        candidates = wrap_candidates(frames, window - centre, frames - centre, search_s)
        rotation = _steadiest(take, candidates)
        window_start = frames - rotation - centre
        span = (first_latent * LATENT, (first_latent + latents) * LATENT)
    else:  # the whole take is the window: the grid starts at its first frame
        window, window_start = frames, 0
        rotation = _whole_take_rotation(take, before, after, search_s)
        span = _grid_span(frames - rotation, before, after)
    rotated = np.roll(take, -rotation, axis=0)
    fields = {name: getattr(base, name) for name in _CARRIED if hasattr(base, name)}
    if "codec_tier" not in fields and getattr(base, "decoder_tier", None):
        fields["codec_tier"] = base.decoder_tier  # a kept take records the tier that ran
    previous = getattr(base, "seed", None)
    request = replace(GenerationRequest(prompt=""), **fields,
                      seconds=window / SAMPLE_RATE,
                      seed=_new_seed(previous) if seed is None else seed,
                      init_audio=np.ascontiguousarray(rotated[window_start:window_start + window]),
                      init_noise_level=None,
                      inpaint_spans=[(span[0] / SAMPLE_RATE, span[1] / SAMPLE_RATE)])
    return LoopPlan(request, rotation, window_start,
                    (window_start + span[0], window_start + span[1]), frames)


def _steadiest(take: np.ndarray, candidates: np.ndarray) -> int:
    if candidates.size == 1 or take.shape[0] < 2 * MARGIN + 1:
        return int(candidates[0])
    return steadiest_point(take, SAMPLE_RATE, candidates)


def _grid_span(junction: int, before: int, after: int) -> tuple[int, int]:
    """The smallest latent-aligned span (from frame 0) covering [junction - before,
    junction + after)."""
    return ((junction - before) // LATENT * LATENT,
            -(-(junction + after) // LATENT) * LATENT)


def _whole_take_rotation(take: np.ndarray, before: int, after: int, search_s: float) -> int:
    """A rotation near the middle whose grid-aligned span leaves at least one latent of the
    take on each side."""
    frames = take.shape[0]

    def fits(rotation: int) -> bool:
        start, end = _grid_span(frames - rotation, before, after)
        return start >= LATENT and end <= frames - LATENT

    candidates = wrap_candidates(frames, 1, frames - 1, search_s)
    candidates = np.array([c for c in candidates if fits(int(c))], dtype=np.int64)
    if candidates.size == 0:
        raise RequestError("The take is too short for a model loop with this seam; make it by "
                           "crossfade instead, or use a longer take.")
    return _steadiest(take, candidates)
