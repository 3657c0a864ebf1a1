"""The sound library (engines.store): every take kept with its provenance, searchable, restorable,
and the database surviving crashes, old versions and damage."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import main as entry
from engines.catalog import EngineFiles
from engines.finish.settings import FinishSettings
from engines.generation_result import GenerationResult
from engines.request import GenerationRequest, validate_request
from engines.store import keeper as keeper_module
from engines.store import schema
from engines.store.export_plan import ExportOptions
from engines.store.library import SCHEMA_VERSION, ClipLibrary, LibraryError, TakeRecord
from engines.store.wavmeta import COMMENT_LIMIT, read_metadata

REPO = Path(__file__).resolve().parents[2]
TIMINGS = {"text": 1.5, "sample": 20.25, "decode": 30.0, "total": 51.75}


# --------------------------------------------------------------------------------------------
# Cheap takes: a real request, made-up samples (the library never looks inside them)


def engine_files_in(folder: Path) -> EngineFiles:
    """Five small stand-in engine files (created once, then left alone)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {"text_encoder": "t5.onnx", "tokenizer": "tokenizer.json", "dit": "dit.onnx",
             "decoder": "dec.onnx", "encoder": "enc.onnx"}
    for index, name in enumerate(names.values()):
        path = folder / name
        if not path.exists():
            path.write_bytes(bytes([index]) * (1000 + index))
    return EngineFiles(format="onnx", text_encoder=folder / names["text_encoder"],
                       tokenizer=folder / names["tokenizer"], dit=folder / names["dit"],
                       decoder=folder / names["decoder"], encoder=folder / names["encoder"],
                       codec_tier="canonical")


def make_result(files: EngineFiles, prompt: str = "rain on a tin roof", seed: int = 1,
                seconds: float = 0.5, **request: object) -> GenerationResult:
    req = validate_request(GenerationRequest(prompt=prompt, seed=seed, seconds=seconds,
                                             **request), max_seconds=30.0)
    pcm = np.random.default_rng(seed).integers(-20000, 20000, (req.out_samples, 2),
                                               dtype=np.int16)
    return GenerationResult(pcm=pcm, latents=np.zeros((256, 1), np.float32),
                            step_latents=np.zeros((1, 256, 1), np.float32), seed=req.seed,
                            timings_ms=dict(TIMINGS), backend="onnxruntime", request=req,
                            files=files, warnings=list(req.warnings))


@pytest.fixture
def files(tmp_path: Path) -> EngineFiles:
    return engine_files_in(tmp_path / "engines")


@pytest.fixture
def lib(tmp_path: Path):
    library = ClipLibrary(tmp_path / "library")
    yield library
    library.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory):
    """The real demo model, for the tests that regenerate and compare samples."""
    from engines.catalog import Catalog
    from engines.generator import Generator

    generator = Generator(Catalog(tmp_path_factory.mktemp("library-models")))
    yield generator
    generator.close()


# --------------------------------------------------------------------------------------------
# Keeping takes


def test_add_and_get_round_trip_every_field(lib: ClipLibrary, files: EngineFiles):
    init = np.random.default_rng(3).uniform(-0.5, 0.5, (44100, 2)).astype(np.float32)
    imported = lib.add_imported(init, "/sounds/door.wav")
    result = make_result(files, prompt="  metal door slam, large hall ", seed=4242,
                         seconds=1.0, negative_prompt="music", cfg=3.5, apg=0.5,
                         limiter_ceiling=0.9, init_audio=init, inpaint_spans=[(0.2, 0.5)],
                         backend="onnxruntime", model="demo", decoder="demo", precision="fp32")
    record = lib.add(result, parent_id=imported.id, name="Door A",
                     init_source="/sounds/door.wav")
    again = lib.get(record.id)
    assert again == record
    req = result.request
    assert (again.prompt, again.negative_prompt) == ("metal door slam, large hall", "music")
    assert (again.model, again.decoder, again.precision) == ("demo", "demo", "fp32")
    assert (again.seconds, again.steps, again.seed) == (1.0, 8, 4242)
    assert (again.cfg, again.apg, again.limiter_ceiling) == (3.5, 0.5, 0.9)
    assert again.mode == "inpaint" and again.init_noise_level is None
    assert again.inpaint_spans == [(0.2, 0.5)] == list(req.inpaint_spans)
    assert again.backend == "onnxruntime" and again.requested_backend == "onnxruntime"
    assert again.timings_ms == TIMINGS and again.decoder_tier == "canonical"
    assert again.parent_id == imported.id and again.init_source == "/sounds/door.wav"
    assert again.name == "Door A" and again.title() == "Door A"
    assert (again.rating, again.favourite, again.tags, again.notes) == (0, False, [], "")
    assert (again.sample_rate, again.samples) == (44100, 44100)
    assert not again.deleted and not again.missing and not again.seed_was_random
    assert again.created.endswith("+00:00") and "T" in again.created
    assert again.audio_path.is_absolute()
    assert again.audio_path.parent == lib.root / "audio"
    roles = {e["role"]: e for e in again.engine_files}
    assert set(roles) == {"text_encoder", "tokenizer", "dit", "decoder", "encoder"}
    for item in roles.values():
        data = Path(item["path"]).read_bytes()
        assert item["size"] == len(data)
        assert item["sha256"] == hashlib.sha256(data).hexdigest()
    assert np.array_equal(lib.load_audio(record.id), result.pcm)
    assert sf.info(str(again.audio_path)).subtype == "PCM_16"
    # The imported init audio is kept exactly (float), so the take can be remade from it.
    assert imported.mode == "imported" and imported.seed == 0 and imported.model == "imported"
    assert imported.name == "door.wav" and imported.init_source == "/sounds/door.wav"
    assert np.array_equal(lib.load_float_audio(imported.id), init)
    assert lib.add_imported(init, "/elsewhere/copy.wav").id == imported.id  # same samples
    assert [r.id for r in lib.lineage(record.id)] == [record.id, imported.id]


