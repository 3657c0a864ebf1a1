"""The team library in the window (app.team), against a real PostgreSQL (the server the engine
tests start, tests.team_support): Settings > Team library... tests and keeps the line, Publish
to team library from the session and from the Library's selection, the Team source lists,
searches, finds similar takes and drags out a checked copy, another designer's take appears
within a second, and a server that goes away is said once while publishes wait and go when it
is back. What reached the server is read with a connection of the test's own."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from PySide6.QtCore import QItemSelectionModel
from PySide6.QtWidgets import QDialogButtonBox

from engines.delivery.labels import DESIGNER_SETTING
from engines.paths import data_dir
from engines.settings import read_settings, update_settings
from engines.store.library import ClipLibrary
from engines.team.connection import TEAM_ENV, TEAM_SETTING, parse_line
from engines.team.outbox import Outbox
from engines.team.provisioning import TeamSetup
from engines.team.service import TeamLibrary
from tests.gui_support import child
from tests.hostile_support import sha256_of
from tests.team_support import (
    PortForward,
    SharedServer,
    add_take,
    engine_files,
    require_postgres,
    with_port,
)
from tests.widget_texts import FLAG

require_postgres()

UNREACHABLE = "cannot be reached"


@pytest.fixture
def open_window(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A window of its own data folder, with `line` kept in its settings and "alice" as the
    designer of Settings > Labels."""
    monkeypatch.setenv("SA3_STUDIO_HOME", str(tmp_path / "home"))
    monkeypatch.delenv(TEAM_ENV, raising=False)
    built = []

    def make(line: str = ""):
        from app.shell.studio import build_main_window

        update_settings(data_dir(), {TEAM_SETTING: line, DESIGNER_SETTING: "alice"})
        win = build_main_window(start_worker=False)
        qtbot.addWidget(win)
        built.append(win)
        return win

    yield make
    for win in built:
        win.studio.shutdown()


def _keep(win, tmp_path: Path, *prompts: str, kind: str = "noise") -> list[int]:
    """Local takes kept in the window's library, listed in its Library tab."""
    files = engine_files(tmp_path / "engines")
    ids = [add_take(win.studio.library, files, prompt, n + 1, kind).id
           for n, prompt in enumerate(prompts)]
    win.studio.library_controller.refresh_library()
    return ids


def _server_takes(team_server: SharedServer, setup: TeamSetup) -> list[tuple]:
    with psycopg.connect(team_server.admin(setup)) as conn:
        return conn.execute("SELECT id, prompt, designer FROM takes ORDER BY id").fetchall()


def _team_rows(win) -> list[str]:
    return [entry.prompt for entry in win.team_panel.model.entries]


def _said(win, words: str) -> list[str]:
    return [line for line in win.studio.notifier.history if words in line]


def _select_library_rows(win, ids: list[int]) -> None:
    panel = win.library_panel
    panel.view.clearSelection()
    rows = QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows
    for row, record in enumerate(panel.model.records):
        if record.id in ids:
            panel.view.selectionModel().select(panel.model.index(row, 0), rows)


def _waiting() -> int:
    """Takes in the window's outbox, read with an outbox of the test's own."""
    outbox = Outbox(data_dir() / "team")
    try:
        return outbox.count()
    finally:
        outbox.close()


def test_settings_test_the_line_in_one_sentence_and_keep_it(qtbot, open_window, team_db):
    win = open_window()
    win.library_sources.show_team()
    assert "Settings > Team library..." in child(win, "teamStateLabel").text()
    child(win, "teamSettingsAction").trigger()
    dialog = child(win, "teamSettingsDialog")
    assert "alice" in child(dialog, "teamDesignerLabel").text()
    edit, result = child(dialog, "teamConnectionEdit"), child(dialog, "teamTestResultLabel")

    def test(line: str) -> str:
        edit.setText(line)
        result.clear()
        child(dialog, "teamTestButton").click()
        qtbot.waitUntil(lambda: result.text() not in ("", "Connecting..."), timeout=15000)
        return result.text()

    said = test("mysql://somewhere/else")
    assert "is not a team connection line" in said and "Settings > Team library..." in said
    assert not FLAG.search(said) and said.count(". ") == 0 and "\n" not in said
    said = test(team_db.publisher_line)
    assert said.startswith("Connected to the team library at") and "may publish" in said
    assert "holds 0 take(s)" in said and "is reachable" in said and "alice" in said
    said = test(team_db.reader_line)
    assert "may only browse" in said
    refused = team_db.publisher_line.replace(urlsplit(team_db.publisher_line).password,
                                             "wrong")
    said = test(refused)
    assert "refused the login" in said and "Settings > Team library..." in said

    save = child(dialog, "teamSettingsButtons").button(QDialogButtonBox.StandardButton.Save)
    edit.setText("not a line")
    save.click()
    assert dialog.isVisible() and "is not a team connection line" in result.text()
    assert read_settings(data_dir())[TEAM_SETTING] == ""  # nothing kept
    edit.setText(team_db.publisher_line)
    save.click()
    assert not dialog.isVisible()
    assert read_settings(data_dir())[TEAM_SETTING] == team_db.publisher_line
    assert _said(win, "Team library set:") and "publishing as 'alice'" in \
        _said(win, "Team library set:")[-1]
    qtbot.waitUntil(lambda: child(win, "teamCountLabel").text() == "0 team take(s)",
                    timeout=15000)
    assert not child(win, "teamStateLabel").isVisibleTo(win)


