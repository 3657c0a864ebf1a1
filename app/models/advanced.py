"""The Models dialog's advanced options, folded away under one toggle: download any set in any
precision and kind of file, build engines on this card, the self-test, the Hugging Face token
and extra models folders. Layout only; the dialog connects the buttons.

Every field has a label beside it (a form row), and every sentence word-wraps.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engines.catalog import MODEL_SETS
from engines.catalog.tables import PRECISIONS, PUBLISHED_SETS
from engines.models.hub_files import DOWNLOAD_SETS

# Smallest first; each builds the text encoder with it.
BUILD_SETS = tuple(reversed(PUBLISHED_SETS))
PRECISION_WORDS = {"fp16": "fp16 (the default)", "fp32": "fp32 (reference, twice the size)",
                   "fp8": "fp8 (fastest, newer cards only)"}
PRECISION_HELP = ("fp16 is the usual choice. fp32 is the full-precision reference. fp8 is the "
                  "fastest and needs a graphics card with FP8 support (RTX 40 series, H100 or "
                  "newer).")
FILE_KINDS = (("TensorRT engines", "trt"), ("ONNX graphs", "onnx"))
FILE_KIND_HELP = ("TensorRT engines are ready to run, but only on the graphics card "
                  "architecture they were made for. ONNX graphs run anywhere with ONNX Runtime "
                  "(slowly, on the processor), and engines can be built from them on this card.")
TEXT_ENCODER_WORDS = "Text encoder (every set needs it)"


def set_words(key: str) -> str:
    """A download set in plain words: "t5gemma" is the text encoder every set shares."""
    if key == "t5gemma":
        return TEXT_ENCODER_WORDS
    return MODEL_SETS[key].label.replace("Stable Audio 3 ", "")


def wrapped(text: str = "", name: str | None = None) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    if name:
        label.setObjectName(name)
    return label


def _named(widget, name: str):
    widget.setObjectName(name)
    return widget


class AdvancedSection(QWidget):
    """A toggle button and, under it, the advanced options (hidden until it is pressed)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.toggle = _named(QToolButton(), "advancedToggle")
        self.toggle.setText("Advanced options")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setToolTip("Choose exactly what to download, build engines, store a "
                               "Hugging Face token or add a models folder.")
        layout.addWidget(self.toggle)
        self.body = _named(QWidget(), "advancedBody")
        body = QVBoxLayout(self.body)
        body.setContentsMargins(12, 0, 0, 0)
        body.addWidget(self._download_box())
        body.addWidget(self._build_box())
        body.addWidget(self._token_box())
        body.addWidget(self._folders_box())
        layout.addWidget(self.body)
        self.body.setVisible(False)
        self.toggle.toggled.connect(self.set_expanded)

    def set_expanded(self, on: bool) -> None:
        self.toggle.setChecked(on)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.body.setVisible(on)

    def selection(self) -> dict | str:
        """What to download ({"sets", "precisions", "fmt", "arch"}), or the sentence saying
        what is missing."""
        sets = [key for key, check in self.set_checks.items() if check.isChecked()]
        precisions = [key for key, check in self.precision_checks.items() if check.isChecked()]
        fmt = self.file_kind.currentData()
        arch = self.arch_edit.text().strip()
        if not sets:
            return "Choose at least one model set to download."
        if not precisions:
            return "Choose at least one precision."
        if fmt == "trt" and not (arch.startswith("sm_") and arch[3:].isdigit()):
            return ("No NVIDIA graphics card was found, so its architecture is unknown: type "
                    "the target card's architecture (for example sm_90), or choose ONNX "
                    "graphs in Backend.")
        return {"sets": sets, "precisions": precisions, "fmt": fmt, "arch": arch}

    def _download_box(self) -> QGroupBox:
        box = QGroupBox("Download exactly what you choose")
        form = QFormLayout(box)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        sets = QGridLayout()
        self.set_checks: dict[str, QCheckBox] = {}
        for index, key in enumerate(DOWNLOAD_SETS):
            check = _named(QCheckBox(set_words(key)), f"downloadSet_{key}")
            check.setToolTip(MODEL_SETS[key].description if key in MODEL_SETS else
                             "Turns the prompt into what the model reads; downloaded with "
                             "every set anyway.")
            sets.addWidget(check, index // 2, index % 2)
            self.set_checks[key] = check
        form.addRow("Model sets", sets)
        precisions = QHBoxLayout()
        self.precision_checks: dict[str, QCheckBox] = {}
        for key in PRECISIONS:
            check = _named(QCheckBox(PRECISION_WORDS[key]), f"downloadPrecision_{key}")
            check.setChecked(key == "fp16")
            check.setToolTip(PRECISION_HELP)
            precisions.addWidget(check)
            self.precision_checks[key] = check
        precisions.addStretch(1)
        form.addRow("Precision", precisions)
        form.addRow("", wrapped(PRECISION_HELP, "precisionHelp"))
        self.file_kind = _named(QComboBox(), "downloadBackendCombo")
        for text, key in FILE_KINDS:
            self.file_kind.addItem(text, key)
        self.file_kind.setToolTip(FILE_KIND_HELP)
        form.addRow("Backend", self.file_kind)
        form.addRow("", wrapped(FILE_KIND_HELP, "backendHelp"))
        self.arch_edit = _named(QLineEdit(), "downloadArchEdit")
        self.arch_edit.setPlaceholderText("for example sm_90")
        self.arch_edit.setToolTip("Filled in for this graphics card. TensorRT engines only run "
                                  "on the architecture they were made for.")
        form.addRow("Graphics card architecture", self.arch_edit)
        buttons = QHBoxLayout()
        self.sizes_button = _named(QPushButton("Show files and sizes"), "showSizesButton")
        self.download_button = _named(QPushButton("Download"), "downloadButton")
        self.download_button.setEnabled(False)
        buttons.addWidget(self.sizes_button)
        buttons.addWidget(self.download_button)
        buttons.addStretch(1)
        form.addRow(buttons)
        self.plan_label = wrapped("", "planLabel")
        self.plan_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.plan_label)
        return box

    def _build_box(self) -> QGroupBox:
        box = QGroupBox("Build engines on this graphics card")
        form = QFormLayout(box)
        form.addRow(wrapped("Builds TensorRT engines from downloaded ONNX graphs, for cards "
                            "without ready-made engines. The self-test builds a tiny model "
                            "and checks that this card generates correctly."))
        self.build_set = _named(QComboBox(), "buildSetCombo")
        for key in BUILD_SETS:
            self.build_set.addItem(set_words(key), key)
        form.addRow("Model set", self.build_set)
        self.build_precision = _named(QComboBox(), "buildPrecisionCombo")
        for key in PRECISIONS:
            self.build_precision.addItem(PRECISION_WORDS[key], key)
        form.addRow("Precision", self.build_precision)
        buttons = QHBoxLayout()
        self.build_button = _named(QPushButton("Build engines"), "buildButton")
        self.selftest_button = _named(QPushButton("Self-test this graphics card"),
                                      "selfTestButton")
        buttons.addWidget(self.build_button)
        buttons.addWidget(self.selftest_button)
        buttons.addStretch(1)
        form.addRow(buttons)
        return box

    def _token_box(self) -> QGroupBox:
        box = QGroupBox("Hugging Face token")
        form = QFormLayout(box)
        form.addRow(wrapped("Only needed when Hugging Face asks for one. It is stored in the "
                            "system keyring, not in a file."))
        self.token_edit = _named(QLineEdit(), "tokenEdit")
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("paste it from huggingface.co/settings/tokens")
        self.token_button = _named(QPushButton("Store token"), "storeTokenButton")
        row = QHBoxLayout()
        row.addWidget(self.token_edit, stretch=1)
        row.addWidget(self.token_button)
        form.addRow("Token", row)
        return box

    def _folders_box(self) -> QGroupBox:
        box = QGroupBox("Extra models folders")
        form = QFormLayout(box)
        form.addRow(wrapped("Models are also looked for in these folders, for example an "
                            "existing Stable Audio 3 install."))
        self.folders_list = _named(QListWidget(), "extraFoldersList")
        self.folders_list.setMaximumHeight(60)
        self.add_folder_button = _named(QPushButton("Add models folder..."), "addFolderButton")
        row = QHBoxLayout()
        row.addWidget(self.folders_list, stretch=1)
        row.addWidget(self.add_folder_button, alignment=Qt.AlignmentFlag.AlignTop)
        form.addRow("Folders", row)
        return box
