"""Download model files from the Hugging Face Hub into the models folder.

No Qt: the GUI (from a worker thread) and the CLI call `download` with a progress callback and
a `threading.Event` that cancels it.

Why not `hf_hub_download`: in the installed huggingface_hub (2.x) it writes into a temporary file
unique to each call and deletes it on any failure, so a cancelled or crashed multi-GB download
starts again from zero; and it lays files out like the repo (`tensorRT/sm_90/...`), not like the
catalog (`sm_90/...`). So we use the pieces it is built from - `build_hf_headers`, its shared
HTTP session and `hf_raise_for_status` - to send the HEAD /resolve (X-Repo-Commit, X-Linked-Etag,
X-Linked-Size, the CDN location) and stream the GET ourselves into
`<models>/.downloads/<local path>.<sha256 prefix>.incomplete`. A dropped connection resumes
with a Range header, a cancel or a crash resumes on the next run, and only a file whose size
and sha256 match the listing is renamed into place (same folder tree, so the rename is atomic).

The token is never logged, never put in a message, and only ever sent to the hub endpoint
itself (same scheme, host and port): we follow every redirect ourselves and send each hop
without it unless that hop is on the hub. Not `get_hf_file_metadata`: huggingface_hub 1.30 to
2.1 follow its redirects with the token whenever the target has the hub's host name, whatever
its port or scheme (`_is_same_or_hub_host` in huggingface_hub/utils/_http.py).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urljoin, urlparse

from engines.errors import CancelledError, StudioError
from engines.models.hub_files import (
    REPO,
    TOKENIZER_FALLBACK_REPO,
    RemoteFile,
    find_tokenizer,
    plan_files,
)

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"
LIBRARY_NAME = "sa3-studio"
KEYRING_SERVICE = "sa3-studio"
KEYRING_USER = "huggingface"
TOKEN_HINT = "python main.py models token or HF_TOKEN"

PARTIAL_DIR = ".downloads"  # under the models folder: partial files and the verified list
VERIFIED_FILE = "verified.json"
DISK_MARGIN = 0.05
CHUNK_SIZE = 1 << 20
# Waits before each retry after a dropped connection; the count resets whenever bytes arrive.
RETRY_WAITS_S: tuple[float, ...] = (0.0, 1.0, 2.0, 4.0, 8.0)
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
MAX_REDIRECTS = 10
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

ProgressCallback = Callable[[str, int, int, int, int], None]
"""progress(file, done, total, all_done, all_total): file is the local path relative to the
models folder; byte counts, never decreasing."""


class DownloadError(StudioError):
    """A download failed; the message is one sentence: what happened and what to do."""


class DownloadCancelledError(DownloadError, CancelledError):
    """The user cancelled; finished files stay, the current one resumes next time."""

    def __init__(self, message: str = "Download cancelled; finished files are kept and the "
                                      "current file resumes where it stopped next time.") -> None:
        super().__init__(message)


def format_size(size: int) -> str:
    """Decimal units, as the hub shows them: 6.6 GB, 930 MB, 12 KB."""
    value = float(size)
    units = ("B", "KB", "MB", "GB", "TB")
    index = 0
    while value >= 1000 and index < len(units) - 1:
        value /= 1000
        index += 1
    unit = units[index]
    return f"{value:.0f} {unit}" if index < 3 else f"{value:.1f} {unit}"


def hub_endpoint() -> str:
    """The hub to talk to: $HF_ENDPOINT (a mirror, or a local test server) or huggingface.co.
    Read at call time: huggingface_hub reads it once at import."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _httpx() -> Any:
    """The HTTP library huggingface_hub's session is built on (httpx2 in 2.x, httpx in 1.x)."""
    try:
        import httpx2
    except ImportError:  # pragma: no cover - huggingface_hub 1.x
        import httpx as httpx2
    return httpx2


# --------------------------------------------------------------------------------------------
# Token


