"""The persistent builder timing cache: read it into a builder config, or start a fresh one.

A timing cache only saves build time; it never decides an engine. So a cache file that is missing,
unreadable, damaged, from another TensorRT version or from another GPU costs a warning and a
fresh cache, never a failed build.

What TensorRT does with a bad file, and so what "unusable" means here:

- `IBuilderConfig.create_timing_cache(blob)` does not return None for a blob it cannot read (a
  damaged file, another TensorRT version): it logs "Failed to deserialize timing cache. Returning
  an empty timing cache." and returns an EMPTY cache (seen with the TensorRT-RTX 1.7 builder, which
  shares this code; TensorRT 8.6 logged "The timing cache will not be used!" the same way,
  NVIDIA/TensorRT issue 3566). Such a cache serializes to exactly what a fresh `b""` cache does,
  which is how `load_timing_cache` tells "the file's timings were dropped" from "the file was an
  empty cache".
- `IBuilderConfig.set_timing_cache(cache, ignore_mismatch=False)` returns False for a cache made
  on another device (TensorRT 10 NvInfer.h); using it anyway risks functional bugs, so we don't.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def load_timing_cache(config: Any, path: Path) -> None:
    """Attach the timing cache stored at `path` to the builder `config`, or a fresh one when the
    file is missing or unusable (a warning says why)."""
    data = b""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        pass
    except OSError as err:
        log.warning("Could not read the timing cache %s (%s); starting a new one.", path, err)
    fresh = config.create_timing_cache(b"")
    cache = config.create_timing_cache(data) if data else fresh
    if data and _timings_dropped(cache, fresh, data):
        log.warning("The timing cache %s is damaged or from another TensorRT version; starting a "
                    "new one.", path)
        cache = fresh
    if cache is not None and config.set_timing_cache(cache, False):
        if data and cache is not fresh:
            log.debug("Using the timing cache %s (%d bytes)", path, len(data))
        return
    if cache is not fresh:
        log.warning("The timing cache %s was made on another GPU; starting a new one.", path)
        if fresh is not None and config.set_timing_cache(fresh, False):
            return
    log.warning("TensorRT refused a new timing cache; building without one.")


def _timings_dropped(cache: Any, fresh: Any, data: bytes) -> bool:
    """True when TensorRT could not use `data`: no cache at all, or an empty one although the
    file held more than an empty cache does."""
    if cache is None:
        return True
    if fresh is None:
        return False  # nothing to compare with; set_timing_cache has the last word
    empty = _serialized(fresh)
    return _serialized(cache) == empty and data != empty


def _serialized(cache: Any) -> bytes:
    return memoryview(cache.serialize()).tobytes()


def serialized_timing_cache(config: Any) -> memoryview | None:
    """The builder config's timing cache as bytes to store, or None when it has none."""
    cache = config.get_timing_cache()
    return None if cache is None else memoryview(cache.serialize())
