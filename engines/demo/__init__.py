"""The embedded demo model set: procedural, CPU-friendly, and labelled as not Stable Audio 3.

Built deterministically by our own code on first use into `<models>/onnx/demo/`, with the exact
SA3 engine I/O contract, so every backend path can be exercised without the real engines.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from engines.demo.codec_graphs import decoder_model, encoder_model
from engines.demo.dit_graph import dit_model
from engines.demo.recipes import build_tokenizer_json, build_vocabulary
from engines.demo.text_encoder_graph import text_encoder_model
from engines.paths import resource_file

log = logging.getLogger(__name__)

DEMO_LABEL = "Demo (procedural, not Stable Audio 3)"
# 3: the codec DFT is factored into MatMuls (TensorRT has no DFT); 4: the coarse codec tier
BUILDER_VERSION = 4
STAMP_NAME = "demo_version.json"
TEXT_ENCODER_FILE = "t5gemma.onnx"
DIT_FILE = "dit_fp32.onnx"
ENCODER_FILE = "enc.onnx"
DECODER_FILE = "dec.onnx"
DECODER_COARSE_FILE = "dec_coarse.onnx"  # the demo's second codec tier (engines.demo.coarse)
TOKENIZER_FILE = "tokenizer.json"


def demo_dir(models_root: Path) -> Path:
    return Path(models_root) / "onnx" / "demo"


def _stamp() -> dict:
    recipes = resource_file("demo", "recipes.json").read_bytes()
    return {"builder": BUILDER_VERSION, "recipes_sha256": hashlib.sha256(recipes).hexdigest(),
            "label": DEMO_LABEL}


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; these are shared, non-secret files
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def is_current(models_root: Path) -> bool:
    folder = demo_dir(models_root)
    try:
        stamp = json.loads((folder / STAMP_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    files = (TEXT_ENCODER_FILE, DIT_FILE, ENCODER_FILE, DECODER_FILE, DECODER_COARSE_FILE,
             TOKENIZER_FILE)
    return stamp == _stamp() and all((folder / name).is_file() for name in files)


def ensure_demo_models(models_root: Path) -> Path:
    """Build (or rebuild after an update) the demo ONNX files; returns their folder.

    Each file is written atomically and the version stamp last, so an interrupted build is
    simply redone next time and concurrent builders write identical bytes.
    """
    folder = demo_dir(models_root)
    if is_current(models_root):
        return folder

    log.info("building the demo model set in %s", folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = build_vocabulary()
    models = {
        TEXT_ENCODER_FILE: text_encoder_model(vocab.embeddings, vocab.bigrams),
        DIT_FILE: dit_model(),
        ENCODER_FILE: encoder_model(),
        DECODER_FILE: decoder_model(),
        DECODER_COARSE_FILE: decoder_model(coarse=True),
    }
    for name, model in models.items():
        _write_atomic(folder / name, model.SerializeToString(deterministic=True))
    _write_atomic(folder / TOKENIZER_FILE, build_tokenizer_json().encode("utf-8"))
    _write_atomic(folder / STAMP_NAME, json.dumps(_stamp(), indent=1).encode("utf-8"))
    return folder
