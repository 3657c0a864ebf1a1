"""HTTP with the Hugging Face Hub for a download: HEAD /resolve for a file's metadata and a
streamed GET of its bytes, through huggingface_hub's shared session.

The token only ever goes to the hub endpoint itself (same scheme, host and port): every
redirect is followed here, and each hop gets the headers without the token unless that hop is
on the hub. Not `get_hf_file_metadata`: huggingface_hub 1.30 to 2.1 follow its redirects with
the token whenever the target has the hub's host name, whatever its port or scheme
(`_is_same_or_hub_host` in huggingface_hub/utils/_http.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlparse

DEFAULT_ENDPOINT = "https://huggingface.co"
LIBRARY_NAME = "sa3-studio"
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
MAX_REDIRECTS = 10

Origin = tuple[str, str, int]
"""(scheme, host, port) of a url: the hub's is the one the token is ever sent to."""


def hub_endpoint() -> str:
    """The hub to talk to: $HF_ENDPOINT (a mirror, or a local test server) or huggingface.co.
    Read at call time: huggingface_hub reads it once at import."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def httpx_module() -> Any:
    """The HTTP library huggingface_hub's session is built on (httpx2 in 2.x, httpx in 1.x)."""
    try:
        import httpx2
    except ImportError:  # pragma: no cover - huggingface_hub 1.x
        import httpx as httpx2
    return httpx2


@dataclass(frozen=True)
class FileMeta:
    """What HEAD /resolve says about a file: where its bytes are and what they should be."""

    location: str
    commit: str | None
    etag: str
    size: int | None


def origin(url: str) -> Origin:
    parsed = urlparse(url)
    default = {"http": 80, "https": 443}.get(parsed.scheme, 0)
    return parsed.scheme, (parsed.hostname or "").lower(), parsed.port or default


def headers_for(url: str, headers: dict[str, str], hub: Origin) -> dict[str, str]:
    """The headers to send to url: all of them on the hub, without the token anywhere else
    (a CDN's signed url, a storage bucket, another port or scheme on the hub's host)."""
    if origin(url) == hub:
        return dict(headers)
    return {name: value for name, value in headers.items()
            if name.lower() != "authorization"}


def head_file(url: str, headers: dict[str, str], hub: Origin) -> FileMeta:
    """HEAD /resolve, following redirects only while they stay on the hub (a renamed repo);
    a redirect elsewhere (an LFS file's CDN) is the answer: it carries the metadata."""
    from huggingface_hub import get_session
    from huggingface_hub.utils import hf_raise_for_status

    session = get_session()
    for _ in range(MAX_REDIRECTS):
        # auth=None: no credentials of the session's own, only the headers built here
        response = session.request("HEAD", url, headers=headers_for(url, headers, hub),
                                   timeout=CONNECT_TIMEOUT_S, follow_redirects=False,
                                   auth=None)
        hf_raise_for_status(response)
        target = redirect_target(url, response)
        if target is None or origin(target) != hub:
            found = response.headers
            size = found.get("X-Linked-Size")
            if size is None and target is None:  # the bytes themselves, not a redirect
                size = found.get("Content-Length")
            return FileMeta(location=target or url, commit=found.get("X-Repo-Commit"),
                            etag=_etag(found.get("X-Linked-Etag") or found.get("ETag")),
                            size=_int(size))
        url = target
    raise httpx_module().TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")


@contextmanager
def get_stream(url: str, headers: dict[str, str], hub: Origin) -> Iterator[Any]:
    """A streamed GET of url, its redirects followed here so each hop gets its own headers;
    yields the first answer that is not a redirect, whatever its status."""
    from huggingface_hub import get_session

    httpx = httpx_module()
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    session = get_session()
    for _ in range(MAX_REDIRECTS):
        with session.stream("GET", url, headers=headers_for(url, headers, hub),
                            timeout=timeout, follow_redirects=False, auth=None) as response:
            target = redirect_target(url, response)
            if target is None:
                yield response
                return
        url = target
    raise httpx.TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")


def redirect_target(url: str, response: Any) -> str | None:
    """Where a redirect answer points (absolute), None for any other answer."""
    location = response.headers.get("Location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        return None
    return urljoin(url, location)


def resumes_at(response: Any, offset: int) -> bool:
    """A 206 whose Content-Range starts where our bytes end."""
    if response.status_code != 206:
        return False
    match = re.match(r"bytes (\d+)-", response.headers.get("Content-Range", ""))
    return match is not None and int(match.group(1)) == offset


def full_length(response: Any) -> int | None:
    """The whole file's size: the total of a Content-Range, else the Content-Length."""
    value = response.headers.get("Content-Range", "").rpartition("/")[2] or \
        response.headers.get("Content-Length")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _etag(value: str | None) -> str:
    """An ETag without its weak prefix and quotes, lower case."""
    return (value or "").strip().removeprefix("W/").strip('"').lower()


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
