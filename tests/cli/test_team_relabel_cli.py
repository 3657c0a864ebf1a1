"""Issue 31's finding through the command line: `library label ID --fx-name` on a take already
published, then `team publish ID`, and `team fetch` returns the new FX name (read back by
wavinfo); another designer publishing the same take with other labels keeps the entry and is
told whose labels it keeps, without failing."""

from __future__ import annotations

import json
from pathlib import Path

import wavinfo

from engines.paths import library_dir
from engines.store.library import ClipLibrary
from main import main
from tests.team_support import (
    add_take,
    engine_files,
    require_postgres,
)

require_postgres()


def _fx_name(folder: Path) -> str | None:
    (wav,) = folder.glob("*.wav")
    return wavinfo.WavInfoReader(str(wav)).ixml.raw_xml.getroot().findtext("USER/FXNAME")


def _publish(take_id: int, designer: str, capsys) -> tuple[dict, str]:
    capsys.readouterr()  # what `library label` printed
    assert main(["team", "publish", str(take_id), "--as", designer, "--json"]) == 0
    done = capsys.readouterr()
    return json.loads(done.out), done.err


def test_a_take_labelled_again_and_republished_is_fetched_with_its_new_fx_name(
        team_server, home, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SA3_STUDIO_TEAM", team_server.database().publisher_line)
    with ClipLibrary(library_dir()) as library:
        take = add_take(library, engine_files(tmp_path / "engines"), "footstep on gravel", 3)
    label = ["library", "label", str(take.id)]
    assert main([*label, "--category", "FOOTGrvl", "--fx-name", "Gravel Step"]) == 0
    report, _ = _publish(take.id, "ann", capsys)
    team_id = report["published"][0]["team_id"]

    assert main([*label, "--fx-name", "New Name"]) == 0
    report, err = _publish(take.id, "ann", capsys)
    assert report["published"] == [{"local_id": take.id, "team_id": team_id, "new": False,
                                     "relabelled": True}]
    assert report["notices"] == [] and "Traceback" not in err
    assert main(["team", "fetch", str(team_id), "--to", str(tmp_path / "ann")]) == 0
    assert _fx_name(tmp_path / "ann") == "New Name"

    # Another designer's labels for the same take: the entry keeps ann's, and one sentence
    # says so (exit 0: bob's rating, tags and notes went).
    assert main([*label, "--fx-name", "Bob Name"]) == 0
    report, err = _publish(take.id, "bob", capsys)
    assert report["published"][0]["relabelled"] is False
    (notice,) = report["notices"]
    assert "ann" in notice and "'New Name'" in notice and "'Bob Name'" in notice
    assert notice in " ".join(err.split())
    assert main(["team", "fetch", str(team_id), "--to", str(tmp_path / "bob")]) == 0
    assert _fx_name(tmp_path / "bob") == "New Name"
