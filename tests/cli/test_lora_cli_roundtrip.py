"""The provenance round trip of a take made with adapters, through the command line and the
demo set on ONNX Runtime: `generate --lora` -> the sidecar and the library row name each
adapter (file, SHA-256, variant, rank, strength) -> `library show` and `library list
--adapter` find them -> the library's regeneration request (what the window's Restore
settings and Regenerate use) makes the same audio again; without the file it is one sentence."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
import soundfile as sf

from engines.demo.demo_adapters import BRIGHT, DARK, demo_adapter_path
from engines.errors import RequestError
from engines.generator import Generator
from engines.models.inventory import default_catalog
from engines.paths import library_dir
from engines.store.library import ClipLibrary
from main import main


@pytest.fixture
def demo_adapters(tmp_path):
    folder = tmp_path / "adapters"
    folder.mkdir()
    return [shutil.copy(demo_adapter_path(name), folder / name) for name in (BRIGHT, DARK)]


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_generate_with_lora_round_trips_through_the_library(
        capsys, tmp_path, models, home, demo_adapters):
    bright, dark = demo_adapters
    out = tmp_path / "clang.wav"
    assert main(["generate", "--prompt", "metal clang", "--seed", "3", "--models-dir",
                 str(models), "--lora", f"{bright}:0.8", "--lora", f"{dark}:0.5",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    sidecar = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    named = [(a["file_name"], a["sha256"], a["variant"], a["rank"], a["strength"])
             for a in sidecar["request"]["adapters"]]
    assert named == [(BRIGHT, _sha(bright), "lora", 4, 0.8),
                     (DARK, _sha(dark), "dora-rows", 4, 0.5)]
    take_id = sidecar["library_id"]

    assert main(["library", "show", str(take_id)]) == 0
    shown = [line for line in capsys.readouterr().out.splitlines() if "adapter " in line]
    assert len(shown) == 2 and BRIGHT in shown[0] and "0.8" in shown[0] and \
        _sha(bright) in shown[0]
    assert main(["library", "list", "--adapter", _sha(dark)[:8], "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [t["id"] for t in listed] == [take_id]
    assert [a["strength"] for a in listed[0]["adapters"]] == [0.8, 0.5]
    assert main(["library", "list", "--adapter", "demo-missing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []

    # Regenerate from the library's record: the same adapters, the same sound.
    library = ClipLibrary(library_dir())
    try:
        request = library.regeneration_request(take_id)
        kept = library.verified_audio(take_id)
    finally:
        library.close()
    assert [(c.path.name, c.strength) for c in request.adapters] == [(BRIGHT, 0.8), (DARK, 0.5)]
    generator = Generator(default_catalog(models))
    try:
        again = generator.generate(request)
        without = generator.generate(replace(request, adapters=()))
    finally:
        generator.close()
    assert np.array_equal(again.pcm, kept)
    assert not np.array_equal(without.pcm, kept)  # the adapters are heard
    data, rate = sf.read(out, dtype="int16")
    assert rate == 44100 and data.shape == kept.shape

    dark.unlink()
    library = ClipLibrary(library_dir())
    try:
        with pytest.raises(RequestError) as missing:
            library.regeneration_request(take_id)
    finally:
        library.close()
    assert DARK in str(missing.value) and _sha(bright) not in str(missing.value)
