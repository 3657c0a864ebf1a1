"""The window speaks of its own controls, never of command-line flags; the Models dialog shows
every name and reason in full, and closes with a Close button.

Engine sentences carry structured remedies (engines.errors.Remedy); app.common.remedy_words
words them as the window's controls, and the Notifier applies it to everything the status bar
shows.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from engines.catalog import MODEL_SETS, Catalog
from engines.cli.words import say
from engines.errors import Advice, Remedy, StudioError, join
from engines.gpu import GpuInfo
from tests.widget_texts import FLAG, flags_in, tree_items, widget_texts

H200 = GpuInfo("NVIDIA H200", 9, 0, 150_000_000_000, "13.0")
RTX_3070 = GpuInfo("NVIDIA GeForce RTX 3070", 8, 6, 8 * 2**30, "12.8")
TENSORRT = "10.15.1.29"
# flag in the CLI's wording of a sentence -> what the window's wording names instead
CONTROLS = {"--backend": "Backend", "--decoder": "Decoder", "--precision": "Precision",
            "--onnx": "ONNX graphs", "models download": "Download under Advanced options",
            "--init-audio": "Open init audio", "--cfg": "CFG"}

UNDER = " (under Advanced options in Models > Manage models...)"


def every_page(dialog):
    """Each page of the Models dialog in turn, with the advanced options expanded."""
    dialog.first_run.advanced.set_expanded(True)
    dialog.installed.expandAll()
    for index in range(dialog.tabs.count()):
        dialog.tabs.setCurrentIndex(index)
        yield dialog.tabs.widget(index)


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture
def make_window(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    built = []

    def make():
        from app import build_main_window

        win = build_main_window()
        qtbot.addWidget(win)
        built.append(win)
        return win

    yield make
    for win in built:
        win.studio.shutdown()


@pytest.fixture(params=["no_gpu", "h200_gpu"])
def machine(request):
    """Both machines: their refusals differ (no GPU; a GPU with no TensorRT)."""
    return request.getfixturevalue(request.param)


# ------------------------------------------------------------------------------ the windows
def test_no_flag_anywhere_in_the_main_window(make_window, machine):
    win = make_window()
    win.resize(1280, 800)
    win.show()
    win.studio.notifier.status(join("medium cannot run: use ", Remedy.value("backend", "tensorrt"),
                                    " or ", Remedy.value("decoder", "same-s"), "."))
    texts = widget_texts(win) + [("statusBar", win.statusBar().currentMessage())]
    assert flags_in(texts) == []
    # the combo shows catalog reasons whose remedies the command line words as flags
    catalog = win.studio.models_controller.catalog
    raw = [say(catalog.resolve(key).reason or "") for key in MODEL_SETS]
    assert any(FLAG.search(reason) for reason in raw)
    assert "Backend" in win.statusBar().currentMessage()


def test_no_flag_on_any_page_of_the_models_dialog(make_window, machine):
    dialog = make_window().studio.models_controller.open_models_dialog()
    assert dialog.isVisible()
    for page in every_page(dialog):
        assert flags_in(widget_texts(dialog)) == [], page.objectName()
    dialog.findChild(object, "buildButton").click()  # a refusal in the message line
    dialog.findChild(object, "showSizesButton").click()
    assert flags_in(widget_texts(dialog)) == []


def test_the_dialog_speaks_plainly(make_window, no_gpu):
    dialog = make_window().studio.models_controller.open_models_dialog()
    texts = [t for page in every_page(dialog) for _, t in widget_texts(dialog)]
    assert "Graphics card architecture" in texts and "Text encoder (every set needs it)" in texts
    jargon = [t for t in texts if "arch, e.g." in t or t.strip().lower() == "t5gemma"]
    assert jargon == []


def test_the_close_button_closes_the_dialog(make_window, no_gpu):
    from PySide6.QtWidgets import QDialogButtonBox

    dialog = make_window().studio.models_controller.open_models_dialog()
    close = dialog.buttons.button(QDialogButtonBox.StandardButton.Close)
    assert close.isVisibleTo(dialog)
    close.click()
    assert not dialog.isVisible()


def test_no_label_is_cut_short_at_the_default_size(make_window, machine):
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QAbstractButton, QLabel

    dialog = make_window().studio.models_controller.open_models_dialog()

    def right_edge(widget) -> int:  # past the dialog's edge: cut off, or a sideways scroll
        return widget.mapTo(dialog, QPoint(widget.width(), 0)).x()

    for page in every_page(dialog):
        labels = [w for w in dialog.findChildren(QLabel) if w.isVisibleTo(dialog) and w.text()]
        assert labels, page.objectName()
        cut = [w.text() for w in labels
               if (not w.wordWrap() and w.sizeHint().width() > w.width())
               or right_edge(w) > dialog.width()]
        assert cut == [], page.objectName()
        buttons = [w for w in dialog.findChildren(QAbstractButton) if w.isVisibleTo(dialog)]
        squeezed = [w.text() for w in buttons if w.text() and (
            w.sizeHint().width() > w.width() or right_edge(w) > dialog.width())]
        assert squeezed == [], page.objectName()


def test_installed_rows_are_tall_enough_for_their_whole_reason(make_window, qtbot, no_gpu):
    from PySide6.QtCore import QRect, Qt

    dialog = make_window().studio.models_controller.open_models_dialog()
    dialog.tabs.setCurrentWidget(dialog.installed_page)
    tree = dialog.installed
    tree.expandAll()
    qtbot.wait(10)
    metrics = tree.fontMetrics()
    width = tree.columnWidth(1)
    checked = 0
    for item in tree_items(tree):
        text = item.text(1)
        assert item.toolTip(1) == text  # the full text, whatever the width
        needed = metrics.boundingRect(QRect(0, 0, width - 8, 100_000),
                                      Qt.TextFlag.TextWordWrap, text).height()
        rect = tree.visualItemRect(item)
        if rect.isValid() and needed > metrics.height():  # a reason over several lines
            assert rect.height() >= needed, text
            checked += 1
    assert checked > 0  # some reasons do wrap: the check above ran


# ------------------------------------------------------------------------------ engine sentences
def _catalogs(root: Path):
    for gpu, trt, ort in ((None, None, True), (None, None, False), (H200, None, True),
                          (H200, "11.0.0.1", True), (H200, TENSORRT, True),
                          (RTX_3070, TENSORRT, True), (H200, TENSORRT, False)):
        yield Catalog(root, gpu=gpu, tensorrt_version=trt, onnxruntime_available=ort)


def _roots(base: Path) -> list[Path]:
    """An empty models folder, one with another card's engines, one with JIT SAME-L engines
    and one with a damaged ONNX graph: each makes the catalog say something else."""
    empty = base / "empty"
    other_arch = base / "other"
    (other_arch / "sm_80" / "sa3-sm-sfx").mkdir(parents=True)
    (other_arch / "sm_80" / "sa3-sm-sfx" / "dit_fp16.trt").write_bytes(b"x")
    jit = base / "jit"
    for sub, name in (("t5gemma", "t5gemma_fp16mixed.trt"), ("t5gemma", "tokenizer.json"),
                      ("sa3-m", "dit_fp16.trt"), ("same-l", "dec_dynamic_triton_swa.trt")):
        (jit / "sm_90" / sub).mkdir(parents=True, exist_ok=True)
        (jit / "sm_90" / sub / name).write_bytes(b"x")
    broken = base / "broken"
    for sub, name in (("t5gemma", "t5gemma_fp16.onnx"), ("t5gemma", "tokenizer.json"),
                      ("sa3-sm-sfx", "dit_fp16.onnx"),
                      ("same-s", "dec_bf16_chunkable_limiter.onnx")):
        (broken / "onnx" / sub).mkdir(parents=True, exist_ok=True)
        (broken / "onnx" / sub / name).write_bytes(b"not a protobuf")
    return [empty, other_arch, jit, broken]


def engine_sentences(base: Path) -> set[str]:
    """Every reason, note and refusal the catalog gives for impossible combinations, and the
    other engine sentences that name commands (builder, inventory, downloads, requests)."""
    from engines.models import build_plan, inventory
    from engines.models.download_errors import TOKEN_HINT
    from engines.request import GenerationRequest, validate_request

    found: set[str] = set()
    combos = itertools.product(MODEL_SETS, (None, "same-s", "same-l", "demo"),
                               (None, "fp16", "fp32", "fp8"), ("auto", "tensorrt", "onnxruntime"),
                               (False, True), (None, "fp8", "legacy"))
    combos = list(combos)
    for root in _roots(base):
        for catalog in _catalogs(root):
            for model, decoder, precision, backend, encoder, tier in combos:
                try:
                    answer = catalog.resolve(model, decoder, precision, backend, encoder, tier)
                except StudioError as exc:
                    found.add(exc.args[0])
                    continue
                found.update(n for n in (answer.reason, *answer.notes) if n)
        for sets, precision in ((["demo"], "fp32"), (["medium"], "fp16"), (["sm-sfx"], "fp8")):
            try:
                build_plan.plan_builds(root, sets, "sm_90", precision)
            except StudioError as exc:
                found.add(exc.args[0])
    found.update(inventory.tensorrt_fit_lines([], None))
    found.add(join("Accept the licence at https://huggingface.co/x and give a token (",
                   TOKEN_HINT, " or HF_TOKEN)."))
    for request in (GenerationRequest(prompt="x", model="demo", init_noise_level=0.5),
                    GenerationRequest(prompt="x", model="demo", inpaint_spans=[(0.5, 1.0)]),
                    GenerationRequest(prompt="x", model="demo", decoder="same-s")):
        try:
            validate_request(request, 380.0)
        except StudioError as exc:
            found.add(exc.args[0])
    return found


@pytest.fixture(scope="module")
def sentences(tmp_path_factory) -> list[str]:
    found = engine_sentences(tmp_path_factory.mktemp("models"))
    return sorted(s for s in found if isinstance(s, Advice))


def test_the_engines_give_remedies_so_the_wording_has_work(sentences):
    named = {flag for flag in CONTROLS if any(flag in say(s) for s in sentences)}
    assert {"--backend", "--decoder", "--precision", "models download", "--init-audio"} <= named
    assert len(sentences) >= 20
    # in no front end's words, the engine writes no flag
    assert [s for s in sentences if FLAG.search(str(s)) or "python main.py" in s] == []


def test_every_engine_sentence_reaches_the_window_without_flags(sentences):
    from app.common.remedy_words import for_window

    for sentence in sentences:
        shown, cli = for_window(sentence), say(sentence)
        assert not FLAG.search(shown), (sentence, shown)
        assert "python main.py" not in shown, (sentence, shown)
        for flag, control in CONTROLS.items():
            if flag in cli:
                assert control in shown, (flag, cli, shown)


def test_the_notifier_rewords_every_engine_sentence(qapp, sentences):
    from app.common.notifier import Notifier

    notifier = Notifier()
    emitted: list[str] = []
    notifier.shown.connect(lambda text, _ms: emitted.append(text))
    for sentence in sentences:
        notifier.error(sentence)
        notifier.failed("Could not generate", StudioError(sentence))
    notifier.notices(sentences[:3])
    assert len(emitted) == 2 * len(sentences) + 1
    assert [t for t in [*emitted, *notifier.history] if FLAG.search(t)] == []
    said = notifier.failed("x", StudioError(Advice("use {0}.", Remedy.value("backend",
                                                                           "tensorrt"))))
    # what a dialog shows is the same sentence
    assert said == "use TensorRT engines in Backend" + UNDER + "."


BACKEND, DECODER = Remedy.value("backend", "tensorrt"), Remedy.value("decoder", "same-s")


@pytest.mark.parametrize(("engine", "window"), [
    (Advice("The demo runs on ONNX Runtime only; choose {0} (or auto).",
            Remedy.value("backend", "onnxruntime")),
     "The demo runs on ONNX Runtime only; choose ONNX graphs in Backend" + UNDER + " (or auto)."),
    (Advice("use {0} or {1}.", BACKEND, DECODER),
     "use TensorRT engines in Backend" + UNDER + " or SAME-S in Decoder."),
    (Advice("choose {0}, or {1}.", Remedy.value("precision", "fp16", "fp32"), BACKEND),
     "choose fp16 or fp32 in Precision, or TensorRT engines in Backend" + UNDER + "."),
    (Advice("choose {0} or leave it unset.", Remedy.value("precision", "fp32")),
     "choose fp32 in Precision or leave it unset."),
    (Advice("leave {0} unset.", Remedy.setting("decoder")), "leave Decoder unset."),
    (Advice("raise {0} above 1 to use it.", Remedy.setting("cfg")), "raise CFG above 1 to use it."),
    (Advice("pass {0}.", Remedy.file("init_audio")),
     "pass init audio (File > Open init audio...)."),
    (Advice("download it with {0}.", Remedy.command("models download", "sm-sfx",
                                                    backend="onnxruntime")),
     "download it with Download under Advanced options in Models > Manage models... "
     "(Stable Audio 3 Small SFX, ONNX graphs)."),
    ("x--y and -- alone stay", "x--y and -- alone stay"),
])
def test_sentences_are_worded_to_name_the_control(engine, window):
    from app.common.remedy_words import for_window

    assert for_window(engine) == window


def test_in_the_models_window_a_remedy_never_points_at_that_window():
    from app.common.remedy_words import MODELS, for_window

    shown = for_window(Advice("use {0}, or get it with {1}.", BACKEND,
                              Remedy.command("models download", "medium")), MODELS)
    assert shown == ("use TensorRT engines in Backend (under Advanced options), or get it with "
                     "Download under Advanced options (Stable Audio 3 Medium, TensorRT engines).")
