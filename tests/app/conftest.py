"""Window tests: each gets a data folder of its own, a returning user's (so the first-run Models
page does not open over the window), and the real window built on it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.browser_support import open_window


@pytest.fixture
def home(home: Path) -> Path:
    """The test's own data folder, of a returning user."""
    from app.models.controller import FIRST_RUN_KEY
    from engines.settings import update_settings

    update_settings(home, {FIRST_RUN_KEY: True})
    return home


@pytest.fixture
def window(qtbot, home: Path, models: Path, request: pytest.FixtureRequest):
    """The real window on the test's own data folder, autoplay off; shut down afterwards. The
    session's demo set is copied in (building it takes seconds), unless the test is marked
    `no_demo_set` (it means a data folder where the demo set is built on first use)."""
    if request.node.get_closest_marker("no_demo_set") is None:
        shutil.copytree(models, home / "models", dirs_exist_ok=True)
    win = open_window(qtbot)
    yield win
    win.studio.shutdown()
