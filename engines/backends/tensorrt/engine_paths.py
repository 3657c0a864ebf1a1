"""What an engine's path says: the part a user recognises, the GPU arch folder it sits in, and
whether it is a JIT SAME-L engine SA3 Studio refuses. Plain path work, no tensorrt: the model
inventory words the same refusal without loading anything."""

from __future__ import annotations

import re
from pathlib import Path

from engines.catalog import JIT_CODEC_FILES, JIT_PLUGIN_MARKER, aot_codec_remedy

_ARCH_FOLDER = re.compile(r"^sm_\d+$")


def is_jit_codec(path: Path) -> bool:
    """A JIT SAME-L engine: its name carries the plugin mark, or it is one of the JIT file
    names in a same-l folder (dec_dynamic_fp32 is built from the JIT graph too)."""
    # JIT engines call back into Python on every enqueue and need the official Triton plugin
    # registered through tensorrt.plugin before they even deserialize.
    if JIT_PLUGIN_MARKER in path.name:
        return True
    tier = JIT_CODEC_FILES["same-l"]
    return path.parent.name == "same-l" and path.stem in (*tier.decoder, *tier.encoder)


def jit_engine_refusal(path: Path) -> str:
    """The sentence for a JIT SAME-L engine: which AOT files replace it, and how to get them."""
    return (f"'{shown_path(Path(path))}' is a JIT SAME-L engine, which needs its Triton plugin "
            f"registered from Python and cannot run in SA3 Studio; {aot_codec_remedy()}.")


def shown_path(path: Path) -> str:
    """The part of an engine path a user recognises: <sm_XX>/<subdir>/<file>."""
    return "/".join(path.parts[-3:]) if len(path.parts) >= 3 else str(path)


def folder_sm(path: Path) -> str | None:
    """The sm_XX folder an engine file sits in (what it was built for), or None."""
    for part in reversed(path.parent.parts):
        if _ARCH_FOLDER.match(part):
            return part
    return None
