"""The Hugging Face token: where it is read from, and keeping it in the system keyring.

The token is never logged and never put in a message; failures are logged by exception type
only, since an exception's text may quote what it was given."""

from __future__ import annotations

import logging
import os
from typing import Any

from engines.lazy import lazy_import, real_module
from engines.models.download_errors import DownloadError, quiet_hub_logging

log = logging.getLogger(__name__)
huggingface_hub = lazy_import("huggingface_hub")
_KEYRING = lazy_import("keyring")  # optional: the system keyring

KEYRING_SERVICE = "sa3-studio"
KEYRING_USER = "huggingface"


def _keyring() -> Any | None:
    try:
        return real_module(_KEYRING)
    except Exception:  # not installed, or a backend that fails while importing
        return None


def resolve_token() -> str | None:
    """The Hugging Face token: $HF_TOKEN / $HUGGING_FACE_HUB_TOKEN, then the token stored by
    huggingface_hub (`hf auth login`), then the system keyring (service "sa3-studio", user
    "huggingface") when the keyring package is installed. None when there is none."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    try:
        quiet_hub_logging()  # what huggingface_hub says about its token file goes to the log
        value = (huggingface_hub.get_token() or "").strip()
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