def test_publish_from_the_session_and_the_library_then_browse_search_and_drag(
        qtbot, open_window, team_server, team_db, tmp_path):
    win = open_window(team_db.publisher_line)
    rain, hum = _keep(win, tmp_path, "rain on a tin roof", "low engine hum")
    win.studio.library.update(rain, tags=["Weather"])
    win.studio.library.update(hum, rating=4)
    # The session's take: Take > Publish to team library.
    assert win.studio.library_controller.load_from_library(rain) is not None
    child(win, "publishTeamAction").trigger()
    bar = child(win, "teamPublishProgress")
    assert not bar.isHidden()  # shown while it runs
    qtbot.waitUntil(lambda: bool(_said(win, "Published 1 take(s)")), timeout=20000)
    assert bar.isHidden()
    assert [(p, d) for _, p, d in _server_takes(team_server, team_db)] == [
        ("rain on a tin roof", "alice")]
    # The Library's selection: both; the one published already is not a second entry.
    _select_library_rows(win, [rain, hum])
    child(win, "publishTeamButton").click()
    qtbot.waitUntil(lambda: bool(_said(win, "Published 2 take(s) to the team library (1 new)")),
                    timeout=20000)
    server = _server_takes(team_server, team_db)
    assert sorted(p for _, p, _ in server) == ["low engine hum", "rain on a tin roof"]

    # The Team source lists them, newest first; text search narrows it.
    win.library_sources.show_team()
    qtbot.waitUntil(lambda: _team_rows(win) == ["low engine hum", "rain on a tin roof"],
                    timeout=10000)
    child(win, "teamSearchEdit").setText("rain")
    qtbot.waitUntil(lambda: _team_rows(win) == ["rain on a tin roof"], timeout=10000)
    child(win, "teamSearchEdit").clear()
    child(win, "teamTagsEdit").setText(" WEATHER ")
    qtbot.waitUntil(lambda: _team_rows(win) == ["rain on a tin roof"], timeout=10000)
    child(win, "teamTagsEdit").clear()
    child(win, "teamRatingFilter").setValue(4)
    qtbot.waitUntil(lambda: _team_rows(win) == ["low engine hum"], timeout=10000)
    child(win, "teamRatingFilter").setValue(0)
    models = child(win, "teamModelFilter")
    models.setCurrentIndex(models.findData("imported"))
    qtbot.waitUntil(lambda: _team_rows(win) == [], timeout=10000)
    models.setCurrentIndex(models.findData(win.studio.library.get(rain).model))
    qtbot.waitUntil(lambda: len(_team_rows(win)) == 2, timeout=10000)
    # Find similar: the other take (a take is not listed as like itself).
    view = child(win, "teamView")
    view.selectRow(_team_rows(win).index("rain on a tin roof"))
    child(win, "teamSimilarButton").click()
    qtbot.waitUntil(lambda: _team_rows(win) == ["low engine hum"], timeout=10000)
    assert "rain on a tin roof" in child(win, "teamLikeLabel").text()
    child(win, "teamShowAllButton").click()
    qtbot.waitUntil(lambda: len(_team_rows(win)) == 2, timeout=10000)

    # Drag: a selected row is fetched ahead into the data folder; the drag hands out that file,
    # byte for byte the one the store keeps, under the name the delivery layer gave it.
    row = _team_rows(win).index("low engine hum")
    entry = win.team_panel.model.entry(row)
    view.selectRow(row)
    dragging = win.studio.team_controller.dragging
    qtbot.waitUntil(lambda: dragging.ready(entry.id), timeout=10000)
    mime = win.team_panel.model.mimeData([win.team_panel.model.index(row, 0)])
    [path] = [Path(url.toLocalFile()) for url in mime.urls()]
    with TeamLibrary(parse_line(team_db.publisher_line), "test", tmp_path / "o") as team:
        audio = next(f for f in team.entry(entry.id).files if f.role == "take")
    assert path.name == audio.name and sha256_of(path) == audio.sha256
    assert path.is_relative_to(data_dir() / "team" / "files")
    assert path.with_suffix(".json").is_file()  # its sidecar beside it


