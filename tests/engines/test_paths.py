"""engines.paths: the data folder layout and the user-facing logging rules; main.py's help."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from engines import paths


def test_data_dir_follows_env_and_subfolders_are_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "nested" / "home"
    monkeypatch.setenv(paths.HOME_ENV, str(home))
    assert paths.data_dir() == home
    for make, name in [
        (paths.models_dir, "models"),
        (paths.library_dir, "library"),
        (paths.logs_dir, "logs"),
        (paths.cache_dir, "cache"),
    ]:
        assert make() == home / name
        assert (home / name).is_dir()


def test_tracebacks_go_to_the_log_file_not_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(paths.HOME_ENV, str(tmp_path))
    log = paths.setup_logging("sa3-studio.test")
    try:
        try:
            raise ValueError("inner detail")
        except ValueError:
            log.exception("Could not read clip.wav; pick another file.")
        log.info("info stays in the file")
    finally:
        root = logging.getLogger()
        for handler in list(paths._installed):
            root.removeHandler(handler)
            handler.close()
        paths._installed.clear()

    stderr = capsys.readouterr().err
    assert "Could not read clip.wav; pick another file." in stderr
    assert "Traceback" not in stderr and "info stays" not in stderr
    logged = (tmp_path / "logs" / paths.LOG_FILE_NAME).read_text(encoding="utf-8")
    assert "Traceback" in logged and "inner detail" in logged and "info stays" in logged


def test_main_help_lists_generate_and_window(capsys: pytest.CaptureFixture[str]) -> None:
    from main import main

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "generate" in out and "window" in out
