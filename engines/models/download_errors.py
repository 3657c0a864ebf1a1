"""How a download fails: the error types, and each failure of the hub as one sentence that says
what happened and what to do. Never the token itself: messages only say where to give one."""

from __future__ import annotations

import logging

from engines.errors import CancelledError, StudioError
from engines.models.hub_http import httpx_module

log = logging.getLogger(__name__)

TOKEN_HINT = "python main.py models token or HF_TOKEN"


class DownloadError(StudioError):
    """A download failed; the message is one sentence: what happened and what to do."""


class DownloadCancelledError(DownloadError, CancelledError):
    """The user cancelled; finished files stay, the current one resumes next time."""

    def __init__(self, message: str = "Download cancelled; finished files are kept and the "
                                      "current file resumes where it stopped next time.") -> None:
        super().__init__(message)


def hub_error(exc: BaseException, *, repo: str, what: str, token: str | None,
              endpoint: str) -> DownloadError:
    """exc, from talking to the hub about `what` in repo, as a DownloadError of one sentence
    (a DownloadError comes back as it is); the details go to the log."""
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

    httpx = httpx_module()
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
