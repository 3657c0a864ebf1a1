"""Prompt tokenization over the Hugging Face `tokenizers` library (SA3_CONTRACTS section 5)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.constants import TEXT_TOKENS
from engines.error_sentences import printable, sentence
from engines.errors import ModelUnavailableError
from engines.lazy import lazy_import

tokenizers = lazy_import("tokenizers")

PAD_ID = 0


@dataclass(frozen=True)
class TokenizedPrompt:
    input_ids: np.ndarray  # (1, 256) int64, right-padded with 0
    attention_mask: np.ndarray  # (1, 256) int64, 1 = token
    token_count: int  # before truncation
    truncated: bool


class PromptTokenizer:
    """Turns any unicode prompt into the fixed 256-token input of the text encoder."""

    def __init__(self, path: Path) -> None:
        try:
            # Read here, not by path: the tokenizers library only takes UTF-8 path strings,
            # and a data folder's path may hold other bytes.
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ModelUnavailableError(sentence(
                f"The tokenizer '{printable(path)}' could not be read", exc,
                "download the model set again")) from exc
        try:
            self._tokenizer = tokenizers.Tokenizer.from_buffer(data)
        except Exception as exc:  # the library raises bare Exceptions on bad files
            raise ModelUnavailableError(
                f"The tokenizer '{printable(path)}' could not be loaded (it is not a valid "
                "tokenizer.json); download the model set again.") from exc
        self.path = Path(path)

    def encode(self, text: str) -> TokenizedPrompt:
        ids = self._tokenizer.encode(text).ids
        kept = ids[:TEXT_TOKENS]
        input_ids = np.full((1, TEXT_TOKENS), PAD_ID, dtype=np.int64)
        mask = np.zeros((1, TEXT_TOKENS), dtype=np.int64)
        input_ids[0, : len(kept)] = kept
        mask[0, : len(kept)] = 1
        return TokenizedPrompt(input_ids, mask, len(ids), len(ids) > TEXT_TOKENS)
