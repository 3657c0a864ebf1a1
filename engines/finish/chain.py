"""The finishing chain: a take and its FinishSettings in, finished audio and a report out.

Order: trim -> mono -> sample rate -> fades -> loudness and true peak. Each step runs where it
is exact for the file that is delivered:
- trim first: less audio for every later step;
- mono before loudness: folding changes loudness (a take with the same sound in both channels
  reads 3 LU lower folded), so normalising first would deliver every mono preset under target;
  and before the rate change, which then has half the work;
- the rate change before the fades, so a fade ends at exact 0 on the delivered file's edge
  (a resampler's filter would smear it), and before loudness and true peak, so both are
  measured and enforced at the delivered rate. Resampling reconstructs the waveform anew and
  can raise inter-sample peaks; measured after it, the ceiling holds for the file itself and no
  second check (or second gain change) is needed, and the report's figures are final.

A loop (settings.loop) arrives already seamless (engines.finish.loop makes it): trim and fades
are skipped because they would break the wrap, the ceiling is kept by reducing gain (a
limiter's moving gain is not seamless at the wrap), peaks are measured across the wrap, and the
rate change is circular. Its loop points are the whole delivered audio.

A take shorter than BS.1770's 400 ms block is levelled by the loudness of one block
(engines.finish.loudness); "final" names the method ("loudness_method") beside the figure.

The report is JSON-ready: per step its figures, "done" (the steps taken, in order), "skipped"
(step -> why), "final" (what the delivered audio measures) and "notes" (sentences for people).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from engines.constants import SAMPLE_RATE
from engines.errors import RequestError
from engines.finish import loudness, output_format
from engines.finish.fades import apply_fades
from engines.finish.normalization import normalize
from engines.finish.settings import FinishSettings
from engines.finish.trim import nothing_cut_advice, padded_span, sound_span, trim_points

RESAMPLE_QUALITY = "VHQ"


@dataclass(frozen=True, eq=False)
class Finished:
    audio: np.ndarray  # float32 C-contiguous (N, channels) at `rate`; channels 1 when mono
    rate: int
    loop_points: tuple[int, int] | None  # (start, end inclusive) frames at `rate`, loops only
    report: dict[str, Any]
    chain: dict[str, Any]  # settings.to_dict(): what to store to finish the take again


def finish(audio: np.ndarray, settings: FinishSettings,
           sample_rate: int = SAMPLE_RATE) -> Finished:
    """The take `audio` ((N, channels) or (N,), any float) finished by `settings`. The input is
    never modified. Raises RequestError (one sentence) for settings out of range, an empty
    take or an in point past its end."""
    settings.validate()
    x, report = _prepared(audio, sample_rate)
    if settings.loop:
        _skip_for_loop(settings, report)
    else:
        x = _trim(x, settings, sample_rate, report)
    if settings.mono and x.shape[1] > 1:
        x = _fold_to_mono(x)
        report["mono"] = {"from_channels": report["source"]["channels"]}
        report["done"].append("mono")
    rate = sample_rate
    if settings.rate != sample_rate:
        x, method = _resample(x, sample_rate, settings.rate, circular=settings.loop)
        report["resample"] = {"from_rate": sample_rate, "to_rate": settings.rate,
                              "circular": settings.loop, "method": method}
        report["done"].append("resample")
        rate = settings.rate
    if not settings.loop:
        x = _fades(x, settings, rate, report)
    ceiling_dbtp = settings.true_peak_dbtp
    if settings.loudness_lufs is not None and ceiling_dbtp is None:
        ceiling_dbtp = 0.0
        report["notes"].append("No true-peak ceiling was set, so 0 dBTP was kept: a louder "
                               "take would clip in a fixed-point file.")
    final: tuple[float | None, float | None, str] | None = None  # (LUFS, dBTP, method)
    if settings.loudness_lufs is not None or ceiling_dbtp is not None:
        mode = "reduce" if settings.loop else settings.peak_mode
        x, step = normalize(x, rate, settings.loudness_lufs, ceiling_dbtp,
                            mode=mode, circular=settings.loop)
        report["loudness"] = step.to_dict()
        report["notes"].extend(step.notes)
        if settings.loudness_lufs is not None and step.loudness_before_lufs is None:
            # No target can be met on silence: never listed as done, and said wherever the
            # take goes (stderr, the batch manifest, the window).
            report["skipped"]["loudness"] = step.notes[-1] if step.notes else "undefined"
            report["warnings"].append(_unmet_target(settings.loudness_lufs))
            if ceiling_dbtp is not None:
                report["done"].append("true peak")
        else:
            report["done"].append("loudness")
        final = (step.loudness_after_lufs, step.true_peak_after_dbtp, step.method)
    x = np.ascontiguousarray(x, dtype=np.float32)
    if final is None:
        lufs, peak, method = loudness.measure_level(x, rate, circular=settings.loop)
        final = (lufs, loudness.to_db(peak), method)
    report["final"] = {"loudness_lufs": final[0], "true_peak_dbtp": final[1],
                       "loudness_method": final[2], "rate": rate,
                       "channels": int(x.shape[1]), "frames": len(x),
                       "seconds": len(x) / rate}
    loop_points = (0, len(x) - 1) if settings.loop else None
    return Finished(audio=x, rate=rate, loop_points=loop_points, report=report,
                    chain=settings.to_dict())


def _prepared(audio: np.ndarray, rate: int) -> tuple[np.ndarray, dict[str, Any]]:
    """float32 (N, C) without NaN or infinities, and the report that starts with it."""
    x = np.asarray(audio)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] not in (1, 2):
        raise ValueError(f"finish() needs audio shaped (N,), (N, 1) or (N, 2), got {x.shape}")
    if len(x) == 0:
        raise RequestError("The take has no audio to finish; generate or import a take first.")
    x = x.astype(np.float32)  # a copy: nothing below writes into the caller's array
    report: dict[str, Any] = {
        "source": {"frames": len(x), "rate": rate, "channels": x.shape[1]},
        "done": [], "skipped": {}, "notes": [], "warnings": [],
    }
    bad = ~np.isfinite(x)
    if bad.any():
        count = int(bad.sum())
        x[bad] = 0.0
        report["non_finite_zeroed"] = count
        report["notes"].append(f"{count} samples were not numbers (NaN or infinite) and were "
                               "set to silence.")
    return x, report


def _unmet_target(target: float) -> str:
    return (f"The loudness target of {target:g} LUFS was not applied: the take is silent "
            "(under the -70 LUFS gate), so it has no loudness to bring to a target.")


def _skip_for_loop(settings: FinishSettings, report: dict[str, Any]) -> None:
    why = "skipped for a loop: it would break the seamless wrap"
    if settings.trim or settings.trim_in_s is not None or settings.trim_out_s is not None:
        report["skipped"]["trim"] = why
        report["notes"].append("Trim was skipped: cutting a loop would break its wrap.")
    if settings.fade_in_ms or settings.fade_out_ms:
        report["skipped"]["fades"] = why
        report["notes"].append("Fades were skipped: a loop plays without a gap, so a fade "
                               "would be heard at every wrap.")
    if settings.peak_mode == "limit" and (settings.loudness_lufs is not None
                                          or settings.true_peak_dbtp is not None):
        report["notes"].append("A loop keeps its ceiling by lowering the whole gain, not by "
                               "limiting: a limiter's moving gain would not match at the wrap.")


def _trim(x: np.ndarray, settings: FinishSettings, rate: int,
          report: dict[str, Any]) -> np.ndarray:
    manual = settings.trim_in_s is not None or settings.trim_out_s is not None
    if not (manual or settings.trim):
        return x
    n = len(x)
    start, end = 0, n
    if manual:  # the user's points cut first; the silence trim then works inside them
        x, (start, end) = trim_points(x, rate, settings.trim_in_s, settings.trim_out_s)
    silent = nothing_cut = False
    suggestion = None
    if settings.trim:
        sound = sound_span(x, settings.trim_db)
        silent = sound is None
        first, last = padded_span(sound, len(x), rate, settings.trim_pad_ms)
        nothing_cut = not silent and (first, last) == (0, len(x))
        if nothing_cut:
            said, suggestion = nothing_cut_advice(x, rate, settings.trim_db,
                                                  settings.trim_pad_ms)
            # A quiet tail the threshold missed is worth a warning with the fix; a take that
            # sounds to both ends (a short click) had nothing to cut: a note, not an alarm.
            report["warnings" if suggestion is not None else "notes"].append(said)
        x = x[first:last]
        start, end = start + first, start + last
        if silent:
            report["notes"].append(f"The whole take is below {settings.trim_db:g} dBFS; "
                                   f"its first {len(x) / rate * 1000:.0f} ms were kept.")
    report["trim"] = {
        "start_frame": start, "end_frame": end, "removed_start_frames": start,
        "removed_end_frames": n - end, "kept_frames": end - start, "manual": manual,
        "silence_trim": settings.trim, "threshold_db": settings.trim_db,
        "pad_ms": settings.trim_pad_ms, "all_silent": silent,
        "seconds_before": n / rate, "seconds_after": (end - start) / rate,
        "nothing_cut": nothing_cut, "suggested_threshold_db": suggestion,
    }
    report["done"].append("trim")
    return x


def _fades(x: np.ndarray, settings: FinishSettings, rate: int,
           report: dict[str, Any]) -> np.ndarray:
    if not (settings.fade_in_ms or settings.fade_out_ms):
        return x
    x, fades = apply_fades(x, rate, settings.fade_in_ms, settings.fade_out_ms,
                           settings.fade_curve)
    report["fades"] = fades.to_dict()
    report["done"].append("fades")
    if fades.clamped:
        report["notes"].append(f"The fades were longer than the take and were shortened to "
                               f"{fades.in_ms:.0f} ms in and {fades.out_ms:.0f} ms out.")
    return x


def _fold_to_mono(x: np.ndarray) -> np.ndarray:
    return output_format.fold_to_mono(x)


def _resample(x: np.ndarray, from_rate: int, to_rate: int,
              circular: bool) -> tuple[np.ndarray, str]:
    """The audio at `to_rate` (soxr VHQ), each channel on its own thread (soxr releases the
    GIL: a 30 s stereo take took 23 ms instead of 48 ms on 2 cores)."""
    method = f"soxr {RESAMPLE_QUALITY}" + (", circular" if circular else "")

    def convert(channel: np.ndarray) -> np.ndarray:
        return output_format.resample(channel, from_rate, to_rate, circular=circular)
    if x.shape[1] == 1 or len(x) < loudness.PARALLEL_MIN_FRAMES:
        return np.ascontiguousarray(convert(x), dtype=np.float32), method
    channels = [np.ascontiguousarray(x[:, [c]]) for c in range(x.shape[1])]
    done = loudness.side_by_side(*(partial(convert, channel) for channel in channels))
    return np.ascontiguousarray(np.hstack(done), dtype=np.float32), method
