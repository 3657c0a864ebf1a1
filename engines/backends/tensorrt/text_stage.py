"""The text stage of a captured pipeline: which text each branch's hidden buffer holds, and how
a take's texts get there - left in place, copied from the backend's text cache, or run through
the text encoder (its own small graph per branch) and then kept in the cache."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engines.backends.tensorrt.device_text_cache import HIDDEN_BYTES, DeviceTextCache
from engines.cuda.api import call
from engines.cuda.memory import DeviceBuffer
from engines.cuda.stream import Stream

EncodeBranch = Callable[[int], bool]
"""encode(branch) runs the text encoder into that branch's buffer; False when it refused."""


class TextStage:
    """The hidden-state buffers of one graph key, by branch (prompt, negative prompt)."""

    def __init__(self, branches: int, cache: DeviceTextCache | None) -> None:
        self.cache = cache
        self.holds: list[str | None] = [None] * branches  # each buffer's text; None: unknown
        self.runs = 0  # text encoder runs of this key, eager or replayed

    def forget(self) -> None:
        self.holds = [None] * len(self.holds)

    def prepare(self, texts: Sequence[str], hidden: Sequence[DeviceBuffer], stream: Stream,
                encode: EncodeBranch, fresh: bool = False) -> None:
        """Each branch's hidden states into its buffer, ordered on `stream` before the body.

        `texts` are the take's prompt (and negative prompt): with none given, every branch is
        encoded. `fresh` encodes every branch over a zeroed buffer, cache or not, so a text
        graph that silently lost its work shows in the capture's replay check."""
        cache = self.cache
        for b, buffer in enumerate(hidden):
            text = texts[b] if b < len(texts) else None
            if not fresh and text is not None and self.holds[b] == text:
                continue
            self.holds[b] = None
            found = None if fresh or text is None or cache is None else cache.get(text)
            if found is not None:
                call("cuMemcpyDtoDAsync", buffer.ptr, found.ptr, HIDDEN_BYTES, stream.handle)
                self.holds[b] = text
                continue
            if fresh:
                call("cuMemsetD8Async", buffer.ptr, 0, HIDDEN_BYTES, stream.handle)
            self.runs += 1
            if not encode(b) or text is None:
                continue  # a refused run leaves nothing worth keeping
            if cache is not None and text not in cache:
                slot = cache.slot()
                if slot is not None:
                    call("cuMemcpyDtoDAsync", slot.ptr, buffer.ptr, HIDDEN_BYTES, stream.handle)
                    cache.store(text, slot)
            self.holds[b] = text