def _keyring() -> Any | None:
    try:
        import keyring
    except Exception:  # not installed, or a backend that fails while importing
        return None
    return keyring


def resolve_token() -> str | None:
    """The Hugging Face token: $HF_TOKEN / $HUGGING_FACE_HUB_TOKEN, then the token stored by
    huggingface_hub (`hf auth login`), then the system keyring (service "sa3-studio", user
    "huggingface") when the keyring package is installed. None when there is none."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    try:
        from huggingface_hub import get_token

        value = (get_token() or "").strip()
    except Exception as exc:  # a broken token file must not stop the download
        log.debug("huggingface_hub could not read its stored token (%s)", type(exc).__name__)
        value = ""
    if value:
        return value
    keyring = _keyring()
    if keyring is not None:
        try:
            value = (keyring.get_password(KEYRING_SERVICE, KEYRING_USER) or "").strip()
        except Exception as exc:  # a locked or missing keyring backend
            log.debug("the keyring could not be read (%s)", type(exc).__name__)
            value = ""
        if value:
            return value
    return None


def store_token(token: str) -> str:
    """Keep the token in the system keyring; returns where it went (for "Token stored (...)").
    DownloadError when there is no keyring: the token can still be given by $HF_TOKEN."""
    token = (token or "").strip()
    if not token:
        raise DownloadError("The token is empty; copy one from "
                            "https://huggingface.co/settings/tokens and try again.")
    keyring = _keyring()
    if keyring is None:
        raise DownloadError("The keyring package is not installed, so the token cannot be "
                            "stored; install it with `pip install keyring`, or give the token "
                            "in the HF_TOKEN environment variable instead.")
    try:
        keyring.set_password(KEYRING_SERVICE, KEYRING_USER, token)
    except Exception as exc:
        log.debug("the keyring refused the token (%s)", type(exc).__name__)
        raise DownloadError("The system keyring refused to store the token; give it in the "
                            "HF_TOKEN environment variable instead.") from None
    log.info("Hugging Face token stored in the system keyring")
    return f"in the system keyring, service '{KEYRING_SERVICE}', user '{KEYRING_USER}'"


# --------------------------------------------------------------------------------------------
# Errors from the hub, as one sentence each


def _hub_error(exc: BaseException, *, repo: str, what: str, token: str | None,
               endpoint: str) -> DownloadError:
    from huggingface_hub.errors import (
        DisabledRepoError,
        FileMetadataError,
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    httpx = _httpx()
    page = f"https://huggingface.co/{repo}"
    log.debug("hub request for %s failed", what, exc_info=exc)
    if isinstance(exc, DownloadError):
        return exc
    if isinstance(exc, OfflineModeIsEnabled):
        return DownloadError("Hugging Face offline mode is on (HF_HUB_OFFLINE); unset it to "
                             "download models.")
    if isinstance(exc, GatedRepoError):
        if not token:
            return DownloadError(f"{repo} needs a Hugging Face token: accept the licence at "
                                 f"{page} and give a token ({TOKEN_HINT}).")
        return DownloadError(f"Accept the licence at {page} and give a token ({TOKEN_HINT}).")
    status = None
    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        status = exc.response.status_code
    if status == 401 and token and not isinstance(exc, RepositoryNotFoundError):
        return DownloadError(f"The hub refused the Hugging Face token (invalid or expired); "
                             f"give a new one ({TOKEN_HINT}).")
    if isinstance(exc, RemoteEntryNotFoundError):
        return DownloadError(f"{what} is no longer in {repo} on the hub; list the files again "
                             f"and retry.")
    if isinstance(exc, RevisionNotFoundError):
        return DownloadError(f"The requested revision of {repo} does not exist on the hub; "
                             f"download from the main branch.")
    if isinstance(exc, DisabledRepoError):
        return DownloadError(f"{repo} is disabled on the hub, so nothing can be downloaded "
                             f"from it.")
    if isinstance(exc, RepositoryNotFoundError):
        if not token:
            return DownloadError(f"{repo} was not found at {endpoint}, or it needs a token: "
                                 f"accept the licence at {page} and give a token "
                                 f"({TOKEN_HINT}).")
        return DownloadError(f"{repo} was not found at {endpoint}, or this token has no access "
                             f"to it; check the token and HF_ENDPOINT.")
    if isinstance(exc, FileMetadataError):
        return DownloadError(f"{endpoint} does not answer like the Hugging Face Hub; check "
                             f"HF_ENDPOINT.")
    if status is not None:
        return DownloadError(f"The hub at {endpoint} answered HTTP {status} for {what}; try "
                             f"again later.")
    if isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError)):
        return DownloadError(f"Could not reach the hub at {endpoint}; check the connection or "
                             f"HF_ENDPOINT.")
    return DownloadError(f"Reading {what} from the hub failed ({type(exc).__name__}); the "
                         f"log file has the details.")


# --------------------------------------------------------------------------------------------
# Listing


def hub_listing(repo: str = REPO, revision: str = "main",
                token: str | None = None) -> list[RemoteFile]:
    """Every file of a hub repo with its size and, for LFS files, its sha256
    (HfApi.list_repo_tree, recursive). token None: `resolve_token()`."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    endpoint = hub_endpoint()
    token = token or resolve_token()
    api = HfApi(endpoint=endpoint, token=token or False, library_name=LIBRARY_NAME)
    try:
        entries = list(api.list_repo_tree(repo, recursive=True, revision=revision,
                                          token=token or False))
    except Exception as exc:
        raise _hub_error(exc, repo=repo, what=f"the file list of {repo}", token=token,
                         endpoint=endpoint) from exc
    files = []
    for entry in entries:
        if not isinstance(entry, RepoFile):
            continue
        lfs = entry.lfs
        size = int(lfs.size if lfs is not None else entry.size)
        sha = str(lfs.sha256).lower() if lfs is not None and lfs.sha256 else None
        files.append(RemoteFile(entry.path, size, sha, repo=repo))
    log.info("listed %d file(s) in %s at %s", len(files), repo, endpoint)
    return files


