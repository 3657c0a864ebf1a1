"""The Library tab's two sources: the local library (app.library.panel, as it is) and the team
library (app.team.panel), one shown at a time by a Local / Team toggle, with Publish to team
beside it for the local rows selected. Layout only: app.team.controller connects it.

Object names: librarySources, teamSourceToggle (a tab bar: 0 Local, 1 Team),
publishTeamButton.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QPushButton,
    QStackedWidget,
    QTabBar,
    QVBoxLayout,
    QWidget,
)

from app.team.panel import TeamPanel
from app.widgets.named import named

LOCAL, TEAM = 0, 1


class LibrarySources(QWidget):
    sourceChanged = Signal(bool)  # True: the Team source is shown

    def __init__(self, local_panel: QWidget, team_panel: TeamPanel) -> None:
        super().__init__()
        self.setObjectName("librarySources")
        self.local_panel = local_panel
        self.team_panel = team_panel
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.setContentsMargins(6, 6, 6, 0)
        self.toggle = named(QTabBar(), "teamSourceToggle")
        self.toggle.addTab("Local")
        self.toggle.addTab("Team")
        self.toggle.setTabToolTip(LOCAL, "The takes kept on this computer")
        self.toggle.setTabToolTip(TEAM, "The team library your team shares "
                                        "(Settings > Team library...)")
        self.toggle.setExpanding(False)
        self.toggle.setDrawBase(False)
        self.publish_button = named(QPushButton("Publish to team"), "publishTeamButton")
        self.publish_button.setToolTip("Publish the selected takes to the team library")
        row.addWidget(self.toggle)
        row.addStretch(1)
        row.addWidget(self.publish_button)
        layout.addLayout(row)
        self.stack = QStackedWidget()
        self.stack.addWidget(local_panel)
        self.stack.addWidget(team_panel)
        layout.addWidget(self.stack, stretch=1)
        self.toggle.currentChanged.connect(self._shown)

    def _shown(self, index: int) -> None:
        self.stack.setCurrentIndex(index)
        self.publish_button.setVisible(index == LOCAL)
        self.sourceChanged.emit(index == TEAM)

    def show_team(self, on: bool = True) -> None:
        self.toggle.setCurrentIndex(TEAM if on else LOCAL)

    def team_shown(self) -> bool:
        return self.toggle.currentIndex() == TEAM
