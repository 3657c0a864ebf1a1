"""One way out from the window (issue 19): a take dragged from the takes list, saved with Save
As, dragged from the Library tab and exported by `library export` on the command line is the
same file, byte for byte, for the same chain; and Settings > Labels and UCS list puts the
studio's names into every file (read back by wavinfo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import soundfile as sf
import wavinfo

from tests.app.test_gui import generate
from tests.cli_runner import run_cli
from tests.gui_support import child

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_window(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    yield win
    win.studio.shutdown()


def dragged(win, list_name: str = "takesList") -> Path:
    view = child(win, list_name)
    if list_name == "takesList":
        data = view.mimeData([view.currentItem()])
    else:
        data = view.model().mimeData([view.currentIndex()])
    return Path(data.urls()[0].toLocalFile())


def library_export(home: Path, take_id: int, dest: Path) -> Path:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    done = run_cli(["library", "export", str(take_id), "--to", str(dest)], env=env,
                   timeout=120)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.splitlines()[0])


def test_drag_save_as_and_library_export_are_one_file(qtbot, fresh_window, tmp_path: Path):
    win = fresh_window
    generate(qtbot, win, "glass break, short", seconds=1.0, seed=5)
    take = win.studio.session.current_take()
    assert take.library_id is not None
    drag = dragged(win)
    saved = win.studio.export_controller.save_take(take, tmp_path / "saved.wav")
    cli = library_export(tmp_path / "home", take.library_id, tmp_path / "cli")
    assert drag.name == cli.name == "glass-break-short_01.wav"  # one name rule
    assert drag.read_bytes() == saved.read_bytes() == cli.read_bytes()
    info = wavinfo.WavInfoReader(str(saved))
    assert info.bext.description == "glass break, short"
    assert info.bext.originator_ref == f"SA3-{take.library_id}"
    assert sf.info(saved).frames == take.pcm.shape[0]
    for path in (drag, saved, cli):
        assert path.with_suffix(".json").is_file()


def test_labels_dialog_names_every_file_and_checks_ucs_ids(qtbot, fresh_window,
                                                          tmp_path: Path) -> None:
    win = fresh_window
    child(win, "labelsSettingsAction").trigger()
    dialog = child(win, "labelsDialog")
    child(dialog, "designerNameEdit").setText("Ada Lovelace")
    child(dialog, "libraryNameEdit").setText("Castle SFX")
    ucs = tmp_path / "ucs.csv"
    ucs.write_text("\ufeffCatID,Category,SubCategory\nGLASBrk,GLASS,BREAK\n",
                   encoding="utf-8")
    assert win.studio.labels_controller.import_list(str(ucs))
    assert "1 categories" in child(dialog, "ucsListLabel").text()
    dialog.accept()
    generate(qtbot, win, "glass break", seconds=1.0, seed=6)
    saved = win.studio.export_controller.save_take(win.studio.session.current_take(),
                                                   tmp_path / "labelled.wav")
    xml = wavinfo.WavInfoReader(str(saved)).ixml.source
    assert b"<DESIGNER>Ada Lovelace</DESIGNER>" in xml and b"<LIBRARY>Castle SFX</LIBRARY>" in xml
    env = {**os.environ, "SA3_STUDIO_HOME": str(tmp_path / "home")}
    refused = run_cli(["generate", "--prompt", "glass", "--out", str(tmp_path / "x.wav"),
                       "--category", "GLASBrkk"], env=env, timeout=120)
    assert refused.returncode == 2 and "GLASBrk" in refused.stderr  # the closest match named
    assert not (tmp_path / "x.wav").exists()


def test_library_tab_export_of_a_model_loop_is_the_command_lines_file(qtbot, fresh_window,
                                                                      tmp_path: Path) -> None:
    from tests.app.test_finish_gui import choose_preset, wait_finished

    win = fresh_window
    generate(qtbot, win, "rain on a tin roof", seconds=6.0, seed=11)
    choose_preset(win, "Ambience loop")
    take = wait_finished(qtbot, win)
    assert take.loop is not None and take.loop.method == "model"
    qtbot.waitUntil(lambda: (win.studio.library.get(take.library_id).finishing or {}).get(
        "loop") is not None, timeout=30000)
    win.studio.library_controller.refresh_library()
    child(win, "libraryView").selectAll()
    folder = tmp_path / "tab"
    folder.mkdir()
    assert win.studio.library_controller.export_selected(str(folder)) == []  # on the worker
    qtbot.waitUntil(lambda: bool(list(folder.glob("*.wav"))), timeout=60000)
    qtbot.waitUntil(lambda: "Exported" in child(win, "statusBar").currentMessage(),
                    timeout=60000)
    from_tab = next(folder.glob("*.wav"))
    cli = library_export(tmp_path / "home", take.library_id, tmp_path / "cli")
    assert from_tab.read_bytes() == cli.read_bytes()  # the model's loop again, byte for byte
    assert dragged(win).read_bytes() == cli.read_bytes()  # and the session's drag
    assert wavinfo.WavInfoReader(str(from_tab)).smpl.sample_loops[0].start == 0
