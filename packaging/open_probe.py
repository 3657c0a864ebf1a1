"""Window-open probe for a bundle or an install: when the main window is first shown (and its
first frame painted), print one JSON line and end the process.

    SA3_STUDIO_OPEN_PROBE=1 dist/sa3-studio/sa3-studio        # the bundle (its entry script)
    python packaging/open_probe.py                          # whatever `main` imports here

The line holds `shown_at` (time.time() when the first frame was painted: the caller subtracts
its own start time, so interpreter start-up and imports count), the stylesheet's length, whether
the window icon renders (SVG through Qt's icon engine plugin), and where the resources were
found. The QApplication is made here first so the event filter sees the window; the app's own
launch code uses the instance it finds.
"""

from __future__ import annotations

import json
import os
import sys
import time


def install() -> None:
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])

    class FirstShow(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.done = False

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
            if not self.done and event.type() == QEvent.Type.Show and isinstance(
                    watched, QMainWindow):
                self.done = True
                QTimer.singleShot(0, lambda: report(watched))
            return False

    def report(window: QMainWindow) -> None:
        window.grab()  # lays out and paints one full frame, as the first one on screen
        shown_at = time.time()
        from engines.paths import resources_dir

        icon = window.windowIcon()
        print(json.dumps({
            "shown_at": shown_at,
            "stylesheet_chars": len(app.styleSheet()),
            "icon_renders": not icon.isNull() and not icon.pixmap(32, 32).isNull(),
            "resources": str(resources_dir()),
            "frozen": bool(getattr(sys, "frozen", False)),
        }), flush=True)
        os._exit(0)  # the measurement is done; closing down is not part of it

    probe = FirstShow()
    app.installEventFilter(probe)
    _kept.append(probe)  # an event filter Python let go of would be deleted


_kept: list[object] = []


if __name__ == "__main__":
    install()
    from main import main

    sys.exit(main([]))
