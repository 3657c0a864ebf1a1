"""The bundle's entry script (PyInstaller runs this as its __main__): main.main(), the same
entry as `python main.py` and the `sa3-studio` console script.

multiprocessing.freeze_support() comes first: `batch --jobs N` starts its workers with the
spawn method, which in a frozen app re-runs this executable and must be routed to the worker,
not to main().

$SA3_STUDIO_OPEN_PROBE=1 turns on packaging/open_probe.py (bundled beside this script): the
window opens, one line of JSON says when and whether the theme and icons loaded, and the
process ends. packaging/measure_bundle.py and CI use it; a user never sets it.
"""

import multiprocessing
import os
import sys


def run() -> int:
    multiprocessing.freeze_support()
    if os.environ.get("SA3_STUDIO_OPEN_PROBE"):
        import open_probe

        open_probe.install()
    from main import main

    return main()


if __name__ == "__main__":
    sys.exit(run())
