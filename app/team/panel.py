"""The Team source of the Library tab: the team library's takes, searchable by text, tags,
the team's rating and model, and "more like this" (Find similar). Layout and the query the
widgets describe; app.team.controller fills it and makes its rows drag out.

Object names: teamPanel, teamStateLabel, teamSearchEdit, teamTagsEdit, teamRatingFilter,
teamModelFilter, teamView, teamLikeLabel, teamCountLabel, teamSimilarButton,
teamShowAllButton.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.team.table import TeamTableModel, TeamTableView
from app.widgets.named import named
from engines.team.entries import TeamEntry, TeamQuery

PAGE = 500  # team takes listed at once (newest first)
TYPING_PAUSE_MS = 250  # a search waits for a pause in typing: one query, not one per key


class TeamPanel(QWidget):
    searchChanged = Signal()  # a filter changed, after a pause in typing

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("teamPanel")
        layout = QVBoxLayout(self)
        self.state_label = named(QLabel(""), "teamStateLabel")
        self.state_label.setWordWrap(True)
        self.state_label.hide()
        layout.addWidget(self.state_label)
        self.search_edit = named(QLineEdit(), "teamSearchEdit")
        self.search_edit.setPlaceholderText("Search the team's names, prompts and tags")
        self.search_edit.setClearButtonEnabled(True)
        layout.addWidget(self.search_edit)
        filters = QGridLayout()
        self.tags_edit = named(QLineEdit(), "teamTagsEdit")
        self.tags_edit.setPlaceholderText("only these tags, comma separated")
        self.rating_filter = named(QSpinBox(), "teamRatingFilter")
        self.rating_filter.setRange(0, 5)
        self.rating_filter.setPrefix("Team rating >= ")
        self.model_filter = named(QComboBox(), "teamModelFilter")
        self.model_filter.addItem("Any model", None)
        filters.addWidget(self.tags_edit, 0, 0, 1, 2)
        filters.addWidget(self.rating_filter, 1, 0)
        filters.addWidget(self.model_filter, 1, 1)
        layout.addLayout(filters)
        self.like_label = named(QLabel(""), "teamLikeLabel")
        self.like_label.setWordWrap(True)
        self.like_label.hide()
        layout.addWidget(self.like_label)
        self.model = TeamTableModel()
        self.view = named(TeamTableView(), "teamView")
        self.view.setModel(self.model)
        self.view.fit_columns()
        layout.addWidget(self.view, stretch=1)
        self.count_label = named(QLabel(""), "teamCountLabel")
        layout.addWidget(self.count_label)
        buttons = QHBoxLayout()
        self.similar_button = named(QPushButton("Find similar"), "teamSimilarButton")
        self.similar_button.setToolTip("List the team takes that sound most like the selected "
                                       "one, nearest first")
        self.show_all_button = named(QPushButton("Show all"), "teamShowAllButton")
        self.show_all_button.setEnabled(False)
        buttons.addWidget(self.similar_button)
        buttons.addWidget(self.show_all_button)
        layout.addLayout(buttons)

        self._typing = QTimer(self, singleShot=True, interval=TYPING_PAUSE_MS)
        self._typing.timeout.connect(self.searchChanged)
        for edit in (self.search_edit, self.tags_edit):
            edit.textChanged.connect(lambda _text: self._typing.start())
        self.rating_filter.valueChanged.connect(lambda _value: self._typing.start())
        self.model_filter.currentIndexChanged.connect(lambda _index: self.searchChanged.emit())

    def set_models(self, keys: list[str]) -> None:
        for key in keys:
            self.model_filter.addItem(key, key)

    def query(self) -> TeamQuery:
        """What the filters ask for (engines.team.entries)."""
        tags = tuple(dict.fromkeys(" ".join(t.split()).lower()
                                   for t in self.tags_edit.text().split(",") if t.strip()))
        return TeamQuery(text=self.search_edit.text().strip(), tags=tags,
                         min_rating=float(self.rating_filter.value()),
                         model=self.model_filter.currentData(), limit=PAGE)

    def filtered(self) -> bool:
        """Whether any filter narrows the list (then only the server knows what matches)."""
        query = self.query()
        return bool(query.text or query.tags or query.min_rating or query.model)

    def show_state(self, text: str) -> None:
        """A sentence about the team library above the list (none: hidden)."""
        self.state_label.setText(text)
        self.state_label.setVisible(bool(text))

    def show_like(self, entry: TeamEntry | None) -> None:
        self.like_label.setText("" if entry is None else
                                f"Team takes that sound like '{entry.title()}', nearest first")
        self.like_label.setVisible(entry is not None)
        self.show_all_button.setEnabled(entry is not None)

    def selected_entries(self) -> list[TeamEntry]:
        rows = sorted({index.row() for index in self.view.selectionModel().selectedRows()})
        return [e for e in (self.model.entry(r) for r in rows) if e is not None]

    def current_entry(self) -> TeamEntry | None:
        selected = self.selected_entries()
        return selected[0] if selected else None
