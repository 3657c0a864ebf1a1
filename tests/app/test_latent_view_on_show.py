"""The Latent tab builds its plot when first shown or given latents (it is not on screen when
the window opens): what a designer sees there must not depend on that order."""

from __future__ import annotations

import numpy as np
import pytest

from engines.constants import LATENT_CHANNELS, SAMPLE_RATE, SAMPLES_PER_LATENT


def _steps(count: int, length: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.standard_normal((count, LATENT_CHANNELS, length)).astype(np.float32)


def test_latents_given_before_the_tab_opens_are_shown_when_it_opens(qtbot):
    from app.widgets.latent_view import LatentView

    view = LatentView()
    qtbot.addWidget(view)
    steps = _steps(3, 40)
    view.set_latents(steps)  # a take arrives while another tab is in front
    assert view.step_text() == "Step 3 of 3"
    view.set_step(1)  # and the step is chosen before the tab opens
    assert view.step_text() == "Step 2 of 3"
    view.set_step(2)
    view.resize(600, 260)
    view.show()
    qtbot.waitExposed(view)
    assert view.step_text() == "Step 3 of 3"
    assert np.array_equal(view.image(), steps[-1])
    shown = view.findChild(object, "latentPlot").getPlotItem()
    (_x0, x1), (y0, y1) = shown.getViewBox().viewRange()
    assert x1 == pytest.approx(40 * SAMPLES_PER_LATENT / SAMPLE_RATE, rel=0.05)
    assert (y0, y1) == pytest.approx((0.0, LATENT_CHANNELS), abs=1.0)
    view.set_step(0)
    assert np.array_equal(view.image(), steps[0])


def test_a_cleared_view_opens_on_empty_axes_and_keeps_later_latents(qtbot):
    from app.widgets.latent_view import EMPTY_TEXT, LatentView

    view = LatentView()
    qtbot.addWidget(view)
    view.set_latents(_steps(2, 20))
    view.clear()  # the take was deleted before anyone opened the tab
    view.resize(600, 260)
    view.show()
    qtbot.waitExposed(view)
    assert view.step_text() == EMPTY_TEXT and view.step_count == 0
    plot = view.findChild(object, "latentPlot").getPlotItem()
    assert plot.getViewBox().viewRange()[1] == pytest.approx([0.0, LATENT_CHANNELS])
    view.set_latents(_steps(4, 20))
    assert view.step_text() == "Step 4 of 4"
