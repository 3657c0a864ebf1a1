"""A "more like this" of the team library (NearTakes): the takes found, and how many were not
compared because their sound embeddings are of another recipe (EMBEDDING_VERSION) than this
SA3 Studio's - a vector of one recipe measured against another's ranks by chance, so such
takes are left out and said to be (engines.team.embedding_step).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engines.errors import Advice, Remedy
from engines.similarity.embedding import EMBEDDING_VERSION
from engines.team.entries import TeamEntry
from engines.team.errors import TeamError

REEMBED_COMMAND = "team reembed"


@dataclass(frozen=True)
class NearTakes:
    entries: list[TeamEntry] = field(default_factory=list)
    older: int = 0  # takes whose vectors are older than this release's recipe, or missing
    newer: int = 0  # takes whose vectors a newer SA3 Studio made

    def left_out(self) -> list[str]:
        """One sentence for each kind of take left out; [] when every take was compared."""
        said: list[str] = []
        if self.older:
            said.append(Advice(f"{_takes(self.older)} not compared: their sound embeddings are "
                               "of an older recipe or missing; {0} brings them up to date.",
                               Remedy.command(REEMBED_COMMAND)))
        if self.newer:
            said.append(f"{_takes(self.newer)} not compared: their sound embeddings were made "
                        "by a newer SA3 Studio; update SA3 Studio on this machine to compare "
                        "them.")
        return said


def check_seed(take_id: int, version: int) -> None:
    """TeamError (one sentence) when team take `take_id`'s own vector is of recipe `version`,
    not this release's: it can be compared with nothing here."""
    if version < EMBEDDING_VERSION:
        raise TeamError(Advice(f"Team take #{take_id}'s sound embedding is of an older recipe "
                               f"(version {version}, this SA3 Studio makes {EMBEDDING_VERSION})"
                               " or missing, so it cannot be compared; {0} brings the team's "
                               "embeddings up to date.", Remedy.command(REEMBED_COMMAND)))
    if version > EMBEDDING_VERSION:
        raise TeamError(f"Team take #{take_id}'s sound embedding was made by a newer SA3 "
                        f"Studio (recipe {version}, this one makes {EMBEDDING_VERSION}); "
                        "update SA3 Studio on this machine to compare it.")


def _takes(count: int) -> str:
    return "1 team take was" if count == 1 else f"{count} team takes were"
