"""Reading a Python package index for the GPU runtime: which files a project offers (the
simple repository API: PEP 691 JSON, or PEP 503 HTML with `#sha256=` fragments), and which of
them fits this interpreter and system (wheel tags from `packaging`).

The indexes are PyPI and NVIDIA's (TensorRT's library wheels are too large for PyPI, which
holds only a stub there), or $SA3_STUDIO_GPU_INDEX: index urls separated by spaces (a mirror,
or the tests' local server).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin

from packaging.specifiers import SpecifierSet
from packaging.tags import Tag, sys_tags
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

INDEX_ENV = "SA3_STUDIO_GPU_INDEX"
DEFAULT_INDEXES = ("https://pypi.org/simple", "https://pypi.nvidia.com")
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
MAX_PAGE_BYTES = 32 << 20  # a project page with every release is a few MB at most


@dataclass(frozen=True)
class IndexFile:
    """One file a project page offers."""

    project: str  # canonical name
    filename: str
    url: str  # without the hash fragment
    version: Version
    sha256: str | None
    requires_python: str | None
    yanked: bool
    size: int | None
    tags: frozenset[Tag]  # empty for an sdist

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")


def index_urls() -> tuple[str, ...]:
    """$SA3_STUDIO_GPU_INDEX (space-separated) or PyPI and NVIDIA's index."""
    value = os.environ.get(INDEX_ENV, "").split()
    return tuple(u.rstrip("/") for u in value) or DEFAULT_INDEXES


def project_url(index: str, project: str) -> str:
    return f"{index.rstrip('/')}/{canonicalize_name(project)}/"


def _file(project: str, filename: str, url: str, sha256: str | None,
          requires_python: str | None, yanked: bool, size: int | None) -> IndexFile | None:
    """An IndexFile, or None for a file whose name is neither a wheel nor an sdist of project."""
    try:
        if filename.endswith(".whl"):
            name, version, _, tags = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
            tags = frozenset()
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    if canonicalize_name(name) != canonicalize_name(project):
        return None
    return IndexFile(canonicalize_name(project), filename, url, version,
                     sha256.lower() if sha256 else None, requires_python or None, yanked,
                     size, frozenset(tags))


def parse_json_page(project: str, page_url: str, body: bytes) -> list[IndexFile]:
    """A PEP 691 project page."""
    data = json.loads(body.decode("utf-8"))
    found = []
    for entry in data.get("files", []):
        url, _ = urldefrag(urljoin(page_url, entry["url"]))
        hashes = entry.get("hashes") or {}
        size = entry.get("size")
        item = _file(project, entry["filename"], url, hashes.get("sha256"),
                     entry.get("requires-python"), bool(entry.get("yanked")),
                     size if isinstance(size, int) else None)
        if item is not None:
            found.append(item)
    return found


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str | None]] = []
        self._open: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open = dict(attrs)
            self._open["#text"] = ""
            self.links.append(self._open)

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["#text"] = (self._open["#text"] or "") + data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open = None


def parse_html_page(project: str, page_url: str, body: bytes) -> list[IndexFile]:
    """A PEP 503 project page: one <a> per file, the sha256 in the href's fragment."""
    parser = _LinkParser()
    parser.feed(body.decode("utf-8", "replace"))
    found = []
    for link in parser.links:
        href = link.get("href")
        if not href:
            continue
        url, fragment = urldefrag(urljoin(page_url, href))
        algorithm, _, digest = fragment.partition("=")
        filename = url.rsplit("/", 1)[-1].split("?", 1)[0]
        item = _file(project, filename, url, digest if algorithm == "sha256" else None,
                     link.get("data-requires-python"), "data-yanked" in link, None)
        if item is not None:
            found.append(item)
    return found


def parse_page(project: str, page_url: str, content_type: str, body: bytes) -> list[IndexFile]:
    if content_type.split(";")[0].strip().lower() == JSON_TYPE:
        return parse_json_page(project, page_url, body)
    return parse_html_page(project, page_url, body)


def _python_fits(requires_python: str | None) -> bool:
    if not requires_python:
        return True
    try:
        return SpecifierSet(requires_python).contains(
            ".".join(map(str, sys.version_info[:3])), prereleases=True)
    except ValueError:  # an unparsable requirement: pip ignores it too
        return True


def tag_ranks() -> dict[Tag, int]:
    """This interpreter's tags, most specific first (rank 0)."""
    return {tag: rank for rank, tag in enumerate(sys_tags())}


def best_file(files: list[IndexFile], specifier: SpecifierSet, ranks: dict[Tag, int],
              sdist_allowed: bool = False) -> IndexFile | None:
    """The newest version within specifier that has a file for here: a wheel whose tags
    fit (the most specific one), else an sdist when allowed. Yanked files only when the
    specifier pins that exact version (PEP 592); prereleases only when it names one."""
    def fits(f: IndexFile) -> bool:
        prereleases = bool(specifier.prereleases)
        if not specifier.contains(f.version, prereleases=prereleases):
            return False
        if not _python_fits(f.requires_python):
            return False
        if f.yanked and not any(s.operator == "==" for s in specifier):
            return False
        return (f.is_wheel and bool(f.tags & ranks.keys())) or (not f.is_wheel and sdist_allowed)

    def preference(f: IndexFile) -> tuple[Any, ...]:
        rank = min((ranks[t] for t in f.tags if t in ranks), default=len(ranks) + 1)
        return (f.version, f.is_wheel, -rank)

    usable = [f for f in files if fits(f)]
    return max(usable, key=preference) if usable else None
