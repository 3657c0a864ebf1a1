"""What can go wrong with a team library, as sentences a user can act on."""

from __future__ import annotations

from engines.errors import StudioError


class TeamError(StudioError):
    """A team library operation failed; the message is one sentence for the user."""


class TeamUnreachable(TeamError):
    """The team's server or its shared audio store cannot be reached now: the caller keeps
    working on the local library, and publishes wait in the outbox."""


class TeamRefused(TeamError):
    """The server refused this login the operation (a read-only login publishing, say):
    retrying changes nothing, so nothing is queued."""
