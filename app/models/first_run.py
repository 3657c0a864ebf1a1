"""The Models dialog's "Get models" page: this computer in plain words, what to get for it,
one button that downloads and sets it up, and the advanced options folded away below.
Layout only; the dialog decides what the button does."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.models.advanced import AdvancedSection, wrapped
from engines.models.recommend import Recommendation

GET_TEXT = "Download and set up"


class FirstRunPage(QScrollArea):
    """Scrolls, so the advanced options fit when expanded at the dialog's usual size."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("getModelsPage")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        # sentences wrap to the dialog's width: never a sideways scroll to read one
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        layout = QVBoxLayout(inner)
        self.intro = wrapped("Stable Audio 3 comes in model sets that are downloaded once. "
                             "The demo model works without any download, so you can try "
                             "everything first.", "firstRunIntro")
        layout.addWidget(self.intro)
        computer = QGroupBox("This computer")
        box = QVBoxLayout(computer)
        self.machine_label = wrapped("", "firstRunMachine")
        box.addWidget(self.machine_label)
        layout.addWidget(computer)
        advice = QGroupBox("What to get")
        box = QVBoxLayout(advice)
        self.advice_label = wrapped("", "recommendationLabel")
        self.caveat_label = wrapped("", "recommendationCaveat")
        self.step_label = wrapped("", "setupStepLabel")
        box.addWidget(self.advice_label)
        box.addWidget(self.caveat_label)
        buttons = QHBoxLayout()
        self.get_button = QPushButton(GET_TEXT)
        self.get_button.setObjectName("getRecommendedButton")
        self.get_button.setDefault(True)
        buttons.addWidget(self.get_button)
        buttons.addStretch(1)
        box.addLayout(buttons)
        box.addWidget(self.step_label)
        layout.addWidget(advice)
        self.advanced = AdvancedSection()
        layout.addWidget(self.advanced)
        layout.addStretch(1)
        self.setWidget(inner)

    def show_recommendation(self, rec: Recommendation, ready: bool,
                            blocker: str | None) -> None:
        """`ready`: the recommended set already runs here; `blocker`: what must happen before
        it can (TensorRT to install), said before the user downloads gigabytes."""
        self.machine_label.setText(rec.machine)
        if ready:
            self.advice_label.setText(f"{rec.label} is installed and ready: choose it in "
                                      f"Model in the main window.")
        else:
            self.advice_label.setText(rec.advice)
        notes = [n for n in (rec.caveat, blocker) if n]
        self.caveat_label.setText(" ".join(notes))
        self.caveat_label.setVisible(bool(notes))
        size = f" ({rec.download_gb:.1f} GB)" if rec.download_gb else ""
        self.get_button.setText(f"{GET_TEXT}: {rec.label.replace('Stable Audio 3 ', '')}{size}")
        then = ("builds the engines on this card and runs the self-test" if rec.build_here
                else "runs the self-test" if rec.backend == "tensorrt"
                else "checks that ONNX Runtime can run it")
        self.get_button.setToolTip(f"Downloads {rec.label} (the size is shown as it starts), "
                                   f"then {then}. Cancel stops it at any time.")
        self.get_button.setEnabled(not ready)

    def say_step(self, text: str) -> None:
        self.step_label.setText(text)
