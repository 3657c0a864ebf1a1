"""Plain words first (issue 34): model, length, steps and seed stay in view; precision, codec
tier, Compare tiers and the engine files that made a take sit in the Advanced group, folded by
default; the status bar, the tooltips and the labels of the main window never name an engine
file, a runtime, a plugin or an environment variable, and a message names what to do in the
window instead."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from engines.errors import Remedy, join
from tests.app.test_gui import generate
from tests.browser_support import show_at
from tests.gui_support import child
from tests.widget_texts import widget_texts

# what the main window's plain face must not say
# (a remedy may name the Models window's entries "TensorRT engines" and "ONNX graphs": what to
# choose there)
ENGINE_WORDS = re.compile(r"\.onnx\b|\.trt\b|TensorRT(?! engines)|ONNX(?! graphs)|onnxruntime|"
                          r"tensorrt|plugin|\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b")


def engine_words_in(texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(where, text) for where, text in texts if ENGINE_WORDS.search(text)]


def test_the_plain_controls_are_in_view_and_the_engine_ones_folded(qtbot, window):
    show_at(qtbot, window, (1366, 768))
    for name in ("modelCombo", "secondsSpin", "stepsSpin", "seedEdit", "seedLockCheck",
                 "generateButton", "promptEdit"):
        assert child(window, name).isVisible(), name
    group = child(window, "advancedGroup")
    assert group.isVisible() and not child(window, "advancedBody").isVisible()
    for name in ("precisionCombo", "codecTierCombo", "compareTiersButton", "tierNoteLabel",
                 "engineDetailsLabel"):
        widget = child(window, name)
        assert group.isAncestorOf(widget) and not widget.isVisible(), name
    assert child(window, "sideTabs").findChild(object, "compareTiersButton") is None
    child(window, "generationAdvancedToggle").click()
    assert child(window, "precisionCombo").isVisible()
    assert child(window, "compareTiersButton").isVisible()


def test_no_engine_word_in_the_plain_window_after_a_take(qtbot, window):
    show_at(qtbot, window, (1366, 768))
    generate(qtbot, window, "glass chime", seconds=0.5, seed=21)
    take = window.studio.session.current_take()
    window.studio.session.select(take)
    status = window.statusBar().currentMessage()
    assert status.startswith("Take 1/1 ready") and "on the processor" in status
    texts = widget_texts(window) + [("statusBar", status)]
    texts += [("history", line) for line in window.studio.notifier.history]
    assert engine_words_in(texts) == []
    # the engine files are there for whoever opens the Advanced group
    child(window, "generationAdvancedToggle").click()
    details = child(window, "engineDetailsLabel").text()
    assert "Runtime: ONNX Runtime" in details
    assert all(path.name in details for path in take.result.files.all_paths())


def test_cancel_says_when_in_plain_words():
    from app.generate.controller import cancel_words

    for backend in ("tensorrt", "onnxruntime", None):
        assert not ENGINE_WORDS.search(cancel_words(backend)), backend


def test_a_model_that_cannot_run_names_what_to_do_not_the_plugin():
    from app.models.model_tips import model_tip

    reason = join("The SAME-L codec uses the samel::diff_attn_swa TensorRT plugin, which ONNX "
                  "Runtime cannot run; use ", Remedy.value("decoder", "same-s"), ".")
    tip = model_tip(SimpleNamespace(runnable=False, reason=reason, backend=None))
    assert "SAME-S in Decoder" in tip and "Models > Manage models..." in tip
    assert "plugin" not in tip and "samel::" not in tip
    plain = model_tip(SimpleNamespace(runnable=False, reason="'dit_fp16.trt' is missing.",
                                      backend=None))
    assert ".trt" not in plain and "Models > Manage models..." in plain
    assert model_tip(SimpleNamespace(runnable=True, reason=None, backend="tensorrt")) == \
        "Ready: runs on the graphics card here."


def test_every_model_tooltip_of_the_window_is_plain(window, machine):
    from PySide6.QtCore import Qt

    combo = child(window, "modelCombo")
    tips = [combo.itemData(i, Qt.ItemDataRole.ToolTipRole) for i in range(combo.count())]
    assert all(tips) and engine_words_in([("modelCombo", t) for t in tips]) == []


@pytest.fixture(params=["no_gpu", "h200_gpu"])
def machine(request):
    return request.getfixturevalue(request.param)


def _hub_sentences() -> list[str]:
    """Sentences the engines give about the hub and the data folder, which name environment
    variables in the command line's world."""
    from engines.error_sentences import sentence
    from engines.models.download_errors import hub_error
    from engines.models.gpu_runtime_fetch import offline_error
    from engines.models.hub_transport import httpx_module
    from engines.store.access import read_only_notice, read_only_refusal

    httpx = httpx_module()
    request = httpx.Request("GET", "https://hub.example/api")
    failures = [httpx.ConnectError("refused", request=request),
                httpx.ConnectTimeout("slow", request=request),
                httpx.TooManyRedirects("loop", request=request),
                httpx.UnsupportedProtocol("ftp", request=request),
                httpx.RemoteProtocolError("hung up", request=request)]
    found = [str(hub_error(exc, repo="stabilityai/x", what="the file list", token=None,
                           endpoint="https://hub.example")) for exc in failures]
    found += [sentence("Could not download", exc) for exc in failures]
    found += [offline_error().args[0], read_only_notice(__file__, "a read-only drive"),
              read_only_refusal(__file__, "a read-only drive")]
    return found


def test_no_environment_variable_reaches_the_window():
    from app.common.remedy_words import for_window

    sentences = _hub_sentences()
    named = [s for s in sentences if re.search(r"HF_ENDPOINT|HF_HUB_OFFLINE|SA3_STUDIO_HOME",
                                               str(s))]
    assert len(named) >= 6  # the engines do name them: the wording below has work
    for engine in sentences:
        shown = for_window(engine)
        assert not ENGINE_WORDS.search(shown), (engine, shown)
    shown = for_window("Could not reach the hub at https://hub.example (refused); check the "
                       "network or HF_ENDPOINT.")
    assert shown.endswith("check the network connection.")


def test_the_status_bar_words_an_offline_download_failure(qtbot, window):
    from engines.models.download_errors import hub_error
    from engines.models.hub_transport import httpx_module

    httpx = httpx_module()
    request = httpx.Request("GET", "https://hub.example/api")
    error = hub_error(httpx.ConnectError("refused", request=request), repo="stabilityai/x",
                      what="the file list", token=None, endpoint="https://hub.example")
    assert "HF_ENDPOINT" in str(error)
    window.studio.notifier.failed("Could not download", error)
    shown = window.statusBar().currentMessage()
    assert "HF_ENDPOINT" not in shown and "check the network connection" in shown
