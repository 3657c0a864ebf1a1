"""Engine tests' shared fixtures (the team server and database are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def local(tmp_path: Path):
    """A local library of this test's own and engine files for its takes (team tests publish
    from it): (ClipLibrary, EngineFiles), the library closed afterwards."""
    from engines.store.library import ClipLibrary
    from tests.team_support import engine_files

    library = ClipLibrary(tmp_path / "library")
    yield library, engine_files(tmp_path / "engines")
    library.close()
