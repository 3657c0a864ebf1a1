"""The HTTP library under huggingface_hub and the time we give the hub to answer.

Its own module because both sides of a download need it: hub_http to make requests, and
download_errors to tell a timeout or a refused connection in words (which names the seconds the
user waited). Neither imports the other for it.
"""

from __future__ import annotations

import math
import os
from typing import Any

from engines.lazy import lazy_import, real_module

# huggingface_hub 2.x builds on httpx2, 1.x on httpx
_HTTPX = lazy_import("httpx2", "httpx")
# Seconds; $SA3_STUDIO_HUB_TIMEOUT sets both (tests use a fraction of a second).
TIMEOUT_ENV = "SA3_STUDIO_HUB_TIMEOUT"
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0


def httpx_module() -> Any:
    """The HTTP library huggingface_hub's session is built on (httpx2 in 2.x, httpx in 1.x)."""
    return real_module(_HTTPX)


def timeouts() -> tuple[float, float]:
    """(connect, read) timeouts in seconds: $SA3_STUDIO_HUB_TIMEOUT for both when it is a
    number from 0 to 3600, else CONNECT_TIMEOUT_S and READ_TIMEOUT_S."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        value = float(text) if text else math.nan
    except ValueError:
        value = math.nan
    if 0 < value <= 3600:
        return value, value
    return CONNECT_TIMEOUT_S, READ_TIMEOUT_S
