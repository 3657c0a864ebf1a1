"""The Models dialog: on a machine without an NVIDIA GPU (what CI is; faked so that a GPU machine
runs the same tests), on a pretend H200, and its "Download and set up" button against a local
imitation of the Hugging Face Hub."""

from __future__ import annotations

import pytest

from engines.catalog import MODEL_SETS
from tests.engines.test_downloads import FILES, blob, hf_env, hub  # noqa: F401 - fixtures
from tests.fake_hub import FakeHub

WAIT_MS = 20_000
PUBLISHED_TENSORRT = "10.15.1.29"


def open_dialog(qtbot):
    from app import build_main_window

    win = build_main_window()
    qtbot.addWidget(win)
    return win, win.studio.models_controller.open_models_dialog()


@pytest.fixture
def window_and_dialog(qtbot, tmp_path, monkeypatch, no_gpu):
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    win, dlg = open_dialog(qtbot)
    yield win, dlg
    win.studio.shutdown()


@pytest.fixture
def dialog(window_and_dialog):
    return window_and_dialog[1]


def with_tensorrt(monkeypatch, version: str | None) -> None:
    """The catalog sees this TensorRT (None: not installed), whatever this machine has."""
    import engines.catalog as catalog

    monkeypatch.setattr(catalog, "installed_tensorrt_version", lambda: version)


def test_dialog_names_and_machine_report(dialog):
    assert dialog.objectName() == "modelManagerDialog"
    for name in ("downloadButton", "buildButton", "selfTestButton", "getRecommendedButton"):
        assert dialog.findChild(object, name) is not None, name
    assert "no NVIDIA GPU" in dialog.machine_label.text()
    tops = dialog.installed_page.top_texts()
    assert MODEL_SETS["demo"].label in tops and MODEL_SETS["medium"].label in tops


def test_the_close_button_closes_the_dialog_and_it_opens_again(qtbot, window_and_dialog):
    from PySide6.QtWidgets import QDialogButtonBox

    win, dialog = window_and_dialog
    dialog.show()
    close = dialog.buttons.button(QDialogButtonBox.StandardButton.Close)
    assert close is not None and close.text().replace("&", "") == "Close"
    close.click()
    assert not dialog.isVisible()
    again = win.studio.models_controller.open_models_dialog()
    assert again.isVisible() and again.thread.isRunning()  # downloads still work after


def test_build_and_selftest_explain_what_is_missing(dialog):
    dialog.findChild(object, "buildButton").click()
    assert "No NVIDIA graphics card" in dialog.message.text()
    dialog.findChild(object, "selfTestButton").click()
    assert "No NVIDIA graphics card" in dialog.message.text()


def test_download_needs_a_choice_and_an_architecture(dialog):
    dialog.findChild(object, "showSizesButton").click()
    assert "at least one model set" in dialog.message.text()
    dialog.set_checks["sm-sfx"].setChecked(True)
    dialog.arch_edit.setText("")
    dialog.findChild(object, "showSizesButton").click()
    assert "graphics card architecture" in dialog.message.text() or \
        "architecture is unknown" in dialog.message.text()
    assert "ONNX graphs in Backend" in dialog.message.text()
    assert not dialog.findChild(object, "downloadButton").isEnabled()


def test_add_models_folder(dialog, tmp_path):
    assert dialog.extra_folders() == []
    folder = tmp_path / "official"
    folder.mkdir()
    dialog.add_folder(str(folder))
    assert dialog.extra_folders() == [str(folder)]
    assert folder in dialog.controller.catalog.roots


def test_without_a_gpu_the_page_says_so_and_offers_the_demo_and_the_processor(dialog):
    page = dialog.first_run
    assert dialog.tabs.currentWidget() is page
    assert "No NVIDIA graphics card was found" in page.machine_label.text()
    advice = page.advice_label.text()
    assert "demo model already works" in advice and "ONNX Runtime" in advice
    assert "processor" in advice and "longer" in page.caveat_label.text()
    assert "Small SFX" in page.get_button.text() and page.get_button.isEnabled()
    assert not page.advanced.body.isVisibleTo(dialog)  # folded away until asked for
    page.advanced.toggle.click()
    assert page.advanced.body.isVisibleTo(dialog)


def test_on_an_h200_it_recommends_medium_and_says_tensorrt_is_missing(
        qtbot, tmp_path, monkeypatch, h200_gpu):
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    with_tensorrt(monkeypatch, None)
    win, dialog = open_dialog(qtbot)
    try:
        page = dialog.first_run
        assert "NVIDIA H200" in page.machine_label.text()
        assert "Medium at fp16" in page.advice_label.text()
        assert "14 GB" in page.advice_label.text()
        assert "TensorRT is not installed" in page.caveat_label.text()
        assert "6.6 GB" in page.get_button.text()
        assert dialog.arch_edit.text() == "sm_90"
    finally:
        win.studio.shutdown()


def test_download_from_the_advanced_options_against_a_local_hub(qtbot, hub, monkeypatch,  # noqa: F811
                                                               tmp_path, no_gpu):
    """Sizes first, then the download on its own thread, then the set shows up as installed."""
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home2"))
    win, dialog = open_dialog(qtbot)
    try:
        dialog.set_checks["sm-sfx"].setChecked(True)
        dialog.arch_edit.setText("sm_90")
        dialog.findChild(object, "showSizesButton").click()
        qtbot.waitUntil(lambda: dialog.findChild(object, "downloadButton").isEnabled(),
                        timeout=WAIT_MS)
        assert "in total" in dialog.plan_label.text()
        dialog.findChild(object, "downloadButton").click()
        qtbot.waitUntil(lambda: "Downloaded" in dialog.message.text(), timeout=WAIT_MS)
        assert dialog.total_progress.value() == 100
        tree = dialog.installed
        label = MODEL_SETS["sm-sfx"].label
        sfx = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                   if tree.topLevelItem(i).text(0) == label)
        assert not sfx.text(1).startswith("0 file") and sfx.text(1) != "not downloaded"
    finally:
        win.studio.shutdown()


