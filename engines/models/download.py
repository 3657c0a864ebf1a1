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

This module runs the transfer: one file after another, retries, progress and cancelling. The
other jobs have modules of their own, and their names callers use are importable from here too:
`download_plan` (the listing, the plan, the disk-space check), `hub_http` (HEAD and GET, with
the token kept on the hub's own origin), `hub_transport` (the HTTP library and its timeouts),
`download_files` (partial files, verifying, placing),
`hub_token` (reading and storing the token), `download_errors` (failures as one sentence).
"""

from __future__ import annotations

import logging
import re
import shutil  # noqa: F401 - tests patch dl.shutil.disk_usage for download_plan's disk check
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from engines.error_sentences import shown
from engines.lazy import lazy_import
from engines.models.download_errors import (
    TOKEN_HINT,
    BusyAnswer,
    DownloadCancelledError,
    DownloadError,
    NotHubAnswer,
    hub_error,
    hub_failures,
)
from engines.models.download_files import VERIFIED_FILE, PartialFile, already_there
from engines.models.download_plan import (
    DISK_MARGIN,
    PARTIAL_DIR,
    DownloadPlan,
    check_disk_space,
    format_size,
    hub_listing,
    partial_path,
    plan_download,
)
from engines.models.hub_files import RemoteFile
from engines.models.hub_http import (
    DEFAULT_ENDPOINT,
    LIBRARY_NAME,
    MAX_REDIRECTS,
    REQUEST_RETRY_WAITS_S,
    check_status,
    full_length,
    get_stream,
    head_file,
    hub_endpoint,
    origin,
    resumes_at,
    retryable,
)
from engines.models.hub_token import KEYRING_SERVICE, KEYRING_USER, resolve_token, store_token
from engines.models.hub_transport import (
    CONNECT_TIMEOUT_S,
    READ_TIMEOUT_S,
    TIMEOUT_ENV,
    httpx_module,
    timeouts,
)

__all__ = [
    "CHUNK_SIZE", "CONNECT_TIMEOUT_S", "DEFAULT_ENDPOINT", "DISK_MARGIN", "KEYRING_SERVICE",
    "KEYRING_USER", "LIBRARY_NAME", "MAX_REDIRECTS", "PARTIAL_DIR", "READ_TIMEOUT_S",
    "REQUEST_RETRY_WAITS_S", "RETRY_WAITS_S", "TIMEOUT_ENV", "TOKEN_HINT", "VERIFIED_FILE",
    "DownloadCancelledError", "DownloadError", "DownloadPlan", "ProgressCallback",
    "check_disk_space", "download", "format_size", "hub_endpoint", "hub_listing",
    "partial_path", "plan_download", "resolve_token", "store_token",
]

log = logging.getLogger(__name__)
huggingface_hub = lazy_import("huggingface_hub")
hub_utils = lazy_import("huggingface_hub.utils")

# Read at call time from this module, so tests can make chunks small and retries instant.
CHUNK_SIZE = 1 << 20
# Waits before each retry after a dropped connection or a busy answer while fetching a file's
# bytes; the count resets whenever bytes arrive, so only a server that sends nothing runs out.
RETRY_WAITS_S: tuple[float, ...] = (0.0, 1.0, 3.0)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

ProgressCallback = Callable[[str, int, int, int, int], None]
"""progress(file, done, total, all_done, all_total): file is the local path relative to the
models folder; byte counts, never decreasing."""


def _write_chunk(fh: IO[bytes], data: bytes) -> None:
    """One write to a partial file (a seam: tests make it fail like a full disk)."""
    fh.write(data)


class _Interrupted(Exception):
    """A body that ended before the file did, or a range the server no longer has: fetch the
    rest again like after a dropped connection."""


class _DownloadRun:
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
        self.hub = origin(endpoint)  # the one origin the token is ever sent to
        self.commits: dict[str, str] = {}  # repo -> commit of its first HEAD: one version
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

    def pause(self, seconds: float) -> None:
        """Wait before a retry; a cancel ends the wait at once."""
        if self.cancel.wait(seconds):
            raise DownloadCancelledError()

    def failed(self, exc: BaseException, remote: RemoteFile) -> DownloadError:
        return hub_error(exc, repo=remote.repo, what=remote.path, token=self.token,
                         endpoint=self.endpoint)

    # one file

    def fetch(self, remote: RemoteFile) -> Path:
        final = remote.local_path(self.models_dir)
        self.check_cancel()
        if already_there(self.models_dir, remote, final, self.cancel, CHUNK_SIZE):
            log.info("%s is already there", remote.local_rel)
            self.report(remote, remote.size, remote.size)
            self.done_before += remote.size
            return final
        log.info("downloading %s from %s (%s)", remote.path, remote.repo,
                 format_size(remote.size) if remote.size else "size unknown")
        state = PartialFile.resume(partial_path(self.models_dir, remote), remote.local_rel,
                                   self.models_dir, remote.sha256 is not None, self.cancel,
                                   chunk_size=CHUNK_SIZE, write_chunk=_write_chunk)
        try:
            expected = self.transfer(remote, state)
        finally:
            state.release()
        state.install(remote, final, expected)
        self.done_before += expected
        return final

    def transfer(self, remote: RemoteFile, state: PartialFile) -> int:
        """Fetch the missing bytes into state, resuming after dropped connections; returns the
        file's size. Bytes arriving reset the count of retries, so a slow but moving download
        finishes; a server that sends nothing ends in a sentence after RETRY_WAITS_S."""
        failures = 0
        while True:
            self.check_cancel()
            url, headers, expected = self.locate(remote)
            before = state.have
            try:
                self.stream(remote, url, headers, state, expected)
                if expected and state.have < expected:  # a body that ended early, cleanly
                    raise _Interrupted("the body ended early")
                state.close(sync=True)
                return expected
            except DownloadError:
                raise
            except (_Interrupted, BusyAnswer, httpx_module().TransportError) as exc:
                moved = state.have > before
                if not (moved or isinstance(exc, _Interrupted) or retryable(exc)):
                    raise self.stalled(exc, remote) from exc  # a timeout with nothing sent
                failures = 1 if moved else failures + 1
                if failures > len(RETRY_WAITS_S):
                    raise self.gave_up(exc, remote) from exc
                log.info("download of %s interrupted (%s); resuming at %s", remote.local_rel,
                         exc, format_size(state.have))
                state.close()
                self.pause(RETRY_WAITS_S[failures - 1])
            except hub_failures() as exc:
                raise self.failed(exc, remote) from exc

    def stalled(self, exc: BaseException, remote: RemoteFile) -> DownloadError:
        if not isinstance(exc, httpx_module().ReadTimeout):
            return self.failed(exc, remote)
        return DownloadError(f"The server stopped sending {remote.local_rel} for "
                             f"{timeouts()[1]:g} s; check the connection and download again "
                             f"(it resumes where it stopped).")

    def gave_up(self, exc: BaseException, remote: RemoteFile) -> DownloadError:
        if isinstance(exc, BusyAnswer):
            return self.failed(exc, remote)
        return DownloadError(f"The connection kept dropping while downloading "
                             f"{remote.local_rel}; check the connection and download again (it "
                             f"resumes where it stopped).")

    def locate(self, remote: RemoteFile) -> tuple[str, dict[str, str], int]:
        """HEAD /resolve: where the bytes are (the hub, or a CDN), the headers to send there and
        the size; refuses a file that changed since the listing."""
        revision = self.commits.get(remote.repo, self.revision)
        url = huggingface_hub.hf_hub_url(remote.repo, remote.path, revision=revision,
                                         endpoint=self.endpoint)
        headers = hub_utils.build_hf_headers(token=self.token or False, library_name=LIBRARY_NAME)
        headers["Accept-Encoding"] = "identity"  # sizes and ranges of the raw bytes
        try:
            meta = head_file(url, headers, self.hub, sleep=self.pause)
        except DownloadError:
            raise
        except hub_failures() as exc:
            raise self.failed(exc, remote) from exc
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

    def stream(self, remote: RemoteFile, url: str, headers: dict[str, str], state: PartialFile,
               expected: int) -> None:
        if expected and state.have > expected:
            state.reset()
        if expected and state.have == expected:
            self.report(remote, state.have, expected)
            return
        request_headers = dict(headers)
        if state.have:
            request_headers["Range"] = f"bytes={state.have}-"
        with get_stream(url, request_headers, self.hub) as response:
            self.receive(remote, response, state, expected)

    def receive(self, remote: RemoteFile, response: Any, state: PartialFile,
                expected: int) -> None:
        """The bytes of a GET's answer into state, never more than the file's size."""
        status = response.status_code
        if status == 416:  # our bytes do not fit the file any more: start over
            state.reset()
            raise _Interrupted("range not satisfiable")
        check_status(response)
        if status not in (200, 206):
            raise NotHubAnswer(f"it answered HTTP {status} to a download",
                               str(response.request.url))
        if state.have and not resumes_at(response, state.have):
            log.info("the server sent %s from the start", remote.local_rel)
            state.reset()
        announced = full_length(response)
        if expected and announced is not None and announced != expected:
            raise DownloadError(f"The server announced {announced} bytes for {remote.local_rel} "
                                f"but the hub lists {expected}; try again later or check "
                                f"HF_ENDPOINT.")
        total = expected or announced or 0
        self.report(remote, state.have, total)
        for chunk in response.iter_bytes(CHUNK_SIZE):
            if self.cancel.is_set():
                raise DownloadCancelledError()
            if total and state.have + len(chunk) > total:
                state.discard()
                raise DownloadError(f"The server sent more than the {total} bytes of "
                                    f"{remote.local_rel}, so the partial file was deleted; try "
                                    f"again later or check HF_ENDPOINT.")
            state.write(chunk)
            self.report(remote, state.have, total)


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
    endpoint = hub_endpoint()  # before huggingface_hub is imported: some bad ones break that
    if models_dir.exists() and not models_dir.is_dir():
        raise DownloadError(f"The models folder {shown(models_dir)} is a file, not a folder; "
                            f"choose another models folder.")
    check_disk_space(plan, models_dir)
    token = token or resolve_token()
    run = _DownloadRun(models_dir, token=token, endpoint=endpoint, revision=revision,
               progress=progress, cancel=cancel, all_total=plan.total_bytes)
    paths = [run.fetch(remote) for remote in plan.files]
    log.info("downloaded %d file(s) into %s", len(paths), models_dir)
    return paths
