"""How the Library page's inspector is arranged beside the table: the waveform on top (always
in view: it is what a designer clicks to hear), the facts and the edits under it in a column
that scrolls on a short screen (1366x768), and the actions at the bottom, always in view."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLayout, QScrollArea, QVBoxLayout, QWidget

from app.widgets.named import named

INSPECTOR_WIDTH = 300  # what the splitter gives it first; the table gets the rest
INSPECTOR_MIN_WIDTH = 240  # its words wrap, its buttons keep their text


def inspector_frame(preview: QWidget, facts: QWidget, details: QLayout,
                    actions: QLayout) -> QFrame:
    inspector = named(QFrame(), "libraryInspector")
    inspector.setMinimumWidth(INSPECTOR_MIN_WIDTH)
    column = QVBoxLayout(inspector)
    column.setContentsMargins(6, 0, 0, 0)
    column.addWidget(preview)
    body = QWidget()
    inner = QVBoxLayout(body)
    inner.setContentsMargins(0, 0, 4, 0)
    inner.addWidget(facts)
    inner.addLayout(details, stretch=1)
    scroll = named(QScrollArea(), "libraryInspectorScroll")
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroll.setWidget(body)
    column.addWidget(scroll, stretch=1)
    column.addLayout(actions)
    return inspector