@pytest.fixture
def sfx_hub(hf_env, monkeypatch):  # noqa: F811
    """The local hub, with the small SFX set's ONNX graphs too (stand-in bytes)."""
    from huggingface_hub import close_session

    files = dict(FILES)
    for name in ("onnx/sa3-sm-sfx/dit_fp16.onnx", "onnx/sa3-sm-sfx/dit_fp16.onnx.data"):
        files[name] = blob(name, 900)
    fake = FakeHub(files).start()
    monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
    yield fake
    close_session()
    fake.stop()


def test_one_button_without_a_gpu_fetches_the_onnx_graphs_and_checks_them(
        qtbot, sfx_hub, monkeypatch, tmp_path, no_gpu):
    """The files land where the catalog looks; these stand-in graphs are not real ONNX, so the
    last check stops with the catalog's reason, in the window's words."""
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home3"))
    win, dialog = open_dialog(qtbot)
    try:
        page = dialog.first_run
        page.get_button.click()
        assert "Step 1 of 1" in page.step_label.text()
        assert not page.get_button.isEnabled()
        qtbot.waitUntil(lambda: page.step_label.text().startswith(("Stopped", "Stable")),
                        timeout=WAIT_MS)
        models = tmp_path / "home3" / "models"
        assert (models / "onnx" / "sa3-sm-sfx" / "dit_fp16.onnx").is_file()
        assert dialog.total_progress.value() == 100
        assert "could not be read as an ONNX model" in page.step_label.text()
        assert "--" not in page.step_label.text() and "--" not in dialog.message.text()
        assert page.get_button.isEnabled()  # free to try again
    finally:
        win.studio.shutdown()


def test_cancel_before_the_file_list_arrives_downloads_nothing(qtbot, sfx_hub, monkeypatch,
                                                               tmp_path, no_gpu):
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home7"))
    win, dialog = open_dialog(qtbot)
    try:
        page = dialog.first_run
        page.get_button.click()
        dialog.cancel_download_button.click()
        assert page.step_label.text().startswith("Stopped: Cancelled")
        qtbot.waitUntil(lambda: "Check the sizes" in dialog.message.text(), timeout=WAIT_MS)
        qtbot.wait(200)
        assert not (tmp_path / "home7" / "models" / "onnx" / "sa3-sm-sfx").exists()
        assert page.get_button.isEnabled()
    finally:
        win.studio.shutdown()


def test_one_button_on_an_h200_downloads_then_runs_the_selftest(
        qtbot, hub, monkeypatch, tmp_path, h200_gpu):  # noqa: F811
    import app.models.gpu_tasks as gpu_tasks

    with_tensorrt(monkeypatch, PUBLISHED_TENSORRT)
    ran = []

    def selftest(models, catalog, on_build):
        ran.append(catalog.gpu.sm)
        on_build("dit_fp32.trt")
        return {"build_s": 1.0, "first_ms": 40.0, "replay_ms": 2.0, "path": "replay"}

    monkeypatch.setattr(gpu_tasks, "run_selftest", selftest)
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home4"))
    win, dialog = open_dialog(qtbot)
    try:
        page = dialog.first_run
        page.get_button.click()
        assert "Step 1 of 2" in page.step_label.text()
        qtbot.waitUntil(lambda: "ready" in page.step_label.text()
                        or "Stopped" in page.step_label.text(), timeout=WAIT_MS)
        assert ran == ["sm_90"]
        assert page.step_label.text() == (f"{MODEL_SETS['medium'].label} is ready, and "
                                          f"chosen in Model in the main window.")
        assert win.studio.models_controller.current_model() == "medium"
        assert (tmp_path / "home4" / "models" / "sm_90" / "sa3-m").is_dir()
        assert "installed and ready" in page.advice_label.text()
        assert not page.get_button.isEnabled()
    finally:
        win.studio.shutdown()


def test_a_failed_step_stops_the_run_with_one_sentence(qtbot, hub, monkeypatch, tmp_path,  # noqa: F811
                                                       h200_gpu):
    with_tensorrt(monkeypatch, None)
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home5"))
    win, dialog = open_dialog(qtbot)
    try:
        page = dialog.first_run
        page.get_button.click()
        qtbot.waitUntil(lambda: page.step_label.text().startswith("Stopped"), timeout=WAIT_MS)
        assert "TensorRT is not installed" in page.step_label.text()
        assert "\n" not in page.step_label.text()
        assert (tmp_path / "home5" / "models" / "sm_90" / "sa3-m").is_dir()  # kept
    finally:
        win.studio.shutdown()


def test_first_show_without_a_real_model_opens_get_models_once(qtbot, tmp_path, monkeypatch,
                                                               no_gpu):
    from app import build_main_window

    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home6"))
    opened = []
    for _ in range(2):
        win = build_main_window()
        qtbot.addWidget(win)
        controller = win.studio.models_controller
        try:
            win.show()
            # the page opens once the window has painted (app.shell.after_paint)
            qtbot.waitUntil(lambda win=win: win.studio.after_paint.settled, timeout=WAIT_MS)
            dialog = controller.models_dialog
            opened.append(dialog is not None and dialog.isVisible())
            if dialog is not None:
                assert dialog.tabs.currentWidget() is dialog.first_run
        finally:
            win.studio.shutdown()
            win.close()
    assert opened == [True, False]
