"""The GPU runtime's downloads: project pages from the package indexes and the files
themselves, through huggingface_hub's HTTP session (its proxies and certificates), with
progress, cancel, resume and a sha256 check.

A file is downloaded to `<name>.part` beside its final name; an interrupted download is
continued with an HTTP Range request; the finished bytes must match the sha256 the index
published (PEP 503 fragment or PEP 691 hashes), else the part is deleted and nothing is
renamed. A file is only ever under its final name when it matched.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from engines.error_sentences import printable, reason
from engines.errors import CancelledError, Remedy, StudioError, join
from engines.lazy import lazy_import
from engines.models.gpu_runtime_index import ACCEPT, MAX_PAGE_BYTES, IndexFile, parse_page
from engines.models.gpu_runtime_index import project_url as page_url
from engines.models.hub_transport import httpx_module, timeouts

log = logging.getLogger(__name__)
hub = lazy_import("huggingface_hub")
hub_constants = lazy_import("huggingface_hub.constants")
hub_errors = lazy_import("huggingface_hub.errors")

CHUNK_BYTES = 1 << 20
PART_SUFFIX = ".part"
FETCH_AGAIN = Remedy.command("models gpu-runtime")
# (file name, bytes done, bytes in all or None when the server does not say)
FileProgress = Callable[[str, int, "int | None"], None]


class GpuRuntimeError(StudioError):
    """Fetching or unpacking the GPU runtime failed or was refused; one sentence."""


class GpuRuntimeCancelledError(GpuRuntimeError, CancelledError):
    """The user cancelled; the part downloaded so far is kept to resume."""


class GpuRuntimeOfflineError(GpuRuntimeError):
    """huggingface_hub's offline switch is on, and its session refuses every request (the
    package indexes too): a setting to change, not a failure of the network."""


def offline_error() -> GpuRuntimeOfflineError:
    return GpuRuntimeOfflineError(join(
        "Hugging Face offline mode is on (HF_HUB_OFFLINE is set), and it blocks every "
        "download, the GPU runtime's package indexes too; unset HF_HUB_OFFLINE and run ",
        FETCH_AGAIN, " again."))


def check_online() -> None:
    """GpuRuntimeOfflineError when huggingface_hub's offline switch is on (checked before
    anything is fetched, so nothing starts that cannot finish). huggingface_hub reads the
    variables once, as it is imported; they are read again here, as a fresh process would."""
    variables = (os.environ.get(name, "") for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    if any(value.strip().upper() in ("1", "ON", "YES", "TRUE") for value in variables) \
            or getattr(hub_constants, "HF_HUB_OFFLINE", False):
        raise offline_error()


def session() -> Any:
    """huggingface_hub's shared HTTP client."""
    return hub.get_session()


def _timeout() -> Any:
    connect, read = timeouts()
    return httpx_module().Timeout(read, connect=connect)


def _server(url: str) -> str:
    return urlparse(url).netloc or url


def _transport_failure(what: str, url: str, exc: BaseException, kept: bool) -> GpuRuntimeError:
    happened, _ = reason(exc)
    then = "the part downloaded so far is kept; run " if kept else "run "
    return GpuRuntimeError(join(f"{what} from {_server(url)} failed: {happened}; check the "
                                f"connection and {then}", FETCH_AGAIN, " again."))


def project_files(client: Any, index: str, project: str) -> list[IndexFile]:
    """Every file index offers for project ([] when it does not know the project)."""
    url = page_url(index, project)
    try:
        with client.stream("GET", url, headers={"Accept": ACCEPT}, timeout=_timeout(),
                           follow_redirects=True, auth=None) as response:
            if response.status_code == 404:
                return []
            if response.status_code >= 400:
                raise GpuRuntimeError(join(
                    f"The package index {_server(url)} answered HTTP {response.status_code} "
                    f"for {project}; try again later (", FETCH_AGAIN, ")."))
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_PAGE_BYTES:
                    raise GpuRuntimeError(f"The package index {_server(url)} sent far more than "
                                          f"a project page for {project}; check the index "
                                          f"address.")
            final_url = str(response.url)
            content_type = response.headers.get("content-type", "")
    except httpx_module().HTTPError as exc:
        raise _transport_failure(f"Reading the list of {project} files", url, exc,
                                 kept=False) from exc
    except hub_errors.OfflineModeIsEnabled as exc:
        raise offline_error() from exc
    try:
        return parse_page(project, final_url, content_type, bytes(body))
    except (ValueError, KeyError, TypeError) as exc:
        raise GpuRuntimeError(f"The package index {_server(url)} sent a page for {project} "
                              f"that is not a package list; check the index address.") from exc


