"""The placeholder main window, until the full GUI lands.

It shows where data lives and takes a prompt, but generating from the window is not wired up
yet; the status bar says so and points at the headless CLI, which works today.
"""

from __future__ import annotations

import logging
import sys

from PySide6.QtWidgets import (
    QApplication,
    QLabel,
    QMainWindow,
    QPlainTextEdit,
    QPushButton,
    QStatusBar,
    QVBoxLayout,
    QWidget,
)

from engines import paths

log = logging.getLogger(__name__)

WINDOW_TITLE = "SA3 Studio"
CLI_HINT = 'python main.py generate --prompt "coin pickup, bright" --out clip.wav'
NOT_WIRED_MESSAGE = (
    "Not wired up yet: generating here arrives with the GUI work. "
    'Headless works now: python main.py generate --prompt "..."'
)


def _data_dir_text() -> str:
    try:
        return f"Data folder: {paths.data_dir()}"
    except OSError as err:
        log.exception("Data folder unavailable")
        return f"Data folder unavailable ({err}); set {paths.HOME_ENV} to a writable folder."


def build_main_window() -> QMainWindow:
    """Build the main window without showing it or starting the event loop."""
    window = QMainWindow()
    window.setObjectName("mainWindow")
    window.setWindowTitle(WINDOW_TITLE)
    window.resize(820, 440)

    notice = QLabel(
        "Preview build: this window does not generate audio yet. "
        f"Use the headless CLI meanwhile:\n{CLI_HINT}"
    )
    notice.setObjectName("noticeLabel")
    notice.setWordWrap(True)

    data_dir_label = QLabel(_data_dir_text())
    data_dir_label.setObjectName("dataDirLabel")
    data_dir_label.setWordWrap(True)

    prompt_edit = QPlainTextEdit()
    prompt_edit.setObjectName("promptEdit")
    prompt_edit.setPlaceholderText("Describe a sound, e.g. coin pickup, bright")

    generate_button = QPushButton("Generate")
    generate_button.setObjectName("generateButton")

    central = QWidget()
    layout = QVBoxLayout(central)
    layout.addWidget(notice)
    layout.addWidget(data_dir_label)
    layout.addWidget(QLabel("Prompt"))
    layout.addWidget(prompt_edit, stretch=1)
    layout.addWidget(generate_button)
    window.setCentralWidget(central)

    status_bar = QStatusBar()
    status_bar.setObjectName("statusBar")
    window.setStatusBar(status_bar)

    generate_button.clicked.connect(lambda: status_bar.showMessage(NOT_WIRED_MESSAGE))
    return window


def run_gui(argv: list[str] | None = None) -> int:
    """Create the QApplication, show the main window and run the event loop."""
    paths.setup_logging("sa3-studio")
    args = sys.argv[1:] if argv is None else list(argv)
    program = sys.argv[0] if sys.argv and sys.argv[0] else "sa3-studio"
    qt_app = QApplication.instance() or QApplication([program, *args])
    qt_app.setApplicationName(WINDOW_TITLE)
    window = build_main_window()
    window.show()
    return qt_app.exec()
