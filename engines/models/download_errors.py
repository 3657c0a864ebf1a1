"""How a download fails: the error types, and each failure of the hub as one sentence that says
what happened and what to do. Never the token itself: messages only say where to give one.

The sentences name the server (or the file) and never an exception class: a user cannot act on
"RemoteProtocolError". The details, with the traceback, go to the log file, and so does what
huggingface_hub itself logs (`quiet_hub_logging`).
"""

from __future__ import annotations

import logging
import socket
import ssl
from http import HTTPStatus
from urllib.parse import urlparse

from engines.error_sentences import printable, reason
from engines.errors import CancelledError, Remedy, StudioError, join
from engines.lazy import lazy_import, real_module
from engines.models.hub_transport import httpx_module, timeouts

log = logging.getLogger(__name__)
hub_errors = lazy_import("huggingface_hub.errors")
hub_logging = lazy_import("huggingface_hub.utils.logging")

TOKEN_HINT = Remedy.command("models token")  # or HF_TOKEN in the environment


def _token(before: str) -> str:
    """`before` and "(how to give a token)." as one sentence."""
    return join(before, "(", TOKEN_HINT, " or HF_TOKEN).")


class DownloadError(StudioError):
    """A download failed; the message is one sentence: what happened and what to do."""


class DownloadCancelledError(DownloadError, CancelledError):
    """The user cancelled; finished files stay, the current one resumes next time."""

    def __init__(self, message: str = "Download cancelled; finished files are kept and the "
                                      "current file resumes where it stopped next time.") -> None:
        super().__init__(message)


class HubAnswerError(Exception):
    """An answer from a server that cannot be used. `url` is where it came from (the hub, or
    the CDN an LFS file was redirected to), so the sentence names the right server."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class NotHubAnswer(HubAnswerError):
    """The server answered, but not like the Hugging Face Hub: not HTTP, not JSON, a file list
    of the wrong shape. The message says which, in words ("its file list is not JSON")."""


class BusyAnswer(HubAnswerError):
    """A transient answer (HTTP 429 or 5xx): worth a retry, then a sentence."""

    def __init__(self, status: int, url: str) -> None:
        super().__init__(f"HTTP {status}", url)
        self.status = status


def hub_failures() -> tuple[type[BaseException], ...]:
    """What talking to a hub can raise besides DownloadError: the HTTP library's errors,
    huggingface_hub's (OSError subclasses), our HubAnswerError, and ValueError for text that is
    not UTF-8 or JSON. Everything else is a bug and keeps its traceback."""
    httpx = httpx_module()
    return httpx.HTTPError, httpx.InvalidURL, HubAnswerError, OSError, ValueError


def server_of(url: str, fallback: str) -> str:
    """scheme://host[:port] of url, printable, for a message; fallback when url has none."""
    parsed = urlparse(url or "")
    if parsed.scheme and parsed.netloc:
        return printable(f"{parsed.scheme}://{parsed.netloc}")
    return printable(fallback)


