"""The Models dialog on a machine without an NVIDIA GPU (what CI is; faked so that a GPU machine
runs the same tests)."""

from __future__ import annotations

import pytest

from tests.test_downloads import hf_env, hub  # noqa: F401 - fixtures


@pytest.fixture
def dialog(qtbot, tmp_path, monkeypatch, no_gpu):
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    dlg = win.studio.models_controller.open_models_dialog()
    yield dlg
    win.studio.shutdown()


def test_dialog_names_and_machine_report(dialog):
    assert dialog.objectName() == "modelManagerDialog"
    for name in ("downloadButton", "buildButton", "selfTestButton"):
        assert dialog.findChild(object, name) is not None, name
    assert "no NVIDIA GPU" in dialog.machine_label.text()
    tree = dialog.installed
    tops = [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]
    assert any(t.startswith("demo:") for t in tops) and any(t.startswith("medium:") for t in tops)


def test_build_and_selftest_explain_what_is_missing(dialog):
    dialog.findChild(object, "buildButton").click()
    assert "No NVIDIA GPU" in dialog.message.text()
    dialog.findChild(object, "selfTestButton").click()
    assert "No NVIDIA GPU" in dialog.message.text()


def test_download_needs_a_choice_and_an_arch(dialog):
    dialog.findChild(object, "showSizesButton").click()
    assert "at least one set" in dialog.message.text()
    dialog.set_checks["sm-sfx"].setChecked(True)
    dialog.arch_edit.setText("")
    dialog.findChild(object, "showSizesButton").click()
    assert "arch" in dialog.message.text()
    assert not dialog.findChild(object, "downloadButton").isEnabled()


def test_add_models_folder(dialog, tmp_path):
    folder = tmp_path / "official"
    folder.mkdir()
    dialog.add_folder(str(folder))
    items = [dialog.folders_list.item(i).text() for i in range(dialog.folders_list.count())]
    assert items == [str(folder)]
    assert folder in dialog.controller.catalog.roots


def test_download_from_the_dialog_against_a_local_hub(qtbot, hub, monkeypatch, tmp_path):  # noqa: F811
    """Sizes first, then the download on its own thread, then the set shows up as installed."""
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home2"))
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    try:
        dialog = win.studio.models_controller.open_models_dialog()
        dialog.set_checks["sm-sfx"].setChecked(True)
        dialog.arch_edit.setText("sm_90")
        dialog.findChild(object, "showSizesButton").click()
        qtbot.waitUntil(lambda: dialog.findChild(object, "downloadButton").isEnabled(),
                        timeout=20000)
        assert "in total" in dialog.plan_label.text()
        dialog.findChild(object, "downloadButton").click()
        qtbot.waitUntil(lambda: "Downloaded" in dialog.message.text(), timeout=20000)
        assert dialog.total_progress.value() == 100
        tree = dialog.installed
        sfx = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                   if tree.topLevelItem(i).text(0).startswith("sm-sfx:"))
        assert not sfx.text(1).startswith("0 file")
    finally:
        win.studio.shutdown()
