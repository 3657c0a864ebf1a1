"""Speed and quality tiers in the window (issue 14): choosing a codec tier with its speed and
quality in words, seeing which tier and engine files made a take, comparing tiers by ear on the
same latents, filtering the library by tier, and what the Models dialog says the defaults pick.

The demo set (canonical and coarse tiers) runs on any machine; the refusals of a real set are
faked with an sm_86 card and engine files of the right names (as tests/test_tiers.py does).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import Qt

from app.common.session_take import Take
from engines.catalog import MODEL_SETS
from engines.catalog.tier_choice import codec_tier_options
from engines.catalog.tiers import CODEC_INFO, PRECISION_INFO
from engines.cli.words import say
from tests.app.test_gui import WAIT_MS, child, generate
from tests.conftest import fake_gpu_probe
from tests.engines.test_tiers import A6000, TRT, engines_tree, one_sentence
from tests.widget_texts import FLAG, flags_in, widget_texts

TIP = Qt.ItemDataRole.ToolTipRole


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A data folder of this test's own: its own library, models and settings."""
    from app.models.controller import FIRST_RUN_KEY
    from engines.settings import update_settings

    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("SA3_STUDIO_HOME", str(folder))
    update_settings(folder, {FIRST_RUN_KEY: True})
    return folder


@pytest.fixture
def make_window(qtbot, home):
    """Windows whose player plays into a stand-in stream (this machine may have no device)."""
    from app.common.playback import Player
    from app.shell.main_window import MainWindow
    from app.shell.studio import Studio
    from tests.app.test_playback import FakeStream

    built = []

    def make():
        win = MainWindow()
        qtbot.addWidget(win)
        win.studio = Studio(win, player=Player(stream_factory=FakeStream))
        child(win, "autoplayCheck").setChecked(False)
        built.append(win)
        return win

    yield make
    for win in built:
        win.studio.shutdown()


@pytest.fixture
def window(make_window, no_gpu):
    return make_window()


def entries(combo) -> dict[str, tuple[str, bool, str]]:
    """name -> (text, enabled, tooltip) of every entry of a tier combo."""
    return {combo.itemData(i): (combo.itemText(i), combo.model().item(i).isEnabled(),
                                str(combo.itemData(i, TIP) or ""))
            for i in range(combo.count())}


def choose(combo, name: str) -> None:
    combo.setCurrentIndex(combo.findData(name))


def compare(qtbot, win, expect: int) -> None:
    """Press Compare tiers and wait for the session to hold `expect` takes."""
    child(win, "compareTiersButton").click()
    qtbot.waitUntil(lambda: child(win, "takesList").count() >= expect
                    and not win.studio.compare_controller.pending, timeout=WAIT_MS)


def status(win) -> str:
    return win.statusBar().currentMessage()


# --------------------------------------------------------------------------------------------
# Choosing a tier


def test_the_codec_tier_combo_lists_the_demo_tiers_with_speed_and_quality(window):
    tiers = entries(child(window, "codecTierCombo"))
    assert list(tiers) == ["canonical", "coarse"]
    for name, (text, enabled, tip) in tiers.items():
        info = CODEC_INFO[("demo", name)]
        assert enabled and info.speed in text and info.quality in text and info.quality in tip
    assert "(default)" in tiers["canonical"][0] and "default" not in tiers["coarse"][0]
    precisions = entries(child(window, "precisionCombo"))
    assert precisions["fp32"][1] and "(default)" in precisions["fp32"][0]
    assert PRECISION_INFO["fp8"].speed in precisions["fp8"][0]
    assert not precisions["fp16"][1]  # the demo has fp32 weights only: greyed, with why
    assert "fp32 weights only" in precisions["fp16"][2] and not FLAG.search(precisions["fp16"][2])
    # the line under the combos says what the chosen ones cost and give, whole
    choose(child(window, "codecTierCombo"), "coarse")
    assert CODEC_INFO[("demo", "coarse")].quality in child(window, "tierNoteLabel").text()


def test_an_fp8_tier_is_greyed_on_an_sm86_card_with_its_reason(make_window, home,
                                                               monkeypatch):
    import engines.catalog as catalog

    fake_gpu_probe(monkeypatch, A6000)
    monkeypatch.setattr(catalog, "installed_tensorrt_version", lambda: TRT)
    engines_tree(home / "models", "sm_86", tiers=("canonical", "fp8"))
    win = make_window()
    assert win.studio.models_controller.choose_model("sm-sfx")
    tiers = entries(child(win, "codecTierCombo"))
    assert list(tiers) == ["canonical", "fp8", "fp8_fast", "legacy"]
    assert tiers["canonical"][1] and "(default)" in tiers["canonical"][0]
    assert "about 1.14x faster decode, near-transparent" in tiers["fp8"][0]
    for name in ("fp8", "fp8_fast"):
        text, enabled, tip = tiers[name]
        assert not enabled and "FP8 tensor cores" in tip and one_sentence(tip), tip
        assert not FLAG.search(tip) and "Codec tier" in tip  # names the window's own choice
    assert not tiers["legacy"][1] and "dec_dynamic_bf16.trt" in tiers["legacy"][2]
    assert child(win, "codecTierCombo").currentData() == "canonical"  # never a greyed one
    precisions = entries(child(win, "precisionCombo"))
    assert precisions["fp16"][1] and not precisions["fp8"][1]
    assert "8.9" in precisions["fp8"][2] and not FLAG.search(precisions["fp8"][2])