def _sha256_of(path: Path) -> Any:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest


def check_room(folder: Path, needed: int, what: str) -> None:
    """GpuRuntimeError when folder's disk has less than `needed` bytes free."""
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise GpuRuntimeError(
            f"{what} needs {needed / 1e9:.1f} GB free in {printable(folder)} but only "
            f"{free / 1e9:.1f} GB is; free some space, or set SA3_STUDIO_HOME to a folder on a "
            f"larger disk.")


def download(client: Any, file: IndexFile, folder: Path, progress: FileProgress,
             cancel: threading.Event) -> Path:
    """file, downloaded into folder and verified; returns its path."""
    if not file.sha256:
        raise GpuRuntimeError(f"The package index gave no sha256 for {file.filename}, so it "
                              f"cannot be verified; use an index that publishes hashes.")
    target = folder / file.filename
    if target.is_file() and _sha256_of(target).hexdigest() == file.sha256:
        size = target.stat().st_size
        progress(file.filename, size, size)
        return target
    part = folder / (file.filename + PART_SUFFIX)
    digest = _receive(client, file, part, progress, cancel)
    if digest != file.sha256:
        part.unlink(missing_ok=True)
        raise GpuRuntimeError(join(
            f"{file.filename} from {_server(file.url)} does not match the sha256 its index "
            f"published (got {digest[:16]}..., expected {file.sha256[:16]}...), so it was "
            f"deleted; run ", FETCH_AGAIN, " again, and if it fails again the index or a "
            "proxy is changing the file."))
    os.replace(part, target)
    return target


def _receive(client: Any, file: IndexFile, part: Path, progress: FileProgress,
             cancel: threading.Event) -> str:
    """Download into part (continuing what is there); returns the sha256 of all of it."""
    have = part.stat().st_size if part.is_file() else 0
    digest = _sha256_of(part) if have else hashlib.sha256()
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with client.stream("GET", file.url, headers=headers, timeout=_timeout(),
                           follow_redirects=True, auth=None) as response:
            status = response.status_code
            if status == 416 and have:  # the part is already whole (or longer): start over
                part.unlink()
                return _receive(client, file, part, progress, cancel)
            if status >= 400:
                raise GpuRuntimeError(join(
                    f"{_server(file.url)} answered HTTP {status} for {file.filename}; try "
                    f"again later (", FETCH_AGAIN, ")."))
            if status != 206:  # the whole file, whatever we asked for
                have, digest = 0, hashlib.sha256()
            length = response.headers.get("content-length")
            total = have + int(length) if length and length.isdigit() else file.size
            if total is not None:
                check_room(part.parent, total - have, f"Downloading {file.filename}")
            with part.open("ab" if have else "wb") as out:
                for chunk in response.iter_bytes(CHUNK_BYTES):
                    if cancel.is_set():
                        raise GpuRuntimeCancelledError(
                            f"The GPU runtime download was cancelled; the part of "
                            f"{file.filename} downloaded so far is kept to resume.")
                    out.write(chunk)
                    digest.update(chunk)
                    have += len(chunk)
                    progress(file.filename, have, total)
                out.flush()
                os.fsync(out.fileno())
    except httpx_module().HTTPError as exc:
        raise _transport_failure(f"Downloading {file.filename}", file.url, exc,
                                 kept=part.is_file()) from exc
    except hub_errors.OfflineModeIsEnabled as exc:  # an OSError, but not about the disk
        raise offline_error() from exc
    except OSError as exc:
        raise GpuRuntimeError(join(
            f"Could not save {file.filename} in {printable(part.parent)}: {reason(exc)[0]}; "
            f"free some space or check the folder, then run ", FETCH_AGAIN, " again.")) from exc
    return digest.hexdigest()
