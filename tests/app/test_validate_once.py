"""Generate in the window checks each take's request once: the controller makes the checked
request, the GPU job and the generator run it as it is (issue 33: the controller validated and
threw the result away, the generator validated again, the catalog normalised the tier again)."""

from __future__ import annotations

from tests.app.test_gui import WAIT_MS, generate
from tests.app.test_tiers_gui import choose
from tests.gui_support import child
from tests.validation_counts import count_calls


def test_generate_and_reroll_check_the_panel_once_each(qtbot, window, monkeypatch):
    choose(child(window, "codecTierCombo"), "coarse")
    calls = count_calls(monkeypatch)
    generate(qtbot, window, "laser", seconds=0.5, seed=100, variations=3)
    takes = list(window.studio.session.takes.values())
    assert [t.seed for t in takes] == [100, 101, 102]
    assert {t.result.request.codec_tier for t in takes} == {"coarse"}
    # Variations differ only in their seed: the panel is checked once for all three (before:
    # once by the controller, then again per take by the generator, the tier 7 times).
    assert calls == {"validate_request": 1, "normalize_tier": 1}
    child(window, "rerollButton").click()
    qtbot.waitUntil(lambda: child(window, "takesList").count() == 4
                    and not window.studio.gpu.running, timeout=WAIT_MS)
    assert calls == {"validate_request": 2, "normalize_tier": 2}
