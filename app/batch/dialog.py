"""File > Render sound list...: the list, the output folder, the name template and whether the
takes are kept in the library. Layout and the two Browse buttons only; the batch controller
checks the values and runs the list.

Object names: renderListDialog, renderListPathEdit, renderListBrowseButton, renderListOutEdit,
renderListOutBrowseButton, renderListTemplateEdit, renderListLibraryCheck, renderListForceCheck.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engines.delivery.names import DEFAULT_TEMPLATE

LIST_FILTER = "Sound lists (*.csv *.json);;All files (*)"
HELP = ("One row per sound: name and prompt, and optionally seconds, variations, seed, "
        "negative_prompt, model, decoder, precision, steps, cfg, apg, init_audio, "
        "init_noise_level, inpaint, loop, loop_method, preset, category. Takes already made in "
        "the folder with the same parameters are skipped.")


def _named(widget, name: str):
    widget.setObjectName(name)
    return widget


class RenderListDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, *, list_path: str = "",
                 out_dir: str = "", template: str = DEFAULT_TEMPLATE) -> None:
        super().__init__(parent)
        self.setObjectName("renderListDialog")
        self.setWindowTitle("Render sound list")
        layout = QVBoxLayout(self)
        note = QLabel(HELP)
        note.setWordWrap(True)
        layout.addWidget(note)
        form = QFormLayout()
        self.list_edit = _named(QLineEdit(list_path), "renderListPathEdit")
        self.list_edit.setPlaceholderText("sounds.csv or sounds.json")
        browse_list = _named(QPushButton("Browse..."), "renderListBrowseButton")
        browse_list.clicked.connect(self.choose_list)
        form.addRow("Sound list", _row(self.list_edit, browse_list))
        self.out_edit = _named(QLineEdit(out_dir), "renderListOutEdit")
        self.out_edit.setPlaceholderText("folder for the takes and manifest.json")
        browse_out = _named(QPushButton("Browse..."), "renderListOutBrowseButton")
        browse_out.clicked.connect(self.choose_folder)
        form.addRow("Output folder", _row(self.out_edit, browse_out))
        self.template_edit = _named(QLineEdit(template or DEFAULT_TEMPLATE),
                                    "renderListTemplateEdit")
        self.template_edit.setToolTip("File names from {name} {prompt} {seed} {n:02} {preset} "
                                      "{date} {category}")
        form.addRow("File names", self.template_edit)
        self.library_check = _named(QCheckBox("Keep in library"), "renderListLibraryCheck")
        self.library_check.setChecked(True)
        form.addRow(self.library_check)
        self.force_check = _named(QCheckBox("Render the takes already made again"),
                                  "renderListForceCheck")
        form.addRow(self.force_check)
        layout.addLayout(form)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Render")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(560, self.sizeHint().height())

    def choose_list(self) -> None:
        start = self.list_edit.text().strip() or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "Sound list", start, LIST_FILTER)
        if path:
            self.list_edit.setText(path)
            if not self.out_edit.text().strip():  # beside the list, named after it
                chosen = Path(path)
                self.out_edit.setText(str(chosen.with_name(chosen.stem + "_takes")))

    def choose_folder(self) -> None:
        start = self.out_edit.text().strip() or str(Path.home())
        folder = QFileDialog.getExistingDirectory(self, "Output folder", start)
        if folder:
            self.out_edit.setText(folder)

    def values(self) -> tuple[str, str, str, bool, bool]:
        """(list, output folder, name template, keep in library, render again)."""
        return (self.list_edit.text().strip(), self.out_edit.text().strip(),
                self.template_edit.text().strip() or DEFAULT_TEMPLATE,
                self.library_check.isChecked(), self.force_check.isChecked())


def _row(edit: QLineEdit, button: QPushButton) -> QHBoxLayout:
    row = QHBoxLayout()
    row.addWidget(edit, 1)
    row.addWidget(button)
    return row
