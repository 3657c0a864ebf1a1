"""HTTP with the Hugging Face Hub for a download: the file listing (JSON), HEAD /resolve for a
file's metadata and a streamed GET of its bytes, through huggingface_hub's shared session.

The token only ever goes to the hub endpoint itself (same scheme, host and port): every
redirect is followed here, and each hop gets the headers without the token unless that hop is
on the hub. Not `get_hf_file_metadata`: huggingface_hub 1.30 to 2.1 follow its redirects with
the token whenever the target has the hub's host name, whatever its port or scheme
(`_is_same_or_hub_host` in huggingface_hub/utils/_http.py).

Not `HfApi.list_repo_tree` either: it goes through `http_backoff`, which retries a refused
connection five times over 23 s and prints "Retrying in 8s" for each, and it trusts the JSON it
gets (a server answering bytes that are not UTF-8 ends in UnicodeDecodeError). Here a request
that got no answer, or a busy one (429, 5xx), is retried `REQUEST_RETRY_WAITS_S` times; a
timeout is not retried, so "did not answer within N s" is the time the user waited.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urljoin, urlparse

from engines.error_sentences import printable
from engines.lazy import lazy_import
from engines.models.download_errors import (
    BusyAnswer,
    DownloadError,
    NotHubAnswer,
    quiet_hub_logging,
)
from engines.models.hub_transport import httpx_module, timeouts

log = logging.getLogger(__name__)
huggingface_hub = lazy_import("huggingface_hub")
hub_utils = lazy_import("huggingface_hub.utils")

DEFAULT_ENDPOINT = "https://huggingface.co"
LIBRARY_NAME = "sa3-studio"
MAX_REDIRECTS = 10
# Waits before retrying a request that got no answer (refused, reset) or a busy one; short,
# because a hub that is down stays down for longer than a user wants to watch a terminal.
REQUEST_RETRY_WAITS_S: tuple[float, ...] = (0.5, 1.5)
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
MAX_JSON_BYTES = 64 << 20  # a file list of this repo is a few KB; more is not a hub

Origin = tuple[str, str, int]
"""(scheme, host, port) of a url: the hub's is the one the token is ever sent to."""

T = TypeVar("T")


