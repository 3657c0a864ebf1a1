"""A team connection line's password is never shown or kept in the clear (issue 34): not in
the Settings dialog until Show is pressed, not in the Team source's labels, the status bar or
an error sentence, not in the log file, not in the command line's output; the settings file
that keeps the line is private to its owner. One test per place a line can surface."""

from __future__ import annotations

import logging
import os
import socket
import stat
import sys

import pytest
from PySide6.QtWidgets import QApplication

from engines.team.connection import TEAM_ENV, TEAM_SETTING
from tests.gui_support import child

SECRET = "Sekr1tPa55w0rd"


def closed_port() -> int:
    """A local port nothing listens on (a server that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def line(port: int = 5432) -> str:
    return f"postgresql://sa3_publisher:{SECRET}@127.0.0.1:{port}/sa3_team?connect_timeout=2"


@pytest.fixture
def team_window(qtbot, home, monkeypatch):
    """The real window with a line to a server that is down kept in its settings."""
    from engines.settings import update_settings
    from tests.browser_support import open_window

    monkeypatch.delenv(TEAM_ENV, raising=False)
    update_settings(home, {TEAM_SETTING: line(closed_port())})
    win = open_window(qtbot)
    yield win
    win.studio.shutdown()


def everything_shown(win) -> list[str]:
    from tests.widget_texts import widget_texts

    QApplication.processEvents()
    return [text for _where, text in widget_texts(win)] + \
        [win.statusBar().currentMessage(), *win.studio.notifier.history]


def test_the_settings_dialog_masks_the_line_until_show(qtbot, team_window):
    team_window.studio.team_controller.open_settings()
    dialog = child(team_window, "teamSettingsDialog")
    edit, show = child(dialog, "teamConnectionEdit"), child(dialog, "teamShowLineButton")
    assert dialog.line() == team_window.studio.team_controller.line  # kept whole
    assert SECRET not in edit.displayText()
    show.click()
    assert SECRET in edit.displayText()  # shown on request
    show.click()
    assert SECRET not in edit.displayText()
    child(dialog, "teamTestButton").click()  # the server is down: one sentence, no secret
    result = child(dialog, "teamTestResultLabel")
    qtbot.waitUntil(lambda: result.text() not in ("", "Connecting..."), timeout=20_000)
    assert SECRET not in result.text() and result.text()


def test_the_team_source_and_status_bar_never_show_it(qtbot, team_window):
    team_window.library_sources.show_team()
    state = child(team_window, "teamStateLabel")
    qtbot.waitUntil(lambda: bool(state.text()), timeout=20_000)
    assert not any(SECRET in text for text in everything_shown(team_window))


def test_a_malformed_line_is_refused_masked(qtbot, home, monkeypatch):
    from engines.settings import update_settings
    from tests.browser_support import open_window

    monkeypatch.delenv(TEAM_ENV, raising=False)
    update_settings(home, {TEAM_SETTING: f"postgresql://u:{SECRET}@host:notaport/db x=="})
    win = open_window(qtbot)
    try:
        win.library_sources.show_team()
        assert child(win, "teamStateLabel").text()
        assert not any(SECRET in text for text in everything_shown(win))
    finally:
        win.studio.shutdown()


def test_a_sentence_quoting_a_line_is_masked_in_the_status_bar(qtbot, window):
    notifier = window.studio.notifier
    notifier.status(f"Could not connect with {line()}.")
    assert SECRET not in window.statusBar().currentMessage()
    said = notifier.failed("Could not publish", ValueError(f"bad dsn password={SECRET} x"))
    assert SECRET not in said and SECRET not in window.statusBar().currentMessage()
    assert not any(SECRET in text for text in notifier.history)


def test_the_log_file_never_holds_it(home):
    from app.shell.secret_log import mask_secrets_in_log
    from engines import paths

    logger = paths.setup_logging("sa3-studio.test-secrets")
    mask_secrets_in_log()
    try:
        raise ConnectionError(f"could not reach {line()}")
    except ConnectionError:
        logger.exception("publishing with %s failed", line())
    logging.getLogger("engines.team").warning("password=%s in a keyword line", SECRET)
    for handler in logging.getLogger().handlers:
        handler.flush()
    log_file = paths.log_file()
    text = log_file.read_text(encoding="utf-8")
    assert "publishing with postgresql://sa3_publisher:****@" in text
    assert "ConnectionError: could not reach postgresql://sa3_publisher:****@" in text
    assert SECRET not in text
    assert stat.S_IMODE(os.stat(log_file).st_mode) == 0o600


def test_the_command_line_never_prints_it(capsys, home, monkeypatch):
    from main import main

    monkeypatch.setenv(TEAM_ENV, line(closed_port()))
    code = main(["team", "list"])
    out = capsys.readouterr()
    assert code != 0 and out.err.strip()  # one sentence: the server cannot be reached
    assert SECRET not in out.out + out.err


def test_the_line_kept_from_the_window_is_private(qtbot, team_window, home):
    from PySide6.QtWidgets import QDialogButtonBox

    team_window.studio.team_controller.open_settings()
    dialog = child(team_window, "teamSettingsDialog")
    child(dialog, "teamConnectionEdit").setText(line(closed_port()))
    child(dialog, "teamSettingsButtons").button(QDialogButtonBox.StandardButton.Save).click()
    settings = home / "settings.json"
    assert SECRET in settings.read_text(encoding="utf-8")  # kept, for the next run
    if sys.platform != "win32":
        assert stat.S_IMODE(os.stat(settings).st_mode) == 0o600