def test_wav_carries_its_provenance_when_copied_elsewhere(lib: ClipLibrary, files, tmp_path):
    record = lib.add(make_result(files, prompt="coin pickup", seed=77, cfg=2.0))
    copy = tmp_path / "game" / "Assets" / "coin.wav"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(record.audio_path, copy)
    with sf.SoundFile(str(copy)) as handle:
        strings = handle.copy_metadata()
    assert strings["title"] == "coin pickup"
    assert strings["software"].startswith("SA3 Studio")
    note = json.loads(strings["comment"])
    assert note["app"] == "SA3 Studio" and note["library_id"] == record.id
    assert (note["prompt"], note["seed"], note["model"], note["cfg"]) == (
        "coin pickup", 77, "demo", 2.0)
    assert (note["decoder"], note["precision"], note["steps"], note["mode"]) == (
        "demo", "fp32", 8, "t2a")
    assert note["backend"] == "onnxruntime" and note["created"] == record.created
    assert lib.identify(copy).id == record.id  # recognised by its samples

    long_prompt = "thunder rolling over distant hills " * 100
    big = lib.add(make_result(files, prompt=long_prompt.strip(), seed=5))
    note = read_metadata(big.audio_path)
    assert note is not None and note["library_id"] == big.id and note["prompt_cut"] is True
    assert long_prompt.startswith(note["prompt"]) and len(note["prompt"]) > 40
    assert len(sf.SoundFile(str(big.audio_path)).copy_metadata()["comment"]) <= COMMENT_LIMIT
    assert lib.get(big.id).prompt == long_prompt.strip()  # the row keeps it whole


@pytest.fixture(params=[True, False], ids=["fts5", "like"])
def searchable(request, tmp_path: Path, files, monkeypatch):
    """A library of seven takes at known times, searched through FTS5 and through LIKE."""
    if not request.param:
        monkeypatch.setattr(schema, "_fts_available", False)
    elif not schema.fts_available():
        pytest.skip("this sqlite3 has no FTS5 trigram tokenizer")
    times = iter([f"2025-03-0{day}T12:00:00.000+00:00" for day in range(1, 8)])
    monkeypatch.setattr(keeper_module, "created_now", lambda: next(times))
    library = ClipLibrary(tmp_path / "library")
    specs = [("heavy RAIN on a tin roof", "demo", 3), ("light rain, forest", "sm-sfx", 5),
             ("laser blast", "demo", 1), ("laser charge up", "sm-sfx", 4),
             ("door creak", "demo", 2), ("Rainforest birds", "demo", 0),
             ("footsteps on gravel", "sm-sfx", 3)]
    ids = {}
    for prompt, model, rating in specs:
        record = library.add(make_result(files, prompt=prompt, seed=10 + len(ids), model=model))
        library.update(record.id, rating=rating)
        ids[prompt.split()[0].lower() + str(len(ids))] = record.id
    library.update(1, tags=["weather", "loop"], favourite=True)
    library.update(5, notes="Use for the haunted MANSION level", tags="ui, creepy")
    library.update(3, favourite=True)
    yield library
    library.close()


def _ids(records: list[TakeRecord]) -> list[int]:
    return [r.id for r in records]


def test_search_text_filters_sort_and_limit(searchable: ClipLibrary):
    lib = searchable
    assert _ids(lib.search("rain")) == [6, 2, 1]  # newest first, any case, inside words
    assert _ids(lib.search("RAIN forest")) == [6, 2]  # every word must match
    assert _ids(lib.search("weather")) == [1] and _ids(lib.search("creepy")) == [5]
    assert _ids(lib.search("mansion")) == [5]  # notes
    assert _ids(lib.search("on")) == [7, 5, 1]  # two letters (below the trigram size)
    assert _ids(lib.search("100%")) == [] and _ids(lib.search("zzz")) == []
    assert _ids(lib.search(model="sm-sfx")) == [7, 4, 2]
    assert _ids(lib.search(favourite=True)) == [3, 1]
    assert _ids(lib.search(favourite=False, model="demo")) == [6, 5]
    assert _ids(lib.search(min_rating=4)) == [4, 2]
    assert _ids(lib.search(since="2025-03-05")) == [7, 6, 5]
    assert _ids(lib.search(until="2025-03-02")) == [2, 1]  # a bare date covers the whole day
    assert _ids(lib.search(since="2025-03-02T12:00:00Z", until="2025-03-03T11:00")) == [2]
    assert _ids(lib.search(sort="rating")) == [2, 4, 7, 1, 5, 3, 6]
    assert _ids(lib.search(sort="rating", descending=False)) == [6, 3, 5, 1, 7, 4, 2]
    assert _ids(lib.search(sort="prompt", descending=False))[:3] == [5, 7, 1]
    assert _ids(lib.search(sort="seed", descending=False)) == [1, 2, 3, 4, 5, 6, 7]
    assert _ids(lib.search(limit=2)) == [7, 6] and _ids(lib.search(limit=2, offset=2)) == [5, 4]
    assert lib.count() == 7 and lib.count("laser") == 2 and lib.count(min_rating=3) == 4
    assert lib.models() == ["demo", "sm-sfx"]
    lib.delete(6)
    assert _ids(lib.search("rain")) == [2, 1] and lib.count() == 6
    assert _ids(lib.search("rain", include_deleted=True)) == [6, 2, 1]
    with pytest.raises(LibraryError, match="sort"):
        lib.search(sort="loudness")
    with pytest.raises(LibraryError, match="YYYY-MM-DD"):
        lib.search(since="last tuesday")


def test_filter_by_codec_tier_and_the_tier_travels_with_the_take(lib: ClipLibrary, files):
    import dataclasses

    from engines.store.repair import row_from_file

    made = {}
    for seed, tier in enumerate(("canonical", "coarse", "canonical", "fp8"), 1):
        result = make_result(dataclasses.replace(files, codec_tier=tier), seed=seed)
        made.setdefault(tier, []).append(lib.add(result).id)
    assert sorted(_ids(lib.search(tier="canonical"))) == made["canonical"]
    assert _ids(lib.search(tier="coarse")) == made["coarse"]
    assert _ids(lib.search(tier="FP8")) == made["fp8"]  # as typed by a person
    assert lib.count(tier="canonical") == 2 and lib.count(tier="fp8_fast") == 0
    assert lib.tiers() == ["canonical", "coarse", "fp8"]
    with pytest.raises(LibraryError, match="'turbo' is not a codec tier") as info:
        lib.search(tier="turbo")
    assert str(info.value).count(". ") == 0
    coarse = lib.get(made["coarse"][0])
    # Regenerating asks for the tier the take was decoded with, so it sounds the same; a tier
    # the demo decoder does not have is left to the default rule.
    assert coarse.request().codec_tier == "coarse"
    assert lib.get(made["fp8"][0]).request().codec_tier is None
    assert coarse.sidecar()["tiers"]["codec_tier"] == "coarse"
    # The note in the audio file carries the tier, so a rebuilt library keeps it.
    assert read_metadata(coarse.audio_path)["decoder_tier"] == "coarse"
    rebuilt = row_from_file(coarse.audio_path, deleted=False, now="2025-01-01T00:00:00+00:00")
    assert rebuilt is not None and rebuilt["decoder_tier"] == "coarse"