# --------------------------------------------------------------------------------------------
# Plan and disk space


def partial_path(models_dir: Path, remote: RemoteFile) -> Path:
    """Where the unfinished bytes of a file wait (keyed by its sha256, so a changed file on the
    hub never resumes old bytes)."""
    tag = (remote.sha256 or "unverified")[:16]
    final = remote.local_path(Path(models_dir) / PARTIAL_DIR)
    return final.with_name(f"{final.name}.{tag}.incomplete")


def _bytes_still_needed(remote: RemoteFile, models_dir: Path) -> int:
    final = remote.local_path(models_dir)
    try:
        if remote.size and final.stat().st_size == remote.size:
            return 0  # very likely there already (checked properly when downloading)
    except OSError:
        pass
    have = 0
    if remote.sha256:
        try:
            have = partial_path(models_dir, remote).stat().st_size
        except OSError:
            have = 0
    return max(remote.size - have, 0)


@dataclass(frozen=True)
class DownloadPlan:
    """What a download will fetch, known before it starts (sizes come from the listing)."""

    files: tuple[RemoteFile, ...]
    total_bytes: int
    free_bytes_needed: int

    @classmethod
    def for_files(cls, files: Iterable[RemoteFile],
                  models_dir: Path | None = None) -> DownloadPlan:
        """A plan for these files; with models_dir, files already there and bytes already
        downloaded need no new space."""
        files = tuple(files)
        total = sum(f.size for f in files)
        if models_dir is None:
            return cls(files, total, total)
        needed = sum(_bytes_still_needed(f, Path(models_dir)) for f in files)
        return cls(files, total, needed)

    def summary(self) -> str:
        return f"{len(self.files)} file(s), {format_size(self.total_bytes)}"


