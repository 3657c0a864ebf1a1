"""`team similar` and `team reembed` as a designer runs them, against a real PostgreSQL: takes
whose sound embeddings an older release made are left out of `similar` and one line on stderr
says how many (nothing said when none are), `reembed` brings them up to date with progress on
stderr and what it did on stdout, and a read-only login is refused with exit 2."""

from __future__ import annotations

import json

import psycopg

from engines.paths import library_dir
from engines.similarity.embedding import EMBEDDING_VERSION
from engines.store.library import ClipLibrary
from main import main
from tests.team_support import add_take, engine_files, require_postgres, rows

require_postgres()


def test_similar_says_what_it_left_out_and_reembed_brings_it_back(
        team_server, home, tmp_path, capsys, monkeypatch):
    setup = team_server.database()
    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.publisher_line)
    with ClipLibrary(library_dir()) as library:
        files = engine_files(tmp_path / "engines")
        local = [add_take(library, files, prompt, n, kind).id for n, (prompt, kind) in
                 enumerate((("low hum", "tone:110"), ("low drone", "tone:120"),
                            ("hiss", "noise")))]
    assert main(["team", "publish", *map(str, local), "--as", "ann", "--json"]) == 0
    ids = [p["team_id"] for p in json.loads(capsys.readouterr().out)["published"]]

    def similar() -> tuple[list[str], str]:
        assert main(["team", "similar", str(ids[0]), "--json"]) == 0
        done = capsys.readouterr()
        return [e["prompt"] for e in json.loads(done.out)], done.err

    assert similar() == (["low drone", "hiss"], "")  # every take compared: nothing said
    admin = team_server.admin(setup)
    with psycopg.connect(admin, autocommit=True) as conn:  # as an older release left them
        conn.execute("UPDATE takes SET embedding_version = 1 WHERE id = ANY(%s)", (ids[1:],))
    found, err = similar()
    assert found == []
    assert err.count("\n") == 1 and "2 team takes were not compared" in err
    assert "`python main.py team reembed`" in err and "Traceback" not in err

    assert main(["team", "reembed", "--as", "bob"]) == 0
    done = capsys.readouterr()
    assert done.out == f"2 of 2 team takes' sound embeddings made again (recipe " \
                       f"{EMBEDDING_VERSION}).\n"
    assert "2/2" in done.err
    assert rows(admin, "SELECT DISTINCT embedding_version FROM takes") == [(EMBEDDING_VERSION,)]
    assert similar() == (["low drone", "hiss"], "")
    assert main(["team", "reembed"]) == 0
    assert "nothing to do" in capsys.readouterr().out

    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.reader_line)
    assert main(["team", "reembed"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
