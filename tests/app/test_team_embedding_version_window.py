"""Find similar in the window's Team source, with a team take whose sound embedding an older
release made: that take is not listed, and the status bar says one were not compared and
names the command that brings it up to date (in the window's words, not a flag)."""

from __future__ import annotations

import psycopg

from tests.app.test_team_window import open_window  # noqa: F401, F811 - the fixture
from tests.gui_support import child
from tests.team_support import add_take, engine_files, require_postgres, team_library

require_postgres()


def test_find_similar_says_the_takes_it_did_not_compare(qtbot, open_window, team_server,  # noqa: F811
                                                         team_db, tmp_path):
    win = open_window(team_db.publisher_line)
    files = engine_files(tmp_path / "engines")
    local = [add_take(win.studio.library, files, prompt, n + 1, kind).id for n, (prompt, kind)
             in enumerate((("rain", "noise"), ("hum", "tone:110"), ("drone", "tone:120")))]
    with team_library(team_db, "alice", tmp_path / "outbox") as team:
        ids = [row[1] for row in team.publish(win.studio.library, local).published]
    with psycopg.connect(team_server.admin(team_db), autocommit=True) as conn:
        conn.execute("UPDATE takes SET embedding_version = 1 WHERE id = %s", (ids[2],))

    win.library_sources.show_team()
    rows = lambda: [entry.prompt for entry in win.team_panel.model.entries]  # noqa: E731
    qtbot.waitUntil(lambda: len(rows()) == 3, timeout=10000)
    child(win, "teamView").selectRow(rows().index("rain"))
    child(win, "teamSimilarButton").click()
    qtbot.waitUntil(lambda: rows() == ["hum"], timeout=10000)
    said = [line for line in win.studio.notifier.history if "not compared" in line]
    assert len(said) == 1 and said[0].startswith("1 team take was not compared")
    assert "team reembed command" in said[0] and "--" not in said[0]
    assert "python main.py" not in said[0]