def test_update_validates_and_normalises(lib: ClipLibrary, files):
    record = lib.add(make_result(files))
    updated = lib.update(record.id, rating=5, favourite=True, notes="  keep  ",
                         tags=[" Impact ", "impact", "", "big   hit"], name=" Hit  1 ")
    assert (updated.rating, updated.favourite, updated.notes) == (5, True, "keep")
    assert updated.tags == ["Impact", "big hit"] and updated.name == "Hit 1"
    assert lib.update(record.id, tags="a, b,,a") .tags == ["a", "b"]
    assert lib.update(record.id, rating=0).rating == 0
    for bad in (6, -1, True, 2.5):
        with pytest.raises(LibraryError, match="0 to 5") as info:
            lib.update(record.id, rating=bad)
        assert ". " not in str(info.value) and str(info.value).endswith(".")
    with pytest.raises(LibraryError, match="no take #999"):
        lib.update(999, rating=1)
    assert lib.get(record.id).rating == 0


def test_delete_moves_audio_to_trash_and_restore_undoes_it(lib: ClipLibrary, files):
    record = lib.add(make_result(files))
    original = record.audio_path
    lib.delete(record.id)
    gone = lib.get(record.id)
    assert gone.deleted and not original.exists()
    assert gone.audio_path == lib.root / "trash" / original.name and gone.audio_path.is_file()
    assert lib.search() == [] and np.array_equal(lib.load_audio(record.id), make_result(
        files).pcm)
    lib.delete(record.id)  # twice is harmless
    lib.restore(record.id)
    back = lib.get(record.id)
    assert not back.deleted and back.audio_path == original and original.is_file()
    assert _ids(lib.search()) == [record.id]
    assert list((lib.root / "trash").iterdir()) == []


def _purged_lines(root: Path) -> list[dict]:
    lines = (root / "library-edits.jsonl").read_text().splitlines()
    return [entry for entry in map(json.loads, lines) if "purged" in entry]


def test_purge_trash_removes_rows_then_files_for_good(lib: ClipLibrary, files, monkeypatch):
    takes = [lib.add(make_result(files, prompt=f"purge me {i}", seed=i)) for i in (1, 2, 3)]
    lib.delete(takes[0].id)
    lib.delete(takes[1].id)
    trashed = [lib.get(t.id).audio_path for t in takes[:2]]
    assert lib.in_trash() == [1, 2]
    assert lib.purge_trash([2, 3, 99]) == 1  # only those named that are in the trash
    assert lib.in_trash() == [1] and not trashed[1].exists() and trashed[0].is_file()
    assert lib.purge_trash() == 1 and lib.purge_trash() == 0
    for take in takes[:2]:
        with pytest.raises(LibraryError, match=f"no take #{take.id}"):
            lib.get(take.id)
    assert not any(path.exists() for path in trashed)
    assert _ids(lib.search("purge", include_deleted=True)) == [3]  # the text index too
    assert lib.get(3).audio_path.is_file() and lib.add(make_result(files, seed=9)).id == 4
    assert [(e["id"], e["created"], e["purged"]) for e in _purged_lines(lib.root)] == [
        (2, takes[1].created, True), (1, takes[0].created, True)]


def test_a_purged_take_never_comes_back(tmp_path: Path, files, monkeypatch):
    """Not from a file that could not be removed (the next open removes it), nor from the
    rows or notes a rebuild finds, nor after the journal is compacted."""
    root = tmp_path / "library"
    with ClipLibrary(root) as lib:
        for i in range(1, 6):
            lib.add(make_result(files, prompt=f"take {i}", seed=i))
        lib.delete(2)
        lib.delete(4)
    before = (root / "library.sqlite3").read_bytes()  # closed: checkpointed, rows 2 and 4 in it
    stuck = ClipLibrary(root)
    left = stuck.get(4).audio_path
    real_unlink = Path.unlink

    def unlink(path: Path, missing_ok: bool = False) -> None:
        if path == left:
            raise PermissionError(13, "Permission denied", str(path))
        real_unlink(path, missing_ok=missing_ok)

    told: list[tuple[Path, OSError]] = []
    monkeypatch.setattr(Path, "unlink", unlink)
    try:
        assert stuck.purge_trash(unremovable=lambda path, err: told.append((path, err))) == 2
    finally:
        stuck.close()
        monkeypatch.undo()
    assert [path for path, _ in told] == [left] and left.is_file()
    with ClipLibrary(root) as lib:  # the file left behind is not adopted back: it is removed
        assert not left.exists() and _ids(lib.search(include_deleted=True)) == [5, 3, 1]
        assert not list((root / "trash").rglob("*.wav"))
    # A damaged database whose rows still hold the purged takes (here: the file from before
    # the purge, its header gone) is rebuilt without them.
    (root / "library.sqlite3").write_bytes(bytes(100) + before[100:])
    with ClipLibrary(root) as lib:
        assert lib.notice is not None and "damaged" in lib.notice
        assert _ids(lib.search(include_deleted=True)) == [5, 3, 1]
        lib.check_quality()
        lib._journal.compact(lib._conn)  # the purge lines outlive a compaction
    assert {e["id"] for e in _purged_lines(root)} == {2, 4}
    (root / "library.sqlite3").write_bytes(bytes(100) + before[100:])
    with ClipLibrary(root) as lib:
        assert _ids(lib.search(include_deleted=True)) == [5, 3, 1]
        assert lib.add(make_result(files, seed=9)).id == 6  # purged ids are never reused


