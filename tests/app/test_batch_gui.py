"""File > Render sound list... (pytest-qt, offscreen, demo models): the list renders on the GPU
worker into the same files, sidecars and manifest as `python main.py batch`, its takes join the
session and the library, bad rows are one sentence each, and Cancel stops after the current take
with a manifest a rerun continues from."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
import soundfile as sf
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu

from engines.delivery.names import DEFAULT_TEMPLATE
from tests.cli_runner import run_cli
from tests.gui_support import child

REPO = Path(__file__).resolve().parents[2]
WAIT_MS = 120_000
BAD_ROW = "line 3: seconds 'abc' is not a number; write it like 1.5."


def three_rows(folder: Path) -> Path:
    path = folder / "sounds.csv"
    path.write_text("name,prompt,seconds,seed,steps,variations\n"
                    "door_creak,old door creaking,0.5,40,2,2\n"
                    "broken,thunder,abc,,2,1\n"
                    "ui_click,click,0.5,7,2,1\n", encoding="utf-8")
    return path


def render(qtbot, win, list_path: Path, out: Path, **options):
    controller = win.studio.batch_controller
    with qtbot.waitSignal(controller.listFinished, timeout=WAIT_MS) as finished:
        assert controller.render_list(list_path, out, **options)
    return finished.args[0]


def cli_batch(list_path: Path, out: Path, home: Path, *flags: str
              ) -> subprocess.CompletedProcess:
    """The command line's batch over the window's models folder, with its own data folder."""
    from engines.paths import models_dir

    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return run_cli(["batch", str(list_path), "--out", str(out), "--models-dir",
                    str(models_dir()), *flags], cwd=REPO, env=env, timeout=300)


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def comparable(item: dict) -> dict:
    """A manifest item without what differs between two runs (library ids, timings, and the
    file's size in bytes: the library id is embedded in the file's metadata)."""
    return {k: v for k, v in item.items() if k not in ("library_id", "timings_ms", "bytes")}


def comparable_sidecar(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["output"].pop("path")
    for key in ("created", "delivered", "library_id", "timings_ms"):
        data.pop(key)
    return data


def test_the_action_opens_the_dialog_with_the_batch_defaults(qtbot, window):
    action = child(window, "renderListAction")
    assert action.text().replace("&", "") == "Render sound list..."
    file_menu = window.findChild(QMenu, "fileMenu")
    assert action in file_menu.actions()
    assert not child(window, "renderListProgress").isVisible()
    action.trigger()
    dialog = window.studio.batch_controller.dialog
    assert dialog is not None and dialog.objectName() == "renderListDialog"
    assert child(dialog, "renderListTemplateEdit").text() == DEFAULT_TEMPLATE
    assert child(dialog, "renderListLibraryCheck").isChecked()
    assert not child(dialog, "renderListForceCheck").isChecked()
    for name in ("renderListPathEdit", "renderListOutEdit", "renderListBrowseButton",
                 "renderListOutBrowseButton"):
        child(dialog, name)
    dialog.reject()


def test_a_list_renders_like_the_command_line_into_session_and_library(qtbot, window,
                                                                        tmp_path):
    list_path = three_rows(tmp_path)
    out = tmp_path / "gui"
    summary = render(qtbot, window, list_path, out)
    studio = window.studio
    assert summary is not None and not summary.cancelled
    assert summary.counts == {"ok": 3, "skipped": 0, "failed": 1, "pending": 0}
    assert BAD_ROW in studio.notifier.history  # the bad row: its line, one sentence
    assert "[3/3] ui_click_01.wav" in studio.notifier.history
    status = child(window, "statusBar").currentMessage()
    assert "1 of 4 item(s) failed" in status and BAD_ROW in status and "\n" not in status
    progress = child(window, "renderListProgress")
    assert (progress.value(), progress.maximum()) == (3, 3) and not progress.isVisible()

    cli = cli_batch(list_path, tmp_path / "cli", tmp_path / "cli-home")
    assert cli.returncode == 1 and f"error: {BAD_ROW}" in cli.stderr, cli.stderr
    ours, theirs = manifest(out), manifest(tmp_path / "cli")
    assert ours["summary"] == theirs["summary"]
    assert ours["settings"] == {**theirs["settings"], "jobs": 1}
    assert [comparable(i) for i in ours["items"]] == [comparable(i) for i in theirs["items"]]
    files = [item["file"] for item in ours["items"] if item["status"] == "ok"]
    assert files == ["door_creak_01.wav", "door_creak_02.wav", "ui_click_01.wav"]
    assert [item["seed"] for item in ours["items"] if item["file"]] == [40, 41, 7]
    for name in files:
        mine, info = sf.read(out / name, dtype="int16")[0], sf.info(out / name)
        cli_audio, cli_info = sf.read(tmp_path / "cli" / name, dtype="int16")[0], \
            sf.info(tmp_path / "cli" / name)
        assert mine.tobytes() == cli_audio.tobytes()  # the same samples, bit for bit
        assert (info.samplerate, info.subtype) == (cli_info.samplerate, cli_info.subtype)
        sidecar = Path(name).with_suffix(".json")
        assert comparable_sidecar(out / sidecar) == comparable_sidecar(tmp_path / "cli" / sidecar)

    takes = studio.batch_controller.takes
    assert [t.name for t in takes] == ["door_creak_01", "door_creak_02", "ui_click_01"]
    assert all(t.take_id in studio.session.takes for t in takes)
    assert [t.seed for t in takes] == [40, 41, 7]
    ids = [item["library_id"] for item in ours["items"] if item["status"] == "ok"]
    assert [t.library_id for t in takes] == ids and all(isinstance(i, int) for i in ids)
    for take, name in zip(takes, files, strict=True):
        record = studio.library.get(take.library_id)
        # The library keeps the sound's name and its variation number (issue 31).
        assert record.name == Path(name).stem.rsplit("_", 1)[0] and record.seed == take.seed
        assert f"{record.variation:02}" == Path(name).stem.rsplit("_", 1)[1]
        assert (take.pcm == sf.read(out / name, dtype="int16")[0]).all()
    listed = {record.id for record in window.library_panel.model.records}
    assert set(ids) <= listed  # the library panel was refreshed
    studio.session.select(takes[1])  # a list's take shows like any other (no latents kept)
    assert child(window, "waveformView").samples().shape == takes[1].pcm.shape


def test_presets_loops_and_templates_match_the_command_line_byte_for_byte(qtbot, window,
                                                                          tmp_path):
    items = [{"name": "amb", "prompt": "forest ambience", "seconds": 3, "seed": 9, "steps": 2,
              "loop": True, "category": "AMBForst"},
             {"name": "hit", "prompt": "metal hit", "seconds": 1, "seed": 3, "steps": 2,
              "preset": "Game SFX one-shot"},
             {"name": "odd", "prompt": "x", "steps": "many"}]
    list_path = tmp_path / "list.json"
    list_path.write_text(json.dumps(items), encoding="utf-8")
    template = "{category}{name}_{n:02}"
    summary = render(qtbot, window, list_path, tmp_path / "gui", template=template,
                     keep_in_library=False)
    assert summary.counts == {"ok": 2, "skipped": 0, "failed": 1, "pending": 0}
    assert any(line.startswith("item [2]: steps 'many'") for line in window.studio.notifier.history)
    cli = cli_batch(list_path, tmp_path / "cli", tmp_path / "cli-home", "--name", template,
                    "--no-library")
    assert cli.returncode == 1, cli.stderr
    ours, theirs = manifest(tmp_path / "gui"), manifest(tmp_path / "cli")
    assert [comparable(i) for i in ours["items"]] == [comparable(i) for i in theirs["items"]]
    for name in ("AMBForstamb_01.wav", "hit_01.wav"):  # nothing differs without a library id
        assert (tmp_path / "gui" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()
    loop_take, hit_take = window.studio.batch_controller.takes
    assert loop_take.finishing.loop and loop_take.loop is not None
    assert hit_take.finishing.preset == "Game SFX one-shot" and hit_take.library_id is None
    window.studio.session.select(hit_take)  # the finish panel finishes it like any take
    qtbot.waitUntil(lambda: hit_take.finished is not None, timeout=WAIT_MS)


def test_cancel_after_the_first_take_keeps_a_valid_manifest_and_a_rerun_finishes(
        qtbot, window, tmp_path):
    list_path = tmp_path / "four.csv"
    list_path.write_text("name,prompt,seconds,seed,steps\n" + "".join(
        f"s{i},sound {i},0.5,{20 + i},2\n" for i in range(4)), encoding="utf-8")
    out = tmp_path / "out"
    controller, studio = window.studio.batch_controller, window.studio
    refused: list[str] = []
    cancelled = threading.Event()

    def press_cancel(_made) -> None:  # on the GUI thread, while the worker waits below
        if cancelled.is_set():
            return
        child(window, "generateButton").click()  # refused while the list renders
        refused.append(studio.notifier.history[-1])
        child(window, "renderListCancelButton").click()
        cancelled.set()

    # The worker waits after its first take until Cancel was pressed, so the test does not
    # depend on how fast a take is.
    def hold(_made) -> None:  # on the worker thread, before it starts the next take
        cancelled.wait(30)

    controller._made.connect(press_cancel)
    controller._made.connect(hold, Qt.ConnectionType.DirectConnection)
    with qtbot.waitSignal(controller.listFinished, timeout=WAIT_MS) as finished:
        assert controller.render_list(list_path, out)
    summary = finished.args[0]
    assert summary.cancelled and refused and "sound list is rendering" in refused[0]
    data = manifest(out)
    assert data["summary"] == {"ok": 1, "skipped": 0, "failed": 0, "pending": 3}
    done = [item for item in data["items"] if item["status"] == "ok"]
    assert [item["file"] for item in done] == ["s0_01.wav"] and (out / "s0_01.wav").is_file()
    assert not any((out / f"s{i}_01.wav").exists() for i in (1, 2, 3))
    assert "render the list again to continue" in child(window, "statusBar").currentMessage()
    assert len(controller.takes) == 1

    controller._made.disconnect(press_cancel)
    controller._made.disconnect(hold)
    summary = render(qtbot, window, list_path, out)
    assert not summary.cancelled
    assert manifest(out)["summary"] == {"ok": 3, "skipped": 1, "failed": 0, "pending": 0}
    assert [t.name for t in controller.takes] == ["s1_01", "s2_01", "s3_01"]
    assert all((out / f"s{i}_01.wav").is_file() for i in range(4))


@pytest.mark.parametrize("content, words", [
    ("title,prompt\na,b\n", "no name columns"),
    ('{"name": "a"}', "not a list of objects"),
])
def test_a_list_that_cannot_be_used_is_one_sentence(qtbot, window, tmp_path, content, words):
    path = tmp_path / ("list.json" if content.startswith("{") else "list.csv")
    path.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    controller = window.studio.batch_controller
    child(window, "renderListAction").trigger()
    dialog = controller.dialog
    child(dialog, "renderListPathEdit").setText(str(path))
    child(dialog, "renderListOutEdit").setText(str(out))
    with qtbot.waitSignal(controller.listFinished, timeout=WAIT_MS) as finished:
        dialog.accept()
    assert finished.args[0] is None
    message = child(window, "statusBar").currentMessage()
    assert words in message and "\n" not in message and "Traceback" not in message
    assert not out.exists() and not child(window, "renderListProgress").isVisible()


def test_unusable_dialog_values_are_refused_before_anything_runs(qtbot, window, tmp_path):
    controller = window.studio.batch_controller
    history = window.studio.notifier.history
    assert not controller.render_list(tmp_path / "nowhere.csv", tmp_path / "out")
    assert "was not found" in history[-1]
    list_path = three_rows(tmp_path)
    (tmp_path / "afile").write_text("x")
    assert not controller.render_list(list_path, tmp_path / "afile")
    assert "is a file, not a folder" in history[-1]
    assert not controller.render_list(list_path, tmp_path / "out", template="{nope}")
    assert history[-1].startswith("The name template is refused")
    assert not controller.running and not (tmp_path / "out").exists()
