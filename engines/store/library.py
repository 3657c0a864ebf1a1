"""The sound library: every take kept on disk and in SQLite with what made it.

Layout under the library folder (`engines.paths.library_dir()` unless told otherwise):
    library.sqlite3      one row per take (WAL mode, schema version in PRAGMA user_version)
    audio/               the takes, as WAV with a JSON note in RIFF INFO (see wavmeta)
    trash/               deleted takes' audio; `restore` moves it back

Crash safety: a take's audio is written under a temporary name, synced and renamed into audio/
while the writer holds the database's write lock, and only then is its row inserted and
committed. A writer killed at any moment therefore leaves either a complete take, or at most a
complete file with no row (which the next open adopts from its embedded note) and a temporary
file (which the next open removes): never a row pointing at a half-written file. Deletes move
the file inside the same locked transaction that flips the row's flag, and the next open puts
any file whose move was interrupted where its row says it belongs.

One sqlite3 connection per ClipLibrary, used from the thread that made it (the GUI thread, or
the CLI's main thread); transactions are short. Several processes may open the same library.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import soundfile as sf

from engines.constants import CHANNELS, SAMPLE_RATE
from engines.store import repair, schema, wavmeta
from engines.store.export import export_name, export_to_folder, export_to_zip
from engines.store.files import (
    as_stereo,
    content_sha256,
    copy_atomic,
    fsync_dir,
    sha256_file,
    slug,
)
from engines.store.query import SORT_KEYS, where_clause
from engines.store.records import (
    IMPORTED,
    LibraryError,
    TakeRecord,
    normalize_tags,
    record_from_row,
)
from engines.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from engines.backends.base import GenerationResult
    from engines.request import GenerationRequest

log = logging.getLogger(__name__)

__all__ = ["SCHEMA_VERSION", "ClipLibrary", "LibraryError", "TakeRecord", "copy_atomic",
           "normalize_tags", "sha256_file"]

DB_NAME = "library.sqlite3"
AUDIO_DIR = "audio"
TRASH_DIR = "trash"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")



class ClipLibrary:
    """The library in one folder. See the module docstring for the layout and guarantees."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.audio_dir = self.root / AUDIO_DIR
        self.trash_dir = self.root / TRASH_DIR
        self.db_path = self.root / DB_NAME
        self.notice: str | None = None  # one sentence for the user after a repair, else None
        self.migrated_from: int | None = None
        try:
            for folder in (self.root, self.audio_dir, self.trash_dir):
                folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise LibraryError(f"The library folder {self.root} cannot be created "
                               f"({err.strerror or err}); check the disk and its "
                               "permissions.") from err
        self._conn = self._open()
        try:
            self._use_fts = self._prepare()
            recovered = self._reconcile()
        except BaseException:
            self._conn.close()
            raise
        if self.notice is not None and recovered:
            self.notice = (self.notice.rstrip(".") + f"; {recovered} take"
                           f"{'s were' if recovered != 1 else ' was'} recovered from the "
                           "notes in their audio files.")

    # ---- opening ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.db_path, timeout=10.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        return conn

    def _open(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = None
        try:
            conn = self._connect()
            conn.execute("PRAGMA journal_mode=WAL")
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise sqlite3.DatabaseError(f"quick_check: {check}")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as err:
            if conn is not None:
                conn.close()
            if not repair.is_corruption(err):
                raise LibraryError(f"The library database {self.db_path} cannot be opened "
                                   f"({err}); close other copies of SA3 Studio and check the "
                                   "disk.") from err
            return self._start_over(err)
        if version > SCHEMA_VERSION:
            conn.close()
            raise LibraryError(f"The library at {self.root} was written by a newer SA3 Studio "
                               f"(schema {version}, this one knows {SCHEMA_VERSION}); update the "
                               "app to open it.")
        return conn

    def _start_over(self, err: BaseException) -> sqlite3.Connection:
        log.error("The library database %s is damaged (%s); starting a new one", self.db_path,
                  err)
        try:
            aside = repair.move_aside(self.db_path)
        except OSError as move_err:
            raise LibraryError(f"The library database {self.db_path} is damaged and could not be "
                               f"moved aside ({move_err.strerror or move_err}); move it away by "
                               "hand and start SA3 Studio again.") from move_err
        self.notice = (f"The library database was damaged; it was moved to {aside} and a new one "
                       "was started.")
        conn = self._connect()
        conn.execute("PRAGMA journal_mode=WAL")
        return conn

    def _prepare(self) -> bool:
        """Pragmas, migrations and the text index; returns whether FTS5 is used."""
        self._conn.execute("PRAGMA synchronous=FULL")  # takes are worth the fsync
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if 0 < version < SCHEMA_VERSION:
            self._backup(version)  # outside the write transaction, which would block it
        with self._write() as _:
            before = schema.migrate(self._conn, self.root)
            if 0 < before < SCHEMA_VERSION:
                self.migrated_from = before
                log.info("Library %s migrated from schema %d to %d", self.root, before,
                         SCHEMA_VERSION)
            return schema.ensure_fts(self._conn)

    def _backup(self, version: int) -> None:
        target = self.db_path.with_name(f"{DB_NAME}.v{version}-backup")
        if target.exists():
            return
        copy = sqlite3.connect(target)
        try:
            self._conn.backup(copy)
        finally:
            copy.close()

    def _reconcile(self) -> int:
        """Tidy up after any crash (see repair.py); returns how many takes were adopted back."""
        adopted = 0
        with self._write() as _:
            listing = repair.list_folders((self.audio_dir, self.trash_dir))
            rows = self._conn.execute("SELECT id, audio_file, deleted FROM takes").fetchall()
            claimed = repair.settle_files(rows, listing, self.audio_dir, self.trash_dir)
            for path in repair.unclaimed(listing, claimed):
                row = repair.row_from_file(path, deleted=path.parent == self.trash_dir,
                                           now=_now())
                if row is None or self._conn.execute(
                        "SELECT 1 FROM takes WHERE id = ?", (row["id"],)).fetchone() is not None:
                    repair.set_aside(path, self.trash_dir)
                    continue
                self._insert(row)
                adopted += 1
                log.warning("Take #%d had no library entry; it was rebuilt from %s", row["id"],
                            path)
        return adopted

    # ---- transactions ----------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[list[Callable[[], None]]]:
        """BEGIN IMMEDIATE ... COMMIT. The caller appends undo actions for files it touched;
        they run (newest first) if anything fails before the commit went through."""
        undo: list[Callable[[], None]] = []
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            raise LibraryError(f"The library is busy or read-only ({err}); close other copies "
                               "of SA3 Studio and try again.") from err
        try:
            yield undo
            self._conn.execute("COMMIT")
        except BaseException as err:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            for action in reversed(undo):
                try:
                    action()
                except OSError:
                    log.warning("Could not undo a file change after a failed library write",
                                exc_info=True)
            if isinstance(err, OSError):
                raise LibraryError(f"The library could not write to {self.root} "
                                   f"({err.strerror or err}); free some disk space or check its "
                                   "permissions, then try again.") from err
            if isinstance(err, sqlite3.Error):
                raise LibraryError(f"The library database refused the change ({err}); try "
                                   "again, and restart SA3 Studio if it keeps happening.") from err
            raise

    def _insert(self, row: dict) -> None:
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self._conn.execute(f"INSERT INTO takes ({names}) VALUES ({marks})", tuple(row.values()))
        if self._use_fts:
            self._conn.execute(f"INSERT INTO {schema.FTS_TABLE} (rowid, search_text) "
                               "VALUES (?, ?)", (row["id"], row["search_text"]))

    def _next_id(self) -> int:
        seq = self._conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'takes'").fetchone()
        top = self._conn.execute("SELECT max(id) FROM takes").fetchone()[0]
        return max(seq[0] if seq else 0, top or 0) + 1

    def _place_audio(self, folder: Path, name: str, audio: np.ndarray, note: dict,
                     title: str, undo: list[Callable[[], None]]) -> Path:
        """Write the take under a temporary name in `folder`, then rename it to `name`."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        temp = folder / f"{repair.TEMP_PREFIX}{secrets.token_hex(6)}.wav"
        os.close(os.open(temp, flags, 0o666))
        try:
            wavmeta.write_wav(temp, audio, SAMPLE_RATE, title, wavmeta.build_comment(note))
            final = folder / name
            os.replace(temp, final)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        undo.append(lambda: final.unlink(missing_ok=True))
        fsync_dir(folder)
        return final

    # ---- adding ----------------------------------------------------------------------------

    def add(self, result: GenerationResult, *, parent_id: int | None = None, name: str = "",
            init_source: str | None = None) -> TakeRecord:
        """Keep a finished take: its audio in audio/, its row with every setting."""
        row, pcm, fresh_hashes = self._row_for_result(result, parent_id, name, init_source)
        return self._add_row(row, pcm, fresh_hashes)

    def _row_for_result(self, result: GenerationResult, parent_id: int | None, name: str,
                        init_source: str | None) -> tuple[dict, np.ndarray, list[tuple]]:
        """(row without id and audio file, int16 samples, new hash-cache rows) for a result."""
        req = result.request
        pcm = as_stereo(result.pcm, "The take's audio")
        if pcm.dtype != np.int16:
            from engines.audio_io import pcm16_from_float

            pcm = pcm16_from_float(pcm)
        engine_files, fresh_hashes = self._engine_entries(result.files, req.mode)
        created = _now()
        name = " ".join(str(name).split())
        init_source = str(init_source) if init_source else None
        row = {
            "created": created, "name": name, "prompt": req.prompt,
            "negative_prompt": req.negative_prompt, "model": req.model,
            "decoder": req.decoder, "precision": req.precision, "seconds": float(req.seconds),
            "steps": int(req.steps), "seed": int(result.seed),
            "seed_was_random": int(bool(req.seed_was_random)), "cfg": float(req.cfg),
            "apg": float(req.apg), "init_noise_level": req.init_noise_level,
            "inpaint_spans": json.dumps([list(span) for span in req.inpaint_spans]),
            "limiter_ceiling": float(req.limiter_ceiling), "mode": req.mode,
            "backend": result.backend, "requested_backend": req.backend,
            "decoder_tier": getattr(result.files, "decoder_tier", "") or "",
            "timings_ms": json.dumps({k: round(float(v), 3)
                                      for k, v in result.timings_ms.items()}),
            "engine_files": json.dumps(engine_files),
            "warnings": json.dumps([str(w) for w in result.warnings]),
            "content_sha256": content_sha256(pcm), "parent_id": parent_id,
            "init_source": init_source, "sample_rate": int(result.sample_rate),
            "samples": int(pcm.shape[0]),
            "search_text": schema.search_text(req.prompt, name, [], "", init_source),
        }
        return row, pcm, fresh_hashes

    def add_imported(self, pcm: np.ndarray, source: str, name: str = "", *,
                     parent_id: int | None = None) -> TakeRecord:
        """Keep the user's own init audio (int16 as 16-bit, float exactly as 32-bit float), so a
        take made from it can be regenerated. The same samples imported twice are one take.
        `parent_id`: the take the file was exported from, when it is one (see `identify`)."""
        audio = as_stereo(pcm, f"The audio from '{source}'")
        digest = content_sha256(audio)
        same = self._conn.execute(
            "SELECT id FROM takes WHERE content_sha256 = ? AND mode = ? AND deleted = 0 "
            "ORDER BY id LIMIT 1", (digest, IMPORTED)).fetchone()
        if same is not None:
            return self.get(same[0])
        source = str(source)
        name = " ".join(str(name).split()) or Path(source).name
        row = {
            "created": _now(), "name": name, "prompt": "", "model": IMPORTED, "mode": IMPORTED,
            "seconds": audio.shape[0] / SAMPLE_RATE, "steps": 0, "seed": 0, "cfg": 0.0,
            "apg": 0.0, "limiter_ceiling": 0.0, "backend": "", "requested_backend": "",
            "content_sha256": digest, "init_source": source, "sample_rate": SAMPLE_RATE,
            "samples": int(audio.shape[0]), "parent_id": parent_id,
            "search_text": schema.search_text("", name, [], "", source),
        }
        return self._add_row(row, audio, [])

    def _add_row(self, row: dict, audio: np.ndarray, fresh_hashes: list[tuple]) -> TakeRecord:
        with self._write() as undo:
            take_id = self._next_id()
            parent_id = row.get("parent_id")
            if parent_id is not None and self._conn.execute(
                    "SELECT 1 FROM takes WHERE id = ?", (parent_id,)).fetchone() is None:
                raise LibraryError(f"There is no take #{parent_id} in the library to be this "
                                   "take's parent; pass an existing id or none.")
            note = {**{k: row.get(k) for k in (
                "created", "prompt", "negative_prompt", "seed", "model", "decoder", "precision",
                "steps", "cfg", "apg", "seconds", "mode", "init_noise_level", "limiter_ceiling",
                "backend", "parent_id")}, "library_id": take_id}
            if row.get("inpaint_spans", "[]") != "[]":
                note["inpaint_spans"] = json.loads(row["inpaint_spans"])
            file_name = f"{take_id:06d}-{slug(row['name'] or row['prompt'])}-" \
                        f"{secrets.token_hex(3)}.wav"
            self._place_audio(self.audio_dir, file_name, audio, note,
                              wavmeta.title_for(row["name"], row["prompt"]), undo)
            self._insert({"id": take_id, **row, "audio_file": file_name})
            self._conn.executemany(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                "VALUES (?, ?, ?, ?)", fresh_hashes)
        log.info("Library: kept take #%d (%s)", take_id, file_name)
        return self.get(take_id)

    def _engine_entries(self, files: Any, mode: str) -> tuple[list[dict], list[tuple]]:
        """The engine files with their hashes, hashing only files the cache has not seen at this
        size and modification time. Returns (entries, new cache rows)."""
        if files is None:
            return [], []
        roles = [("text_encoder", files.text_encoder), ("tokenizer", files.tokenizer),
                 ("dit", files.dit), ("decoder", files.decoder)]
        if mode != "t2a" and files.encoder is not None:
            roles.append(("encoder", files.encoder))
        entries: list[dict] = []
        fresh: list[tuple] = []
        for role, raw in roles:
            path = Path(raw).absolute()
            try:
                stat = path.stat()
            except OSError:
                entries.append({"role": role, "path": str(path), "size": None, "sha256": None})
                continue
            cached = self._conn.execute(
                "SELECT sha256 FROM file_hashes WHERE path = ? AND size = ? AND mtime_ns = ?",
                (str(path), stat.st_size, stat.st_mtime_ns)).fetchone()
            if cached is not None:
                digest = cached[0]
            else:
                try:
                    digest = sha256_file(path)
                except OSError:
                    digest = None
                else:
                    fresh.append((str(path), stat.st_size, stat.st_mtime_ns, digest))
            entries.append({"role": role, "path": str(path), "size": stat.st_size,
                            "sha256": digest})
        return entries, fresh

    # ---- reading ---------------------------------------------------------------------------

    def _record(self, row: sqlite3.Row) -> TakeRecord:
        return record_from_row(row, self.audio_dir, self.trash_dir)

    def get(self, take_id: int) -> TakeRecord:
        row = self._conn.execute("SELECT * FROM takes WHERE id = ?", (int(take_id),)).fetchone()
        if row is None:
            raise LibraryError(f"There is no take #{take_id} in the library; list the library "
                               "to see which ids exist.")
        return self._record(row)

    def search(self, text: str = "", *, model: str | None = None,
               favourite: bool | None = None, min_rating: int = 0, since: Any = None,
               until: Any = None, sort: str = "created", descending: bool = True,
               limit: int | None = 200, offset: int = 0,
               include_deleted: bool = False) -> list[TakeRecord]:
        """Takes whose prompt, name, tags, notes or init file name contain every word of `text`
        (any case), filtered and sorted. `since` is inclusive; `until` too, and a bare date as
        `until` includes that whole day (times without a zone are UTC)."""
        if sort not in SORT_KEYS:
            raise LibraryError(f"Cannot sort the library by '{sort}'; choose one of "
                               f"{', '.join(SORT_KEYS)}.")
        where, params = where_clause(text, use_fts=self._use_fts, model=model,
                                     favourite=favourite, min_rating=min_rating, since=since,
                                     until=until, include_deleted=include_deleted)
        direction = "DESC" if descending else "ASC"
        sql = (f"SELECT * FROM takes t{where} ORDER BY {SORT_KEYS[sort]} {direction}, "
               f"t.id {direction}")
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [max(int(limit), 0), max(int(offset), 0)]
        return [self._record(row) for row in self._conn.execute(sql, params)]

    def count(self, text: str = "", *, model: str | None = None, favourite: bool | None = None,
              min_rating: int = 0, since: Any = None, until: Any = None,
              include_deleted: bool = False, **_ignored: Any) -> int:
        """How many takes `search` would find without a limit (sort arguments are ignored)."""
        where, params = where_clause(text, use_fts=self._use_fts, model=model,
                                     favourite=favourite, min_rating=min_rating, since=since,
                                     until=until, include_deleted=include_deleted)
        return self._conn.execute(f"SELECT count(*) FROM takes t{where}", params).fetchone()[0]

    def models(self) -> list[str]:
        """The model keys of the takes kept, for a filter list."""
        rows = self._conn.execute("SELECT DISTINCT model FROM takes WHERE deleted = 0 "
                                  "ORDER BY model")
        return [row[0] for row in rows]

    def lineage(self, take_id: int) -> list[TakeRecord]:
        """The take, its parent, the parent's parent, ... (the init audio each was made from)."""
        chain: list[TakeRecord] = []
        seen: set[int] = set()
        next_id: int | None = take_id
        while next_id is not None and next_id not in seen:
            seen.add(next_id)
            try:
                record = self.get(next_id)
            except LibraryError:
                if not chain:
                    raise
                break
            chain.append(record)
            next_id = record.parent_id
        return chain

    def identify(self, path: str | os.PathLike[str]) -> TakeRecord | None:
        """The take an audio file found anywhere is a copy of: by its samples, else by the note
        embedded in it (when that note agrees with the take it names). None if neither."""
        file = Path(path)
        try:
            with sf.SoundFile(str(file)) as handle:
                dtype = "int16" if handle.subtype == "PCM_16" else "float32"
                audio = handle.read(dtype=dtype, always_2d=True) if handle.subtype in (
                    "PCM_16", "FLOAT") else None
        except (sf.SoundFileError, RuntimeError, ValueError, OSError):
            return None
        if audio is not None:
            row = self._conn.execute(
                "SELECT * FROM takes WHERE content_sha256 = ? ORDER BY deleted, id LIMIT 1",
                (content_sha256(audio),)).fetchone()
            if row is not None:
                return self._record(row)
        note = wavmeta.read_metadata(file)
        if note is None or not isinstance(note.get("library_id"), int):
            return None
        try:
            record = self.get(note["library_id"])
        except LibraryError:
            return None
        same = record.seed == note.get("seed") and record.prompt.startswith(
            str(note.get("prompt", "")))
        return record if same else None

    # ---- audio -----------------------------------------------------------------------------

    def _read(self, take_id: int) -> tuple[np.ndarray, str]:
        record = self.get(take_id)
        if record.missing:
            raise LibraryError(f"The audio of take #{take_id} is missing ({record.audio_path}); "
                               "regenerate it to bring it back.")
        try:
            with sf.SoundFile(str(record.audio_path)) as handle:
                subtype = handle.subtype
                audio = handle.read(dtype="int16" if subtype == "PCM_16" else "float32",
                                    always_2d=True)
        except (sf.SoundFileError, RuntimeError, ValueError, OSError) as err:
            raise LibraryError(f"The audio of take #{take_id} ({record.audio_path}) cannot be "
                               f"read ({err}); regenerate it to replace the file.") from err
        if audio.shape[1] == 1:
            audio = np.repeat(audio, 2, axis=1)
        return np.ascontiguousarray(audio[:, :CHANNELS]), subtype

    def load_audio(self, take_id: int) -> np.ndarray:
        """The take's samples as int16 (N, 2)."""
        audio, subtype = self._read(take_id)
        if audio.dtype == np.int16:
            return audio
        from engines.audio_io import pcm16_from_float

        return pcm16_from_float(audio)

    def load_float_audio(self, take_id: int) -> np.ndarray:
        """float32 (N, 2) exactly as a request used it: int16 / 32767 (the GUI's scaling) for
        16-bit takes, the stored floats for imported float audio."""
        audio, _ = self._read(take_id)
        if audio.dtype == np.int16:
            from engines.audio_io import float_from_pcm16

            return float_from_pcm16(audio)
        return audio

    def regeneration_request(self, take_id: int) -> GenerationRequest:
        """The request that re-makes a take exactly, init audio included (from the parent take,
        else the original init file)."""
        record = self.get(take_id)
        init = None
        if record.mode in ("a2a", "inpaint"):
            if record.parent_id is not None:
                try:
                    init = self.load_float_audio(record.parent_id)
                except LibraryError:
                    init = None
            if init is None and record.init_source and Path(record.init_source).is_file():
                from engines.audio_io import read_audio

                init = read_audio(record.init_source)
            if init is None:
                raise LibraryError(f"Take #{take_id} was made from init audio that is no longer "
                                   "in the library or on disk; choose the init audio again to "
                                   "regenerate it.")
        return record.request(init_audio=init)

    def replace_audio(self, take_id: int, result: GenerationResult) -> TakeRecord:
        """Give a take (usually one whose file went missing) the audio of its regeneration: same
        row, new file; the run's backend, timings and engine files are updated."""
        record = self.get(take_id)
        if record.is_imported:
            raise LibraryError(f"Take #{take_id} is imported audio and cannot be regenerated; "
                               "import the file again instead.")
        if int(result.seed) != record.seed or result.request.model != record.model:
            raise LibraryError(f"That result (seed {result.seed}, {result.request.model}) is not "
                               f"a regeneration of take #{take_id} (seed {record.seed}, "
                               f"{record.model}); regenerate it from its own settings.")
        pcm = as_stereo(result.pcm, "The take's audio")
        if pcm.dtype != np.int16:
            from engines.audio_io import pcm16_from_float

            pcm = pcm16_from_float(pcm)
        engine_files, fresh_hashes = self._engine_entries(result.files, record.mode)
        old_path = record.audio_path
        folder = self.trash_dir if record.deleted else self.audio_dir
        file_name = f"{take_id:06d}-{slug(record.name or record.prompt)}-" \
                    f"{secrets.token_hex(3)}.wav"
        note = {"library_id": take_id, "created": record.created, "prompt": record.prompt,
                "negative_prompt": record.negative_prompt, "seed": record.seed,
                "model": record.model, "decoder": record.decoder,
                "precision": record.precision, "steps": record.steps, "cfg": record.cfg,
                "apg": record.apg, "seconds": record.seconds, "mode": record.mode,
                "init_noise_level": record.init_noise_level,
                "limiter_ceiling": record.limiter_ceiling, "backend": result.backend,
                "parent_id": record.parent_id,
                "inpaint_spans": [list(s) for s in record.inpaint_spans] or None}
        with self._write() as undo:
            self._place_audio(folder, file_name, pcm, note,
                              wavmeta.title_for(record.name, record.prompt), undo)
            self._conn.execute(
                "UPDATE takes SET audio_file = ?, samples = ?, sample_rate = ?, backend = ?, "
                "timings_ms = ?, engine_files = ?, content_sha256 = ?, warnings = ? "
                "WHERE id = ?",
                (file_name, int(pcm.shape[0]), int(result.sample_rate), result.backend,
                 json.dumps({k: round(float(v), 3) for k, v in result.timings_ms.items()}),
                 json.dumps(engine_files), content_sha256(pcm),
                 json.dumps([str(w) for w in result.warnings]), take_id))
            self._conn.executemany(
                "INSERT OR REPLACE INTO file_hashes (path, size, mtime_ns, sha256) "
                "VALUES (?, ?, ?, ?)", fresh_hashes)
        if old_path.parent == folder and old_path.name != file_name:
            old_path.unlink(missing_ok=True)  # a stale copy in our folder; files elsewhere stay
        return self.get(take_id)

    # ---- editing ---------------------------------------------------------------------------

    def update(self, take_id: int, *, rating: int | None = None, favourite: bool | None = None,
               tags: Iterable[str] | str | None = None, notes: str | None = None,
               name: str | None = None) -> TakeRecord:
        """Change what the user keeps about a take; None leaves a field as it is."""
        record = self.get(take_id)
        changes: dict[str, Any] = {}
        if rating is not None:
            if isinstance(rating, bool) or not isinstance(rating, (int, np.integer)) \
                    or not 0 <= int(rating) <= 5:
                raise LibraryError(f"Rating {rating!r} is out of range; give 0 to 5 stars.")
            changes["rating"] = int(rating)
        if favourite is not None:
            changes["favourite"] = int(bool(favourite))
        new_tags = record.tags if tags is None else normalize_tags(tags)
        if tags is not None:
            changes["tags"] = json.dumps(new_tags)
        for key, value in (("notes", notes), ("name", name)):
            if value is not None:
                if not isinstance(value, str):
                    raise LibraryError(f"The {key} must be text, not {type(value).__name__}.")
                changes[key] = value.strip() if key == "notes" else " ".join(value.split())
        if not changes:
            return record
        text = schema.search_text(record.prompt, changes.get("name", record.name), new_tags,
                                  changes.get("notes", record.notes), record.init_source)
        changes["search_text"] = text
        assignments = ", ".join(f"{key} = ?" for key in changes)
        with self._write():
            self._conn.execute(f"UPDATE takes SET {assignments} WHERE id = ?",
                               (*changes.values(), take_id))
            if self._use_fts:
                self._conn.execute(f"UPDATE {schema.FTS_TABLE} SET search_text = ? "
                                   "WHERE rowid = ?", (text, take_id))
        return self.get(take_id)

    def delete(self, take_id: int) -> None:
        """Move the take's audio into trash/ and hide it from searches; `restore` undoes it."""
        self._set_deleted(take_id, True)

    def restore(self, take_id: int) -> None:
        """Undo `delete`: the audio goes back to audio/ and the take shows again."""
        self._set_deleted(take_id, False)

    def _set_deleted(self, take_id: int, deleted: bool) -> None:
        record = self.get(take_id)
        if record.deleted == deleted:
            return
        source = record.audio_path
        target = (self.trash_dir if deleted else self.audio_dir) / source.name
        relative = source.parent in (self.audio_dir, self.trash_dir)
        with self._write() as undo:
            self._conn.execute("UPDATE takes SET deleted = ? WHERE id = ?",
                               (int(deleted), take_id))
            if relative and source.is_file():
                os.replace(source, target)  # inside the transaction: see _reconcile
                undo.append(lambda: os.replace(target, source))

    # ---- export ----------------------------------------------------------------------------

    def _records(self, ids: Iterable[int]) -> list[TakeRecord]:
        return [self.get(i) for i in dict.fromkeys(int(i) for i in ids)]

    def export(self, ids: Iterable[int], folder: Path) -> list[Path]:
        """Copy takes (with their embedded notes) and a JSON sidecar each into `folder`;
        returns the audio paths (each sidecar is the same name ending in .json)."""
        return export_to_folder(self._records(ids), folder)

    def export_zip(self, ids: Iterable[int], zip_path: Path) -> Path:
        """One zip with the takes and their sidecars, written atomically."""
        return export_to_zip(self._records(ids), zip_path)

    export_name = staticmethod(export_name)

    # ---- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        conn, self._conn = self._conn, None  # type: ignore[assignment]
        if conn is None:
            return
        try:
            conn.execute("PRAGMA optimize")
        except sqlite3.Error:
            pass
        conn.close()

    def __enter__(self) -> ClipLibrary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