class _CommitFails:
    """A connection whose next COMMIT fails, as on a disk that filled up meanwhile."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_purge_that_does_not_commit_changes_nothing(lib: ClipLibrary, files):
    record = lib.add(make_result(files))
    lib.delete(record.id)
    real, lib._conn = lib._conn, _CommitFails(lib._conn)
    try:
        with pytest.raises(LibraryError, match="nothing was changed"):
            lib.purge_trash()
    finally:
        lib._conn = real
    assert lib.get(record.id).deleted and lib.get(record.id).audio_path.is_file()
    assert [e["purged"] for e in _purged_lines(lib.root)] == [True, False]
    assert lib._journal.purged() == set()  # so a rebuild keeps the take
    lib.restore(record.id)
    assert not lib.get(record.id).deleted


@pytest.mark.posix
def test_read_only_library_refuses_a_purge(tmp_path: Path, files):
    root = tmp_path / "library"
    with ClipLibrary(root) as lib:
        lib.delete(lib.add(make_result(files)).id)
    with read_only_folder(root):
        lib = ClipLibrary(root)
        try:
            assert lib.in_trash() == [1]
            for change in (lib.purge_trash, lib.require_writable):
                with pytest.raises(LibraryError, match="read-only.*nothing was changed"):
                    change()
        finally:
            lib.close()


def test_engine_file_hashes_are_cached_by_path_mtime_and_size(lib, files, monkeypatch):
    hashed: list[Path] = []
    real = keeper_module.sha256_file

    def counting(path: Path) -> str:
        hashed.append(Path(path))
        return real(path)

    monkeypatch.setattr(keeper_module, "sha256_file", counting)
    lib.add(make_result(files, seed=1))
    assert len(hashed) == 4  # text to audio: no encoder
    lib.add(make_result(files, seed=2))
    assert len(hashed) == 4
    reopened = ClipLibrary(lib.root)  # the cache lives in the database
    reopened.add(make_result(files, seed=3))
    assert len(hashed) == 4
    stat = files.dit.stat()
    os.utime(files.dit, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    record = reopened.add(make_result(files, seed=4))
    assert hashed[4:] == [files.dit.absolute()]
    files.decoder.write_bytes(b"a different decoder")
    record = reopened.add(make_result(files, seed=5))
    assert hashed[5:] == [files.decoder.absolute()]
    entry = next(e for e in record.engine_files if e["role"] == "decoder")
    assert entry["sha256"] == hashlib.sha256(b"a different decoder").hexdigest()
    reopened.close()


# --------------------------------------------------------------------------------------------
# Reproducing takes


def test_request_gives_every_parameter_back(lib: ClipLibrary, files):
    init = np.random.default_rng(1).uniform(-0.3, 0.3, (30000, 2)).astype(np.float32)
    cases = [
        make_result(files, prompt="wind", seed=9, seconds=2.0, negative_prompt="birds",
                    cfg=4.0, apg=0.25, limiter_ceiling=1.5),
        make_result(files, prompt="bell", seed=10, seconds=1.0, init_audio=init,
                    init_noise_level=0.35),
        make_result(files, prompt="glass", seed=11, seconds=1.0, init_audio=init,
                    inpaint_spans=[(0.1, 0.4), (0.3, 0.6)]),
    ]
    fields = ("prompt", "negative_prompt", "model", "decoder", "precision", "seconds", "steps",
              "seed", "cfg", "apg", "init_noise_level", "inpaint_spans", "limiter_ceiling",
              "mode", "backend", "latent_len", "out_samples", "regen_spans_latent")
    for result in cases:
        record = lib.add(result)
        request = record.request(init_audio=init if result.request.mode != "t2a" else None)
        again = validate_request(request, max_seconds=30.0)
        for name in fields:
            assert getattr(again, name) == getattr(result.request, name), name
        assert not again.seed_was_random
    imported = lib.add_imported(init, "x.wav")
    with pytest.raises(LibraryError, match="imported"):
        imported.request()


def test_missing_audio_shows_and_is_regenerated_exactly(lib: ClipLibrary, demo):
    result = demo.generate(GenerationRequest(prompt="rain on a tin roof", seconds=1.0))
    record = lib.add(result)
    record.audio_path.unlink()
    missing = lib.get(record.id)
    assert missing.missing and _ids(lib.search("rain")) == [record.id]
    with pytest.raises(LibraryError, match="missing.*regenerate") as info:
        lib.load_audio(record.id)
    assert str(info.value).count(". ") == 0
    with pytest.raises(LibraryError, match="missing"):
        lib.export([record.id], lib.root.parent)

    again = demo.generate(lib.regeneration_request(record.id))
    assert again.seed == result.seed
    assert np.array_equal(again.latents, result.latents)
    fixed = lib.replace_audio(record.id, again)
    assert fixed.id == record.id and not fixed.missing
    assert np.array_equal(lib.load_audio(record.id), result.pcm)
    other = demo.generate(GenerationRequest(prompt="rain on a tin roof", seconds=1.0,
                                            seed=(result.seed + 1) % 2**32))
    with pytest.raises(LibraryError, match="not a regeneration"):
        lib.replace_audio(record.id, other)


def test_takes_made_from_imported_audio_regenerate_exactly(lib: ClipLibrary, demo):
    source = demo.generate(GenerationRequest(prompt="engine hum", seconds=1.5, seed=8))
    base = lib.add(source)
    init = np.random.default_rng(5).uniform(-0.4, 0.4, (50000, 2)).astype(np.float32)
    imported = lib.add_imported(init, "/sounds/hum.flac")
    a2a = demo.generate(GenerationRequest(prompt="engine hum, distorted", init_audio=init,
                                          init_noise_level=0.4, seed=21))
    a2a_take = lib.add(a2a, parent_id=imported.id, init_source="/sounds/hum.flac")
    # Inpainting a library take, as the GUI does: the init audio is the take's int16 / 32767.
    inpaint = demo.generate(GenerationRequest(prompt="horn", init_audio=lib.load_float_audio(
        base.id), inpaint_spans=[(0.5, 1.0)], seed=22))
    inpaint_take = lib.add(inpaint, parent_id=base.id)
    for take, made in ((a2a_take, a2a), (inpaint_take, inpaint)):
        remade = demo.generate(lib.regeneration_request(take.id))
        assert np.array_equal(remade.pcm, made.pcm), take.mode
    assert _ids(lib.lineage(inpaint_take.id)) == [inpaint_take.id, base.id]
    lib.get(imported.id).audio_path.unlink()
    with pytest.raises(LibraryError, match="init audio"):
        lib.regeneration_request(a2a_take.id)


# --------------------------------------------------------------------------------------------
# Robustness


V1_SCHEMA = """
CREATE TABLE takes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL, prompt TEXT NOT NULL,
    negative_prompt TEXT NOT NULL, model TEXT NOT NULL, decoder TEXT NOT NULL,
    precision TEXT NOT NULL, seconds REAL NOT NULL, steps INTEGER NOT NULL,
    seed INTEGER NOT NULL, cfg REAL NOT NULL, apg REAL NOT NULL, init_noise_level REAL,
    inpaint_spans TEXT NOT NULL, limiter_ceiling REAL NOT NULL, mode TEXT NOT NULL,
    backend TEXT NOT NULL, timings_ms TEXT NOT NULL, engine_files TEXT NOT NULL,
    audio_path TEXT NOT NULL, parent_id INTEGER, init_source TEXT,
    rating INTEGER NOT NULL DEFAULT 0, sample_rate INTEGER NOT NULL, samples INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0);
