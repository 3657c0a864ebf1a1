"""The stack an engine has bound, kept between takes: a request with the same adapter files at
other strengths (a slider moved, one switched off) reuses the folded operands and only changes
the strengths; other files are read (engines.adapters.files keeps recent ones) and folded."""

from __future__ import annotations

from collections.abc import Sequence

from engines.adapters.bases import SvdBases
from engines.adapters.branch_map import BranchMap
from engines.adapters.choice import AdapterChoice
from engines.adapters.files import read_adapter_info
from engines.adapters.stack import AdapterStack


class StackCache:
    def __init__(self, branch_map: BranchMap, bases: SvdBases | None = None) -> None:
        self.branch_map = branch_map
        self.bases = bases
        self._files: tuple | None = None
        self._stack: AdapterStack | None = None

    def stack_for(self, choices: Sequence[AdapterChoice]) -> AdapterStack:
        """The stack `choices` ask for (AdapterError when refused)."""
        files = tuple((read_adapter_info(c.path).sha256, str(c.path)) for c in choices)
        strengths = [float(c.effective_strength) for c in choices]
        if self._stack is not None and files == self._files:
            if list(self._stack.strengths) != strengths:
                self._stack = self._stack.with_strengths(strengths)
            return self._stack
        self._stack = AdapterStack.build(choices, self.branch_map, self.bases)
        self._files = files
        return self._stack
