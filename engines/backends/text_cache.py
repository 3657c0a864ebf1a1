"""The text encoder's outputs for the texts used last, so a take that changes only the seed,
length or knobs skips the text encoder (live audition renders again on every such change).

Entries are by text: a prompt and a negative prompt are two entries, so editing the prompt
under the same negative prompt encodes only the prompt. A cache belongs to one loaded text
encoder and tokenizer, its backend's: the generator makes one backend per text encoder, DiT and
tokenizer (engines.generator) and a backend empties its cache when it closes, so after a model
change no take reads another model's encodings. Small and least-recently-used first out: live
editing goes back and forth between a few texts, never more.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from engines.tokenizer import TokenizedPrompt

DEFAULT_TEXTS = 8  # entries: a prompt and a negative prompt each, and a few edits back

Value = TypeVar("Value")


class TextLru(Generic[Value]):
    """Up to `capacity` values by text, least recently used first out; capacity 0 keeps none.
    `on_evict(value)` is told of each value that leaves (the device cache reuses its buffer).
    Counts hits and misses of `get` for benchmarks and tests."""

    def __init__(self, capacity: int = DEFAULT_TEXTS,
                 on_evict: Callable[[Value], None] | None = None) -> None:
        if capacity < 0:
            raise ValueError("text cache capacity must not be negative")
        self.capacity = capacity
        self._items: OrderedDict[str, Value] = OrderedDict()
        self._on_evict = on_evict
        self.hits = 0
        self.misses = 0

    def get(self, text: str) -> Value | None:
        value = self._items.get(text)
        if value is None:
            self.misses += 1
            return None
        self._items.move_to_end(text)
        self.hits += 1
        return value

    def put(self, text: str, value: Value) -> None:
        if self.capacity == 0:
            if self._on_evict is not None:
                self._on_evict(value)
            return
        old = self._items.pop(text, None)
        if old is not None and old is not value and self._on_evict is not None:
            self._on_evict(old)
        self._items[text] = value
        while len(self._items) > self.capacity:
            _, evicted = self._items.popitem(last=False)
            if self._on_evict is not None:
                self._on_evict(evicted)

    def values(self) -> list[Value]:
        return list(self._items.values())

    def clear(self) -> None:
        evicted = list(self._items.values())
        self._items.clear()
        if self._on_evict is not None:
            for value in evicted:
                self._on_evict(value)

    def __contains__(self, text: str) -> bool:
        return text in self._items

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class EncodedText:
    """One text through the tokenizer and the text encoder (batch 1, contract shapes)."""

    tokens: TokenizedPrompt
    hidden: np.ndarray  # (1, TEXT_TOKENS, TEXT_HIDDEN) float32, read-only


EncodeFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""encode_text(input_ids, attention_mask) -> hidden states (the EngineStages call)."""


class TextEncodingCache:
    """Encoded texts on the host, for backends that run the text encoder one call at a time
    (engines.backends.eager_pipeline.run_pipeline: ONNX Runtime, the demo)."""

    def __init__(self, capacity: int = DEFAULT_TEXTS) -> None:
        self._entries: TextLru[EncodedText] = TextLru(capacity)

    @property
    def hits(self) -> int:
        return self._entries.hits

    @property
    def misses(self) -> int:
        """Texts that went through the text encoder (every run when the capacity is 0)."""
        return self._entries.misses

    def encode(self, text: str, tokenize: Callable[[str], TokenizedPrompt],
               encode_text: EncodeFn) -> EncodedText:
        """`text` encoded: from the cache, or tokenized and run through `encode_text` now."""
        found = self._entries.get(text)
        if found is not None:
            return found
        tokens = tokenize(text)
        hidden = np.array(encode_text(tokens.input_ids, tokens.attention_mask), np.float32)
        hidden.flags.writeable = False  # shared by every take of this text
        encoded = EncodedText(tokens, hidden)
        self._entries.put(text, encoded)
        return encoded

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