def plan_download(sets: Sequence[str], arch: str, precisions: Sequence[str], fmt: str,
                  models_dir: Path | None = None, *, revision: str = "main",
                  token: str | None = None) -> DownloadPlan:
    """List the hub and plan the files for these sets (see `hub_files.plan_files`); the
    tokenizer's fallback repo is listed only when ours lacks tokenizer.json."""
    token = token or resolve_token()
    listing = hub_listing(REPO, revision, token)
    fallback = None
    if find_tokenizer(listing, arch, fmt) is None:
        fallback = hub_listing(TOKENIZER_FALLBACK_REPO, "main", token)
    files = plan_files(list(sets), arch, list(precisions), fmt, listing, fallback)
    return DownloadPlan.for_files(files, models_dir)


def _existing_folder(path: Path) -> Path:
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_disk_space(plan: DownloadPlan, models_dir: Path) -> None:
    """DownloadError when the disk holding models_dir has less free space than the plan needs
    plus a 5 % margin."""
    if plan.free_bytes_needed <= 0:
        return
    folder = _existing_folder(Path(models_dir))
    free = shutil.disk_usage(folder).free
    needed = math.ceil(plan.free_bytes_needed * (1 + DISK_MARGIN))
    if free < needed:
        raise DownloadError(
            f"Not enough disk space in {folder}: the download needs {format_size(needed)} "
            f"(with a 5 % margin) but only {format_size(free)} is free; free some space or "
            f"choose another models folder.")


# --------------------------------------------------------------------------------------------
# Files already verified (so a present multi-GB file is not hashed again on every run)


def _verified_path(models_dir: Path) -> Path:
    return models_dir / PARTIAL_DIR / VERIFIED_FILE


