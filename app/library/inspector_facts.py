"""A take's facts in plain words - what the Library page's inspector and the Session tab show
for the selected take: its prompt, length, rate and channels, loudness and true peak, model and
codec tier, seed, finishing chain, UCS labels and where its files are.

One builder for both places: `facts_of_record` (a library row) and `facts_of_take` (a session
take the library does not hold) give a `TakeFacts`; `fact_rows` words it. A sound imported
from a folder has no prompt, seed or model: its rows say where it came from, its file format
and its description instead, never a prompt it does not have. No widgets here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from app.widgets.take_text import format_seconds
from engines.adapter_summary import adapters_short
from engines.catalog import MODEL_SETS
from engines.provenance import adapter_entries

Figures = tuple[float | None, float | None]  # (integrated LUFS, true peak dBTP); None: silent

FORMAT_WORDS = {"wav16": "WAV 16-bit", "wav24": "WAV 24-bit", "wav32f": "WAV 32-bit float",
                "wav": "WAV 32-bit float", "flac": "FLAC"}
LABEL_WORDS = (("catid", ""), ("category", ""), ("subcategory", ""), ("fx_name", ""),
               ("creator", "creator "), ("source", "source "))


@dataclass
class TakeFacts:
    """What is known about one take, before it is worded."""

    title: str
    seconds: float
    sample_rate: int
    channels: int = 2
    prompt: str = ""
    negative_prompt: str = ""
    model: str = ""
    tier: str = ""
    seed: int | None = None
    seed_was_random: bool = False
    finishing: dict | None = None  # the stored chain (FinishSettings.to_dict()), None: raw
    finished_figures: Figures | None = None  # measured after finishing, when it was finished
    figures: Figures | None = None  # the raw audio's, once measured
    unmeasured: bool = False  # its audio could not be read to measure it
    labels: dict[str, str] = field(default_factory=dict)
    audio_path: Path | None = None
    missing: bool = False
    created: str = ""
    imported: bool = False
    source_folder: str = ""  # an imported sound's folder (or the file it was brought in from)
    file_format: str = ""
    description: str = ""  # an imported file's own description (its metadata)
    adapters: str = ""  # "a.safetensors:0.8 b.safetensors:0.5" (engines.adapter_summary)


def facts_of_record(record, figures: Figures | None = None, sound_file=None) -> TakeFacts:
    """The facts of a library row (engines.store TakeRecord); `sound_file` is what the library
    read from an imported file's header (ClipLibrary.sound_file), when it has one."""
    imported = bool(getattr(record, "is_imported", False))
    finishing = getattr(record, "finishing", None)
    chain = finishing.get("chain") if isinstance(finishing, dict) else None
    final = ((finishing.get("report") or {}).get("final") or {}
             if isinstance(finishing, dict) else {})
    rate = int(getattr(sound_file, "sample_rate", 0) or getattr(record, "sample_rate", 0) or 0)
    samples = int(getattr(record, "samples", 0) or 0)
    seconds = samples / rate if rate and samples else float(record.seconds or 0.0)
    source = getattr(record, "source_root", None) or getattr(record, "init_source", "") or ""
    return TakeFacts(
        title=record.title(), seconds=seconds, sample_rate=rate or 44100,
        channels=int(getattr(sound_file, "channels", 0) or 2),
        # an imported file's "prompt" is its own description (bext, iXML, Vorbis comment)
        prompt="" if imported else record.prompt,
        negative_prompt="" if imported else record.negative_prompt,
        model="" if imported else record.model,
        tier="" if imported else record.decoder_tier,
        seed=None if imported else record.seed,
        seed_was_random=bool(record.seed_was_random),
        finishing=chain if isinstance(chain, dict) else None,
        finished_figures=((final.get("loudness_lufs"), final.get("true_peak_dbtp"))
                          if isinstance(chain, dict) and final else None),
        figures=figures, labels=dict(record.labels or {}),
        audio_path=Path(record.audio_path), missing=bool(record.missing),
        created=record.created, imported=imported,
        source_folder=str(source) if imported else "",
        file_format=_format_of(record, sound_file),
        description=record.prompt if imported else "",
        adapters=adapters_short(getattr(record, "adapters", None) or []))


def _format_of(record, sound_file) -> str:
    """"WAV PCM_24", "FLAC", "MP3": the imported file's own format, else how the library
    stores the take."""
    if sound_file is not None and getattr(sound_file, "format", ""):
        return " ".join(part for part in (sound_file.format, sound_file.subtype) if part)
    if getattr(record, "source_root", None):
        return Path(record.audio_path).suffix.lstrip(".").upper()
    return record.file_format


def facts_of_take(take, figures: Figures | None = None) -> TakeFacts:
    """The facts of a session take (app.common.session_take.Take) the library does not hold."""
    request = getattr(take.result, "request", None)
    chain = take.finishing.to_dict() if take.finishing is not None else None
    after = getattr(take.finished, "after", None)
    return TakeFacts(
        title=take.title(), seconds=take.seconds, sample_rate=44100, prompt=take.prompt,
        negative_prompt=getattr(request, "negative_prompt", "") or "",
        model="" if take.imported else take.model, tier=take.codec_tier,
        seed=None if take.imported else take.seed, finishing=chain,
        finished_figures=after if chain is not None else None, figures=figures,
        audio_path=take.file_path, imported=take.imported,
        source_folder=str(take.init_path or "") if take.imported else "",
        adapters=adapters_short(adapter_entries(request)) if request is not None else "")


