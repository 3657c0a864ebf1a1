"""The text encoder's outputs on the GPU for the texts used last (engines.backends.text_cache
says why and what a key is): a take whose texts are cached copies their hidden states into its
graph's buffers (one device-to-device copy each, about 0.8 MB) instead of running the text
encoder, and replays the same captured graph.

The TensorRT backend owns one, for its one text encoder, and frees it when it closes. All work
on its buffers is ordered on the backend's one stream, so an evicted buffer can be reused at
once for the next text.
"""

from __future__ import annotations

from engines.backends.text_cache import DEFAULT_TEXTS, TextLru
from engines.constants import TEXT_HIDDEN, TEXT_TOKENS
from engines.cuda.memory import DeviceBuffer

HIDDEN_BYTES = 4 * TEXT_TOKENS * TEXT_HIDDEN  # one text's float32 hidden states


class DeviceTextCache:
    """Hidden states (float32, (1, TEXT_TOKENS, TEXT_HIDDEN)) by text, on the device.

    At most `capacity` texts, plus one spare buffer; nothing is allocated until a text is
    stored. Capacity 0 keeps nothing (every take runs the text encoder)."""

    def __init__(self, capacity: int = DEFAULT_TEXTS) -> None:
        self._spare: list[DeviceBuffer] = []
        self._entries: TextLru[DeviceBuffer] = TextLru(capacity, on_evict=self._spare.append)

    @property
    def capacity(self) -> int:
        return self._entries.capacity

    @property
    def hits(self) -> int:
        return self._entries.hits

    @property
    def misses(self) -> int:
        return self._entries.misses

    def get(self, text: str) -> DeviceBuffer | None:
        return self._entries.get(text)

    def slot(self) -> DeviceBuffer | None:
        """A buffer to copy a new text's hidden states into, then `store` under its text;
        None when the cache keeps nothing."""
        if self.capacity == 0:
            return None
        return self._spare.pop() if self._spare else DeviceBuffer(HIDDEN_BYTES)

    def store(self, text: str, buffer: DeviceBuffer) -> None:
        self._entries.put(text, buffer)  # the least recently used buffer becomes the spare

    def __contains__(self, text: str) -> bool:
        return text in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def free(self) -> None:
        """Every buffer back to the device; the cache stays usable (it allocates again)."""
        self._entries.clear()
        for buffer in self._spare:
            buffer.free()
        self._spare.clear()
