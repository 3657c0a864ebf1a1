"""A folder of a designer's own sound files for the `library import` tests: one file in each
format soundfile writes, a BWF whose bext and iXML chunks are written by the delivery code,
FLAC and Ogg files whose Vorbis comments are written by mutagen (an independent writer), a
UCS-named file, a text file and a broken WAV; and the SHA-256 of every file, to prove that
nothing an import does changes any of them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import soundfile as sf

from engines.delivery.ixml import ixml_document
from engines.delivery.riff import bext_payload, set_wav_chunks

RATE = 48_000
FORMATS = {"plain.wav": ("WAV", "PCM_16"), "plain.flac": ("FLAC", "PCM_24"),
           "plain.ogg": ("OGG", "VORBIS"), "plain.aiff": ("AIFF", "PCM_16"),
           "plain.mp3": ("MP3", "MPEG_LAYER_III")}
BWF_NAME = "field/door take.wav"
UCS_NAME = "DOORWood_Creak Slow_JD_Barn.wav"


def tone(seconds: float = 0.25, freq: float = 440.0, channels: int = 2) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    mono = (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return np.repeat(mono[:, None], channels, axis=1)


def write_sound_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (fmt, subtype) in FORMATS.items():
        sf.write(folder / name, tone(freq=300 + 40 * len(name)), RATE, format=fmt,
                 subtype=subtype)
    bwf = folder / BWF_NAME
    bwf.parent.mkdir()
    sf.write(bwf, tone(freq=220.0, channels=1), RATE, subtype="PCM_24")
    set_wav_chunks(bwf, [
        (b"bext", bext_payload(description="Barn door creaks open slowly",
                               originator="Field Recorder")),
        (b"iXML", ixml_document({"KEYWORDS": "hinge, rusty", "CATID": "DOORWood"},
                                {"fxName": "Barn Creak", "creatorId": "JD",
                                 "sourceId": "FieldLib", "category": "DOORS",
                                 "subCategory": "WOOD"})),
    ])
    write_tagged(folder / "rain.flac", "FLAC", {"DESCRIPTION": "Light rain on a tin roof",
                                               "CATID": "RAINTin", "KEYWORDS": "drizzle"})
    write_tagged(folder / "wind.ogg", "OGG", {"TITLE": "Wind through pines",
                                             "FXNAME": "Pine Wind", "CATEGORY": "WIND"})
    sf.write(folder / UCS_NAME, tone(freq=180.0), RATE)
    (folder / "notes.txt").write_text("not a sound")
    (folder / "broken.wav").write_bytes(b"RIFF\x10\x00\x00\x00WAVEjunkjunk")
    return folder


def write_tagged(path: Path, fmt: str, tags: dict[str, str]) -> None:
    """A FLAC or Ogg Vorbis file whose comments mutagen wrote."""
    from mutagen.flac import FLAC
    from mutagen.oggvorbis import OggVorbis

    sf.write(path, tone(freq=500.0 + len(tags) * 10), RATE, format=fmt)
    tagged = FLAC(path) if fmt == "FLAC" else OggVorbis(path)
    for key, value in tags.items():
        tagged[key] = value
    tagged.save()


def hashes(folder: Path) -> dict[str, str]:
    """SHA-256 and mtime of every file under `folder`, by relative path."""
    return {str(path.relative_to(folder)): (hashlib.sha256(path.read_bytes()).hexdigest(),
                                            path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*")) if path.is_file() and not path.is_symlink()}
