"""UCS labels kept with takes (issue 31): a library made by the previous release opens and gets
the new columns without losing anything, relabelling never touches audio, and every way out
(library export, team publish and fetch) carries the stored labels, read back by wavinfo and
mutagen."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import mutagen.flac
import numpy as np
import pytest
import wavinfo

from engines.delivery.delivery_take import Labels
from engines.store.export_plan import ExportOptions
from engines.store.library import ClipLibrary
from engines.team.bundle import bundle_take
from engines.team.content_store import ContentStore
from engines.team.entries import TeamFile
from engines.team.fetching import fetch_files

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "library_v3"
NEW_COLUMNS = {"ucs_catid", "ucs_category", "ucs_subcategory", "ucs_fx_name", "ucs_creator",
               "ucs_source", "variation", "variations"}
GRAVEL = {"catid": "FOOTGrvl", "fx_name": "Gravel Step", "creator": "JD", "source": "SA3"}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def audio_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): sha(p) for folder in ("audio", "trash")
            for p in sorted((root / folder).iterdir())}


def rows_of(db: Path) -> dict[int, dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return {row["id"]: dict(row) for row in conn.execute("SELECT * FROM takes")}
    finally:
        conn.close()


@pytest.fixture
def old_library(tmp_path: Path) -> Path:
    """A copy of the library the previous release wrote (schema 3; see
    tests/fixtures/make_library_v3.py)."""
    root = tmp_path / "library"
    shutil.copytree(FIXTURE, root)
    return root


def user_fields(path: Path) -> dict[str, str]:
    """The iXML USER and ASWG fields of a WAV, as wavinfo reads them."""
    root = wavinfo.WavInfoReader(str(path)).ixml.raw_xml.getroot()
    return {"CATID": root.findtext("USER/CATID"), "FXNAME": root.findtext("USER/FXNAME"),
            "creatorId": root.findtext("ASWG/creatorId"),
            "sourceId": root.findtext("ASWG/sourceId"), "catId": root.findtext("ASWG/catId")}


def test_a_library_of_the_previous_release_opens_and_gets_the_new_columns(old_library: Path):
    before_rows = rows_of(old_library / "library.sqlite3")
    before_audio = audio_hashes(old_library)
    assert sqlite3.connect(old_library / "library.sqlite3").execute(
        "PRAGMA user_version").fetchone()[0] == 3
    with ClipLibrary(old_library) as lib:
        assert lib.migrated_from == 3 and lib.notice is None
        columns = {row[1] for row in lib._conn.execute("PRAGMA table_info(takes)")}
        assert NEW_COLUMNS <= columns
        assert lib._conn.execute("PRAGMA user_version").fetchone()[0] == 5
        after_rows = {row["id"]: dict(row) for row in lib._conn.execute("SELECT * FROM takes")}
        # Every old column of every take, deleted and imported ones included, as it was.
        assert set(after_rows) == set(before_rows) == {1, 2, 3, 4, 5}
        for take_id, old in before_rows.items():
            assert {k: after_rows[take_id][k] for k in old} == old
            assert lib.get(take_id).labels == dict.fromkeys(GRAVEL | {"category": "",
                                                                       "subcategory": ""}, "")
        first = lib.get(1)
        assert (first.rating, first.favourite, first.tags, first.notes) == (
            4, True, ["FOOTGrvl", "gravel"], "the best of the three")
        assert lib.get(2).finishing["chain"]["preset"] == "Game SFX one-shot"
        assert lib.get(4).deleted and lib.get(5).is_imported
        for take_id in (1, 2, 3, 5):
            assert lib.audio_problem(take_id) is None  # the audio checks out against its hash
        # Their variation numbers come from their family: three seeds in a row, one prompt
        # (take 3 was renamed, which does not take it out of its set).
        assert [lib.variation_number(i) for i in (1, 2, 3, 5)] == [(1, 3), (2, 3), (3, 3),
                                                                  (1, 1)]
        assert lib.add_imported(np.zeros((10, 2), np.float32), "/x.wav").id == 6  # ids go on
    assert {k: v for k, v in audio_hashes(old_library).items() if k in before_audio} == \
        before_audio
    backup = sqlite3.connect(old_library / "library.sqlite3.v3-backup")
    assert backup.execute("PRAGMA user_version").fetchone()[0] == 3
    assert len(backup.execute("SELECT id FROM takes").fetchall()) == 5
    backup.close()
    with ClipLibrary(old_library) as again:
        assert again.migrated_from is None and again.count() == 5
    fresh = ClipLibrary(old_library.parent / "fresh")
    try:  # a new library's table is the migrated one's, column for column
        shape = [tuple(r)[1:] for r in fresh._conn.execute("PRAGMA table_info(takes)")]
        migrated = sqlite3.connect(old_library / "library.sqlite3")
        assert shape == [tuple(r)[1:] for r in migrated.execute("PRAGMA table_info(takes)")]
        migrated.close()
    finally:
        fresh.close()


def test_relabelling_changes_only_the_labels_given_and_never_the_audio(old_library: Path):
    before = audio_hashes(old_library)
    with ClipLibrary(old_library) as lib:
        sample = lib.verified_audio(1).copy()
        lib.set_labels(1, GRAVEL)
        lib.set_labels(1, {"creator": "ZZ"})  # only the creator changes
        assert lib.get(1).labels == {**GRAVEL, "creator": "ZZ", "category": "",
                                     "subcategory": ""}
        lib.set_labels(1, {"fx_name": ""})  # '' takes one off
        assert lib.get(1).labels["fx_name"] == "" and lib.get(1).labels["catid"] == "FOOTGrvl"
        assert np.array_equal(lib.verified_audio(1), sample)
        lib.set_labels(2, Labels(catid="FOOTGrvl", fx_name="Gravel Step"))
    assert audio_hashes(old_library) == before
    # The labels live in the edit journal too: a library whose database is lost gets them back.
    for name in ("library.sqlite3", "library.sqlite3-wal", "library.sqlite3-shm"):
        (old_library / name).unlink(missing_ok=True)
    with ClipLibrary(old_library) as rebuilt:
        assert rebuilt.get(1).labels["catid"] == "FOOTGrvl"
        assert rebuilt.get(1).labels["creator"] == "ZZ"
        assert rebuilt.get(2).labels["fx_name"] == "Gravel Step"


def test_every_way_out_carries_the_stored_labels_after_a_relabel(old_library: Path,
                                                                 tmp_path: Path):
    with ClipLibrary(old_library) as lib:
        for take_id in (1, 2, 3):
            lib.set_labels(take_id, GRAVEL)
        lib.set_labels(2, {"source": "FIELD"})  # relabelled after the first labelling
        out = tmp_path / "export"
        out.mkdir()
        wavs = lib.export([3, 1], out, ExportOptions(template="ucs"))
        # {n} is each take's variation number, not its place in the export list.
        assert [p.name for p in wavs] == ["FOOTGrvl_Gravel Step 03_JD_SA3.wav",
                                          "FOOTGrvl_Gravel Step 01_JD_SA3.wav"]
        assert user_fields(wavs[0]) == {"CATID": "FOOTGrvl", "FXNAME": "Gravel Step",
                                        "creatorId": "JD", "sourceId": "SA3",
                                        "catId": "FOOTGrvl"}
        # Flags given again replace only their own fields.
        flac = lib.export([2], out, ExportOptions(template="ucs", format="flac",
                                                  given_labels={"creator": "AB"}))[0]
        assert flac.name == "FOOTGrvl_Gravel Step 02_AB_FIELD.flac"
        tags = mutagen.flac.FLAC(str(flac)).tags
        assert tags["CATID"] == ["FOOTGrvl"] and tags["FXNAME"] == ["Gravel Step"]

        # Team publish delivers the take's files labelled by the library; a fetch copies them.
        bundle = bundle_take(lib, 2, "jd", lambda key: tmp_path / "outbox" / key)
    store = ContentStore(tmp_path / "store")  # the team's shared drive, as `team init` makes it
    store.prepare()
    team_files = []
    for entry in bundle.files:
        store.put(tmp_path / "outbox" / bundle.key / entry.waits_at, entry.sha256)
        team_files.append(TeamFile(entry.role, entry.file_name, entry.sha256, entry.size,
                                   entry.format))
    fetched = [p for p in fetch_files(store, team_files, tmp_path / "fetched")
               if p.suffix == ".wav"]
    assert len(fetched) == 2  # the take as made and finished by its stored chain
    for path in fetched:
        assert user_fields(path) == {"CATID": "FOOTGrvl", "FXNAME": "Gravel Step",
                                     "creatorId": "JD", "sourceId": "FIELD",
                                     "catId": "FOOTGrvl"}
