"""What a download will fetch, known before it starts: the hub's file listing, the files chosen
for the requested sets, the bytes still to fetch, and whether the disk has room for them."""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engines.models.download_errors import DownloadError, hub_error
from engines.models.hub_files import (
    REPO,
    TOKENIZER_FALLBACK_REPO,
    RemoteFile,
    find_tokenizer,
    plan_files,
)
from engines.models.hub_http import LIBRARY_NAME, hub_endpoint
from engines.models.hub_token import resolve_token

log = logging.getLogger(__name__)

PARTIAL_DIR = ".downloads"  # under the models folder: partial files and the verified list
DISK_MARGIN = 0.05


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
        raise hub_error(exc, repo=repo, what=f"the file list of {repo}", token=token,
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
