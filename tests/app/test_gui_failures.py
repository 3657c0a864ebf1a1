"""Every failure the window meets is the engines' one sentence in the status bar, never a
traceback, and nothing the user had is deleted.

Each test produces the engine's sentence independently (calling the engine the same way) and
checks that exactly that sentence reached the user. pytest-qt fails a test when a slot raises,
so these also prove no exception reached Qt's event loop.
"""

from __future__ import annotations

import errno
import logging
import os
import pathlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines.errors import StudioError
from tests.app.test_gui import child, generate


@pytest.fixture
def open_window(qtbot, home: Path):
    """Builds windows (after a test has damaged what it wants to) and shuts them down."""
    from app import build_main_window

    built = []

    def build():
        win = build_main_window()
        qtbot.addWidget(win)
        built.append(win)
        return win

    yield build
    for win in built:
        win.studio.shutdown()


@pytest.fixture
def window(open_window):
    return open_window()


def shown(win) -> str:
    return child(win, "statusBar").currentMessage()


def said(win, expected: str) -> None:
    """`expected` is exactly what the user read, on one line."""
    assert shown(win) == expected
    assert win.studio.notifier.history[-1] == expected
    assert "\n" not in expected and "Traceback" not in expected


def engine_error(call) -> str:
    """The engine's sentence for what `call` raised, as the window words it (its remedies as
    controls, an environment variable as what to do in the window: issue 34)."""
    from app.common.remedy_words import for_window

    with pytest.raises(StudioError) as caught:
        call()
    return for_window(caught.value)