def test_generate_with_the_coarse_tier_makes_a_coarse_take(qtbot, window):
    gen = window.studio.generation_controller
    assert gen.build_request(1).codec_tier is None  # the default entry: the default rule
    choose(child(window, "codecTierCombo"), "coarse")
    assert gen.build_request(1).codec_tier == "coarse"
    generate(qtbot, window, "glass chime", seconds=1.0, seed=21)
    take = window.studio.session.current_take()
    assert take.result.codec_tier == "coarse" and take.result.request.codec_tier == "coarse"
    assert take.result.files.decoder.name == "dec_coarse.onnx"
    # the row's tooltip says which tier made it; the Advanced group's line which engine files
    # too (issue 34: engine file names stay out of tooltips and the status bar)
    item = child(window, "takesList").currentItem()
    assert "coarse codec tier" in item.toolTip() and "dec_coarse.onnx" not in item.toolTip()
    details = child(window, "engineDetailsLabel").text()
    assert "coarse codec tier" in details and "dec_coarse.onnx" in details
    record = window.studio.library.get(take.library_id)
    assert record.decoder_tier == "coarse"


# --------------------------------------------------------------------------------------------
# Comparing tiers by ear


def test_compare_tiers_adds_the_other_tier_right_after_the_take(qtbot, window):
    generate(qtbot, window, "glass chime", seconds=2.0, seed=21)
    generate(qtbot, window, "door slam", seconds=1.0, seed=5)
    takes = child(window, "takesList")
    takes.setCurrentRow(0)
    session = window.studio.session
    original = session.current_take()
    assert original.codec_tier == "canonical"
    compare(qtbot, window, 3)
    coarse = session.take_for(takes.item(1))  # right after the original, not at the end
    assert coarse.name == "glass chime [coarse tier]" and coarse.codec_tier == "coarse"
    assert coarse.pcm.shape == original.pcm.shape
    assert not np.array_equal(coarse.pcm, original.pcm)  # another codec: audibly different
    assert session.take_for(takes.item(2)).prompt == "door slam"
    assert "coarse codec tier" in takes.item(1).toolTip()
    assert "coarse tier" in status(window) and one_sentence(status(window))
    takes.setCurrentRow(0)
    takes.setCurrentRow(1)  # selecting a take: the Advanced group says which tier and files
    details = child(window, "engineDetailsLabel").text()
    assert "coarse codec tier" in details and "dec_coarse.onnx" in details
    assert ".onnx" not in status(window)
    # back through the original's tier: the very same samples, bit for bit
    compare(qtbot, window, 4)
    back = session.take_for(takes.item(2))
    assert back.name == "glass chime [canonical tier]" and back.codec_tier == "canonical"
    np.testing.assert_array_equal(back.pcm, original.pcm)


def test_flipping_between_a_take_and_its_tier_keeps_the_playhead(qtbot, window):
    generate(qtbot, window, "engine hum", seconds=2.0, seed=11)
    compare(qtbot, window, 2)
    generate(qtbot, window, "bird", seconds=2.0, seed=12)  # another take, not a tier of it
    takes, player = child(window, "takesList"), window.studio.player
    takes.setCurrentRow(0)
    takes.setFocus()
    player.seek(1.25)
    qtbot.keyClick(takes, Qt.Key.Key_Down)  # to the coarse tier of the same latents
    coarse = window.studio.session.current_take()
    assert coarse.codec_tier == "coarse"
    np.testing.assert_allclose(player._audio, coarse.pcm / 32768.0, atol=1e-6)
    assert player.position_seconds == pytest.approx(1.25, abs=0.01)
    qtbot.keyClick(takes, Qt.Key.Key_Up)  # and back: still the same moment
    assert takes.currentRow() == 0
    assert player.position_seconds == pytest.approx(1.25, abs=0.01)
    qtbot.keyClick(takes, Qt.Key.Key_Down)
    qtbot.keyClick(takes, Qt.Key.Key_Down)  # a different take starts from its beginning
    assert window.studio.session.current_take().prompt == "bird"
    assert player.position_seconds == pytest.approx(0.0, abs=0.01)


