"""A take's adapters travel with it through the team library (a real PostgreSQL): publishing
brings each adapter file into the content-addressed store and the team's adapter catalogue,
fetching puts it on the other designer's adapter shelf where Restore settings finds it by its
SHA-256; the server itself refuses a take that names adapters it does not bring, an adapter
file its take does not name, and any direct write to the catalogue."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import psycopg
import pytest

from engines.adapter_restore import restored_adapters, shelf_path
from engines.adapters.choice import AdapterChoice
from engines.constants import SAMPLE_RATE
from engines.generation_result import GenerationResult
from engines.request import GenerationRequest, checked_request
from engines.store.records import LibraryError
from engines.team.adapter_step import MISSING_ADAPTER, REFUSED_ADAPTER
from tests.adapter_support import write_adapter
from tests.team_support import require_postgres, rows, sound, team_library

require_postgres()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _take_with(library, files, adapters: list[Path], strengths: list[float], seed: int = 4):
    request = checked_request(GenerationRequest(
        prompt="house sound whoosh", seed=seed, seconds=0.5,
        adapters=[AdapterChoice(p, s) for p, s in zip(adapters, strengths, strict=True)]))
    pcm = sound("noise", request.out_samples / SAMPLE_RATE, seed)
    result = GenerationResult(pcm=pcm, latents=np.zeros((256, 1), np.float32),
                              step_latents=np.zeros((1, 256, 1), np.float32), seed=seed,
                              timings_ms={"total": 1.0}, backend="onnxruntime", request=request,
                              files=files, warnings=[])
    return library.add(result)


def test_publishing_brings_the_adapters_and_fetching_shelves_them(
        team_server, team_db, local, tmp_path, home, monkeypatch):
    library, files = local
    house = write_adapter(tmp_path / "adapters" / "house.safetensors", "lora", 4, seed=1)
    grit = write_adapter(tmp_path / "adapters" / "grit.safetensors", "dora-rows", 2, seed=2)
    take = _take_with(library, files, [house, grit], [0.8, 0.5])
    with team_library(team_db, "alice", tmp_path / "outbox") as team:
        report = team.publish(library, [take.id])
        team_id = report.published[0][1]
        entry = team.entry(team_id)
    shared = {f.sha256: f for f in entry.files if f.role == "adapter"}
    assert set(shared) == {_sha(house), _sha(grit)}
    assert {f.name for f in shared.values()} == {"house.safetensors", "grit.safetensors"}
    store = team_server.root / "store"
    for sha in shared:  # byte for byte in the store, under its hash
        assert _sha(store / sha[:2] / sha) == sha
    admin = team_server.admin(team_db)
    assert sorted(rows(admin, "SELECT file_name, variant, rank, designer, first_take "
                              "FROM adapters")) == [
        ("grit.safetensors", "dora-rows", 2, "alice", team_id),
        ("house.safetensors", "lora", 4, "alice", team_id)]
    provenance = rows(admin, "SELECT provenance FROM takes WHERE id = %s", (team_id,))[0][0]
    assert [(a["file_name"], a["strength"]) for a in provenance["request"]["adapters"]] == \
        [("house.safetensors", 0.8), ("grit.safetensors", 0.5)]

    # Another designer (another data folder) fetches it; the adapters come along.
    bob_home = tmp_path / "bob-home"
    bob_home.mkdir()
    monkeypatch.setenv("SA3_STUDIO_HOME", str(bob_home))
    with team_library(team_db, "bob", tmp_path / "bob-outbox", reader=True) as team:
        fetched = team.fetch(team_id, tmp_path / "bob-takes", roles=["take"])
    assert all(p.suffix in (".wav", ".json") for p in fetched)
    for path in (house, grit):
        assert _sha(shelf_path(_sha(path), path.name)) == _sha(path)
    # Restore settings on bob's machine: the recorded paths are alice's; the shelf has them.
    house.unlink()
    grit.unlink()
    choices = restored_adapters(library.get(take.id).adapters)
    assert [(c.path, c.strength) for c in choices] == \
        [(shelf_path(json_sha, name), s) for json_sha, name, s in
         ((a["sha256"], a["file_name"], a["strength"])
          for a in provenance["request"]["adapters"])]


def test_a_take_whose_adapter_is_gone_is_not_published(team_db, local, tmp_path):
    library, files = local
    house = write_adapter(tmp_path / "house.safetensors", seed=3)
    take = _take_with(library, files, [house], [1.0])
    digest = _sha(house)
    house.unlink()
    with team_library(team_db, "alice", tmp_path / "outbox") as team:
        with pytest.raises(LibraryError) as refused:
            team.publish(library, [take.id])
        assert team.find() == []
    assert "house.safetensors" in str(refused.value) and digest in str(refused.value)
    assert not list((tmp_path / "outbox").rglob("*.safetensors"))


def _publish_raw(team_db, key: str, adapters: list[dict], files: list[dict]) -> None:
    take = {"content_sha256": "d" * 64, "mode": "t2a", "seconds": 1, "sample_rate": 1,
            "samples": 1, "created": "2026-01-01T00:00:00Z",
            "provenance": {"request": {"adapters": adapters}}}
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn:
        conn.execute("SELECT is_new FROM sa3_publish(%s, %s::jsonb, NULL, 'mallory', "
                     "%s::jsonb, 0, '{}', '')", (key, json.dumps(take), json.dumps(files)))


def test_the_server_keeps_takes_and_their_adapter_files_together(team_server, team_db):
    named = {"file_name": "house.safetensors", "sha256": "a" * 64, "variant": "lora", "rank": 4,
             "strength": 1.0}
    file = {"role": "adapter", "name": "house.safetensors", "sha256": "a" * 64, "size": 10,
            "format": "safetensors"}
    other = {**file, "name": "other.safetensors", "sha256": "b" * 64}
    with pytest.raises(psycopg.Error) as missing:
        _publish_raw(team_db, "k1", [named], [])  # names an adapter, brings no file
    assert missing.value.sqlstate == MISSING_ADAPTER
    with pytest.raises(psycopg.Error) as stray:
        _publish_raw(team_db, "k2", [named], [file, other])  # a file it does not name
    assert stray.value.sqlstate == REFUSED_ADAPTER
    admin = team_server.admin(team_db)
    assert rows(admin, "SELECT count(*) FROM takes") == [(0,)]
    assert rows(admin, "SELECT count(*) FROM adapters") == [(0,)]
    _publish_raw(team_db, "k3", [named], [file])
    assert rows(admin, "SELECT sha256, designer FROM adapters") == [("a" * 64, "mallory")]
    with psycopg.connect(team_db.publisher_line, autocommit=True) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("UPDATE adapters SET designer = 'mallory2'")
    with psycopg.connect(team_db.reader_line, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM adapters").fetchone() == (1,)