def _os_cause(exc: BaseException) -> OSError | None:
    """The OSError under an HTTP library's error (ConnectionRefusedError, socket.gaierror)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, OSError):
            return exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return None


def _why_unreachable(exc: BaseException) -> str:
    cause = _os_cause(exc)
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused"
    if isinstance(cause, socket.gaierror):
        return "its host name could not be found"
    if isinstance(cause, ssl.SSLError):
        return "the secure connection failed"
    return "the connection failed"


def _status_sentence(status: int, *, repo: str, what: str, token: str | None,
                     endpoint: str) -> DownloadError:
    page = f"https://huggingface.co/{repo}"
    if status == 401:
        if token:
            return DownloadError(_token("The hub refused the Hugging Face token (invalid or "
                                        "expired); give a new one "))
        return DownloadError(_token(f"The hub at {endpoint} asks for a Hugging Face token for "
                                    f"{what}; accept the licence at {page} and give a token "))
    if status == 403:
        return DownloadError(_token(f"The hub at {endpoint} refused access to {what} (HTTP "
                                    f"403); check that your token may read {repo} "))
    if status == 404:
        return DownloadError(f"The hub at {endpoint} answered HTTP 404 (not found) for {what}; "
                             f"check HF_ENDPOINT, or list the files again and retry.")
    if status == 429 or status >= 500:
        return DownloadError(f"The hub at {endpoint} answered HTTP {status} "
                             f"({_phrase(status)}) for {what} several times; try again later.")
    return DownloadError(f"The hub at {endpoint} answered HTTP {status} for {what}; try again "
                         f"later.")


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return "a server error"


def _transport_sentence(exc: BaseException, *, what: str, endpoint: str) -> DownloadError | None:
    """Failures of the connection itself, as a sentence; None for anything else."""
    httpx = httpx_module()
    connect_s, read_s = timeouts()
    if isinstance(exc, httpx.ConnectTimeout):
        return DownloadError(f"The hub at {endpoint} did not accept a connection within "
                             f"{connect_s:g} s; check the network or HF_ENDPOINT.")
    if isinstance(exc, httpx.TimeoutException):
        return DownloadError(f"The server at {endpoint} did not answer within {read_s:g} s "
                             f"while sending {what}; check the connection and try again.")
    if isinstance(exc, httpx.ConnectError):
        return DownloadError(f"Could not reach the hub at {endpoint} "
                             f"({_why_unreachable(exc)}); check the network or HF_ENDPOINT.")
    if isinstance(exc, httpx.TooManyRedirects):
        return DownloadError(f"The server at {endpoint} redirected the request for {what} in a "
                             f"loop; check HF_ENDPOINT and try again later.")
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return DownloadError(f"The server at {endpoint} sent an address that cannot be "
                             f"fetched; check HF_ENDPOINT.")
    if isinstance(exc, httpx.RemoteProtocolError):  # hung up: a blip, or not a hub at all
        return DownloadError(f"The server at {endpoint} did not answer like the Hugging Face "
                             f"Hub (it hung up without a complete answer for {what}); check "
                             f"HF_ENDPOINT and the connection.")
    if isinstance(exc, httpx.TransportError):
        return DownloadError(f"The connection to {endpoint} broke while reading {what}; check "
                             f"the connection and try again.")
    return None


def hub_error(exc: BaseException, *, repo: str, what: str, token: str | None,
              endpoint: str) -> DownloadError:
    """exc, from talking to the hub about `what` in repo, as a DownloadError of one sentence
    (a DownloadError comes back as it is); the details go to the log. Never raises."""
    try:
        return _hub_error(exc, repo=repo, what=what, token=token, endpoint=endpoint)
    except Exception:  # an error handler must not raise: say it in general words
        log.debug("putting a hub failure into words failed", exc_info=True)
        return DownloadError(f"Reading {what} from {printable(endpoint)} failed; the log file "
                             f"has the details.")


def _hub_error(exc: BaseException, *, repo: str, what: str, token: str | None,
               endpoint: str) -> DownloadError:
    page = f"https://huggingface.co/{repo}"
    log.info("hub request for %s failed", what, exc_info=exc)
    if isinstance(exc, DownloadError):
        return exc
    endpoint = printable(endpoint)
    if isinstance(exc, NotHubAnswer):
        return DownloadError(f"The server at {server_of(exc.url, endpoint)} did not answer like "
                             f"the Hugging Face Hub ({exc}); check HF_ENDPOINT.")
    if isinstance(exc, BusyAnswer):
        return _status_sentence(exc.status, repo=repo, what=what, token=token,
                                endpoint=server_of(exc.url, endpoint))
    if isinstance(exc, hub_errors.OfflineModeIsEnabled):
        return DownloadError("Hugging Face offline mode is on (HF_HUB_OFFLINE); unset it to "
                             "download models.")
    if isinstance(exc, hub_errors.GatedRepoError):
        if not token:
            return DownloadError(_token(f"{repo} needs a Hugging Face token: accept the licence "
                                        f"at {page} and give a token "))
        return DownloadError(_token(f"Accept the licence at {page} and give a token "))
    status = None
    if isinstance(exc, hub_errors.HfHubHTTPError) and exc.response is not None:
        status = exc.response.status_code
    if status == 401 and token and not isinstance(exc, hub_errors.RepositoryNotFoundError):
        return _status_sentence(401, repo=repo, what=what, token=token, endpoint=endpoint)
    if isinstance(exc, hub_errors.RemoteEntryNotFoundError):
        return DownloadError(f"{what} is no longer in {repo} on the hub; list the files again "
                             f"and retry.")
    if isinstance(exc, hub_errors.RevisionNotFoundError):
        return DownloadError(f"The requested revision of {repo} does not exist on the hub; "
                             f"download from the main branch.")
    if isinstance(exc, hub_errors.DisabledRepoError):
        return DownloadError(f"{repo} is disabled on the hub, so nothing can be downloaded "
                             f"from it.")
    if isinstance(exc, hub_errors.RepositoryNotFoundError):
        if not token:
            return DownloadError(_token(f"{repo} was not found at {endpoint}, or it needs a "
                                        f"token: accept the licence at {page} and give a "
                                        f"token "))
        return DownloadError(f"{repo} was not found at {endpoint}, or this token has no access "
                             f"to it; check the token and HF_ENDPOINT.")
    if status is not None:
        return _status_sentence(status, repo=repo, what=what, token=token, endpoint=endpoint)
    found = _transport_sentence(exc, what=what, endpoint=endpoint)
    if found is not None:
        return found
    if isinstance(exc, (ValueError, UnicodeError)):  # text that is not UTF-8 or JSON
        return DownloadError(f"The server at {endpoint} did not answer like the Hugging Face "
                             f"Hub (its answer for {what} is not valid text); check "
                             f"HF_ENDPOINT.")
    happened, todo = reason(exc)
    return DownloadError(f"Reading {what} from {endpoint} failed: {happened}; {todo}.")


# --------------------------------------------------------------------------------------------
# huggingface_hub's own words: to the log file, never the terminal


class _DemoteToInfo(logging.Handler):
    """Lowers huggingface_hub's records to INFO on their way up to the root logger, so they
    reach our log file but not the terminal (whose handler shows WARNING and up): the user
    gets our one sentence instead of "Retrying in 8s"."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno > logging.INFO:
            record.levelno, record.levelname = logging.INFO, "INFO"


def quiet_hub_logging() -> None:
    """Route the `huggingface_hub` logger into ours. On import it adds a StreamHandler of its
    own, so its warnings ("Retrying in 8s", server warnings) would print on stderr whatever
    our logging says; that handler goes, and what it logs is demoted on its way to ours."""
    real_module(hub_logging)  # importing it adds the handler; undo that after

    hub_log = logging.getLogger("huggingface_hub")
    if any(isinstance(h, _DemoteToInfo) for h in hub_log.handlers):
        return
    for handler in list(hub_log.handlers):
        if type(handler) is logging.StreamHandler:
            hub_log.removeHandler(handler)
    hub_log.addHandler(_DemoteToInfo())
    hub_log.propagate = True
