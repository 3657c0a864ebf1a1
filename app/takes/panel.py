"""The Session tab: the takes of this session and what can be done with the selected one, as
buttons and as the takes list's right-click menu. Layout only: app.takes.controller (choosing,
renaming, removing), app.export.controller (Save As, Copy, drag-out), app.generate.inpaint (Use
as init), app.takes.tier_compare (Compare tiers: the menu item here, the button in the
generation panel's Advanced group) and app.library.controller (Find similar, connected by
app.shell.studio) give it behaviour.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.common.theme import icon
from app.widgets.facts_view import FactsView
from app.widgets.named import named
from app.widgets.takes_list import TakesListWidget


class SessionPanel(QWidget):
    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        hint = QLabel("Takes (Up/Down to compare, drag out to export)")
        hint.setWordWrap(True)  # the column may be narrower than the sentence
        layout.addWidget(hint)
        self.takes_list = named(TakesListWidget(), "takesList")
        layout.addWidget(self.takes_list, stretch=1)
        # the selected take's facts, as the Library page's inspector words them
        # (app.library.inspector_session fills it)
        self.facts = named(FactsView(), "sessionFacts")
        layout.addWidget(self.facts)
        grid = QGridLayout()
        self.use_init_button = named(QPushButton("Use as init"), "useAsInitButton",
                                     icon("init"))
        self.use_init_button.setToolTip("Use the take as init audio for the next generation")
        self.export_button = named(QPushButton("Save As..."), "exportButton", icon("save"))
        self.export_button.setToolTip("Save the take to a file (Ctrl+S)")
        self.copy_button = named(QPushButton("Copy"), "copyButton", icon("copy"))
        self.copy_button.setToolTip("Copy the take's file to the clipboard")
        self.delete_button = named(QPushButton("Delete"), "deleteTakeButton", icon("delete"))
        self.delete_button.setToolTip("Remove the take from the session")
        grid.addWidget(self.use_init_button, 0, 0)
        grid.addWidget(self.export_button, 0, 1)
        grid.addWidget(self.copy_button, 1, 0)
        grid.addWidget(self.delete_button, 1, 1)
        layout.addLayout(grid)
        self._build_context_menu()

    def _build_context_menu(self) -> None:
        """The takes list's right-click menu: what the buttons do, and Find similar."""
        takes = self.takes_list

        def action(text: str, name: str, icon_name: str) -> QAction:
            made = QAction(icon(icon_name), text, takes)
            made.setObjectName(name)
            takes.addAction(made)
            return made

        self.find_similar_action = action("Find similar in the library", "takesFindSimilarAction",
                                          "list")
        self.rename_action = action("Rename", "takesRenameAction", "rename")
        self.use_init_action = action("Use as init", "takesUseInitAction", "init")
        self.save_action = action("Save As...", "takesSaveAction", "save")
        self.compare_tiers_action = action("Compare tiers", "takesCompareTiersAction", "models")
        self.delete_action = action("Delete", "takesDeleteAction", "delete")
        takes.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
