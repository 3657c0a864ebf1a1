"""A downloaded file's bytes on disk: the partial file, hashed as it is written; verifying it
(size and sha256) and renaming it into place; and the list of files already verified, so a
present multi-GB file is not hashed again on every run.

Partial files wait under `<models>/.downloads/` (the same folder tree as the final paths, so
the rename into place is atomic). The chunk size and the write itself are given by the caller
(`download`), which keeps them where they can be tuned and made to fail in tests.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from engines.error_sentences import reason, sentence, shown
from engines.models.download_errors import DownloadCancelledError, DownloadError
from engines.models.download_plan import PARTIAL_DIR, format_size
from engines.models.hub_files import RemoteFile

log = logging.getLogger(__name__)

VERIFIED_FILE = "verified.json"

WriteChunk = Callable[[IO[bytes], bytes], None]


# --------------------------------------------------------------------------------------------
# Files already verified


def _verified_path(models_dir: Path) -> Path:
    return models_dir / PARTIAL_DIR / VERIFIED_FILE


def _load_verified(models_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads(_verified_path(models_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record_verified(models_dir: Path, remote: RemoteFile, final: Path) -> None:
    if not remote.sha256:
        return
    try:
        stat = final.stat()
        data = _load_verified(models_dir)
        data[remote.local_rel] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
                                  "sha256": remote.sha256}
        path = _verified_path(models_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:  # only a cache: the file is hashed again next time
        log.debug("could not record %s as verified: %s", remote.local_rel, exc)


def _sha256_of(path: Path, cancel: threading.Event, chunk_size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            if cancel.is_set():
                raise DownloadCancelledError()
            digest.update(block)
    return digest.hexdigest()


def already_there(models_dir: Path, remote: RemoteFile, final: Path, cancel: threading.Event,
                  chunk_size: int) -> bool:
    """Whether final already holds the hub's file: its size, then its sha256 (from the verified
    list while the file's size and mtime are unchanged, else hashed again)."""
    try:
        stat = final.stat()
    except OSError:
        return False
    if not remote.size or stat.st_size != remote.size:
        return False
    if not remote.sha256:
        return True
    entry = _load_verified(models_dir).get(remote.local_rel)
    if entry == {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": remote.sha256}:
        return True
    try:
        digest = _sha256_of(final, cancel, chunk_size)
    except OSError as exc:
        raise DownloadError(sentence(f"Could not read {remote.local_rel} in {shown(models_dir)} "
                                     f"to check it", exc)) from exc
    if digest == remote.sha256:
        record_verified(models_dir, remote, final)
        return True
    log.info("%s differs from the hub's copy; downloading it again", remote.local_rel)
    return False


# --------------------------------------------------------------------------------------------
# The partial file


class PartialFile:
    """The unfinished bytes of one file, hashed as they are written."""

    def __init__(self, path: Path, label: str, models_dir: Path, hashed: bool,
                 write_chunk: WriteChunk) -> None:
        self.path = path
        self.label = label
        self.models_dir = models_dir
        self.hashed = hashed
        self.hasher = hashlib.sha256()
        self.have = 0
        self._write_chunk = write_chunk
        self._fh: IO[bytes] | None = None

    @classmethod
    def resume(cls, path: Path, label: str, models_dir: Path, hashed: bool,
               cancel: threading.Event, *, chunk_size: int,
               write_chunk: WriteChunk) -> PartialFile:
        state = cls(path, label, models_dir, hashed, write_chunk)
        if not hashed:
            state.discard()  # nothing to check old bytes against: start over
            return state
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(chunk_size), b""):
                    if cancel.is_set():
                        raise DownloadCancelledError()
                    state.hasher.update(block)
                    state.have += len(block)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise state._disk_error(exc, "read") from exc
        if state.have:
            log.info("resuming %s at %s", label, format_size(state.have))
        return state

    def write(self, data: bytes) -> None:
        try:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "ab")
            self._write_chunk(self._fh, data)
        except OSError as exc:
            raise self._disk_error(exc) from exc
        self.hasher.update(data)
        self.have += len(data)

    def close(self, sync: bool = False) -> None:
        fh, self._fh = self._fh, None
        if fh is None:
            return
        try:
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
            fh.close()
        except OSError as exc:
            raise self._disk_error(exc) from exc

    def release(self) -> None:
        """Close the file and keep its bytes, whatever happens: runs while another failure is
        on its way to the user, which must not be replaced by this one."""
        try:
            self.close()
        except DownloadError:
            log.debug("closing %s failed", self.path, exc_info=True)

    def reset(self) -> None:
        self.discard()
        self.hasher = hashlib.sha256()
        self.have = 0

    def discard(self) -> None:
        """Close and delete the partial file. Never raises: it runs on the way to another
        sentence; bytes that stay behind are checked again (sha256) before any use."""
        self._drop_handle()
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            log.info("could not delete %s", self.path, exc_info=True)

    def _drop_handle(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()  # flushes what it can; a full disk fails again here
            except OSError:
                pass

    def install(self, remote: RemoteFile, final: Path, expected: int) -> None:
        """Rename the finished bytes to final once their size and sha256 match; bytes that do
        not match are deleted, so a final path only ever holds a whole, checked file."""
        if self.have != expected:
            self.discard()
            raise DownloadError(f"{remote.local_rel} arrived with {self.have} bytes instead of "
                                f"{expected}, so it was deleted; download it again.")
        if remote.sha256 and self.hasher.hexdigest() != remote.sha256:
            self.discard()
            raise DownloadError(f"{remote.local_rel} does not match its published sha256 "
                                f"checksum, so it was deleted; download it again.")
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.path, final)
        except OSError as exc:
            raise self._disk_error(exc) from exc
        record_verified(self.models_dir, remote, final)

    def _disk_error(self, exc: OSError, doing: str = "write") -> DownloadError:
        """A failed write (or read) as one sentence. The partial file stays: its bytes so far
        are hashed again on resume, so the next download goes on where this one stopped."""
        self._drop_handle()
        log.info("could not %s %s", doing, self.path, exc_info=exc)
        _, todo = reason(exc)
        where = "into" if doing == "write" else "in"
        return DownloadError(sentence(
            f"Could not {doing} {self.label} {where} {shown(self.models_dir)}", exc,
            f"{todo}, then download again (it resumes where it stopped)"))
