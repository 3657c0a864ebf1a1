"""The codec engines a TensorRT backend keeps loaded: one decoder (and encoder) per codec tier.

A backend's text encoder and DiT are loaded once; codec tiers come and go beside them. Each
loaded codec has a key (`codec_key`) that is also part of every graph key made with it
(GraphKey.codec), so a graph captured with one tier's decoder is never replayed with another's,
and the graphs of the other tier stay cached while the user switches back and forth: switching
tiers recaptures nothing already captured. At most `capacity` codecs stay loaded (a SAME-L
decoder is 1.2 GB of VRAM); the least recently used one is handed back to the caller to close
after the graphs that use it are dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from engines.backends.tensorrt.context import TrtContext
from engines.backends.tensorrt.engine import TrtEngine
from engines.backends.tensorrt.runners import EngineRunner
from engines.catalog import EngineFiles

DEFAULT_CODECS = 2  # the tier in use and one to compare it with


def codec_key(files: EngineFiles) -> str:
    """Identifies one codec tier's engine files (tier name first, for logs)."""
    return f"{files.codec_tier}:{files.decoder}:{files.encoder or ''}"


@dataclass
class LoadedCodec:
    decoder: EngineRunner
    encoder: EngineRunner | None
    # The decoder's own context for decode-only runs (engines.backends.tensorrt.decode_only),
    # made on first use. It is never captured into a graph, so it may change shapes freely.
    decode_context: TrtContext | None = None

    def close_decode_context(self) -> None:
        if self.decode_context is not None:
            self.decode_context.close()
            self.decode_context = None

    def close(self) -> None:
        self.close_decode_context()
        self.decoder.close()
        if self.encoder is not None:
            self.encoder.close()

    @property
    def scratch_bytes(self) -> int:
        return max(r.scratch_bytes for r in (self.decoder, self.encoder) if r is not None)


LoadCodec = Callable[[EngineFiles, str | None], LoadedCodec]


def load_trt_codec(files: EngineFiles, gpu_sm: str | None) -> LoadedCodec:
    """The decoder and encoder engines of one codec tier (the encoder only when installed)."""

    decoder = TrtEngine(files.decoder, gpu_sm=gpu_sm)
    try:
        encoder = TrtEngine(files.encoder, gpu_sm=gpu_sm) if files.encoder else None
    except BaseException:
        decoder.close()  # a refused encoder must not keep the decoder's VRAM
        raise
    return LoadedCodec(decoder, encoder)


class CodecCache:
    """Loaded codecs by codec key, least recently used first."""

    def __init__(self, capacity: int = DEFAULT_CODECS) -> None:
        self.capacity = max(1, capacity)
        self._items: OrderedDict[str, LoadedCodec] = OrderedDict()

    def adopt(self, key: str, codec: LoadedCodec) -> None:
        """Keep a codec loaded elsewhere (the backend's first full load)."""
        self._items[key] = codec
        self._items.move_to_end(key)

    def get(self, key: str) -> LoadedCodec | None:
        codec = self._items.get(key)
        if codec is not None:
            self._items.move_to_end(key)
        return codec

    def over_capacity(self) -> list[tuple[str, LoadedCodec]]:
        """Remove and return the codecs beyond capacity (oldest first); the caller drops their
        graphs, then closes them."""
        gone = []
        while len(self._items) > self.capacity:
            gone.append(self._items.popitem(last=False))
        return gone

    def keys(self) -> list[str]:
        return list(self._items)

    def all(self) -> list[LoadedCodec]:
        return list(self._items.values())

    def close_all(self) -> None:
        while self._items:
            _, codec = self._items.popitem(last=False)
            codec.close()
