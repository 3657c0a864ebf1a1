"""Start the app on a virtual screen, generate a take and save a screenshot of the window.

    xvfb-run -a -s "-screen 0 1400x900x24" python docs/make_screenshot.py docs/screenshot.png
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshot.png")
    os.environ.setdefault("SA3_STUDIO_HOME", tempfile.mkdtemp(prefix="sa3-shot-"))
    from PySide6.QtWidgets import QApplication

    from app import build_main_window

    app = QApplication.instance() or QApplication([])
    window = build_main_window()
    window.resize(1360, 860)
    window.show()
    ctl = window.studio
    window.findChild(object, "autoplayCheck").setChecked(False)
    window.findChild(object, "promptEdit").setPlainText("coin pickup, bright, short")
    window.findChild(object, "secondsSpin").setValue(2.0)
    window.findChild(object, "variationsSpin").setValue(3)
    window.findChild(object, "seedEdit").setText("42")
    window.findChild(object, "seedLockCheck").setChecked(True)
    window.findChild(object, "generateButton").click()
    deadline = time.monotonic() + 120
    while ctl.gpu.running and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)
    window.tabs.setCurrentIndex(0)
    for _ in range(50):
        app.processEvents()
        time.sleep(0.01)
    window.grab().save(str(out))
    print(f"saved {out} ({len(ctl.session.takes)} takes)")
    ctl.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
