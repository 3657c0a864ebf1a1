"""Drag-out files follow the one name rule (engines.delivery.names): readable in every script,
named by the export name template, never replacing a file dragged (or put) there earlier, and
carrying the same metadata as every other way out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import wavinfo

from app.common.session_take import Take
from app.export.files import drag_file
from engines.delivery.names import DEFAULT_TEMPLATE, slug
from engines.delivery.writer import write_audio


def make_take(prompt: str = "bell", seed: int | None = 7, level: int = 1000,
              variation: int = 1) -> Take:
    pcm = np.full((441, 2), level, np.int16)
    pcm[::7] = -level  # not silence, so two levels are two different takes
    return Take(prompt=prompt, pcm=pcm, seed=seed, model="demo", variation=variation)


def read_pcm(path: Path) -> np.ndarray:
    data, rate = sf.read(path, dtype="int16", always_2d=True)
    assert rate == 44100
    return data


def test_slug_is_readable_in_every_script() -> None:
    assert slug("Coin pickup, BRIGHT & short!") == "coin-pickup-bright-short"
    assert slug("Café crème") == "cafe-creme"
    assert slug("雷の音") == "雷の音"
    assert slug("صوت الرعد") == "صوت-الرعد"
    assert slug("🔔🔔") == "take"
    assert slug("a\u202egnp.exe") == "a-gnp-exe"  # a bidi override never disguises a name


def test_drag_names_follow_the_template_and_number_clashes(tmp_path: Path) -> None:
    first = drag_file(make_take(level=1000), tmp_path, DEFAULT_TEMPLATE, None)
    second = drag_file(make_take(level=2000), tmp_path, DEFAULT_TEMPLATE, None)
    third = drag_file(make_take(variation=2), tmp_path, "{prompt}_{seed}_{n:03}", None)
    assert [first.name, second.name, third.name] == ["bell_01.wav", "bell_01_2.wav",
                                                     "bell_7_002.wav"]
    np.testing.assert_array_equal(read_pcm(first), make_take(level=1000).pcm)
    np.testing.assert_array_equal(read_pcm(second), make_take(level=2000).pcm)
    assert first.with_suffix(".json").is_file() and second.with_suffix(".json").is_file()


def test_a_raw_drag_file_carries_the_note_and_broadcast_metadata(tmp_path: Path) -> None:
    path = drag_file(make_take(prompt="door creak"), tmp_path, DEFAULT_TEMPLATE, None)
    info = wavinfo.WavInfoReader(str(path))
    assert info.bext.description == "door creak" and info.bext.originator == "SA3 Studio"
    assert '"app":"SA3 Studio"' in info.info.comment  # the JSON note, as every file has it


def test_a_second_drag_of_the_same_take_reuses_its_file(tmp_path: Path) -> None:
    take = make_take()
    first = drag_file(take, tmp_path, DEFAULT_TEMPLATE, None)
    mtime = first.stat().st_mtime_ns
    assert drag_file(take, tmp_path, DEFAULT_TEMPLATE, None) == first
    assert first.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bell_01.json", "bell_01.wav"]


def test_a_different_file_under_the_name_is_never_replaced(tmp_path: Path) -> None:
    other = write_audio(tmp_path / "bell_01.wav", np.full((100, 2), 5, np.int16))
    before = other.read_bytes()
    (tmp_path / "bell_02.json").write_text("{}")  # a sidecar's name in use counts as well
    path = drag_file(make_take(), tmp_path, DEFAULT_TEMPLATE, None)
    assert path.name == "bell_01_2.wav" and other.read_bytes() == before
    assert drag_file(make_take(variation=2, level=3), tmp_path, DEFAULT_TEMPLATE,
                     None).name == "bell_02_2.wav"


def test_a_failed_drag_write_leaves_nothing(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.delivery import writer
    from engines.errors import AudioFileError

    def full_disk(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer, "_write_samples", full_disk)
    take = make_take()
    with pytest.raises(AudioFileError, match="disk is full"):
        drag_file(take, tmp_path, DEFAULT_TEMPLATE, None)
    assert list(tmp_path.iterdir()) == [] and take.file_path is None
