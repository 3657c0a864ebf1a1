"""The window's log never holds a team connection line's password: engines.paths.setup_logging
puts engines.secret_text's filter on every handler it makes (the command line's too); this puts
the same filter on any other handler of the root logger. The sentences the window shows are
masked already (app.common.notifier)."""

from __future__ import annotations

import logging

from engines.secret_text import MaskSecrets, mask_secrets_in_handlers

__all__ = ["MaskSecrets", "mask_secrets_in_log"]


def mask_secrets_in_log(root: logging.Logger | None = None) -> None:
    """Put the filter on every handler of `root` (the root logger) that lacks it."""
    mask_secrets_in_handlers(root)