def files_in(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ---------------------------------------------------------------------------- init audio
def _garbage(path: Path) -> Path:
    path.write_bytes(b"this is not audio at all" * 10)
    return path


def _empty(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.mark.parametrize("make", [lambda p: p, _folder, _garbage, _empty],
                         ids=["missing", "folder", "garbage", "empty"])
def test_init_file_failures_are_the_read_audio_sentence(window, tmp_path: Path, make) -> None:
    from engines.audio_io import read_audio

    path = make(tmp_path / "init.wav")
    before = path.read_bytes() if path.is_file() else None
    expected = engine_error(lambda: read_audio(path))
    assert window.studio.inpaint_controller.open_init_file(str(path)) is None
    said(window, expected)
    assert window.studio.session.init_take is None and child(window, "takesList").count() == 0
    if before is not None:
        assert path.read_bytes() == before


def test_unreadable_init_file_is_the_read_audio_sentence(window, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.audio_io import read_audio

    path = tmp_path / "locked.wav"
    sf.write(path, np.zeros((100, 2)), 44100)
    real_open = pathlib.Path.open

    def denied(self, *args, **kwargs):  # the suite may run as root, where chmod does nothing
        if self == path:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", denied)
    expected = engine_error(lambda: read_audio(path))
    assert "permission" in expected.lower()
    assert window.studio.inpaint_controller.open_init_file(str(path)) is None
    said(window, expected)


# ---------------------------------------------------------------------------- Save As
@pytest.fixture
def take_with_file(qtbot, window, tmp_path: Path):
    """A generated take, and an existing file (with sidecar) the user is saving over."""
    generate(qtbot, window, "whoosh", seconds=0.5, seed=4)
    take = window.studio.session.current_take()
    folder = tmp_path / "project"
    folder.mkdir()
    target = folder / "mine.wav"
    sf.write(target, np.full((50, 2), 0.25), 44100, subtype="PCM_16")
    target.with_suffix(".json").write_text('{"mine": true}\n')
    return take, target, files_in(folder)


def _save_fails_like_write_audio(window, take, target: Path, before: dict) -> None:
    from engines.delivery.writer import write_audio

    expected = engine_error(lambda: write_audio(target, take.pcm, "wav16"))
    assert window.studio.export_controller.save_take(take, target) is None
    said(window, expected)
    assert files_in(target.parent) == before  # untouched, and no temporary file left


def test_save_as_into_a_read_only_folder(window, take_with_file,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    take, target, before = take_with_file
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):
        if Path(os.fsdecode(path)).parent == target.parent and flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    _save_fails_like_write_audio(window, take, target, before)
    assert "read-only" in shown(window)


def test_save_as_onto_a_folder_of_that_name(window, take_with_file) -> None:
    take, target, _ = take_with_file
    blocker = target.with_name("folder.wav")
    blocker.mkdir()
    (blocker / "inside.txt").write_text("kept")
    _save_fails_like_write_audio(window, take, blocker, files_in(target.parent))
    assert (blocker / "inside.txt").read_text() == "kept"


def test_save_as_on_a_full_disk(window, take_with_file, monkeypatch: pytest.MonkeyPatch) -> None:
    take, target, before = take_with_file

    def full_disk(file, *_args, **_kwargs):
        Path(os.fsdecode(file)).write_bytes(b"half a header")  # as a real failure leaves it
        raise OSError(errno.ENOSPC, "No space left on device")

    from engines.delivery import writer

    monkeypatch.setattr(writer, "_write_samples", full_disk)
    _save_fails_like_write_audio(window, take, target, before)
    assert "disk is full" in shown(window)


def test_save_as_sidecar_failure_is_one_sentence(window, take_with_file,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import engines.delivery.deliver as deliver
    from engines.error_sentences import sentence

    take, target, _ = take_with_file
    failure = OSError(errno.ENOSPC, "No space left on device")

    def full_disk(*_args, **_kwargs):
        raise failure

    monkeypatch.setattr(deliver, "write_json_temp", full_disk)
    assert window.studio.export_controller.save_take(take, target) is None
    from engines.error_sentences import shown as quoted

    said(window, sentence(f"Could not write {quoted(target.with_suffix('.json'))}", failure,
                          "no file was changed; choose another place or make room there"))
    assert target.with_suffix(".json").read_text() == '{"mine": true}\n'


def test_drag_into_an_unwritable_takes_folder(window, qtbot, home: Path) -> None:
    from engines.error_sentences import sentence

    generate(qtbot, window, "bell", seconds=0.5, seed=3)
    takes = window.studio.export_controller.takes_dir()
    takes.parent.mkdir(parents=True, exist_ok=True)
    takes.write_text("a file where the folder goes")
    lst = child(window, "takesList")
    lst.mimeData([lst.currentItem()])  # Qt's drag machinery asks; it must not raise
    with pytest.raises(OSError) as caught:
        takes.mkdir(parents=True, exist_ok=True)
    said(window, sentence(f"Could not create the folder '{takes}' for dragged takes",
                          caught.value))
    assert takes.read_text() == "a file where the folder goes"


# ---------------------------------------------------------------------------- the library
def test_a_damaged_library_database_is_set_aside_and_said(open_window, home: Path) -> None:
    library = home / "library"
    library.mkdir(parents=True)
    garbage = b"not a database, not at all" * 100
    (library / "library.sqlite3").write_bytes(garbage)
    win = open_window()
    notice = win.studio.library.notice
    assert notice and notice.startswith("The library database was damaged")
    assert notice in shown(win) and notice in win.studio.notifier.history
    kept = [p for p in library.iterdir() if p.name.startswith("library.sqlite3.corrupt")]
    assert [p.read_bytes() for p in kept] == [garbage]  # set aside, never deleted


def test_a_library_that_cannot_open_leaves_the_window_working(open_window, qtbot,
                                                              home: Path) -> None:
    from engines import paths

    home.mkdir(parents=True, exist_ok=True)
    (home / "library").write_text("a file where the library folder goes")
    expected = engine_error(paths.library_dir)
    win = open_window()
    assert expected in shown(win)
    generate(qtbot, win, "beep", seconds=0.5, seed=1)  # generation still works
    assert child(win, "takesList").count() == 1
    said(win, f"The take is in the session but not in the library: {expected}")
    win.studio.library_controller.refresh_library()
    said(win, expected)


def _read_only_library_error(home: Path, call_name: str, **kwargs) -> str:
    """What the engine says when another connection writes to the same library read-only."""
    from engines.store.library import ClipLibrary

    other = ClipLibrary(home / "library")
    try:
        other._conn.execute("PRAGMA query_only = 1")
        record = other.search(limit=1)[0]
        return engine_error(lambda: getattr(other, call_name)(record.id, **kwargs))
    finally:
        other.close()


def test_rating_and_tags_on_a_read_only_library(window, qtbot, home: Path) -> None:
    generate(qtbot, window, "laser", seconds=0.5, seed=5)
    expected = _read_only_library_error(home, "update", rating=3)
    window.studio.library._conn.execute("PRAGMA query_only = 1")
    child(window, "libraryView").selectRow(0)
    child(window, "libraryRatingSpin").setValue(3)
    said(window, expected)
    child(window, "libraryTagsEdit").setText("zap")
    child(window, "librarySaveMetaButton").click()
    said(window, expected)
    window.studio.library._conn.execute("PRAGMA query_only = 0")
    record = window.studio.library.search(limit=1)[0]
    assert record.rating == 0 and record.tags == []


def test_delete_on_a_read_only_library_keeps_the_take(window, qtbot, home: Path) -> None:
    generate(qtbot, window, "laser", seconds=0.5, seed=5)
    audio = window.studio.library.search(limit=1)[0].audio_path
    expected = _read_only_library_error(home, "delete")
    window.studio.library._conn.execute("PRAGMA query_only = 1")
    child(window, "libraryView").selectRow(0)
    child(window, "libraryDeleteButton").click()
    said(window, expected)
    assert audio.is_file() and not child(window, "libraryUndoButton").isEnabled()
    assert len(child(window, "libraryView").model().records) == 1


def test_a_raw_sqlite_error_is_put_into_words(window, monkeypatch: pytest.MonkeyPatch) -> None:
    from engines.error_sentences import sentence

    failure = sqlite3.OperationalError("database or disk is full")

    def full(*_args, **_kwargs):
        raise failure

    monkeypatch.setattr(window.studio.library, "search", full)
    window.show_library()  # where the search box is (the page is built when first shown)
    child(window, "librarySearchEdit").setText("rain")
    said(window, sentence("Could not search the library", failure))
    assert "disk is full" in shown(window)


# ---------------------------------------------------------------------------- settings
@pytest.fixture
def settings_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Everything engines.settings handed out as notices (emptied of other tests' first)."""
    import engines.settings as settings

    settings.take_notices()
    seen: list[str] = []
    real = settings.take_notices

    def spy() -> list[str]:
        found = real()
        seen.extend(found)
        return found

    monkeypatch.setattr(settings, "take_notices", spy)
    return seen


def test_a_damaged_settings_file_is_said_once_at_startup(open_window, home: Path,
                                                         settings_spy: list[str]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.json").write_text("{ not json")
    win = open_window()
    assert len(settings_spy) == 1
    notice = settings_spy[0]
    assert notice in shown(win) and "damaged" in notice
    kept = list(home.glob("settings.json.damaged-*"))
    assert [p.read_text() for p in kept] == ["{ not json"]
    win.studio.models_controller.open_models_dialog()  # reads the settings again
    assert list(win.studio.notifier.history).count(notice) == 1


def test_a_settings_file_damaged_later_is_said_by_the_models_dialog(
        window, home: Path, settings_spy: list[str]) -> None:
    (home / "settings.json").write_text("[1, 2, 3]")
    dialog = window.studio.models_controller.open_models_dialog()
    assert len(settings_spy) == 1
    said(window, settings_spy[0])
    assert settings_spy[0] in dialog.message.text()


def test_adding_a_models_folder_that_cannot_be_saved(window, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import engines.settings as settings
    from engines.error_sentences import sentence

    folder = tmp_path / "official"
    folder.mkdir()
    failure = OSError(errno.ENOSPC, "No space left on device")

    def full(*_args, **_kwargs):
        raise failure

    monkeypatch.setattr(settings.os, "replace", full)
    dialog = window.studio.models_controller.open_models_dialog()
    dialog.add_folder(str(folder))
    expected = sentence(f"Could not add '{folder}' to the model folders", failure)
    said(window, expected)
    assert dialog.message.text() == expected


# ---------------------------------------------------------------------------- startup
def test_a_data_folder_that_cannot_be_created_is_a_message_and_status_2(
        qapp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.shell.launch as launch
    from engines import paths

    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    monkeypatch.setenv("SA3_STUDIO_HOME", str(blocker / "home"))
    try:
        paths.data_dir()
    except (StudioError, OSError) as err:
        failure = err
    else:
        pytest.fail("the data folder was created inside a file")
    told: list[str] = []
    monkeypatch.setattr(launch, "tell_fatal", told.append)
    assert launch.run_gui([]) == 2
    assert len(told) == 1 and "\n" not in told[0]
    if isinstance(failure, StudioError):
        assert told[0] == str(failure)
    assert str(blocker) in told[0] and "SA3_STUDIO_HOME" in told[0]
    assert blocker.read_text() == "in the way"


# ---------------------------------------------------------------------------- safety net
@pytest.mark.qt_no_exception_capture
def test_the_safety_net_logs_the_traceback_and_shows_one_sentence(
        window, home: Path) -> None:
    from PySide6.QtCore import QObject, Signal

    from app.shell.safety_net import SafetyNet
    from engines import paths

    class Emitter(QObject):
        poke = Signal()

    def broken_slot() -> None:
        raise ZeroDivisionError("the inner detail")

    logger = paths.setup_logging("sa3-studio.test")
    net = SafetyNet(window.studio.notifier).install()
    try:
        emitter = Emitter()
        emitter.poke.connect(broken_slot)
        emitter.poke.emit()
    finally:
        net.uninstall()
        root = logging.getLogger()
        for handler in list(paths._installed):
            root.removeHandler(handler)
            handler.close()
        paths._installed.clear()
    message = shown(window)
    assert message.startswith("Something went wrong unexpectedly (the inner detail)")
    assert "log file" in message and "\n" not in message
    logged = (home / "logs" / paths.LOG_FILE_NAME).read_text(encoding="utf-8")
    assert "Traceback" in logged and "ZeroDivisionError: the inner detail" in logged
    assert logger is not None


def test_the_safety_net_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.shell.safety_net import SafetyNet

    class BrokenNotifier:
        def error(self, text: str) -> None:
            raise RuntimeError("the status bar is gone")

    net = SafetyNet(BrokenNotifier())
    net.excepthook(ValueError, ValueError("x"), None)  # returns quietly
    net.excepthook(None, None, None)
