"""What a download will fetch, known before it starts: the hub's file listing, the files chosen
for the requested sets, the bytes still to fetch, and whether the disk has room for them."""

from __future__ import annotations

import logging
import math
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from engines.error_sentences import printable
from engines.lazy import lazy_import
from engines.models.download_errors import DownloadError, NotHubAnswer, hub_error, hub_failures
from engines.models.hub_files import (
    REPO,
    TOKENIZER_FALLBACK_REPO,
    RemoteFile,
    find_tokenizer,
    plan_files,
)
from engines.models.hub_http import LIBRARY_NAME, get_json, hub_endpoint, origin
from engines.models.hub_token import resolve_token

log = logging.getLogger(__name__)
hub_utils = lazy_import("huggingface_hub.utils")

PARTIAL_DIR = ".downloads"  # under the models folder: partial files and the verified list
DISK_MARGIN = 0.05
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


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


def hub_listing(repo: str = REPO, revision: str = "main",
                token: str | None = None) -> list[RemoteFile]:
    """Every file of a hub repo with its size and, for LFS files, its sha256 (the recursive
    tree listing, page by page). token None: `resolve_token()`. DownloadError (one sentence)
    when the hub cannot be reached or answers something that is not a file list."""
    endpoint = hub_endpoint()  # first: huggingface_hub fails to import with some bad ones

    token = token or resolve_token()
    what = f"the file list of {repo}"
    url: str | None = (f"{endpoint}/api/models/{repo}/tree/{quote(revision, safe='')}"
                       f"?recursive=true&expand=false")
    headers = hub_utils.build_hf_headers(token=token or False, library_name=LIBRARY_NAME)
    files: list[RemoteFile] = []
    seen: set[str] = set()
    try:
        while url is not None:
            if url in seen:  # a Link header that points back: the list would never end
                raise NotHubAnswer("its file list never ends", url)
            seen.add(url)
            page, next_url = get_json(url, headers, origin(endpoint))
            files += tree_entries(page, repo, url)
            url = next_url
    except DownloadError:
        raise
    except hub_failures() as exc:
        raise hub_error(exc, repo=repo, what=what, token=token, endpoint=endpoint) from exc
    log.info("listed %d file(s) in %s at %s", len(files), repo, endpoint)
    return files


def tree_entries(page: object, repo: str, url: str) -> list[RemoteFile]:
    """The files of one page of a tree listing; NotHubAnswer when it is not a list of entries
    with a path, a size and (for LFS files) a sha256 the way the hub writes them."""
    if not isinstance(page, list):
        raise NotHubAnswer("its file list is not a list", url)
    files = []
    for entry in page:
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise NotHubAnswer("its file list holds something that is not a file entry", url)
        if entry["type"] != "file":
            continue  # folders (and kinds of entry the hub may add later)
        path, size, lfs = entry.get("path"), _byte_count(entry.get("size")), entry.get("lfs")
        if not isinstance(path, str) or not path or size is None:
            raise NotHubAnswer("a file in its file list has no usable path or size", url)
        sha = None
        if lfs is not None:
            sha = lfs.get("oid") if isinstance(lfs, dict) else None
            lfs_size = _byte_count(lfs.get("size")) if isinstance(lfs, dict) else None
            if not isinstance(sha, str) or not _SHA256.match(sha.lower()) or lfs_size is None:
                raise NotHubAnswer(f"the large-file entry of {printable(path)} in its file "
                                   f"list has no usable sha256 or size", url)
            size, sha = lfs_size, sha.lower()
        files.append(RemoteFile(path, size, sha, repo=repo))
    return files


def _byte_count(value: object) -> int | None:
    """A size from JSON: a whole number of bytes (not a bool, not negative), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


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
                  token: str | None = None, adapters: bool = False) -> DownloadPlan:
    """List the hub and plan the files for these sets (see `hub_files.plan_files`); the
    tokenizer's fallback repo is listed only when ours lacks tokenizer.json."""
    hub_endpoint()  # a bad HF_ENDPOINT is the first thing to say
    token = token or resolve_token()
    listing = hub_listing(REPO, revision, token)
    fallback = None
    if find_tokenizer(listing, arch, fmt) is None:
        fallback = hub_listing(TOKENIZER_FALLBACK_REPO, "main", token)
    files = plan_files(list(sets), arch, list(precisions), fmt, listing, fallback, adapters)
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