# ---------------------------------------------------------------------- words
def sound_words(facts: TakeFacts) -> str:
    """"2.0 s · 44.1 kHz stereo"."""
    rate = facts.sample_rate / 1000
    rate_text = f"{rate:.1f}".rstrip("0").rstrip(".")
    channels = {1: "mono", 2: "stereo"}.get(facts.channels, f"{facts.channels} channels")
    return f"{format_seconds(facts.seconds)} · {rate_text} kHz {channels}"


def figures_words(figures: Figures) -> str:
    """"-18.0 LUFS, -1.0 dBTP"; a silent take measures -inf."""
    lufs, dbtp = figures
    loudness = "-inf LUFS" if lufs is None else f"{lufs:.1f} LUFS"
    peak = "-inf dBTP" if dbtp is None else f"{dbtp:.1f} dBTP"
    return f"{loudness}, {peak}"


def loudness_words(facts: TakeFacts) -> str:
    """The raw take's figures (or "measuring..."), then the finished audio's when finished."""
    if facts.figures is not None:
        raw = figures_words(facts.figures)
    else:
        raw = "not measured (the audio file cannot be read)" if facts.unmeasured \
            else "measuring..."

    if facts.finished_figures is None:
        return raw
    return f"{raw} raw; {figures_words(facts.finished_figures)} finished"


def model_words(facts: TakeFacts) -> str:
    known = MODEL_SETS.get(facts.model)
    label = known.label if known is not None else facts.model
    return f"{label} · {facts.tier} codec tier" if facts.tier else label


def seed_words(facts: TakeFacts) -> str:
    return f"{facts.seed} (drawn at random)" if facts.seed_was_random else str(facts.seed)


def finishing_words(chain: dict | None) -> str:
    """The stored chain in a designer's words: "trim below -60 dBFS, fade out 50 ms, -18.0
    LUFS, ceiling -1.0 dBTP, loop by crossfade, 48 kHz mono, WAV 24-bit"."""
    if not chain:
        return "none (the raw take)"
    parts = [f"preset {chain['preset']}"] if chain.get("preset") else []
    if chain.get("trim"):
        parts.append(f"trim below {chain.get('trim_db', -60.0):g} dBFS")
    for key, words in (("fade_in_ms", "fade in"), ("fade_out_ms", "fade out")):
        if chain.get(key):
            parts.append(f"{words} {chain[key]:g} ms")
    if chain.get("loudness_lufs") is not None:
        parts.append(f"{chain['loudness_lufs']:.1f} LUFS")
    if chain.get("true_peak_dbtp") is not None:
        parts.append(f"ceiling {chain['true_peak_dbtp']:.1f} dBTP")
    if chain.get("loop"):
        parts.append("loop by crossfade" if chain.get("loop_method") == "crossfade"
                     else "loop by the model")
    rate, mono = chain.get("rate", 44100), chain.get("mono", False)
    if rate != 44100 or mono:
        parts.append(f"{rate / 1000:g} kHz {'mono' if mono else 'stereo'}")
    if chain.get("format", "wav16") != "wav16":
        parts.append(FORMAT_WORDS.get(chain["format"], chain["format"]))
    return ", ".join(parts) or "no change"


def label_words(labels: dict[str, str]) -> str:
    """"FOOTGrvl · Gravel Step · creator JD"; "none" when no label is set."""
    parts = [f"{prefix}{labels[key]}" for key, prefix in LABEL_WORDS if labels.get(key)]
    return " · ".join(parts) or "none"


def created_words(created: str) -> str:
    try:
        when = dt.datetime.fromisoformat(created)
    except ValueError:
        return created
    return when.strftime("%Y-%m-%d %H:%M") + (" UTC" if when.utcoffset() is not None else "")


def fact_rows(facts: TakeFacts) -> list[tuple[str, str]]:
    """(caption, words) per fact, in reading order. "Files" is the audio file's path (the view
    makes it openable); an imported sound has no Prompt, Seed or Model row."""
    rows: list[tuple[str, str]] = []
    if facts.imported:
        rows.append(("Source", f"imported from {facts.source_folder}" if facts.source_folder
                     else "imported"))
        if facts.description:
            rows.append(("Description", facts.description))
    else:
        rows.append(("Prompt", facts.prompt or "(empty prompt)"))
        if facts.negative_prompt:
            rows.append(("Avoiding", facts.negative_prompt))
    sound = sound_words(facts)
    if facts.imported and facts.file_format:
        sound += f" · {FORMAT_WORDS.get(facts.file_format, facts.file_format)}"
    rows.append(("Sound", sound))
    rows.append(("Loudness", loudness_words(facts)))
    if not facts.imported:
        rows.append(("Model", model_words(facts)))
        rows.append(("Seed", seed_words(facts)))
        if facts.adapters:
            rows.append(("Adapters", facts.adapters))
    rows.append(("Finishing", finishing_words(facts.finishing)))
    rows.append(("Labels", label_words(facts.labels)))
    if facts.created:
        # an imported file's date is the file's own (when it was last changed)
        rows.append(("File date" if facts.imported else "Made", created_words(facts.created)))
    if facts.audio_path is not None:
        rows.append(("Files", str(facts.audio_path) + (" (missing)" if facts.missing else "")))
    return rows