CREATE INDEX takes_created ON takes(created);
PRAGMA user_version = 1;
"""


def test_version_1_database_migrates_with_data_kept(tmp_path: Path, files):
    root = tmp_path / "library"
    (root / "audio").mkdir(parents=True)
    outside = tmp_path / "old-exports"
    outside.mkdir()
    paths = [root / "audio" / "take-1.wav", outside / "take-3.wav"]
    for index, path in enumerate(paths):
        sf.write(path, np.full((4410, 2), index + 1, np.int16), 44100, subtype="PCM_16")
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.executescript(V1_SCHEMA)
    engine = json.dumps([{"role": "dit", "path": "/models/dit.plan", "size": 123}])
    for take_id, prompt, seed, path, rating in ((1, "old rain", 5, paths[0], 4),
                                                (3, "old wind", 6, paths[1], 2),
                                                (5, "discarded", 7, paths[1], 0)):
        conn.execute(
            "INSERT INTO takes VALUES (?, '2024-01-0' || ? || 'T10:00:00+00:00', ?, '', 'demo',"
            " 'demo', 'fp32', 0.1, 8, ?, 1.0, 1.0, NULL, '[]', 0.977, 't2a', 'onnxruntime',"
            " '{\"total\": 12.5}', ?, ?, NULL, NULL, ?, 44100, 4410, 0)",
            (take_id, take_id, prompt, seed, engine, str(path), rating))
    conn.execute("DELETE FROM takes WHERE id = 5")  # the sequence stays at 5
    conn.commit()
    conn.close()

    lib = ClipLibrary(root)
    try:
        assert lib.migrated_from == 1 and lib.notice is None
        check = sqlite3.connect(root / "library.sqlite3")
        assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        check.close()
        assert (root / "library.sqlite3.v1-backup").is_file()
        # Version 3: no finishing yet, and the quality measured from the audio when it opened
        # (the samples are 1 and 2 of 32767: digital silence).
        assert lib.get(1).quality == lib.get(3).quality == ["silent"]
        assert lib.get(1).finishing is None and lib.get(1).sidecar()["finishing"] is None
        old = lib.get(1)
        assert (old.prompt, old.seed, old.rating, old.timings_ms) == ("old rain", 5, 4,
                                                                       {"total": 12.5})
        assert old.audio_path == paths[0] and not old.missing
        assert old.engine_files == [{"role": "dit", "path": "/models/dit.plan", "size": 123,
                                     "sha256": None}]
        assert (old.tags, old.notes, old.favourite, old.name) == ([], "", False, "")
        assert lib.get(3).audio_path == paths[1] and not lib.get(3).missing
        assert np.all(lib.load_audio(3) == 2)
        assert _ids(lib.search("old")) == [3, 1] and _ids(lib.search("wind")) == [3]
        lib.update(1, tags=["vintage"])
        assert _ids(lib.search("vintage")) == [1]
        assert lib.add(make_result(files)).id == 6  # ids are never reused
        lib.delete(3)  # an audio file outside the library stays where it is
        assert paths[1].is_file() and lib.get(3).deleted
    finally:
        lib.close()
    reopened = ClipLibrary(root)
    assert reopened.migrated_from is None and reopened.count() == 2
    reopened.close()


@pytest.mark.parametrize("damage", ["garbage", "pages"])
def test_corrupt_database_is_copied_aside_and_takes_recovered(tmp_path: Path, files, damage):
    root = tmp_path / "library"
    lib = ClipLibrary(root)
    kept = [lib.add(make_result(files, prompt=f"take {i}", seed=i)) for i in range(1, 40)]
    lib.update(2, tags=["kept by the edit journal"])
    lib.close()
    db = root / "library.sqlite3"
    if damage == "garbage":
        db.write_bytes(b"this is not a database at all " * 200)
    else:
        data = bytearray(db.read_bytes())
        page = 4096
        assert len(data) > 3 * page
        data[page:3 * page] = os.urandom(2 * page)
        db.write_bytes(bytes(data))
    broken = db.read_bytes()

    lib = ClipLibrary(root)
    try:
        assert lib.notice is not None and "damaged" in lib.notice
        assert lib.notice.count(". ") == 0 and lib.notice.endswith(".")
        aside = [p for p in root.iterdir() if p.name.startswith("library.sqlite3.corrupt-")]
        assert len(aside) == 1 and aside[0].read_bytes() == broken
        assert str(aside[0]) in lib.notice
        # The new database works, and every take came back (from its readable row, or the
        # note in its audio file and the edit journal), tags and all (see test_library_salvage).
        assert lib.count() == len(kept)
        back = lib.get(7)
        assert (back.prompt, back.seed, back.model) == ("take 7", 7, "demo")
        assert np.array_equal(lib.load_audio(7), make_result(files, seed=7).pcm)
        assert back.audio_path == kept[6].audio_path and back == kept[6]
        assert lib.get(2).tags == ["kept by the edit journal"]
        assert lib.add(make_result(files, seed=99)).id == len(kept) + 1
    finally:
        lib.close()
    again = ClipLibrary(root)
    assert again.notice is None and again.count() == len(kept) + 1
    again.close()


def test_newer_database_is_refused_not_replaced(tmp_path: Path):
    root = tmp_path / "library"
    ClipLibrary(root).close()
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with pytest.raises(LibraryError, match="newer"):
        ClipLibrary(root)
    assert not [p for p in root.iterdir() if "corrupt" in p.name]


def test_open_tidies_what_a_crash_left(lib: ClipLibrary, files, tmp_path):
    kept = lib.add(make_result(files, prompt="kept", seed=1))
    orphan = lib.add(make_result(files, prompt="never committed", seed=2))
    moved = lib.add(make_result(files, prompt="half deleted", seed=3))
    lib.close()
    conn = sqlite3.connect(lib.root / "library.sqlite3")
    conn.execute("DELETE FROM takes WHERE id = ?", (orphan.id,))  # died before COMMIT
    conn.execute("UPDATE takes SET deleted = 1 WHERE id = ?", (moved.id,))  # died before move
    conn.commit()
    conn.close()
    temp = lib.root / "audio" / ".incoming-0123456789ab.wav"
    temp.write_bytes(orphan.audio_path.read_bytes()[:5000])
    stray = lib.root / "audio" / "dropped-in-by-hand.wav"
    sf.write(stray, np.zeros((100, 2)), 44100)

    reopened = ClipLibrary(lib.root)
    try:
        assert not temp.exists()
        assert (lib.root / "trash" / "unlisted" / stray.name).is_file()
        adopted = reopened.get(orphan.id)
        assert adopted.prompt == "never committed" and adopted.seed == 2
        assert np.array_equal(reopened.load_audio(orphan.id), make_result(files, seed=2).pcm)
        assert reopened.get(moved.id).audio_path.parent == lib.root / "trash"
        assert reopened.get(moved.id).audio_path.is_file()
        assert not reopened.get(kept.id).missing
    finally:
        reopened.close()


KILL_CHILD = """
import itertools, os, signal, sys
from pathlib import Path
sys.path[:0] = [{repo!r}, {tests!r}]
import test_library as t
from engines.store import database, wavmeta
from engines.store import library as L

