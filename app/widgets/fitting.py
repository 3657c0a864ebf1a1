"""Widgets that keep their contents whole in a narrow column (the window's minimum size)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import QComboBox, QScrollArea, QStyle, QStyleOptionComboBox, QStylePainter


class FullNameCombo(QComboBox):
    """A combo narrower than its longest item (a model's full name would set the width of the
    whole column); the open list shows every item whole and the tooltip the whole current one."""

    def __init__(self, name: str, chars: int) -> None:
        super().__init__()
        self.setObjectName(name)
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(chars)
        self.currentTextChanged.connect(self.setToolTip)

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt override
        # A cut name ends in "..." rather than mid-letter, so the cut shows.
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        field = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                            QStyle.SubControl.SC_ComboBoxEditField, self)
        room = field.width() - (option.iconSize.width() + 4 if not option.currentIcon.isNull()
                                else 0)
        option.currentText = option.fontMetrics.elidedText(option.currentText,
                                                           Qt.TextElideMode.ElideRight, room)
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def event(self, event) -> bool:
        # The controllers refill the combos with signals blocked, which changes the current
        # text without currentTextChanged: read it again whenever the tooltip is asked for.
        if event.type() == QEvent.Type.ToolTip:
            self.setToolTip(self.currentText())
        return super().event(event)


class SettingsScroll(QScrollArea):
    """Scrolls the generation settings vertically, never horizontally: it is never narrower
    than the settings it holds, so the splitter cannot squeeze them."""

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        inner = self.widget().minimumSizeHint().width() if self.widget() else 0
        bar = self.verticalScrollBar().sizeHint().width()
        return QSize(inner + bar + 2 * self.frameWidth(), super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        hint = super().sizeHint()
        return QSize(max(hint.width(), self.minimumSizeHint().width()), hint.height())
