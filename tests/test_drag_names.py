"""Drag-out file names: readable in every script, unique per take, and never replacing a file
dragged (or put) there earlier."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from app.export import drag_file, holds_audio
from app.take_names import audio_digest, slug, unique_stem
from app.takes import Take


def make_take(prompt: str = "bell", seed: int | None = 7, level: int = 1000,
              library_id: int | None = None) -> Take:
    pcm = np.full((441, 2), level, np.int16)
    pcm[::7] = -level  # not silence, so two levels are two different takes
    return Take(prompt=prompt, pcm=pcm, seed=seed, model="demo", library_id=library_id)


def read_pcm(path: Path) -> np.ndarray:
    data, rate = sf.read(path, dtype="int16", always_2d=True)
    assert rate == 44100
    return data


def test_slug_is_readable_in_every_script() -> None:
    assert slug("Coin pickup, BRIGHT & short!") == "coin-pickup-bright-short"
    assert slug("Café crème") == "cafe-creme"  # transliterated where NFKD can
    assert slug("ﬁre ①") == "fire-1"
    assert slug("جرس الباب") == "جرس-الباب"  # Arabic keeps its letters
    assert slug("פעמון דלת") == "פעמון-דלת"  # Hebrew too
    assert slug("雷 storm") == "雷-storm"
    assert slug("🔔🔔 🚪") == "take"  # nothing readable left
    assert slug("a\u202egnp.exe") == "a-gnp-exe"  # a bidi override cannot disguise the name
    assert slug("../../etc/passwd") == "etc-passwd"
    assert slug("雷", ascii_only=True) == "take"
    long = slug("日本" * 200)
    assert len(long) <= 60 and len(long.encode()) <= 120


def test_same_prompt_and_seed_with_other_audio_gives_two_intact_files(tmp_path: Path) -> None:
    first, second = make_take(level=1000), make_take(level=2000)
    a = drag_file(first, tmp_path)
    b = drag_file(second, tmp_path)
    assert a != b and a.is_file() and b.is_file()
    np.testing.assert_array_equal(read_pcm(a), first.pcm)
    np.testing.assert_array_equal(read_pcm(b), second.pcm)
    assert a.name == f"bell_seed7_{audio_digest(first.pcm)}.wav"


def test_library_takes_are_named_by_their_library_id(tmp_path: Path) -> None:
    a = drag_file(make_take(level=1000, library_id=12), tmp_path)
    b = drag_file(make_take(level=2000, library_id=13), tmp_path)
    assert (a.name, b.name) == ("bell_seed7_id12.wav", "bell_seed7_id13.wav")


def test_arabic_hebrew_and_emoji_prompts_get_distinct_readable_names(tmp_path: Path) -> None:
    takes = [make_take("جرس الباب", level=100), make_take("פעמון דלת", level=200),
             make_take("🔔", level=300), make_take("🚪", level=400)]
    paths = [drag_file(t, tmp_path) for t in takes]
    assert len({p.name for p in paths}) == 4
    assert paths[0].name.startswith("جرس-الباب_seed7_")
    assert paths[1].name.startswith("פעמון-דלת_seed7_")
    assert paths[2].name.startswith("take_seed7_") and paths[3].name.startswith("take_seed7_")
    for take, path in zip(takes, paths, strict=True):
        np.testing.assert_array_equal(read_pcm(path), take.pcm)


def test_a_second_drag_of_the_same_take_reuses_its_file(tmp_path: Path) -> None:
    take = make_take(library_id=5)
    path = drag_file(take, tmp_path)
    stamp = path.stat().st_mtime_ns
    assert drag_file(take, tmp_path) == path
    # the same take in a later session (a new Take object, no cached path): same file
    again = make_take(library_id=5)
    assert drag_file(again, tmp_path) == path
    assert path.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_different_file_under_the_name_is_never_replaced(tmp_path: Path) -> None:
    take = make_take()
    name = unique_stem(take.prompt, take.seed, take.library_id, take.pcm)
    theirs = tmp_path / f"{name}.wav"
    theirs.write_bytes(b"somebody else's file")
    folder_in_the_way = tmp_path / f"{name}-2.wav"
    folder_in_the_way.mkdir()
    stray = tmp_path / f"{name}-3.json"
    stray.write_text("{}")
    path = drag_file(take, tmp_path)
    assert path.name == f"{name}-4.wav"
    assert theirs.read_bytes() == b"somebody else's file"
    assert folder_in_the_way.is_dir() and stray.read_text() == "{}"
    np.testing.assert_array_equal(read_pcm(path), take.pcm)


def test_a_file_system_refusing_the_letters_gets_an_ascii_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def ascii_only_open(path, *args, **kwargs):
        if not os.fsdecode(path).isascii():
            raise OSError(errno.EILSEQ, "Invalid or incomplete multibyte or wide character")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", ascii_only_open)
    take = make_take("雷")
    path = drag_file(take, tmp_path)
    assert path.name == f"take_seed7_{audio_digest(take.pcm)}.wav"
    assert holds_audio(path, take.pcm)


def test_a_failed_drag_write_leaves_nothing_and_says_what_write_audio_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.audio_io import write_audio
    from engines.errors import AudioFileError

    take = make_take()
    name = unique_stem(take.prompt, take.seed, take.library_id, take.pcm)

    def full_disk(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sf, "write", full_disk)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(AudioFileError) as expected:
        write_audio(elsewhere / f"{name}.wav", take.pcm, "wav16")
    folder = tmp_path / "takes"
    with pytest.raises(AudioFileError) as caught:
        drag_file(take, folder)
    assert str(caught.value) == str(expected.value)
    assert list(folder.iterdir()) == []  # not even the empty placeholder
    assert take.file_path is None


def test_takes_made_in_the_window_with_the_same_prompt_and_seed_keep_both_files(
        qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_gui import child, generate

    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    try:
        lst = child(win, "takesList")
        generate(qtbot, win, "bell", seconds=0.5, seed=3)
        child(win, "stepsSpin").setValue(4)  # other settings, same prompt and seed
        generate(qtbot, win, "bell", seconds=0.5, seed=3)
        takes = list(win.studio.session.takes.values())
        assert not np.array_equal(takes[0].pcm, takes[1].pcm)
        paths = [Path(lst.mimeData([lst.item(row)]).urls()[0].toLocalFile()) for row in (0, 1)]
        assert paths[0] != paths[1]
        for take, path in zip(takes, paths, strict=True):
            assert "bell_seed3" in path.name and f"id{take.library_id}" in path.name
            np.testing.assert_array_equal(read_pcm(path), take.pcm)
            assert path.with_suffix(".json").is_file()
    finally:
        win.studio.shutdown()