def test_what_cannot_be_compared_is_one_sentence(qtbot, window, monkeypatch):
    session = window.studio.session
    pcm = np.zeros((44100, 2), np.int16)
    session.add_take(Take(prompt="field recording", pcm=pcm, seed=None, model="imported"))
    assert not window.studio.compare_controller.compare_current()
    assert "imported audio" in status(window) and one_sentence(status(window))
    session.add_take(Take(prompt="from the library", pcm=pcm, seed=3, model="demo"))
    window.menus.compare_tiers_action.trigger()  # the Take menu does the same
    assert "no latents" in status(window) and one_sentence(status(window))
    assert child(window, "takesList").count() == 2  # nothing added

    import dataclasses

    import engines.catalog.tier_choice as tier_choice

    real = tier_choice.codec_tier_options

    def coarse_missing(*args, **kwargs):
        return [o if o.name != "coarse" else dataclasses.replace(o, available=False,
                                                                 reason="Not installed.")
                for o in real(*args, **kwargs)]

    monkeypatch.setattr(tier_choice, "codec_tier_options", coarse_missing)
    generate(qtbot, window, "glass chime", seconds=1.0, seed=2)
    child(window, "compareTiersButton").click()
    qtbot.waitUntil(lambda: not window.studio.compare_controller.pending, timeout=WAIT_MS)
    assert "nothing to compare" in status(window) and one_sentence(status(window))
    assert child(window, "takesList").count() == 3


# --------------------------------------------------------------------------------------------
# The library and the Models dialog


def test_the_library_tier_filter_shows_only_takes_of_that_tier(qtbot, window):
    generate(qtbot, window, "canonical one", seconds=0.5, seed=1)
    choose(child(window, "codecTierCombo"), "coarse")
    generate(qtbot, window, "coarse one", seconds=0.5, seed=2)
    generate(qtbot, window, "coarse two", seconds=0.5, seed=3)
    combo, panel = child(window, "libraryTierCombo"), window.library_panel
    assert [combo.itemText(i) for i in range(combo.count())] == \
        ["Any tier", "canonical tier", "coarse tier"]
    assert len(panel.model.records) == 3
    choose(combo, "coarse")
    assert sorted(r.prompt for r in panel.model.records) == ["coarse one", "coarse two"]
    assert child(window, "libraryCountLabel").text().startswith("2 ")
    choose(combo, "canonical")
    assert [r.prompt for r in panel.model.records] == ["canonical one"]
    # restoring a coarse take's settings chooses its tier again
    choose(child(window, "codecTierCombo"), "canonical")
    coarse = next(r for r in window.studio.library.search() if r.prompt == "coarse one")
    window.studio.library_controller.restore_settings(coarse)
    assert child(window, "codecTierCombo").currentData() == "coarse"
    assert window.studio.generation_controller.build_request(1).codec_tier == "coarse"


def test_the_models_dialog_says_what_the_defaults_pick_and_why(make_window, home,
                                                               monkeypatch):
    import engines.catalog as catalog

    fake_gpu_probe(monkeypatch, A6000)
    monkeypatch.setattr(catalog, "installed_tensorrt_version", lambda: TRT)
    engines_tree(home / "models", "sm_86", tiers=("legacy",))
    dialog = make_window().studio.models_controller.open_models_dialog()
    tree, label = dialog.installed, dialog.findChild(object, "installedPickLabel")
    labels = dialog.installed_page.top_texts()
    tree.setCurrentItem(tree.topLevelItem(labels.index(MODEL_SETS["demo"].label)))
    assert "Generate would use fp32" in label.text() and "canonical" in label.text()
    sfx = tree.topLevelItem(labels.index(MODEL_SETS["sm-sfx"].label))
    tree.setCurrentItem(sfx.child(0))  # any row of the set says it
    text = label.text()
    assert "legacy" in text and "canonical codec is not installed" in text, text
    assert not FLAG.search(text)
    dialog.tabs.setCurrentWidget(dialog.installed_page)
    assert flags_in(widget_texts(dialog)) == []


def test_no_flag_in_any_tier_text_of_the_window(qtbot, make_window, home, monkeypatch):
    import engines.catalog as catalog

    fake_gpu_probe(monkeypatch, A6000)
    monkeypatch.setattr(catalog, "installed_tensorrt_version", lambda: TRT)
    engines_tree(home / "models", "sm_86", tiers=("canonical", "fp8"))
    win = make_window()
    win.resize(1280, 800)
    win.show()
    child(win, "generationAdvancedToggle").setChecked(True)  # its texts are looked at too
    win.studio.models_controller.choose_model("demo")
    generate(qtbot, win, "glass chime", seconds=0.5, seed=4)
    compare(qtbot, win, 2)
    texts = widget_texts(win) + [("statusBar", status(win))]
    win.studio.models_controller.choose_model("sm-sfx")  # reasons that name flags, reworded
    texts += widget_texts(win)
    raw = [o.reason for o in codec_tier_options(win.studio.models_controller.catalog,
                                                 "sm-sfx") if o.reason]
    assert any(re.search(r"--codec-tier", say(reason)) for reason in raw)  # the CLI's words
    assert flags_in(texts) == []
