"""Exploration only (reviewer of issue 31); removed after."""
from pathlib import Path
from tests.app.test_gui import child, generate
from tests.app.test_library_labels_gui import select_seed
from tests.browser_support import show_at

SHOTS = Path("/tmp/r31shots")


def test_explore(qtbot, window, tmp_path):
    generate(qtbot, window, "footstep on gravel", seconds=0.5, seed=5, variations=2)
    child(window, "centreTabs").setCurrentIndex(1)
    qtbot.wait(200)
    select_seed(window, 6)
    for name, text in {"labelCategoryEdit": "FOOTGrvl", "labelFxNameEdit": "Gravel Step",
                       "labelCreatorEdit": "JD", "labelSourceEdit": "SA3"}.items():
        child(window, name).setText(text)
    for size in ((1212, 628), (1920, 1080)):
        show_at(qtbot, window, size)
        qtbot.wait(200)
        window.grab().save(str(SHOTS / f"library_labels_{size[0]}x{size[1]}.png"))
        child(window, "libraryInspector").grab().save(str(SHOTS / f"inspector_{size[0]}.png"))
