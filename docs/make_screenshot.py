"""Start the app on a virtual screen, generate a take and save a screenshot of the window.

    xvfb-run -a -s "-screen 0 1400x900x24" python docs/make_screenshot.py docs/screenshot.png
    xvfb-run -a -s "-screen 0 1400x900x24" python docs/make_screenshot.py \\
        docs/finish_panel.png --size 1280x720 --preset "Game SFX one-shot"
    xvfb-run -a -s "-screen 0 1920x1080x24" python docs/make_screenshot.py \\
        docs/window-1920x1080.png --size 1920x1080
    xvfb-run -a -s "-screen 0 1920x1080x24" python docs/make_screenshot.py \\
        docs/window-min.png --size min
    xvfb-run -a -s "-screen 0 1920x1080x24" python docs/make_screenshot.py \\
        docs/library-1920x1080.png --size 1920x1080 --page library \\
        --import-folder /usr/share/games/wesnoth/1.16/data/core/sounds
    xvfb-run -a -s "-screen 0 1366x768x24" python docs/make_screenshot.py \\
        docs/library-1366x768.png --size 1366x768 --page library \\
        --import-folder /usr/share/games/wesnoth/1.16/data/core/sounds

--size min takes the window at its minimum size (what it can be shrunk to). --preset
finishes the last take with that finishing preset (and shows it in the Finish panel's
loudness readout) before the picture is taken. --import-folder references a folder of sound
files in the library first (here Battle for Wesnoth's, from Debian's wesnoth-1.16-data) and
selects the first listed row, so the Library page's inspector shows it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _wait(app, done, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.01)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="docs/screenshot.png")
    parser.add_argument("--size", default="1360x860",
                        help="window size, WIDTHxHEIGHT, or min for the minimum size")
    parser.add_argument("--preset", help="finish the last take with this preset")
    parser.add_argument("--page", choices=("take", "library"), default="take",
                        help="the page shown in the main area")
    parser.add_argument("--import-folder", type=Path,
                        help="import this folder of sounds first and select the first row")
    args = parser.parse_args()
    out = Path(args.out)
    at_minimum = args.size.lower() == "min"
    width, height = (0, 0) if at_minimum else (int(v) for v in args.size.lower().split("x"))
    os.environ.setdefault("SA3_STUDIO_HOME", tempfile.mkdtemp(prefix="sa3-shot-"))
    from PySide6.QtCore import QSize
    from PySide6.QtWidgets import QApplication

    from app import build_main_window

    app = QApplication.instance() or QApplication([])
    window = build_main_window()
    window.resize(window.minimumSizeHint() if at_minimum else QSize(width, height))
    window.show()
    ctl = window.studio
    window.findChild(object, "autoplayCheck").setChecked(False)
    window.findChild(object, "promptEdit").setPlainText("coin pickup, bright, short")
    window.findChild(object, "secondsSpin").setValue(2.0)
    window.findChild(object, "variationsSpin").setValue(3)
    window.findChild(object, "seedEdit").setText("42")
    window.findChild(object, "seedLockCheck").setChecked(True)
    window.findChild(object, "generateButton").click()
    _wait(app, lambda: not ctl.gpu.running)
    if args.preset:
        finish = ctl.finish_controller
        finish.choose_preset(args.preset)
        take = ctl.session.current_take()
        _wait(app, lambda: take.finished is not None and not finish.loops.is_making(take))
    label = window.findChild(object, "loudnessLabel")
    _wait(app, lambda: "..." not in label.text(), 30)  # the loudness readout, measured off-thread
    window.side_tabs.setCurrentIndex(0)
    if args.import_folder is not None:
        from engines.sound_import import import_folders, make_sound_extras

        import_folders(ctl.library, [args.import_folder])
        make_sound_extras(ctl.library)  # thumbnails and embeddings, as the window's import
    if args.page == "library":
        window.show_library()
        _wait(app, lambda: False, 0.5)
        if args.import_folder is not None:
            ctl.library_controller.refresh_library()
            view = window.findChild(object, "libraryView")
            _wait(app, lambda: view.model().rowCount() > 0, 10)
            view.selectionModel().select(view.model().index(3, 0),
                                         view.selectionModel().SelectionFlag.ClearAndSelect
                                         | view.selectionModel().SelectionFlag.Rows)
            facts = window.findChild(object, "libraryFacts")
            _wait(app, lambda: "measuring" not in facts.text(), 20)
            _wait(app, lambda: False, 10)  # the waveform and thumbnails, drawn off-thread
    if at_minimum:  # the takes may have changed what the window can shrink to
        window.resize(window.minimumSizeHint())
    for _ in range(50):
        app.processEvents()
        time.sleep(0.01)
    window.grab().save(str(out))
    print(f"saved {out} ({len(ctl.session.takes)} takes, window {window.width()}x"
          f"{window.height()})")
    ctl.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
