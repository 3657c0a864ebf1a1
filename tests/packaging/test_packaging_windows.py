"""The Windows rules that can be checked without Windows (docs/windows.md): take names Windows
accepts, whole paths within MAX_PATH, names unique without regard to case, and an atomic save
that holds no open handle on its temporary (Windows refuses to rename a file that is open)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engines.audio_io import atomic
from engines.delivery import names
from engines.delivery.names import WINDOWS_MAX_PATH, free_name, safe_file_name, unique_path


@pytest.mark.parametrize("raw", [
    "CON", "con", "Nul", "AUX", "PRN", "COM1", "com9", "LPT1", "COM0", "LPT0",
    "COM\u00b9", "lpt\u00b3", "CONIN$", "conout$", "nul.wav", "NUL .wav", "con.tar.gz",
])
def test_windows_device_names_never_come_out(raw: str) -> None:
    name = safe_file_name(raw)
    assert name.split(".")[0].rstrip(" ").upper() not in names._WINDOWS_DEVICES


@pytest.mark.parametrize("raw", ["COM10", "console", "nully", "CONIN", "LPT"])
def test_names_that_only_look_like_devices_are_kept(raw: str) -> None:
    assert safe_file_name(raw) == raw


@pytest.mark.parametrize("raw", ['a:b', "a<b>c", 'say "hi"', "a|b", "why?", "star*", "tab\there",
                                 "trailing dot.", "trailing space ", "ctl\x01\x1f"])
def test_characters_windows_refuses_are_replaced(raw: str) -> None:
    name = safe_file_name(raw)
    assert not set(name) & set('<>:"/\\|?*') and name == name.rstrip(". ")
    assert all(ord(c) >= 32 for c in name)


def test_whole_paths_stay_within_max_path_on_windows(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names, "_on_windows", lambda: True)
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    stem = "very long take name " * 10
    path = free_name(deep, safe_file_name(stem), ".wav")
    assert len(str(path.absolute())) + len("_999") <= WINDOWS_MAX_PATH
    assert path.suffix == ".wav" and path.name.startswith("very long take name")
    path.write_bytes(b"x")
    second = free_name(deep, safe_file_name(stem), ".wav")
    assert second.stem == path.stem + "_2" and len(str(second.absolute())) <= WINDOWS_MAX_PATH
    assert len(str(unique_path(deep, stem, ".flac").absolute())) <= WINDOWS_MAX_PATH


def test_elsewhere_names_are_not_cut_for_max_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(names, "_on_windows", lambda: False)
    deep = tmp_path / ("d" * 100) / ("e" * 100)
    deep.mkdir(parents=True)
    stem = "x" * 120
    assert free_name(deep, stem, ".wav").name == stem + ".wav"


def test_names_given_out_in_one_run_differ_by_more_than_case(tmp_path: Path) -> None:
    # Windows (and macOS) would put "Door.wav" and "door.wav" in one file
    taken = {"door.wav", "door.json"}
    assert free_name(tmp_path, "Door", ".wav", taken).name == "Door_2.wav"


def test_an_atomic_temporary_holds_no_handle_without_flock(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setattr(atomic, "fcntl", None)  # as on Windows
    proc_fds = Path("/proc/self/fd")
    before = len(list(proc_fds.iterdir())) if proc_fds.is_dir() else None
    target = tmp_path / "take.wav"
    target.write_bytes(b"old")
    temp = atomic.create_temp_beside(target, ".wav")
    try:
        if before is not None:  # nothing of ours is open on it while it is written and moved
            assert len(list(proc_fds.iterdir())) == before
        temp.write_bytes(b"new")
        atomic.fsync_file(temp)
        os.replace(temp, target)
        # a live writer's temporary is never taken for a stale one
        assert atomic.remove_stale_temps(target) == 0
    finally:
        atomic.release(temp)
    assert target.read_bytes() == b"new" and str(temp) not in atomic._held
