"""The library keeps each take's finishing chain and quality flags (issue 11): schema 3 and its
migration, filters, the edit journal bringing chains back after a damaged database, and exports
that finish takes (checked with readers that are not ours: pyloudnorm, wavinfo, soundfile)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import sqlite3
import zipfile
from pathlib import Path

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
import wavinfo

import main as entry
from engines.finish.finished_take import finish_take
from engines.finish.settings import FinishSettings
from engines.store import opening, schema
from engines.store.export_plan import ExportOptions
from engines.store.library import ClipLibrary, LibraryError
from tests.engines.test_library import engine_files_in, make_result

RATE = 44100


@pytest.fixture
def files(tmp_path: Path):
    return engine_files_in(tmp_path / "engines")


def tone(seconds: float = 2.0, level: float = 0.3, freq: float = 440.0) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    wave = (level * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    return np.stack([wave, wave], axis=1)


def pcm16(audio: np.ndarray) -> np.ndarray:
    return np.round(np.clip(audio, -1, 1) * 32767).astype(np.int16)


def with_audio(result, audio: np.ndarray, quality: list[str] | None = None):
    """The result with these samples (and the flags the worker would have given them)."""
    result.pcm = pcm16(audio)
    result.quality = list(quality or [])
    return result


def finished_record(audio: np.ndarray, **settings) -> dict:
    return finish_take(audio, FinishSettings(**settings)).record()


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = entry.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------------------------
# Schema 3: migration, quality, finishing


def _version_2_library(root: Path) -> dict[str, np.ndarray]:
    """A schema 2 library made the way version 2 made it (its DDL is kept in schema.py),
    with takes whose audio is clean, clipped, silent, and gone."""
    audio_dir = root / "audio"
    audio_dir.mkdir(parents=True)
    square = np.where(tone(1.0) >= 0, 1.0, -1.0).astype(np.float32)
    takes = {"clean": tone(1.0), "clipped": square, "silent": np.zeros((RATE, 2), np.float32)}
    conn = sqlite3.connect(root / "library.sqlite3")
    conn.execute(schema._TAKES_V2)
    schema._run_script(conn, schema._INDEXES_V2)
    for take_id, (prompt, audio) in enumerate([*takes.items(), ("gone", tone(1.0))], start=1):
        name = f"{take_id:06d}-{prompt}.wav"
        if prompt != "gone":
            sf.write(audio_dir / name, pcm16(audio), RATE, subtype="PCM_16")
        conn.execute("INSERT INTO takes (id, created, prompt, model, seconds, mode, audio_file,"
                     " sample_rate, samples, search_text) VALUES (?, ?, ?, 'demo', 1.0, 't2a',"
                     " ?, 44100, 44100, ?)",
                     (take_id, f"2025-01-0{take_id}T10:00:00.000+00:00", prompt, name, prompt))
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    return takes


def test_version_2_library_migrates_and_its_takes_are_measured(tmp_path: Path, files):
    root = tmp_path / "library"
    _version_2_library(root)
    lib = ClipLibrary(root)
    try:
        assert lib.migrated_from == 2 and lib.notice is None
        backup = sqlite3.connect(root / "library.sqlite3.v2-backup")
        assert backup.execute("PRAGMA user_version").fetchone()[0] == 2
        backup.close()
        columns = {row[1] for row in lib._conn.execute("PRAGMA table_info(takes)")}
        assert {"finishing", "quality"} <= columns
        # Measured from the audio when the library opened; a take without audio waits.
        assert [lib.get(i).quality for i in (1, 2, 3, 4)] == [[], ["clipping"], ["silent"], []]
        assert lib._conn.execute("SELECT quality FROM takes WHERE id = 4").fetchone()[0] is None
        assert all(lib.get(i).finishing is None for i in (1, 2, 3, 4))
        assert [r.id for r in lib.search(quality="clean")] == [1]  # 4 is not known to be
        assert [r.id for r in lib.search(quality="flagged")] == [3, 2]
        kept = lib.add(make_result(files, seed=8))
        assert kept.id == 5 and kept.quality == []
    finally:
        lib.close()
    # A new library's table is the migrated one's, column for column.
    fresh = ClipLibrary(tmp_path / "fresh")
    try:
        def shape(conn):
            return [tuple(row)[1:] for row in conn.execute("PRAGMA table_info(takes)")]

        migrated = sqlite3.connect(root / "library.sqlite3")
        assert shape(fresh._conn) == shape(migrated)
        migrated.close()
    finally:
        fresh.close()


def test_a_damaged_version_2_library_is_salvaged_and_measured(tmp_path: Path):
    root = tmp_path / "library"
    _version_2_library(root)
    db = root / "library.sqlite3"
    db.write_bytes(bytes(100) + db.read_bytes()[100:])  # the header gone, the rows not
    with ClipLibrary(root) as lib:
        assert "4 takes from the old database's readable rows" in (lib.notice or "")
        assert [r.prompt for r in lib.search(sort="id", descending=False)] == [
            "clean", "clipped", "silent", "gone"]
        assert [lib.get(i).quality for i in (1, 2, 3)] == [[], ["clipping"], ["silent"]]
        assert lib.get(1).finishing is None


def test_old_takes_are_measured_a_budget_at_a_time(tmp_path: Path, monkeypatch):
    root = tmp_path / "library"
    _version_2_library(root)
    monkeypatch.setattr(opening, "CHECK_ON_OPEN_S", -1.0)  # opening measures nothing
    lib = ClipLibrary(root)
    try:
        assert lib.count(quality="flagged") == 0 and lib.count(quality="clean") == 0
        assert lib.check_quality() == 3  # the take without audio stays unmeasured
        assert lib.count(quality="flagged") == 2 and lib.check_quality() == 0
    finally:
        lib.close()


def test_kept_takes_carry_their_quality_flags(tmp_path: Path, files):
    with ClipLibrary(tmp_path / "library") as lib:
        flagged = lib.add(with_audio(make_result(files, seed=1), tone(), ["clipping",
                                                                          "dc-offset"]))
        clean = lib.add(with_audio(make_result(files, seed=2), tone(), []))
        offset = tone() + np.float32(0.1)
        imported = lib.add_imported(offset, "/sounds/hum.wav")
        silent = lib.add_imported(np.zeros((RATE, 2), np.int16), "/sounds/nothing.wav")
        assert flagged.quality == ["clipping", "dc-offset"] and clean.quality == []
        assert imported.quality == ["dc-offset"] and silent.quality == ["silent"]
        assert lib.get(flagged.id).sidecar()["quality"] == ["clipping", "dc-offset"]
        ids = lambda **kw: [r.id for r in lib.search(limit=None, **kw)]  # noqa: E731
        assert ids(quality="flagged") == [silent.id, imported.id, flagged.id]
        assert ids(quality="clean") == [clean.id]
        assert ids(quality="dc-offset") == [imported.id, flagged.id]
        assert ids(quality="silent") == [silent.id] and ids(quality="non-finite") == []
        assert lib.count(quality="clipping") == 1
        with pytest.raises(LibraryError, match="not a quality filter") as info:
            lib.search(quality="loud")
        assert str(info.value).count(". ") == 0


def test_finishing_is_kept_validated_and_filtered(tmp_path: Path, files):
    with ClipLibrary(tmp_path / "library") as lib:
        take = lib.add(with_audio(make_result(files, seed=1, seconds=2.0), tone()))
        other = lib.add(make_result(files, seed=2))
        made = finished_record(tone(), trim=True, loudness_lufs=-20.0, true_peak_dbtp=-1.0,
                               rate=48000, preset="Mine")
        kept = lib.set_finishing(take.id, made)
        assert kept.finished and kept.finishing == json.loads(json.dumps(made))
        assert kept.finishing["chain"]["loudness_lufs"] == -20.0
        assert kept.sidecar()["finishing"]["chain"]["preset"] == "Mine"
        assert [r.id for r in lib.search(finished=True)] == [take.id]
        assert [r.id for r in lib.search(finished=False)] == [other.id]
        assert lib.count(finished=True, quality="clean") == 1
        bad = {**made, "chain": {**made["chain"], "loudness_lufs": -70.0}}
        for wrong, says in ((bad, "loudness -70 LUFS is out of range"),
                            ({"chain": "loud"}, "JSON object"), ([1], "JSON object"),
                            ({**made, "loop_points": [5, 2]}, "loop points"),
                            ({**made, "report": {"x": object()}}, "JSON cannot keep")):
            with pytest.raises(LibraryError, match=says) as info:
                lib.set_finishing(take.id, wrong)
            assert str(info.value).count(". ") == 0 and str(info.value).endswith(".")
        assert lib.get(take.id).finishing == kept.finishing  # refusals change nothing
        assert lib.set_finishing(take.id, None).finishing is None
        with pytest.raises(LibraryError, match="no take #99"):
            lib.set_finishing(99, made)


@pytest.mark.parametrize(("damage", "journal_has_quality"), [
    ("garbage", True), ("garbage", False), ("header", False)])
def test_finishing_and_quality_survive_a_damaged_database(tmp_path: Path, files, damage: str,
                                                         journal_has_quality: bool):
    """"garbage": nothing can be read, so the takes come from their notes and the journal;
    "header": the rows are read back (salvaged) from the damaged file."""
    root = tmp_path / "library"
    with ClipLibrary(root) as lib:
        loud = lib.add(with_audio(make_result(files, seed=1, seconds=2.0), tone(level=0.5)))
        # The worker's flags say clean; the audio is silence: only a measurement says so.
        quiet = lib.add(with_audio(make_result(files, seed=2), np.zeros((RATE, 2)), []))
        made = finished_record(tone(level=0.5), loudness_lufs=-16.0, rate=48000)
        lib.set_finishing(loud.id, made)
        lib.set_finishing(quiet.id, finished_record(tone(), mono=True))
        lib.set_finishing(quiet.id, None)  # the last word counts
        before = lib.get(loud.id)
    journal = root / "library-edits.jsonl"
    if not journal_has_quality:  # a journal written before flags were kept
        lines = [json.loads(line) for line in journal.read_text().splitlines()]
        for line in lines:
            line["set"].pop("quality", None)
        journal.write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = root / "library.sqlite3"
    if damage == "garbage":
        db.write_bytes(b"not a database " * 500)
    else:
        db.write_bytes(bytes(100) + db.read_bytes()[100:])

    with ClipLibrary(root) as lib:
        assert lib.notice is not None and "damaged" in lib.notice
        assert ("readable rows" in lib.notice) == (damage == "header")
        back = lib.get(loud.id)
        assert back.finishing == before.finishing and back.finishing["chain"]["rate"] == 48000
        assert lib.get(quiet.id).finishing is None
        # What the worker said comes back from a salvaged row or the journal; with neither,
        # the flags are measured again from the audio, which is silence.
        remeasured = damage == "garbage" and not journal_has_quality
        assert lib.get(quiet.id).quality == (["silent"] if remeasured else [])
        assert back.quality == []
        assert [r.id for r in lib.search(finished=True)] == [loud.id]


# --------------------------------------------------------------------------------------------
# Exports through the library


def test_export_never_overwrites_and_names_by_template(tmp_path: Path, files):
    out = tmp_path / "out"
    out.mkdir()
    with ClipLibrary(tmp_path / "library") as lib:
        a = lib.add(make_result(files, prompt="door creak", seed=7), name="Creak")
        b = lib.add(make_result(files, prompt="door creak", seed=8))
        first = lib.export([a.id, b.id], out)
        hashes = {p: sha(p) for p in out.iterdir()}
        again = lib.export([a.id, b.id], out)
        assert [p.name for p in first] == ["Creak_01.wav", "door-creak_02.wav"]
        assert [p.name for p in again] == ["Creak_01_2.wav", "door-creak_02_2.wav"]
        assert {p: sha(p) for p in hashes} == hashes  # the first export untouched
        assert json.loads(again[0].with_suffix(".json").read_text())["output"]["path"] == \
            str(again[0].resolve())
        # A template; two takes that render to one name are numbered, never merged.
        named = lib.export([a.id, b.id], out, ExportOptions(
            template="{category}_{prompt}_{n:02}_{seed}", category="DOORWood"))
        assert [p.name for p in named] == ["DOORWood_door creak_01_7.wav",
                                          "DOORWood_door creak_02_8.wav"]
        # Two variations of one sound (same prompt, consecutive seeds) under a template without
        # {n} are numbered as --variations numbers them (issue 31); the names in use get _3.
        same = lib.export([a.id, b.id], out, ExportOptions(template="{name}"))
        assert [p.name for p in same] == ["Creak_01_3.wav", "door-creak_02_3.wav"]
        clash = lib.export([a.id, b.id], out, ExportOptions(template="x"))
        assert [p.name for p in clash] == ["x_01.wav", "x_02.wav"]
        (out / "y.json").write_text("{}")  # a sidecar's name in use counts as well
        lone = lib.add(make_result(files, prompt="window rattle", seed=3))  # a sound made once
        assert lib.export([lone.id], out, ExportOptions(template="y"))[0].name == "y_2.wav"
        archive = lib.export_zip([a.id, b.id], tmp_path / "x.zip", ExportOptions(template="x"))
        with zipfile.ZipFile(archive) as zf:
            assert sorted(zf.namelist()) == ["x_01.json", "x_01.wav", "x_02.json", "x_02.wav"]
        archive = lib.export_zip([a.id, lone.id], tmp_path / "z.zip", ExportOptions(template="z"))
        with zipfile.ZipFile(archive) as zf:  # two sounds under one name: numbered, never merged
            names = sorted(zf.namelist())
        assert names == ["z.json", "z.wav", "z_01.json", "z_01.wav"]  # the lone sound, then #1


def test_export_finishes_by_the_given_chain_in_a_folder_and_a_zip(tmp_path: Path, files):
    out = tmp_path / "out"
    out.mkdir()
    with ClipLibrary(tmp_path / "library") as lib:
        take = lib.add(with_audio(make_result(files, seed=3, seconds=3.0), tone(3.0)))
        settings = FinishSettings(loudness_lufs=-16.0, true_peak_dbtp=-1.0, rate=48000,
                                  mono=True, format="flac", preset="Loud")
        raw_bytes = take.audio_path.read_bytes()
        path = lib.export([take.id], out, ExportOptions(settings=settings,
                                                        template="{preset}_{n}"))[0]
        assert path.name == "Loud_1.flac" and take.audio_path.read_bytes() == raw_bytes
        audio, rate = sf.read(path, dtype="float64")
        assert sf.info(path).format == "FLAC" and rate == 48000 and audio.ndim == 1
        assert abs(pyloudnorm.Meter(rate).integrated_loudness(audio) + 16.0) < 0.3
        meta = json.loads(path.with_suffix(".json").read_text())
        assert meta["finishing"]["chain"]["mono"] is True and meta["finishing"]["source"] == \
            "given"
        assert meta["output"] == {**meta["output"], "format": "flac", "sample_rate": 48000,
                                  "channels": 1, "samples": len(audio)}
        assert lib.identify(path).id == take.id  # by the note it carries

        archive = lib.export_zip([take.id], tmp_path / "t.zip", ExportOptions(settings=settings))
        with zipfile.ZipFile(archive) as zf:
            name = "rain-on-a-tin-roof_01.flac"
            assert sorted(zf.namelist()) == [name, name.replace(".flac", ".json")]
            inside, rate = sf.read(io.BytesIO(zf.read(name)), dtype="float64")
            assert np.array_equal(inside, audio)
            assert json.loads(zf.read(Path(name).with_suffix(".json").name))["finishing"]
        assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name or "partial" in p.name]


# --------------------------------------------------------------------------------------------
# The command line


def test_generate_keeps_the_chain_and_export_makes_the_same_file(capsys, tmp_path: Path,
                                                                 home: Path, models: Path):
    made = tmp_path / "rain.wav"
    code, _, err = cli(capsys, "generate", "--models-dir", str(models), "--prompt",
                       "rain on a tin roof", "--seconds", "6", "--seed", "11", "--preset",
                       "Ambience loop", "--out", str(made))
    assert code == 0, err
    with ClipLibrary(home / "library") as lib:
        record = lib.get(1)
        assert record.finishing["chain"]["preset"] == "Ambience loop"
        assert record.finishing["loop"]["method"] == "model"
        assert record.finishing == json.loads(made.with_suffix(".json").read_text())["finishing"]

    dest = tmp_path / "export"
    code, out, err = cli(capsys, "library", "export", "1", "--to", str(dest))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == str(dest / "rain-on-a-tin-roof_01.wav")
    assert "finished by its stored chain ('Ambience loop')" in lines[1] and "LUFS" in lines[1]
    exported = dest / "rain-on-a-tin-roof_01.wav"
    # The loop is made again by the model with the stored seed: the very same samples, and
    # the same metadata - the same file, byte for byte.
    assert np.array_equal(sf.read(exported, dtype="int32")[0], sf.read(made, dtype="int32")[0])
    assert exported.read_bytes() == made.read_bytes()
    loops = wavinfo.WavInfoReader(str(exported)).smpl.sample_loops
    frames = sf.info(exported).frames
    assert [(lp.start, lp.end) for lp in loops] == [(0, frames - 1)]
    meta = json.loads(exported.with_suffix(".json").read_text())
    assert meta["finishing"]["source"] == "stored" and meta["output"]["sample_rate"] == 48000

    code, out, err = cli(capsys, "library", "export", "1", "--to", str(dest), "--raw")
    assert code == 0, err
    raw = dest / "rain-on-a-tin-roof_01_2.wav"
    assert out.splitlines() == [str(raw)] and sf.info(raw).samplerate == 44100
    meta = json.loads(raw.with_suffix(".json").read_text())
    assert meta["finishing"] is None and meta["library"]["finishing"]["loop"]["seed"]


def test_export_flags_names_and_refusals(capsys, tmp_path: Path, home: Path, models: Path):
    code, _, err = cli(capsys, "generate", "--models-dir", str(models), "--prompt",
                       "coin pickup", "--seconds", "2", "--seed", "3", "--no-library",
                       "--out", str(tmp_path / "coin.wav"))
    assert code == 0, err
    with ClipLibrary(home / "library") as lib:
        take = lib.add_imported(sf.read(tmp_path / "coin.wav", dtype="int16")[0],
                                str(tmp_path / "coin.wav"), name="Coin")
    dest = tmp_path / "dest"
    for flags, says in ((["--loudness", "-70"], "loudness -70 LUFS is out of range"),
                        (["--name", "{nope}"], "{nope} is unknown"),
                        (["--raw", "--mono"], "--raw"),
                        (["--preset", "nope"], "no finishing preset")):
        code, out, err = cli(capsys, "library", "export", str(take.id), "--to", str(dest),
                             *flags)
        assert code == 2 and out == "" and says in err, err
        assert err.count("\n") == 1 and err.startswith("error: ")
        assert not dest.exists()  # refused before anything was made

    args = ["library", "export", str(take.id), "--to", str(dest), "--loudness", "-18",
            "--true-peak", "-1", "--trim", "--fade-out", "30", "--rate", "48000", "--format",
            "wav24", "--name", "{category}_{name}_{n:02}", "--category", "COINMetal"]
    code, out, err = cli(capsys, *args)
    # No UCS list is imported: the CatID is written as given, and said once (issue 31).
    assert code == 0 and err.count("'COINMetal' was not checked") == 1, err
    first = dest / "COINMetal_Coin_01.wav"
    assert out.splitlines()[0] == str(first) and "finished by the flags" in out
    audio, rate = sf.read(first, dtype="float64")
    assert rate == 48000 and sf.info(first).subtype == "PCM_24"
    assert abs(pyloudnorm.Meter(rate).integrated_loudness(audio) + 18.0) < 0.3
    before = sha(first)
    code, out, err = cli(capsys, *args)
    assert code == 0, err
    assert out.splitlines()[0] == str(dest / "COINMetal_Coin_01_2.wav") and sha(first) == before

    # An imported take has no model to make its loop: a crossfade, and the user is told.
    code, out, err = cli(capsys, "library", "export", str(take.id), "--to", str(dest),
                         "--loop", "--format", "wav16")
    assert code == 0
    assert re.fullmatch(r"warning: The loop of take #\d+ was made by crossfade, because it is "
                        r"imported audio, which no model set made\.\n", err), err
    looped = Path(out.splitlines()[0])
    loops = wavinfo.WavInfoReader(str(looped)).smpl.sample_loops
    assert [(lp.start, lp.end) for lp in loops] == [(0, sf.info(looped).frames - 1)]


def test_a_loop_whose_model_cannot_run_here_is_a_crossfade_and_a_warning(capsys, tmp_path,
                                                                         home: Path, files):
    with ClipLibrary(home / "library") as lib:
        take = lib.add(with_audio(make_result(files, seed=4, seconds=4.0, model="sm-sfx"),
                                  tone(4.0)))
    code, out, err = cli(capsys, "library", "export", str(take.id), "--zip",
                         str(tmp_path / "loops.zip"), "--loop")
    assert code == 0
    assert err.startswith(f"warning: The loop of take #{take.id} was made by crossfade, "
                          "because its model could not make it (") and err.count("\n") == 1
    assert out.splitlines()[0] == str(tmp_path / "loops.zip")
    with zipfile.ZipFile(tmp_path / "loops.zip") as zf:
        meta = json.loads(zf.read("rain-on-a-tin-roof_01.json"))
    assert meta["finishing"]["loop"]["method"] == "crossfade"


def test_library_list_filters_by_quality_and_show_says_it_in_words(capsys, home: Path, files):
    with ClipLibrary(home / "library") as lib:
        lib.add(with_audio(make_result(files, prompt="clean hit", seed=1), tone(), []))
        lib.add(with_audio(make_result(files, prompt="bad hit", seed=2), tone(),
                           ["clipping", "dc-offset"]))
        lib.add_imported(np.zeros((RATE, 2), np.int16), "/sounds/nothing.wav")
        lib.set_finishing(1, finished_record(tone(), loudness_lufs=-18.0, true_peak_dbtp=-1.0,
                                             preset="Game SFX one-shot"))

    def listed(*flags: str) -> dict[str, list[str]]:
        code, out, err = cli(capsys, "library", "list", *flags)
        assert code == 0, err
        header = out.splitlines()[0]
        assert "MARKS" in header and "FLAGS" in header
        start = header.index("FLAGS")
        return {line.split()[0]: line[start:].split()[0].split(",")
                for line in out.splitlines()[1:-1]}

    assert listed() == {"3": ["silent"], "2": ["clip", "dc"], "1": ["-"]}
    assert listed("--flagged") == {"3": ["silent"], "2": ["clip", "dc"]}
    assert listed("--clean") == {"1": ["-"]}
    assert listed("--quality", "dc") == listed("--quality", "dc-offset") == {"2": ["clip", "dc"]}
    assert listed("--finished") == {"1": ["-"]}
    code, _, err = cli(capsys, "library", "list", "--flagged", "--clean")
    assert code == 2 and err.count("\n") == 1
    code, _, err = cli(capsys, "library", "list", "--quality", "loud")
    assert code == 2 and "not a quality flag" in err and err.count("\n") == 1

    code, out, err = cli(capsys, "library", "show", "2")
    assert code == 0, err
    assert "Clipping: the waveform is flattened" in out and "DC offset:" in out
    assert "finishing    - (exports are the raw take)" in out
    code, out, _ = cli(capsys, "library", "show", "1")
    assert "finishing    preset 'Game SFX one-shot': -18 LUFS, true peak at most -1 dBTP" in out
    assert re.search(r"after it     -18\.0 LUFS, -?\d+\.\d dBTP, 44100 Hz", out)
    assert "quality      no flags" in out
    code, out, _ = cli(capsys, "library", "show", "1", "--json")
    meta = json.loads(out)
    assert meta["quality"] == [] and meta["finishing"]["chain"]["loudness_lufs"] == -18.0
