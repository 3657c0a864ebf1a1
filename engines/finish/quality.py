"""Quality flags for a take: cheap checks that catch failed or damaged takes, computed on the
worker for every take, stored in the library, shown as badges, and used to reroll flagged takes
of a variations batch.

The codes are stable (they are stored and filtered on): never rename one, add new ones.
"""

from __future__ import annotations

import numpy as np

from engines.constants import SAMPLE_RATE
from engines.finish.trim import sound_span
from engines.finish.true_peak import true_peak

SILENT_DBFS = -80.0  # nothing louder than this anywhere: nothing anyone would hear
CLIP_LEVEL = 0.999  # a sample this close to full scale ...
CLIP_RUN = 3  # ... this many in a row: the waveform was flattened against the rails
TRUE_PEAK_LIMIT = 1.0  # 0 dBTP: over it a DAC or a fixed-point file clips
DC_LIMIT = 0.01  # |mean| of a channel; a speaker cone pushed off centre, clicks at edits
TRAILING_DBFS = -60.0
TRAILING_S = 1.0

FLAG_CODES = ("silent", "clipping", "dc-offset", "non-finite", "trailing-silence")

_DESCRIPTIONS = {
    "silent": "Digital silence: nothing in the take is louder than -80 dBFS.",
    "clipping": "Clipping: the waveform is flattened at full scale, or its true peak is over "
                "0 dBTP.",
    "dc-offset": "DC offset: the waveform sits off centre (a channel's average is above 1 % of "
                 "full scale), which can click at cuts and loops.",
    "non-finite": "Broken samples: some samples are not numbers (NaN or infinite).",
    "trailing-silence": "Long silence at the end: over 1 s below -60 dBFS; trimming removes it.",
}


def describe_flag(code: str) -> str:
    """Plain words for a flag, for a badge's tooltip; unknown codes are shown as they are."""
    return _DESCRIPTIONS.get(code, f"Flag '{code}'.")


def quality_flags(audio: np.ndarray, rate: int = SAMPLE_RATE) -> list[str]:
    """The flags that apply to `audio` ((N, channels) or (N,)), in FLAG_CODES order."""
    x = np.asarray(audio)
    if x.ndim == 1:
        x = x[:, None]
    flags: set[str] = set()
    finite = np.isfinite(x)
    if not finite.all():
        flags.add("non-finite")
        x = np.where(finite, x, 0.0)
    x = x.astype(np.float32, copy=False)
    sound = sound_span(x, SILENT_DBFS) if len(x) else None
    if sound is None:
        flags.add("silent")
    else:
        if _clipped(x) or true_peak(x) > TRUE_PEAK_LIMIT:
            flags.add("clipping")
        if np.abs(x.mean(axis=0, dtype=np.float64)).max() > DC_LIMIT:
            flags.add("dc-offset")
        audible = sound_span(x, TRAILING_DBFS)
        if len(x) - (audible[1] if audible else 0) > TRAILING_S * rate:
            flags.add("trailing-silence")
    return [code for code in FLAG_CODES if code in flags]


def _clipped(x: np.ndarray) -> bool:
    """True when CLIP_RUN consecutive samples of one channel sit at full scale."""
    rails = np.abs(x) >= CLIP_LEVEL
    if not rails.any():
        return False
    run = rails[: len(rails) - CLIP_RUN + 1].copy()
    for shift in range(1, CLIP_RUN):
        run &= rails[shift: len(rails) - CLIP_RUN + 1 + shift]
    return bool(run.any())
