"""Settings > Team library...: the connection line a designer pastes (what `team init` printed
on the team's server), the designer name takes are published under (Settings > Labels), and
Test connection, which answers in one sentence. Layout only: app.team.controller tests and
keeps the line (in the window's settings, settings.json in the data folder).

The line is shown with its password masked (postgresql://designer:••••@host:5432/db), so a
screenshot or a shared screen shows where it points but not the secret, until
teamShowLineButton is pressed.

Object names: teamSettingsDialog, teamConnectionEdit, teamShowLineButton, teamDesignerLabel,
teamTestButton, teamTestResultLabel, teamSettingsButtons.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.widgets.masked_line_edit import MaskedLineEdit
from app.widgets.named import named

HELP = ("Share takes, ratings and searches with your sound team: paste the connection line "
        "your team's server printed (it starts with postgresql://). Leave it empty to work on "
        "the local library only. Takes you publish carry the designer name below.")
MAX_LINE_CHARS = 2000


class TeamSettingsDialog(QDialog):
    def __init__(self, line: str, designer: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("teamSettingsDialog")
        self.setWindowTitle("Team library")
        self.setMinimumWidth(520)
        layout = QVBoxLayout(self)
        note = QLabel(HELP)
        note.setWordWrap(True)
        layout.addWidget(note)
        form = QFormLayout()
        # the line holds the publisher's password: only that is masked on screen (a
        # screenshot, a shared screen) until Show is pressed
        self.connection_edit = named(MaskedLineEdit(line), "teamConnectionEdit")
        self.connection_edit.setPlaceholderText("postgresql://sa3_publisher:...@server:5432/"
                                                "sa3_team")
        self.connection_edit.setMaxLength(MAX_LINE_CHARS)
        self.connection_edit.setClearButtonEnabled(True)
        self.show_button = named(QPushButton("Show"), "teamShowLineButton")
        self.show_button.setCheckable(True)
        self.show_button.setToolTip("Show the connection line's password")
        self.show_button.toggled.connect(self._show_line)
        line_row = QHBoxLayout()
        line_row.addWidget(self.connection_edit, 1)
        line_row.addWidget(self.show_button)
        self.designer_label = named(QLabel(designer), "teamDesignerLabel")
        self.designer_label.setWordWrap(True)
        self.test_button = named(QPushButton("Test connection"), "teamTestButton")
        self.result_label = named(QLabel(""), "teamTestResultLabel")
        self.result_label.setWordWrap(True)
        form.addRow("Connection line", line_row)
        form.addRow("Designer", self.designer_label)
        form.addRow("", self.test_button)
        form.addRow("", self.result_label)
        layout.addLayout(form)
        self.buttons = named(QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                              | QDialogButtonBox.StandardButton.Cancel),
                             "teamSettingsButtons")
        self.buttons.rejected.connect(self.reject)  # Save: the controller checks, then accepts
        layout.addWidget(self.buttons)

    def _show_line(self, shown: bool) -> None:
        self.connection_edit.set_revealed(shown)
        self.show_button.setText("Hide" if shown else "Show")

    def line(self) -> str:
        return self.connection_edit.line().strip()

    def show_result(self, text: str) -> None:
        self.result_label.setText(text)