def hub_endpoint() -> str:
    """The hub to talk to: $HF_ENDPOINT (a mirror, or a local test server) or huggingface.co.
    Read at call time: huggingface_hub reads it once at import. DownloadError when it is not a
    web address (no http:// or https://, no host, bytes that are not text)."""
    value = os.environ.get("HF_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
    endpoint = value.rstrip("/")
    try:
        parsed = urlparse(endpoint)
        usable = parsed.scheme in ("http", "https") and bool(parsed.hostname) \
            and endpoint.isprintable() and " " not in endpoint
        _ = parsed.port  # ValueError for a port that is not a number
    except ValueError:
        usable = False
    if not usable:
        raise DownloadError(f"HF_ENDPOINT '{printable(value)}' is not a web address like "
                            f"{DEFAULT_ENDPOINT}; fix it or unset it.")
    return endpoint


def _timeout() -> Any:
    connect, read = timeouts()
    return httpx_module().Timeout(read, connect=connect)


def session() -> Any:
    """huggingface_hub's shared HTTP client (its proxies, certificates, offline switch)."""
    quiet_hub_logging()
    return huggingface_hub.get_session()


# --------------------------------------------------------------------------------------------
# Retries and statuses


def _not_http(exc: BaseException) -> bool:
    """Whether a failure before any answer came from bytes that are not HTTP (the parser
    refused them) rather than a connection that closed or broke."""
    seen = 0
    while exc is not None and seen < 10:
        if (type(exc).__module__ or "").split(".")[0] == "h11":
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return False


def retryable(exc: BaseException) -> bool:
    """A failure that may pass on its own: no connection, a reset, a busy answer. Not a
    timeout (the user already waited that long) and not an answer that is not HTTP."""
    httpx = httpx_module()
    return isinstance(exc, (BusyAnswer, httpx.ConnectError, httpx.ReadError, httpx.WriteError,
                            httpx.RemoteProtocolError))


def retrying(attempt: Callable[[], T], sleep: Callable[[float], None] | None = None) -> T:
    """attempt(), again after each wait of REQUEST_RETRY_WAITS_S (by `sleep`, default
    time.sleep) while it fails in a way that may pass; the last failure is raised as it is."""
    waits = list(REQUEST_RETRY_WAITS_S)
    while True:
        try:
            return attempt()
        except (BusyAnswer, httpx_module().TransportError) as exc:
            if not waits or not retryable(exc):
                raise
            wait = waits.pop(0)
            log.info("hub request failed (%s); retrying in %g s", exc, wait)
            (sleep or time.sleep)(wait)


def check_status(response: Any) -> None:
    """BusyAnswer for 429 / 5xx, huggingface_hub's typed error (gated, not found, ...) for any
    other 4xx/5xx. It reads only the status and headers: huggingface_hub would parse the body
    as JSON, and a body that is not UTF-8 raises UnicodeDecodeError there."""
    status = response.status_code
    if status in RETRY_STATUS:
        raise BusyAnswer(status, str(response.request.url))
    if status < 400:
        return
    headers = [(k, v) for k, v in response.headers.items()
               if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")]
    bare = httpx_module().Response(status, headers=headers, content=b"",
                                   request=response.request)
    hub_utils.hf_raise_for_status(bare)


# --------------------------------------------------------------------------------------------
# Requests


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
    try:
        port = parsed.port or default
    except ValueError:  # a port that is not a number: an origin the hub never has
        port = -1
    return parsed.scheme, (parsed.hostname or "").lower(), port


def headers_for(url: str, headers: dict[str, str], hub: Origin) -> dict[str, str]:
    """The headers to send to url: all of them on the hub, without the token anywhere else
    (a CDN's signed url, a storage bucket, another port or scheme on the hub's host)."""
    if origin(url) == hub:
        return dict(headers)
    return {name: value for name, value in headers.items()
            if name.lower() != "authorization"}


def _send(method: str, url: str, headers: dict[str, str], hub: Origin, stack: ExitStack) -> Any:
    """One request, entered on stack (streamed); an answer that is not HTTP is NotHubAnswer."""
    httpx = httpx_module()
    try:
        # auth=None: no credentials of the session's own, only the headers built here
        return stack.enter_context(session().stream(
            method, url, headers=headers_for(url, headers, hub), timeout=_timeout(),
            follow_redirects=False, auth=None))
    except httpx.RemoteProtocolError as exc:
        if _not_http(exc):
            raise NotHubAnswer("its answer is not HTTP", url) from exc
        raise


def head_file(url: str, headers: dict[str, str], hub: Origin,
              sleep: Callable[[float], None] | None = None) -> FileMeta:
    """HEAD /resolve, following redirects only while they stay on the hub (a renamed repo);
    a redirect elsewhere (an LFS file's CDN) is the answer: it carries the metadata."""

    def once(url: str) -> Any:
        with ExitStack() as stack:
            response = _send("HEAD", url, headers, hub, stack)
            check_status(response)
            return response

    for _ in range(MAX_REDIRECTS):
        response = retrying(lambda url=url: once(url), sleep)
        target = redirect_target(url, response)
        if target is None or origin(target) != hub:
            found = response.headers
            size = found.get("X-Linked-Size")
            if size is None and target is None:  # the bytes themselves, not a redirect
                size = found.get("Content-Length")
            return FileMeta(location=target or url, commit=found.get("X-Repo-Commit"),
                            etag=_etag(found.get("X-Linked-Etag") or found.get("ETag")),
                            size=_size(size))
        url = target
    raise httpx_module().TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")


@contextmanager
def get_stream(url: str, headers: dict[str, str], hub: Origin) -> Iterator[Any]:
    """A streamed GET of url, its redirects followed here so each hop gets its own headers;
    yields the first answer that is not a redirect, whatever its status."""
    for _ in range(MAX_REDIRECTS):
        with ExitStack() as stack:
            response = _send("GET", url, headers, hub, stack)
            target = redirect_target(url, response)
            if target is None:
                yield response
                return
        url = target
    raise httpx_module().TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")


def get_json(url: str, headers: dict[str, str], hub: Origin) -> tuple[Any, str | None]:
    """GET url as JSON (retried like a HEAD): (the data, the url of the next page from the
    Link header, or None). NotHubAnswer for a body that is not JSON or too large."""

    def once() -> tuple[bytes, str | None]:
        with get_stream(url, headers, hub) as response:
            check_status(response)
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_JSON_BYTES:
                    raise NotHubAnswer("its answer is far larger than a file list", url)
            return bytes(body), response.links.get("next", {}).get("url")

    body, next_url = retrying(once)
    try:
        return json.loads(body.decode("utf-8")), next_url
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise NotHubAnswer("its answer is not JSON text", url) from exc


def redirect_target(url: str, response: Any) -> str | None:
    """Where a redirect answer points (absolute), None for any other answer; NotHubAnswer for
    a Location that is not an http(s) address."""
    location = response.headers.get("Location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        return None
    try:
        target = urljoin(url, location)
        parsed = urlparse(target)
        usable = parsed.scheme in ("http", "https") and bool(parsed.hostname)
        _ = parsed.port  # ValueError for a port that is not a number
    except ValueError:
        target = location
        usable = False
    if not usable or not target.isprintable():
        raise NotHubAnswer("it redirected to something that is not a web address", url)
    return target


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
    return _size(value)


def _etag(value: str | None) -> str:
    """An ETag without its weak prefix and quotes, lower case."""
    return (value or "").strip().removeprefix("W/").strip('"').lower()


def _size(value: str | None) -> int | None:
    """A size header as a number of bytes; None when missing, not a number or negative."""
    try:
        size = int(value) if value is not None else None
    except ValueError:
        return None
    return size if size is not None and size >= 0 else None
