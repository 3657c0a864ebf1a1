"""What the RIFF tests share (issue 30): a chunk walker that reads a WAV file the way Godot 3's
importer and other simple readers do, and delivered takes whose metadata lengths vary by one
character, so that every text chunk comes out both even and odd before padding.

The walker is written from the RIFF layout alone (no project code): it steps from a chunk to
`start + 8 + size` and never skips a pad byte, so a file that needs one is walked off its
chunk boundaries and shows ids that are no chunk's.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.delivery.deliver import Delivered, deliver, deliver_new
from engines.delivery.delivery_take import DeliveryTake, Labels, from_audio
from engines.finish.finished_take import finish_take
from engines.finish.settings import FinishSettings

# Every chunk a delivery holds: libsndfile's (fmt, fact, PEAK, LIST, data) and ours.
KNOWN_IDS = frozenset({b"fmt ", b"fact", b"PEAK", b"LIST", b"bext", b"iXML", b"data", b"smpl",
                       b"cue "})
RATE = 44100


@dataclass(frozen=True)
class Walk:
    chunks: list[tuple[bytes, int]]  # (id, size) in file order
    info: list[tuple[bytes, int]]  # (id, size) of the LIST/INFO strings
    end: int  # where the walk stopped
    length: int  # the file's length

    @property
    def ids(self) -> list[bytes]:
        return [chunk_id for chunk_id, _ in self.chunks]


def walk_without_pad_bytes(blob: bytes) -> Walk:
    """The chunk list as a reader that ignores RIFF's pad byte sees it."""
    assert blob[:4] == b"RIFF" and blob[8:12] == b"WAVE", "not a RIFF/WAVE file"
    assert struct.unpack_from("<I", blob, 4)[0] == len(blob) - 8, "RIFF size is not the file's"
    chunks: list[tuple[bytes, int]] = []
    info: list[tuple[bytes, int]] = []
    pos = 12
    while pos + 8 <= len(blob):
        chunk_id, size = struct.unpack_from("<4sI", blob, pos)
        chunks.append((chunk_id, size))
        if chunk_id == b"LIST" and blob[pos + 8:pos + 12] == b"INFO":
            inner, stop = pos + 12, pos + 8 + size
            while inner + 8 <= stop:
                sub_id, sub_size = struct.unpack_from("<4sI", blob, inner)
                info.append((sub_id, sub_size))
                inner += 8 + sub_size
        pos += 8 + size
    return Walk(chunks, info, pos, len(blob))


def assert_no_pad_byte_needed(path: Path, looped: bool) -> Walk:
    """Every chunk of the file at `path` even-sized, so a walk that ignores pad bytes finds
    each chunk (`data`, and `smpl` when `looped`). `data` alone may be odd (24-bit mono of an
    odd frame count: its size is the audio's), and then it is the last chunk, followed only by
    its pad byte."""
    walk = walk_without_pad_bytes(path.read_bytes())
    assert set(walk.ids) <= KNOWN_IDS, f"{path.name}: the walk lost its place: {walk.ids}"
    assert b"data" in walk.ids, f"{path.name}: no data chunk found: {walk.ids}"
    assert (b"smpl" in walk.ids) == looped and (b"cue " in walk.ids) == looped, walk.ids
    for chunk_id, size in walk.chunks[:-1]:
        assert size % 2 == 0, f"{path.name}: {chunk_id!r} is {size} bytes (odd): {walk.chunks}"
    last_id, last_size = walk.chunks[-1]
    if last_size % 2:
        assert last_id == b"data", f"{path.name}: {last_id!r} is {last_size} bytes (odd)"
        assert walk.end == walk.length - 1  # the pad byte RIFF asks for, and nothing after it
    else:
        assert walk.end == walk.length, f"{path.name}: {walk.length - walk.end} stray bytes"
    for sub_id, size in walk.info:
        assert size % 2 == 0, f"{path.name}: INFO {sub_id!r} is {size} bytes (odd)"
    return walk


def noise(frames: int, seed: int = 5) -> np.ndarray:
    """A raw take: int16 (frames, 2) at 44.1 kHz, never silent (a reader can't trim it)."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(-0.3, 0.3, (frames, 2)) * 32767).astype(np.int16)


def varied_take(fmt: str, *, frames: int, mono: bool, looped: bool, prompt: str, seed: int,
                fx_name: str, catid: str = "AMBRain") -> DeliveryTake:
    """A take finished to `fmt`; its prompt (bext and iXML DESCRIPTION, INFO title), seed
    (bext CodingHistory) and labels (iXML) are the caller's, to vary their lengths."""
    take = from_audio(noise(frames, seed), prompt=prompt, name=fx_name, seed=seed,
                      model="demo")
    take = take.with_labels(Labels(catid=catid, fx_name=fx_name, designer="A. Designer"))
    settings = FinishSettings(format=fmt, mono=mono, loop=looped, loop_method="crossfade",
                              loop_seam_s=0.2, fade_out_ms=0.0 if looped else 5.0)
    floats = take.pcm.astype(np.float32) / np.float32(32767.0)
    return take.with_finished(finish_take(floats, settings))


def deliver_both_ways(take: DeliveryTake, folder: Path, stem: str) -> list[Delivered]:
    """The take as Save As / --out write it (`deliver`, a named file) and as batch, export and
    drag write it (`deliver_new`, a free name in a folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    return [deliver(take, folder / f"{stem}_named.wav"),
            deliver_new(take, folder, f"{stem}_free")]