root, mode = Path(sys.argv[1]), sys.argv[2]
files = t.engine_files_in(root.parent / "engines")
lib = L.ClipLibrary(root)
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
if mode == "loop":
    print("ready", flush=True)
    for i in itertools.count(int.from_bytes(os.urandom(3), "little")):
        record = lib.add(t.make_result(files, prompt=f"loop {{i}}", seed=i % 1000, seconds=0.2))
        if i % 3 == 0:
            lib.delete(record.id)
        if i % 4 == 1:
            lib.update(record.id, rating=i % 6, tags=[f"t{{i}}"])
        if i % 5 == 2 and record.id > 1:
            lib.restore(record.id - 1)
first = lib.add(t.make_result(files, prompt="before " + mode, seconds=0.2))
if mode == "mid_write":
    def half(path, audio, encoding, rate, title, comment):
        import soundfile as sf
        with sf.SoundFile(str(path), "w", rate, 2, "PCM_16", format="WAV") as f:
            f.write(audio[: len(audio) // 2])
            f.flush()
            die()
    wavmeta.write_take = half
elif mode == "before_commit":
    database.LibraryDatabase.insert_take = lambda self, row: die()
elif mode == "mid_delete":
    real = os.replace
    def replace(src, dst):
        real(src, dst)
        if Path(dst).parent.name == "trash":
            die()
    os.replace = replace
    lib.delete(first.id)
lib.add(t.make_result(files, prompt="victim " + mode, seed=2, seconds=0.2))
"""


@pytest.mark.posix
@pytest.mark.slow  # writers killed in real processes
def test_writer_killed_at_any_moment_leaves_a_consistent_library(tmp_path: Path):
    root = tmp_path / "library"
    script = KILL_CHILD.format(repo=str(REPO), tests=str(REPO / "tests" / "engines"))
    rng = random.Random(1234)

    def child(mode: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", script, str(root), mode],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    for _ in range(5):  # at random moments, in a loop of adds, deletes, restores and edits
        proc = child("loop")
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(rng.uniform(0.02, 0.3))
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, err
    for mode in ("mid_delete", "before_commit", "mid_write"):  # at the worst moments
        proc = child(mode)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, err

    assert list((root / "audio").glob(".incoming-*"))  # the half-written file is there...
    lib = ClipLibrary(root)
    try:
        conn = sqlite3.connect(root / "library.sqlite3")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
        records = lib.search(include_deleted=True, limit=None)
        assert len(records) > 10
        for record in records:
            assert not record.missing, record
            audio, rate = sf.read(record.audio_path, dtype="int16")
            assert audio.shape == (record.samples, 2) and rate == 44100
        assert not list(root.rglob(".incoming-*"))  # ...and gone after reopening
        on_disk = {p for folder in ("audio", "trash") for p in (root / folder).glob("*.wav")}
        assert on_disk == {r.audio_path for r in records}  # no stray files, none lost
        prompts = {r.prompt for r in records}
        assert "victim before_commit" in prompts  # complete but uncommitted: adopted
        assert "victim mid_write" not in prompts
        moved = lib.search("before mid_delete")[0]
        assert not moved.deleted and moved.audio_path.parent == root / "audio"
    finally:
        lib.close()


# --------------------------------------------------------------------------------------------
# Export


def test_export_to_folder_and_zip(lib: ClipLibrary, files, tmp_path: Path):
    a = lib.add(make_result(files, prompt="laser blast", seed=1))
    b = lib.add(make_result(files, prompt="door creak", seed=2), name="Creak!")
    lib.update(b.id, tags=["ui"], rating=3)
    out = tmp_path / "export"
    out.mkdir()
    written = lib.export([a.id, b.id, a.id], out)
    # {n} is each take's variation number (two sounds made once), not its place (issue 31).
    assert [p.name for p in written] == ["laser-blast_01.wav", "Creak!_01.wav"]
    for path, record in zip(written, (a, lib.get(b.id)), strict=True):
        samples, _ = sf.read(path, dtype="int16")
        assert np.array_equal(samples, lib.load_audio(record.id))  # the take, as it was kept
        meta = json.loads(path.with_suffix(".json").read_text())
        assert meta["library_id"] == record.id and meta["seed"] == record.seed
        assert meta["request"]["prompt"] == record.prompt
        assert meta["output"]["path"] == str(path.resolve())
        assert meta["library"]["tags"] == record.tags
        assert {e["role"] for e in meta["model_files"]} == {"text_encoder", "tokenizer", "dit",
                                                             "decoder"}
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [p.name for p in written] + [p.with_suffix(".json").name for p in written])

    archive = lib.export_zip([a.id, b.id], tmp_path / "takes.zip")
    with zipfile.ZipFile(archive) as zf:
        names = sorted(zf.namelist())
        assert names == sorted(["laser-blast_01.wav", "laser-blast_01.json",
                                "Creak!_01.wav", "Creak!_01.json"])
        meta = json.loads(zf.read("Creak!_01.json"))
        assert meta["library"]["rating"] == 3 and meta["output"]["path"] == "Creak!_01.wav"
        audio, _ = sf.read(io.BytesIO(zf.read("laser-blast_01.wav")), dtype="int16")
        assert np.array_equal(audio, lib.load_audio(a.id))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    with pytest.raises(LibraryError, match="no take #77"):
        lib.export([a.id, 77], out)
    with pytest.raises(LibraryError, match="does not exist"):
        lib.export([a.id], tmp_path / "nowhere")


# --------------------------------------------------------------------------------------------
# Command line


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = entry.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_generate_records_and_library_commands(capsys, monkeypatch, tmp_path: Path):
    home = tmp_path / "home"
    monkeypatch.setenv("SA3_STUDIO_HOME", str(home))
    models = tmp_path / "models"
    models.mkdir()
    base = ["generate", "--models-dir", str(models), "--seconds", "1"]
    code, out, err = _cli(capsys, *base, "--prompt", "rain on a tin roof", "--seed", "7",
                          "--out", str(tmp_path / "rain.wav"))
    assert code == 0, err
    assert out.strip().endswith("seed 7") and out.count("\n") == 1
    assert json.loads((tmp_path / "rain.json").read_text())["library_id"] == 1
    assert read_metadata(tmp_path / "rain.wav")["library_id"] == 1  # the --out file explains
    code, _, err = _cli(capsys, *base, "--prompt", "wind", "--no-library",
                        "--out", str(tmp_path / "wind.flac"))
    assert code == 0, err
    assert json.loads((tmp_path / "wind.json").read_text())["library_id"] is None
    code, _, err = _cli(capsys, *base, "--prompt", "bell", "--seed", "3", "--init-audio",
                        str(tmp_path / "rain.wav"), "--out", str(tmp_path / "bell.wav"))
    assert code == 0, err

    lib = ClipLibrary(home / "library")
    try:
        takes = lib.search(limit=None)
        assert [(t.id, t.mode) for t in takes] == [(3, "a2a"), (2, "imported"), (1, "t2a")]
        assert _ids(lib.lineage(3)) == [3, 2, 1]  # the init file was take 1, exported
        assert lib.get(3).init_source == str((tmp_path / "rain.wav").resolve())
        assert np.array_equal(lib.load_audio(1), sf.read(tmp_path / "rain.wav",
                                                          dtype="int16")[0])
    finally:
        lib.close()

    code, out, err = _cli(capsys, "library", "list", "--search", "TIN roof", "--limit", "5")
    assert code == 0, err
    rows = [line for line in out.splitlines() if re.match(r"\s*\d+\s+\d{4}-", line)]
    assert len(rows) == 1 and rows[0].split()[0] == "1" and "rain on a tin roof" in rows[0]
    code, out, _ = _cli(capsys, "library", "list", "--search", "rain")  # names, init files too
    assert [line.split()[0] for line in out.splitlines()
            if re.match(r"\s*\d+\s+\d{4}-", line)] == ["3", "2", "1"]
    code, out, _ = _cli(capsys, "library", "list", "--limit", "2")
    assert code == 0 and "2 of 3 takes" in out
    code, out, err = _cli(capsys, "library", "show", "3")
    assert code == 0, err
    assert "bell" in out and "seed         3" in out and "sha256" in out and "#2" in out
    code, out, _ = _cli(capsys, "library", "show", str(tmp_path / "rain.wav"))
    assert code == 0 and out.startswith("take #1")
    code, out, _ = _cli(capsys, "library", "show", "1", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["prompt"] == "rain on a tin roof" == \
        shown["provenance"]["request"]["prompt"]
    dest = tmp_path / "picked"
    dest.mkdir()
    code, out, err = _cli(capsys, "library", "export", "1", "3", "--to", str(dest))
    assert code == 0, err
    assert [Path(line).name for line in out.split()] == ["rain-on-a-tin-roof_01.wav",
                                                         "bell_01.wav"]  # each its own {n}
    assert (dest / "bell_01.json").is_file()
    code, out, err = _cli(capsys, "library", "show", "42")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "#42" in err
    code, _, err = _cli(capsys, "library", "export", "1", "42", "--to", str(dest))
    assert code == 2 and err.count("\n") == 1 and "#42" in err
    code, _, err = _cli(capsys, "library", "remove", "1")
    assert code == 2 and err.count("\n") == 1


# --------------------------------------------------------------------------------------------
# A library that cannot be written


@contextlib.contextmanager
def read_only_folder(folder: Path):
    """`folder` made read-only for this process: a read-only bind mount over itself when
    running as root (chmod does not stop root), else chmod; skips when neither works."""
    mounted = False
    if os.geteuid() == 0:
        mount = shutil.which("mount")
        if mount is None or subprocess.run([mount, "--bind", str(folder), str(folder)],
                                           capture_output=True).returncode != 0:
            pytest.skip("running as root without bind mounts: cannot make a folder read-only")
        mounted = True
        if subprocess.run([mount, "-o", "remount,ro,bind", str(folder)],
                          capture_output=True).returncode != 0:
            _unmount(folder)
            pytest.skip("this system refuses read-only bind mounts")
    else:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        probe = folder / "probe"
        try:
            probe.write_bytes(b"")
        except OSError:
            pass
        else:
            probe.unlink()
            pytest.skip("the folder stayed writable")
        yield
    finally:
        if mounted:
            _unmount(folder)
        else:
            for path in [folder, *folder.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)


def _unmount(folder: Path) -> None:
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


LEAVE_WAL = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("UPDATE takes SET rating = 2 WHERE id = 1")
os._exit(0)  # no close: the change stays in the write-ahead log, as after a crash
"""


@pytest.mark.posix
@pytest.mark.parametrize("wal", [False, True], ids=["checkpointed", "wal-left-behind"])
def test_read_only_library_can_be_browsed_and_refuses_changes(tmp_path: Path, files, wal):
    root = tmp_path / "library"
    with ClipLibrary(root) as lib:
        take = lib.add(make_result(files, prompt="door slam", seed=3), name="Door")
        imported = lib.add_imported(np.full((2000, 2), 300, np.int16), "/sounds/hit.wav")
        lib.update(take.id, tags=["wood"], rating=4)
    if wal:
        subprocess.run([sys.executable, "-c", LEAVE_WAL, str(root / "library.sqlite3")],
                       check=True)
        assert (root / "library.sqlite3-wal").stat().st_size > 0
    files_before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    out = tmp_path / "out"
    out.mkdir()

    with read_only_folder(root):
        lib = ClipLibrary(root)
        try:
            assert lib.read_only
            notice = lib.notice or ""
            assert "read-only" in notice and notice.count(". ") == 0 and notice.endswith(".")
            assert "close other" not in notice
            records = lib.search(include_deleted=True, limit=None)
            assert [r.id for r in records] == [imported.id, take.id]
            assert lib.get(take.id).rating == (2 if wal else 4)  # the WAL was read
            assert [r.id for r in lib.search("wood")] == [take.id] and lib.count() == 2
            assert np.array_equal(lib.load_audio(take.id), make_result(files, seed=3).pcm)
            written = lib.export([take.id, imported.id], out)
            assert [p.suffix for p in written] == [".wav", ".flac"]
            finished = lib.export([take.id], out, ExportOptions(
                settings=FinishSettings(loudness_lufs=-20.0, format="wav24")))
            assert sf.info(finished[0]).subtype == "PCM_24"  # finishing writes nothing inside
            assert lib.identify(written[0]).id == take.id
            refused = [lambda: lib.add(make_result(files, seed=9)),
                       lambda: lib.add_imported(np.ones((100, 2), np.int16), "x.wav"),
                       lambda: lib.update(take.id, rating=1),
                       lambda: lib.update(take.id, notes="x"), lambda: lib.delete(take.id),
                       lambda: lib.set_finishing(take.id, None)]
            for change in refused:
                with pytest.raises(LibraryError) as info:
                    change()
                message = str(info.value)
                assert "read-only" in message and "nothing was changed" in message
                assert "close other" not in message and message.count(". ") == 0
        finally:
            lib.close()
    files_after = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert files_after == files_before  # not a byte written, not a file added


@pytest.mark.posix
def test_read_only_folder_without_a_library_is_one_sentence(tmp_path: Path):
    root = tmp_path / "empty"
    root.mkdir()
    with read_only_folder(root):
        with pytest.raises(LibraryError, match="read-only") as info:
            ClipLibrary(root)
    assert str(info.value).count(". ") == 0


# --------------------------------------------------------------------------------------------
# Hostile input: every failure a LibraryError sentence, never a raw exception


def test_impossible_ids_are_sentences(lib: ClipLibrary, files):
    take = lib.add(make_result(files))
    for bad in (1180591620717411303424, -1, 0, 2**63, np.int64(-5)):
        with pytest.raises(LibraryError, match=r"There is no take #-?\d+ in the library"):
            lib.get(bad)
        with pytest.raises(LibraryError, match="no take #"):
            lib.update(bad, rating=1)
        with pytest.raises(LibraryError, match="no take #"):
            lib.export([take.id, bad], lib.root.parent)
        with pytest.raises(LibraryError, match="no take #"):
            lib.add(make_result(files, seed=2), parent_id=bad)
    for bad in ("abc", 1.5, None, True):
        with pytest.raises(LibraryError, match="not a take id"):
            lib.get(bad)
    assert lib.get("1").id == take.id  # digits, as a command line gives them
    with pytest.raises(LibraryError, match="Tags must be"):
        lib.update(take.id, tags=5)
    with pytest.raises(LibraryError, match="not a take id"):
        lib.export(None, lib.root.parent)
    assert lib.search(limit=2**80, offset=2**80) == []
    assert [r.id for r in lib.search(limit=2**80)] == [take.id]
    assert lib.search(min_rating=2**70) == [] and lib.count(min_rating=2**70) == 0
    assert lib.search(until="9999-12-31") and lib.search(since="0001-01-01T00:00+05:00")
    with pytest.raises(LibraryError, match="no take #"):
        lib.lineage(2**70)


def test_text_that_is_not_utf8_is_kept_visible(lib: ClipLibrary, tmp_path: Path):
    """Bytes of a file name that are not UTF-8 reach Python as surrogate escapes, which
    SQLite and libsndfile refuse; the library keeps them as \\xff escapes instead."""
    odd = tmp_path / "engines-\udcff"  # the bytes b'engines-\xff' on disk
    files = engine_files_in(odd)
    source = "/sounds/caf\udce9.wav"
    imported = lib.add_imported(np.full((500, 2), 7, np.int16), source, name="n\udcffx")
    assert imported.init_source == "/sounds/caf\\xe9.wav" and imported.name == "n\\xffx"
    take = lib.add(make_result(files, prompt="rain \udcff roof", seed=4),
                   init_source=source, name="\ud800odd")
    assert take.prompt == "rain \\xff roof" and take.name == "\\ud800odd"
    assert all("\\xff" in e["path"] for e in take.engine_files)
    assert lib.update(take.id, notes="x\udcffy", tags=["t\udcff"]).notes == "x\\xffy"
    assert [r.id for r in lib.search("caf")] == [take.id, imported.id]
    assert lib.add(make_result(files, prompt="again", seed=5)).engine_files == \
        take.engine_files  # the hash cache found them under the same escaped names


def test_unreadable_take_audio_is_a_sentence(lib: ClipLibrary, files):
    take = lib.add(make_result(files))
    take.audio_path.write_bytes(b"RIFF" + os.urandom(200))
    for read in (lib.load_audio, lib.load_float_audio):
        with pytest.raises(LibraryError, match=r"cannot be read: the file is damaged") as info:
            read(take.id)
        assert str(info.value).count(". ") == 0


def test_database_failing_under_a_read_is_a_sentence(lib: ClipLibrary, files):
    lib.add(make_result(files))
    conn = lib._conn
    lib._conn = sqlite3.connect(":memory:")  # a database that has lost its tables
    try:
        for read in (lambda: lib.get(1), lambda: lib.search(), lambda: lib.count(),
                     lib.models):
            with pytest.raises(LibraryError, match="^The library could not be read") as info:
                read()
            assert str(info.value).count(". ") == 0
    finally:
        lib._conn.close()
        lib._conn = conn


def test_library_in_a_folder_whose_name_is_not_utf8(tmp_path: Path, files):
    root = tmp_path / "h\udcff\udcfeome" / "library"
    with ClipLibrary(root) as lib:
        take = lib.add(make_result(files, prompt="coin"))
        imported = lib.add_imported(np.full((300, 2), 9, np.int16), str(root / "x\udcff.wav"))
        assert np.array_equal(lib.load_audio(imported.id), np.full((300, 2), 9, np.int16))
        assert lib.identify(take.audio_path).id == take.id
    (root / "library.sqlite3").write_bytes(b"")  # and it can be rebuilt there
    with ClipLibrary(root) as lib:
        assert lib.count() == 2 and "\\xff\\xfe" in (lib.notice or "")
        (lib.notice or "").encode("utf-8")


def test_identify_never_waits_on_a_pipe(lib: ClipLibrary, tmp_path: Path):
    fifo = tmp_path / "copy.wav"
    os.mkfifo(fifo)  # opening it to read would block until something writes
    assert lib.identify(fifo) is None and read_metadata(fifo) is None
    assert lib.identify(tmp_path) is None