def test_another_designers_take_appears_within_a_second(qtbot, open_window, team_db, tmp_path):
    win = open_window(team_db.publisher_line)
    win.library_sources.show_team()
    watch = win.studio.team_controller.watch
    qtbot.waitUntil(lambda: watch.listening, timeout=15000)
    qtbot.waitUntil(lambda: child(win, "teamCountLabel").text() == "0 team take(s)",
                    timeout=10000)
    files = engine_files(tmp_path / "engines")
    delays = []
    with ClipLibrary(tmp_path / "bob-library") as bobs, \
            TeamLibrary(parse_line(team_db.publisher_line), "bob", tmp_path / "bob") as team:
        for n, prompt in enumerate(("glass shatter", "wooden creak")):
            take = add_take(bobs, files, prompt, 10 + n)
            team_id = team.publish(bobs, [take.id]).published[0][1]
            published = time.monotonic()
            qtbot.waitUntil(lambda i=team_id: i in [e.id for e in win.team_panel.model.entries],
                            timeout=1000)
            delays.append(time.monotonic() - published)
    print(f"\nanother designer's take in the window after: "
          f"{', '.join(f'{d * 1000:.0f} ms' for d in delays)}")
    assert _team_rows(win) == ["wooden creak", "glass shatter"]
    assert _said(win, "New in the team library: 'wooden creak' by bob")


def test_a_server_away_is_said_once_and_the_outbox_goes_when_it_is_back(
        qtbot, open_window, team_server, team_db, tmp_path):
    forward = PortForward(urlsplit(team_db.publisher_line).port)  # refuses until opened
    win = open_window(with_port(team_db.publisher_line, forward.port))
    win.studio.team_controller.publishing.timer.setInterval(200)
    [creak] = _keep(win, tmp_path, "door creak")
    _select_library_rows(win, [creak])
    child(win, "publishTeamButton").click()
    qtbot.waitUntil(lambda: not win.studio.team_controller.publishing.running, timeout=20000)
    qtbot.wait(1500)  # timer ticks and watcher retries meet the same closed port
    said = _said(win, UNREACHABLE)
    assert len(said) == 1, said
    assert "local library" in said[0] and "outbox" in said[0] and not FLAG.search(said[0])
    assert UNREACHABLE in child(win, "teamStateLabel").text()
    assert _waiting() == 1
    # The local library goes on as ever.
    child(win, "librarySearchEdit").setText("creak")
    qtbot.waitUntil(lambda: [r.id for r in win.library_panel.model.records] == [creak],
                    timeout=5000)
    assert _server_takes(team_server, team_db) == []

    forward.open()  # the server is back at the same address
    try:
        qtbot.waitUntil(lambda: len(_server_takes(team_server, team_db)) == 1, timeout=15000)
        qtbot.waitUntil(lambda: bool(_said(win, "Sent 1 take(s) that waited")), timeout=5000)
        assert [p for _, p, _ in _server_takes(team_server, team_db)] == ["door creak"]
        assert _waiting() == 0
        assert _said(win, "answers again") and len(_said(win, UNREACHABLE)) == 1
        win.library_sources.show_team()
        qtbot.waitUntil(lambda: _team_rows(win) == ["door creak"], timeout=10000)
        assert not child(win, "teamStateLabel").isVisibleTo(win)
    finally:
        forward.close()


def test_a_read_only_login_or_no_line_is_one_sentence_and_queues_nothing(
        qtbot, open_window, team_server, team_db, tmp_path):
    win = open_window()
    [thunder] = _keep(win, tmp_path, "thunder")
    _select_library_rows(win, [thunder])
    child(win, "publishTeamButton").click()
    assert "Settings > Team library..." in win.studio.notifier.history[-1]
    win.studio.team_controller.keep_line(team_db.reader_line)
    child(win, "publishTeamButton").click()
    qtbot.waitUntil(lambda: bool(_said(win, "may only read")), timeout=20000)
    said = _said(win, "may only read")[-1]
    assert "Settings > Team library..." in said and not FLAG.search(said)
    assert child(win, "teamPublishProgress").isHidden()
    assert _waiting() == 0 and _server_takes(team_server, team_db) == []


def test_closing_the_window_mid_publish_ends_the_team_threads(qtbot, open_window, team_db,
                                                               tmp_path):
    win = open_window(team_db.publisher_line)
    ids = _keep(win, tmp_path, *(f"step {n}" for n in range(6)))
    team = win.studio.team_controller
    qtbot.waitUntil(lambda: team.watch.listening, timeout=15000)
    _select_library_rows(win, ids)
    child(win, "publishTeamButton").click()
    assert team.thread.running and team.watch.running
    win.close()
    assert not team.thread.running and not team.watch.running
