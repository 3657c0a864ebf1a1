"""Live audition with adapters (issue 35): moving an adapter's strength slider, or switching it
off, plays a render at the new strength with the seed locked, the newest value winning as it
does for typing; the sound follows the strength."""

from __future__ import annotations

import numpy as np

from tests.app.test_adapters_panel import BRIGHT, add_adapters, demo_adapter
from tests.app.test_live_window import assert_playing, live_window, wait_heard, wait_played
from tests.gui_support import child

__all__ = ["live_window"]  # the fixture, shared


def strengths(request) -> list[float]:
    return [choice.effective_strength for choice in request.adapters]


def test_sliding_a_strength_plays_the_new_strength_with_the_seed_locked(qtbot, live_window):
    win = live_window
    add_adapters(win, demo_adapter(BRIGHT))
    child(win, "liveToggle").click()
    wait_heard(qtbot, win, 1)
    live = win.studio.live_controller
    first = live.current
    seed = first.result.seed
    assert strengths(first.result.request) == [1.0]
    slider = child(win, "adapterStrength_0")
    for tick in (18, 14, 10, 6):  # a drag, faster than the knob debounce: one change
        slider.setValue(tick)
    render = wait_played(qtbot, win, lambda r: strengths(r) == [0.3])
    assert render.result.seed == seed
    assert_playing(win, render)
    assert not np.array_equal(render.result.pcm, first.result.pcm)  # heard: the sound moved
    assert live.scheduler.stats().submitted == 2  # the first render, then the drag's last
    child(win, "adapterEnabled_0").setChecked(False)
    off = wait_played(qtbot, win, lambda r: strengths(r) == [0.0])
    child(win, "adapterRemove_0").click()
    plain = wait_played(qtbot, win, lambda r: not r.adapters)
    np.testing.assert_array_equal(off.result.pcm, plain.result.pcm)  # off is no adapter
    assert plain.result.seed == seed
