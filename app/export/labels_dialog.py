"""Settings > Labels and UCS list...: the names every delivered file carries (designer,
library, UCS creator and source IDs) and the user's own UCS category list. Layout and the
import button's file dialog only; app.export.labels_controller reads and keeps the values.

Object names: labelsDialog, designerNameEdit, libraryNameEdit, ucsCreatorEdit, ucsSourceEdit,
ucsListLabel, importUcsButton.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

HELP = ("These names go into every file you drag, save or export: the Broadcast Wave, iXML "
        "and Vorbis fields that Soundminer, BaseHead, REAPER and game engines read. Import "
        "your UCS category list (its CSV export) to have category IDs checked and the "
        "category and subcategory filled in.")


def _edit(name: str, text: str, hint: str) -> QLineEdit:
    edit = QLineEdit(text)
    edit.setObjectName(name)
    edit.setPlaceholderText(hint)
    edit.setMaxLength(256)
    return edit


class LabelsDialog(QDialog):
    def __init__(self, values: dict[str, str], ucs_status: str,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("labelsDialog")
        self.setWindowTitle("Labels and UCS list")
        layout = QVBoxLayout(self)
        note = QLabel(HELP)
        note.setWordWrap(True)
        layout.addWidget(note)
        form = QFormLayout()
        self.designer_edit = _edit("designerNameEdit", values.get("designer_name", ""),
                                   "who designed the sounds")
        self.library_edit = _edit("libraryNameEdit", values.get("library_name", ""),
                                  "the sound library or project they belong to")
        self.creator_edit = _edit("ucsCreatorEdit", values.get("ucs_creator_id", ""),
                                  "UCS creator ID, e.g. your initials")
        self.source_edit = _edit("ucsSourceEdit", values.get("ucs_source_id", ""),
                                 "UCS source ID, e.g. the project")
        form.addRow("Designer", self.designer_edit)
        form.addRow("Library", self.library_edit)
        form.addRow("UCS creator ID", self.creator_edit)
        form.addRow("UCS source ID", self.source_edit)
        self.ucs_label = QLabel(ucs_status)
        self.ucs_label.setObjectName("ucsListLabel")
        self.ucs_label.setWordWrap(True)
        self.import_button = QPushButton("Import UCS list...")
        self.import_button.setObjectName("importUcsButton")
        form.addRow("UCS list", self.ucs_label)
        form.addRow("", self.import_button)
        layout.addLayout(form)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def values(self) -> dict[str, str]:
        return {"designer_name": self.designer_edit.text().strip(),
                "library_name": self.library_edit.text().strip(),
                "ucs_creator_id": self.creator_edit.text().strip(),
                "ucs_source_id": self.source_edit.text().strip()}

    def choose_ucs_file(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self, "Import UCS list", "",
                                              "UCS list (*.csv *.txt);;All files (*)")
        return path
