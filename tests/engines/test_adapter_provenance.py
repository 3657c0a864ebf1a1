"""A take's adapters are recorded wherever the take goes - provenance, the sidecar and the note
embedded in the delivered file, the library row - and come back: `record.request()` (what
Restore settings and Regenerate use) asks for the same files at the same strengths, found by
SHA-256 even when the file moved to the adapter shelf; a missing one is one sentence naming the
file and its SHA-256. The library filters takes by adapter name or hash."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines.adapter_restore import shelf_path
from engines.adapters.choice import AdapterChoice
from engines.cli.words import say
from engines.constants import SAMPLE_RATE
from engines.delivery.deliver import deliver
from engines.delivery.delivery_take import from_result
from engines.delivery.note import COMMENT_LIMIT, build_comment
from engines.errors import RequestError
from engines.generation_result import GenerationResult
from engines.provenance import take_provenance
from engines.request import GenerationRequest, checked_request
from engines.store.library import ClipLibrary
from engines.store.repair import row_from_file
from tests.adapter_support import write_adapter
from tests.team_support import engine_files, sound


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def adapters(tmp_path: Path) -> list[Path]:
    return [write_adapter(tmp_path / "adapters" / "house-tone.safetensors", "lora", 4, seed=1),
            write_adapter(tmp_path / "adapters" / "dusty.safetensors", "dora-rows", 2, seed=2)]


def _result(tmp_path: Path, adapters: list[Path], strengths=(0.8, 0.5)) -> GenerationResult:
    request = checked_request(GenerationRequest(
        prompt="door creak", seed=7, seconds=0.5,
        adapters=[AdapterChoice(p, s) for p, s in zip(adapters, strengths, strict=True)]))
    pcm = sound("noise", request.out_samples / SAMPLE_RATE, 7)
    return GenerationResult(pcm=pcm, latents=np.zeros((256, 1), np.float32),
                            step_latents=np.zeros((1, 256, 1), np.float32), seed=request.seed,
                            timings_ms={"total": 1.0}, backend="onnxruntime", request=request,
                            files=engine_files(tmp_path / "engines"), warnings=[])


def _expected(adapters: list[Path], strengths=(0.8, 0.5)) -> list[dict]:
    return [{"file_name": p.name, "sha256": _sha(p), "variant": v, "rank": r, "strength": s}
            for p, v, r, s in zip(adapters, ("lora", "dora-rows"), (4, 2), strengths,
                                  strict=True)]


def _described(entries: list[dict]) -> list[dict]:
    return [{k: e[k] for k in ("file_name", "sha256", "variant", "rank", "strength")}
            for e in entries]


def test_provenance_sidecar_and_embedded_note_name_each_adapter(tmp_path, adapters):
    result = _result(tmp_path, adapters)
    assert _described(take_provenance(result)["request"]["adapters"]) == _expected(adapters)
    out = tmp_path / "out" / "creak.wav"
    out.parent.mkdir()
    deliver(from_result(result), out)
    sidecar = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert _described(sidecar["request"]["adapters"]) == _expected(adapters)
    assert sidecar["request"]["adapters"][0]["path"] == str(adapters[0].resolve())
    # The INFO comment, read by libsndfile (not our reader): the note travels with the audio.
    with sf.SoundFile(out) as handle:
        note = json.loads(handle.copy_metadata()["comment"])
    assert _described(note["adapters"]) == _expected(adapters)


def test_a_take_without_adapters_keeps_its_old_provenance(tmp_path):
    request = checked_request(GenerationRequest(prompt="rain", seed=1, seconds=0.5))
    pcm = sound("noise", request.out_samples / SAMPLE_RATE, 1)
    result = GenerationResult(pcm=pcm, latents=np.zeros((256, 1), np.float32),
                              step_latents=np.zeros((1, 256, 1), np.float32), seed=1,
                              timings_ms={"total": 1.0}, backend="onnxruntime",
                              request=request, files=engine_files(tmp_path / "e"), warnings=[])
    assert "adapters" not in take_provenance(result)["request"]
    assert request.adapters == () and request.adapter_infos == ()


def test_the_library_keeps_the_adapters_and_gives_them_back_as_a_request(tmp_path, adapters):
    library = ClipLibrary(tmp_path / "library")
    try:
        record = library.add(_result(tmp_path, adapters))
        again = library.get(record.id)  # read back from the database, not the object kept
        assert _described(again.adapters) == _expected(adapters)
        assert _described(again.sidecar()["request"]["adapters"]) == _expected(adapters)
        request = library.regeneration_request(record.id)
        assert [(c.path, c.strength) for c in request.adapters] == \
            [(p.resolve(), s) for p, s in zip(adapters, (0.8, 0.5), strict=True)]
        checked = checked_request(request)
        assert [i.sha256 for i in checked.adapter_infos] == [_sha(p) for p in adapters]
    finally:
        library.close()


def test_the_library_filters_by_adapter_name_or_hash(tmp_path, adapters):
    library = ClipLibrary(tmp_path / "library")
    try:
        with_both = library.add(_result(tmp_path, adapters))
        only_first = library.add(_result(tmp_path, adapters[:1], (1.0,)))
        plain = library.add(_result(tmp_path, []  , ()))

        def found(name: str) -> set[int]:
            return {r.id for r in library.search(adapter=name)}

        assert found("house-tone.safetensors") == {with_both.id, only_first.id}
        assert found("HOUSE-TONE") == {with_both.id, only_first.id}  # stem, any case
        assert found("dusty") == {with_both.id}
        assert found(_sha(adapters[1])[:10]) == {with_both.id}
        assert found("house") == set()  # a name is a whole name, not a word in it
        assert library.count(adapter="dusty") == 1
        assert plain.id in {r.id for r in library.search()}
    finally:
        library.close()


def test_a_missing_adapter_is_one_sentence_naming_its_file_and_hash(tmp_path, adapters):
    library = ClipLibrary(tmp_path / "library")
    try:
        record = library.add(_result(tmp_path, adapters))
        digest = _sha(adapters[1])
        adapters[1].unlink()
        with pytest.raises(RequestError) as caught:
            library.regeneration_request(record.id)
        text = say(caught.value)
        assert "dusty.safetensors" in text and digest in text and "--lora FILE" in text
        assert text.count(". ") == 0 and text.endswith(".")
    finally:
        library.close()


def test_an_adapter_moved_to_the_shelf_is_found_by_its_hash(tmp_path, adapters, home):
    library = ClipLibrary(tmp_path / "library")
    try:
        record = library.add(_result(tmp_path, adapters))
        shelved = shelf_path(_sha(adapters[0]), adapters[0].name)
        shelved.parent.mkdir(parents=True)
        shutil.move(adapters[0], shelved)
        request = library.regeneration_request(record.id)
        assert request.adapters[0].path == shelved
        # A different file under the old name is not the adapter the take was made with.
        write_adapter(adapters[1].with_name("other.safetensors"), seed=9)
        shutil.copyfile(adapters[1].with_name("other.safetensors"), adapters[1])
        with pytest.raises(RequestError, match="dusty.safetensors"):
            library.regeneration_request(record.id)
    finally:
        library.close()


def test_a_take_rebuilt_from_its_file_still_names_its_adapters(tmp_path, adapters):
    library = ClipLibrary(tmp_path / "library")
    try:
        record = library.add(_result(tmp_path, adapters))
        rebuilt = row_from_file(record.audio_path, deleted=False, now="2026-01-01T00:00:00Z")
    finally:
        library.close()
    entries = json.loads(rebuilt["engine_files"])
    assert [e["role"] for e in entries] == ["adapter", "adapter"]
    assert _described(entries) == _expected(adapters)


def test_a_long_stack_leaves_the_embedded_note_before_the_settings_do():
    stack = [{"file_name": f"adapter-{i}.safetensors", "sha256": "ab" * 32, "variant": "lora",
              "rank": 16, "strength": 0.75, "enabled": True} for i in range(8)]
    note = json.loads(build_comment({"library_id": 5, "prompt": "rain", "seed": 3,
                                     "model": "medium", "steps": 8, "adapters": stack}))
    assert len(json.dumps(note)) <= COMMENT_LIMIT
    assert note["adapters_cut"] is True and "adapters" not in note
    assert (note["library_id"], note["steps"]) == (5, 8)  # the settings are still there
    few = json.loads(build_comment({"library_id": 5, "prompt": "rain", "adapters": stack[:2]}))
    assert few["adapters"] == stack[:2]