def _load_verified(models_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads(_verified_path(models_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _record_verified(models_dir: Path, remote: RemoteFile, final: Path) -> None:
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


def _sha256_of(path: Path, cancel: threading.Event) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK_SIZE), b""):
            if cancel.is_set():
                raise DownloadCancelledError()
            digest.update(block)
    return digest.hexdigest()


def _already_there(models_dir: Path, remote: RemoteFile, final: Path,
                   cancel: threading.Event) -> bool:
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
    if _sha256_of(final, cancel) == remote.sha256:
        _record_verified(models_dir, remote, final)
        return True
    log.info("%s differs from the hub's copy; downloading it again", remote.local_rel)
    return False


# --------------------------------------------------------------------------------------------
# The transfer


def _write_chunk(fh: IO[bytes], data: bytes) -> None:
    """One write to a partial file (a seam: tests make it fail like a full disk)."""
    fh.write(data)


def _origin(url: str) -> tuple[str, str, int]:
    parsed = urlparse(url)
    default = {"http": 80, "https": 443}.get(parsed.scheme, 0)
    return parsed.scheme, (parsed.hostname or "").lower(), parsed.port or default


def _etag(value: str | None) -> str:
    """An ETag without its weak prefix and quotes, lower case."""
    return (value or "").strip().removeprefix("W/").strip('"').lower()


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class _FileMeta:
    """What HEAD /resolve says about a file: where its bytes are and what they should be."""

    location: str
    commit: str | None
    etag: str
    size: int | None


class _Busy(Exception):
    """A transient answer (429, 5xx): retry like a dropped connection."""


class _Partial:
    """The unfinished bytes of one file, hashed as they are written."""

    def __init__(self, path: Path, label: str, models_dir: Path, hashed: bool) -> None:
        self.path = path
        self.label = label
        self.models_dir = models_dir
        self.hashed = hashed
        self.hasher = hashlib.sha256()
        self.have = 0
        self._fh: IO[bytes] | None = None

    @classmethod
    def resume(cls, path: Path, label: str, models_dir: Path, hashed: bool,
               cancel: threading.Event) -> _Partial:
        state = cls(path, label, models_dir, hashed)
        if not hashed:
            path.unlink(missing_ok=True)  # nothing to check old bytes against: start over
            return state
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(CHUNK_SIZE), b""):
                    if cancel.is_set():
                        raise DownloadCancelledError()
                    state.hasher.update(block)
                    state.have += len(block)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise state._disk_error(exc) from exc
        if state.have:
            log.info("resuming %s at %s", label, format_size(state.have))
        return state

    def write(self, data: bytes) -> None:
        try:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "ab")
            _write_chunk(self._fh, data)
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

    def reset(self) -> None:
        self.discard()
        self.hasher = hashlib.sha256()
        self.have = 0

    def discard(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass
        self.path.unlink(missing_ok=True)

    def _disk_error(self, exc: OSError) -> DownloadError:
        self.discard()
        log.debug("writing %s failed", self.path, exc_info=exc)
        if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            return DownloadError(f"The disk ran full while writing {self.label} into "
                                 f"{self.models_dir}; the partial file was removed, so free "
                                 f"some space and download again.")
        return DownloadError(f"Could not write {self.label} into {self.models_dir} "
                             f"({exc.strerror or type(exc).__name__}); check that the folder "
                             f"is writable.")


class _Run:
    """One call of `download`: shared progress totals, the token, the pinned commits."""

    def __init__(self, models_dir: Path, *, token: str | None, endpoint: str, revision: str,
                 progress: ProgressCallback | None, cancel: threading.Event,
                 all_total: int) -> None:
        self.models_dir = models_dir
        self.token = token
        self.endpoint = endpoint
        self.revision = revision
        self.progress = progress
        self.cancel = cancel
        self.all_total = all_total
        self.done_before = 0
        self.reported = 0
        self.hub = _origin(endpoint)  # the one origin the token is ever sent to
        self.commits: dict[str, str] = {}  # repo -> commit of its first HEAD: one version
        self.contacted = False
        self.sized: set[tuple[str, str]] = set()  # files planned with an unknown size

    # progress

    def report(self, remote: RemoteFile, done: int, total: int) -> None:
        all_done = self.done_before + done
        if all_done < self.reported:  # a restart from zero: stay silent until caught up
            return
        self.reported = all_done
        if self.progress is not None:
            self.progress(remote.local_rel, done, total, all_done, self.all_total)

    def check_cancel(self) -> None:
        if self.cancel.is_set():
            raise DownloadCancelledError()

    # one file

    def fetch(self, remote: RemoteFile) -> Path:
        final = remote.local_path(self.models_dir)
        self.check_cancel()
        if _already_there(self.models_dir, remote, final, self.cancel):
            log.info("%s is already there", remote.local_rel)
            self.report(remote, remote.size, remote.size)
            self.done_before += remote.size
            return final
        log.info("downloading %s from %s (%s)", remote.path, remote.repo,
                 format_size(remote.size) if remote.size else "size unknown")
        state = _Partial.resume(partial_path(self.models_dir, remote), remote.local_rel,
                                self.models_dir, remote.sha256 is not None, self.cancel)
        try:
            expected = self.transfer(remote, state)
        finally:
            state.close()
        self.verify(remote, state, expected)
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(state.path, final)
        except OSError as exc:
            raise state._disk_error(exc) from exc
        _record_verified(self.models_dir, remote, final)
        self.done_before += expected
        return final

    def verify(self, remote: RemoteFile, state: _Partial, expected: int) -> None:
        if state.have != expected:
            state.discard()
            raise DownloadError(f"{remote.local_rel} arrived with {state.have} bytes instead of "
                                f"{expected}, so it was deleted; download it again.")
        if remote.sha256 and state.hasher.hexdigest() != remote.sha256:
            state.discard()
            raise DownloadError(f"{remote.local_rel} does not match its published sha256 "
                                f"checksum, so it was deleted; download it again.")

    def transfer(self, remote: RemoteFile, state: _Partial) -> int:
        """Fetch the missing bytes into state, retrying dropped connections; returns the
        file's size."""
        transient = (_httpx().TransportError, _Busy)
        failures = 0
        while True:
            self.check_cancel()
            before = state.have
            try:
                url, headers, expected = self.locate(remote)
                self.stream(remote, url, headers, state, expected)
                if expected and state.have < expected:  # a body that ended early, cleanly
                    raise _Busy("short body")
                state.close(sync=True)
                return expected
            except DownloadError:
                raise
            except transient as exc:
                if not self.contacted:  # never reached the hub in this run: it is not a blip
                    raise _hub_error(exc, repo=remote.repo, what=remote.path, token=self.token,
                                     endpoint=self.endpoint) from exc
                failures = 1 if state.have > before else failures + 1
                if failures > len(RETRY_WAITS_S):
                    raise DownloadError(
                        f"The connection kept dropping while downloading {remote.local_rel}; "
                        f"check the connection and download again (it resumes where it "
                        f"stopped).") from exc
                log.warning("download of %s interrupted (%s); resuming at %s", remote.local_rel,
                            type(exc).__name__, format_size(state.have))
                state.close()
                if self.cancel.wait(RETRY_WAITS_S[failures - 1]):
                    raise DownloadCancelledError() from None
            except Exception as exc:
                raise _hub_error(exc, repo=remote.repo, what=remote.path, token=self.token,
                                 endpoint=self.endpoint) from exc

    def locate(self, remote: RemoteFile) -> tuple[str, dict[str, str], int]:
        """HEAD /resolve: where the bytes are (the hub, or a CDN), the headers to send there and
        the size; refuses a file that changed since the listing."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.utils import build_hf_headers

        revision = self.commits.get(remote.repo, self.revision)
        url = hf_hub_url(remote.repo, remote.path, revision=revision, endpoint=self.endpoint)
        headers = build_hf_headers(token=self.token or False, library_name=LIBRARY_NAME)
        headers["Accept-Encoding"] = "identity"  # sizes and ranges of the raw bytes
        meta = self.head(url, headers)
        self.contacted = True
        if meta.commit:
            self.commits.setdefault(remote.repo, meta.commit)
        changed = (remote.sha256 and _SHA256.match(meta.etag) and meta.etag != remote.sha256) \
            or (remote.size and meta.size is not None and meta.size != remote.size)
        if changed:
            raise DownloadError(f"{remote.path} changed on the hub since its file list was read; "
                                f"start the download again.")
        expected = remote.size or meta.size or 0
        if not remote.size and meta.size and (remote.repo, remote.path) not in self.sized:
            self.sized.add((remote.repo, remote.path))
            self.all_total += meta.size
        return meta.location, headers, expected

    def headers_for(self, url: str, headers: dict[str, str]) -> dict[str, str]:
        """The headers to send to url: all of them on the hub, without the token anywhere else
        (a CDN's signed url, a storage bucket, another port or scheme on the hub's host)."""
        if _origin(url) == self.hub:
            return dict(headers)
        return {name: value for name, value in headers.items()
                if name.lower() != "authorization"}

    def head(self, url: str, headers: dict[str, str]) -> _FileMeta:
        """HEAD /resolve, following redirects only while they stay on the hub (a renamed repo);
        a redirect elsewhere (an LFS file's CDN) is the answer: it carries the metadata."""
        from huggingface_hub import get_session
        from huggingface_hub.utils import hf_raise_for_status

        session = get_session()
        for _ in range(MAX_REDIRECTS):
            # auth=None: no credentials of the session's own, only the headers built here
            response = session.request("HEAD", url, headers=self.headers_for(url, headers),
                                       timeout=CONNECT_TIMEOUT_S, follow_redirects=False,
                                       auth=None)
            hf_raise_for_status(response)
            target = _redirect_target(url, response)
            if target is None or _origin(target) != self.hub:
                found = response.headers
                size = found.get("X-Linked-Size")
                if size is None and target is None:  # the bytes themselves, not a redirect
                    size = found.get("Content-Length")
                return _FileMeta(location=target or url, commit=found.get("X-Repo-Commit"),
                                 etag=_etag(found.get("X-Linked-Etag") or found.get("ETag")),
                                 size=_int(size))
            url = target
        raise _httpx().TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")

    def stream(self, remote: RemoteFile, url: str, headers: dict[str, str], state: _Partial,
               expected: int) -> None:
        from huggingface_hub import get_session

        httpx = _httpx()
        if expected and state.have > expected:
            state.reset()
        if expected and state.have == expected:
            self.report(remote, state.have, expected)
            return
        request_headers = dict(headers)
        if state.have:
            request_headers["Range"] = f"bytes={state.have}-"
        timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
        session = get_session()
        for _ in range(MAX_REDIRECTS):  # followed here, so each hop gets its own headers
            with session.stream("GET", url, headers=self.headers_for(url, request_headers),
                                timeout=timeout, follow_redirects=False,
                                auth=None) as response:
                target = _redirect_target(url, response)
                if target is not None:
                    url = target
                    continue
                self.receive(remote, response, state, expected)
                return
        raise httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")

    def receive(self, remote: RemoteFile, response: Any, state: _Partial,
                expected: int) -> None:
        """The bytes of a GET's answer into state."""
        from huggingface_hub.utils import hf_raise_for_status

        status = response.status_code
        if status == 416:  # our bytes do not fit the file any more: start over
            state.reset()
            raise _Busy("range not satisfiable")
        if status in _RETRY_STATUS:
            raise _Busy(f"HTTP {status}")
        if status >= 400:
            response.read()
            hf_raise_for_status(response)
        if state.have and not _resumes_at(response, state.have):
            log.info("the server sent %s from the start", remote.local_rel)
            state.reset()
        total = expected or _length(response) or 0
        self.report(remote, state.have, total)
        for chunk in response.iter_bytes(CHUNK_SIZE):
            if self.cancel.is_set():
                raise DownloadCancelledError()
            state.write(chunk)
            self.report(remote, state.have, total)


def _redirect_target(url: str, response: Any) -> str | None:
    """Where a redirect answer points (absolute), None for any other answer."""
    location = response.headers.get("Location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        return None
    return urljoin(url, location)


def _resumes_at(response: Any, offset: int) -> bool:
    """A 206 whose Content-Range starts where our bytes end."""
    if response.status_code != 206:
        return False
    match = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
    return match is not None and int(match.group(1)) == offset


def _length(response: Any) -> int | None:
    value = response.headers.get("Content-Range", "").rpartition("/")[2] or \
        response.headers.get("Content-Length")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def download(plan: DownloadPlan, models_dir: Path, *, progress: ProgressCallback | None = None,
             cancel: threading.Event | None = None, token: str | None = None,
             revision: str = "main") -> list[Path]:
    """Fetch every file of the plan into models_dir (catalog layout); returns their paths.

    Files already there (right size and sha256) are kept. Each file is verified (size and
    sha256) before it is renamed into place, so a final path only ever holds a whole, checked
    file. Raises DownloadError (one sentence) on failure, DownloadCancelledError when `cancel`
    is set; either way finished files stay and the current file resumes on the next call.
    token None: `resolve_token()`.
    """
    models_dir = Path(models_dir)
    cancel = cancel or threading.Event()
    check_disk_space(plan, models_dir)
    token = token or resolve_token()
    run = _Run(models_dir, token=token, endpoint=hub_endpoint(), revision=revision,
               progress=progress, cancel=cancel, all_total=plan.total_bytes)
    paths = [run.fetch(remote) for remote in plan.files]
    log.info("downloaded %d file(s) into %s", len(paths), models_dir)
    return paths
