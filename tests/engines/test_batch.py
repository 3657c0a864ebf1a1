"""The parts of `batch` that need no engine: reading lists, checking rows, planning names and
seeds, the manifest, the worker count and the estimate. (test_batch_cli runs the command.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engines import gpu as gpu_probe
from engines.batch.devices import cuda_devices_per_worker, visible_gpu_count
from engines.batch.estimate import estimate
from engines.batch.items import RowDefaults, RowError, parse_row
from engines.batch.manifest import MANIFEST_NAME, Manifest, read_earlier
from engines.batch.plan import make_plan, params_hash
from engines.batch.sound_list import ListError, read_list
from engines.batch.workers import RenderedTake, TakeJob, TakeRenderer, WorkerPool
from engines.errors import BackendError
from engines.request import GenerationRequest
from tests.conftest import H200
from tests.fake_cuda_driver import FakeCudaDriver


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def no_finishing(preset, loop, method=None):
    return None, "wav16"


def plan_for(tmp_path: Path, text: str, *, earlier=(), template="{name}_{n:02}", force=False,
             suffix=".csv"):
    sound_list = read_list(write(tmp_path / f"list{suffix}", text))
    return make_plan(sound_list, tmp_path / "out", template=template, defaults=RowDefaults(),
                     finishing_for=no_finishing, earlier=list(earlier), force=force)


# ---- reading the list ------------------------------------------------------------------------


def test_csv_rows_carry_their_physical_line_even_after_multiline_cells_and_blank_lines(
        tmp_path: Path):
    text = ('\ufeffName,Prompt,Negative Prompt,extra\n'
            'a,"a door\nthat creaks",,\n'
            '\n'
            ',,,\n'
            'b,wind,hiss,1\n')
    sound_list = read_list(write(tmp_path / "l.csv", text))
    assert [row.where for row in sound_list.rows] == ["line 2", "line 6"]
    assert sound_list.rows[0].values["prompt"] == "a door\nthat creaks"
    assert sound_list.rows[1].values == {"name": "b", "prompt": "wind",
                                         "negative_prompt": "hiss"}
    assert sound_list.unknown_keys == ("extra",)


def test_a_codec_tier_column_is_known_and_reaches_the_request(tmp_path: Path):
    sound_list = read_list(write(tmp_path / "l.csv", "name,prompt,Codec Tier\na,rain,COARSE\n"))
    assert sound_list.unknown_keys == ()
    spec = parse_row("line 2", sound_list.rows[0].values, tmp_path, RowDefaults())
    assert spec.request(1).codec_tier == "coarse"  # however the list spells it
    plan = plan_for(tmp_path, "name,prompt,codec_tier\na,rain,coarse\nb,rain,\n")
    assert [take.spec.codec_tier for take in plan.takes] == ["coarse", None]


def test_semicolon_lists_from_spreadsheets_are_read(tmp_path: Path):
    sound_list = read_list(write(tmp_path / "l.csv", "name;prompt;seconds\na;rain;1,5\n"))
    assert sound_list.rows[0].values == {"name": "a", "prompt": "rain", "seconds": "1,5"}


def test_a_row_with_more_cells_than_the_header_is_a_bad_row(tmp_path: Path):
    sound_list = read_list(write(tmp_path / "l.csv", "name,prompt\na,rain,heavy\nb,wind\n"))
    assert sound_list.rows[0].problem.startswith("it has 3 cells but the header has 2")
    assert sound_list.rows[1].problem is None


def test_json_items_are_named_by_index_and_non_objects_are_bad_rows(tmp_path: Path):
    text = json.dumps([{"name": "a", "prompt": "rain", "Seconds": 1}, 5])
    sound_list = read_list(write(tmp_path / "l.json", text))
    assert [row.where for row in sound_list.rows] == ["item [0]", "item [1]"]
    assert sound_list.rows[0].values["seconds"] == 1
    assert "not an object" in sound_list.rows[1].problem


@pytest.mark.parametrize("name, data, words", [
    ("missing.csv", None, "does not exist"),
    ("l.csv", b"title,prompt\na,b\n", "no name columns"),
    ("l.csv", b"name,prompt\n", "no sounds"),
    ("l.csv", b"", "is empty"),
    ("l.csv", b'name,prompt\na,"unclosed\n', "not readable CSV"),
    ("l.csv", "name,prompt\nä,b\n".encode("cp1252"), "not UTF-8"),
    ("l.json", b'[{"name": "a",', "not valid JSON (line 1"),
    ("l.json", b'{"name": "a", "prompt": "b"}', "not a list of objects"),
    ("l.json", b"[1, 2]", "not a list of objects"),
    ("l.json", b"[]", "no sounds"),
])
def test_unusable_lists_are_one_sentence(tmp_path: Path, name: str, data: bytes | None,
                                         words: str):
    path = tmp_path / name
    if data is not None:
        path.write_bytes(data)
    with pytest.raises(ListError) as caught:
        read_list(path)
    message = str(caught.value)
    assert words in message and message.endswith(".") and "\n" not in message


# ---- checking a row --------------------------------------------------------------------------


@pytest.mark.parametrize("values, words", [
    ({"seconds": "abc"}, "seconds 'abc' is not a number"),
    ({"steps": "2.5"}, "steps '2.5' is not a whole number"),
    ({"steps": "0"}, "steps 0 is out of range"),
    ({"variations": "0"}, "variations 0 is out of range"),
    ({"seed": "4294967295", "variations": "2"}, "choose a seed from 0 to 4294967294"),
    ({"cfg": "99"}, "cfg 99 is out of range"),
    ({"model": "huge"}, "unknown model 'huge'"),
    ({"loop": "maybe"}, "loop 'maybe' is not yes or no"),
    ({"inpaint": "1-2"}, "inpaint span '1-2' is not START:END"),
    ({"inpaint": "0.2:0.4"}, "inpainting needs init audio"),
    ({"init_audio": "nowhere.wav"}, "init_audio 'nowhere.wav' was not found"),
    ({"name": " "}, "name is empty"),
    ({"prompt": ""}, "prompt is empty"),
    ({"codec_tier": "fp8"}, "codec tier 'fp8' does not exist for demo; choose one of: "
                            "canonical, coarse"),
    ({"model": "medium", "codec_tier": "fp8_fast"}, "does not exist for same-l"),
])
def test_a_bad_value_is_refused_with_its_line(tmp_path: Path, values: dict, words: str):
    row = {"name": "a", "prompt": "rain", **values}
    with pytest.raises(RowError) as caught:
        parse_row("line 7", row, tmp_path, RowDefaults())
    message = str(caught.value)
    assert message.startswith("line 7: ") and words in message, message
    assert message.endswith(".")


def test_row_values_parse_from_text_and_json_and_fall_back_to_the_defaults(tmp_path: Path):
    sf.write(tmp_path / "init.wav", np.zeros((44100, 2), np.float32), 44100)
    spec = parse_row("item [0]", {"name": " door ", "prompt": "creak", "seconds": "1.0",
                                  "init_audio": "init.wav", "inpaint": "0.2:0.5, 0.6:0.8",
                                  "loop": "yes", "seed": 3.0, "variations": 2},
                     tmp_path, RowDefaults(steps=3))
    assert (spec.name, spec.seconds, spec.steps, spec.seed, spec.variations) == \
        ("door", 1.0, 3, 3, 2)
    assert spec.inpaint == ((0.2, 0.5), (0.6, 0.8)) and spec.loop is True
    assert spec.init_audio == tmp_path / "init.wav" and len(spec.init_entry["sha256"]) == 64
    spec = parse_row("item [1]", {"name": "x", "prompt": "y", "inpaint": None,
                                  "loop": False}, tmp_path, RowDefaults(model="demo"))
    assert spec.seconds is None and spec.loop is False and spec.cfg == 1.0


# ---- the plan --------------------------------------------------------------------------------


def test_variations_get_consecutive_seeds_and_numbered_names(tmp_path: Path):
    plan = plan_for(tmp_path, "name,prompt,seed,variations\ndoor,creak,40,3\nui,click,,2\n")
    takes = plan.takes
    assert [t.file for t in takes] == ["door_01.wav", "door_02.wav", "door_03.wav",
                                       "ui_01.wav", "ui_02.wav"]
    assert [t.seed for t in takes[:3]] == [40, 41, 42]
    assert takes[4].seed == takes[3].seed + 1 and takes[3].seed_was_random
    assert len({t.params_hash for t in takes}) == 5


def test_the_later_of_two_takes_with_one_file_name_is_a_list_error(tmp_path: Path):
    plan = plan_for(tmp_path, "name,prompt\nDoor,creak\ndoor,slam\nmanifest,x\n",
                    template="{name}")
    assert [t.file for t in plan.takes] == ["Door.wav"]
    clash, manifest = plan.problems
    assert clash.where == "line 3" and "already the name of a take from line 2" in clash.reason
    assert "over manifest.json" in manifest.reason


def test_a_template_field_that_does_not_fit_fails_that_row_only(tmp_path: Path):
    plan = plan_for(tmp_path, "name,prompt\na,b\n", template="{name:d}")
    assert plan.problems and "does not fit name" in plan.problems[0].reason


def test_a_rerun_reuses_random_seeds_and_skips_what_is_made(tmp_path: Path):
    text = "name,prompt,variations\nrain,heavy rain,2\n"
    first = plan_for(tmp_path, text)
    out = tmp_path / "out"
    out.mkdir()
    (out / "rain_01.wav").write_bytes(b"made")
    earlier = [{"name": t.spec.name, "variation": t.variation, "params_hash": t.params_hash,
                "seed": t.seed, "file": t.file, "status": "ok"} for t in first.takes]
    again = plan_for(tmp_path, text, earlier=earlier)
    assert [t.seed for t in again.takes] == [t.seed for t in first.takes]
    assert [t.skipped for t in again.takes] == [True, False]  # rain_02.wav is not there
    assert not any(t.skipped for t in plan_for(tmp_path, text, earlier=earlier,
                                               force=True).takes)
    changed = plan_for(tmp_path, text.replace("heavy rain", "light rain"), earlier=earlier)
    assert not any(t.skipped for t in changed.takes)


def test_the_parameters_hash_covers_what_decides_the_audio(tmp_path: Path):
    spec = parse_row("line 2", {"name": "a", "prompt": "rain", "seed": "5"}, tmp_path,
                     RowDefaults())
    same = parse_row("line 9", {"name": "b", "prompt": "rain", "seed": "5"}, tmp_path,
                     RowDefaults())
    other = parse_row("line 2", {"name": "a", "prompt": "rain", "seed": "6"}, tmp_path,
                      RowDefaults())
    assert params_hash(spec, 1, None, "wav16") == params_hash(same, 1, None, "wav16")
    assert params_hash(spec, 1, None, "wav16") != params_hash(other, 1, None, "wav16")
    assert params_hash(spec, 1, None, "wav16") != params_hash(spec, 1, None, "flac")
    assert params_hash(spec, 2, None, "wav16") == params_hash(other, 1, None, "wav16")


# ---- the manifest ----------------------------------------------------------------------------


def test_the_manifest_is_json_with_every_item_and_is_replaced_atomically(tmp_path: Path):
    plan = plan_for(tmp_path, "name,prompt,seed\na,rain,1\nb,wind,x\n")
    out = tmp_path / "out"
    out.mkdir()
    manifest = Manifest.for_plan(out, {"list": "l.csv"}, plan.entries)
    manifest.save()
    manifest.update(0, status="ok", library_id=7, timings_ms={"total": 1.5})
    manifest.save()
    data = json.loads((out / MANIFEST_NAME).read_text())
    assert data["summary"] == {"ok": 1, "skipped": 0, "failed": 1, "pending": 0}
    first, bad = data["items"]
    assert first["file"] == "a_01.wav" and first["seed"] == 1 and first["library_id"] == 7
    assert bad["status"] == "failed" and bad["reason"].startswith("line 3: seed 'x'")
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST_NAME]  # no temporary left
    earlier, problem = read_earlier(out)
    assert problem is None and [e["name"] for e in earlier] == ["a", "b"]


def test_an_unreadable_earlier_manifest_is_a_warning_and_a_fresh_start(tmp_path: Path):
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    earlier, problem = read_earlier(tmp_path)
    assert earlier == [] and "could not be read" in problem
    (tmp_path / MANIFEST_NAME).write_text("[]")
    assert "not one this command wrote" in read_earlier(tmp_path)[1]


# ---- workers ---------------------------------------------------------------------------------


def test_gpu_count_and_one_gpu_per_worker(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(gpu_probe, "_driver_module", lambda: FakeCudaDriver(H200, count=4))
    gpu_probe.probe_gpu.cache_clear()
    assert visible_gpu_count() == 4
    monkeypatch.setattr(gpu_probe, "_driver_module", lambda: FakeCudaDriver(None))
    gpu_probe.probe_gpu.cache_clear()
    assert visible_gpu_count() == 0
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert cuda_devices_per_worker(3, 2) == ["0", "1", "0"]
    assert cuda_devices_per_worker(2, 0) == [None]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    assert cuda_devices_per_worker(2, 2) == ["4", "6"]


def test_a_failing_take_is_a_sentence_and_a_bug_is_logged_not_raised(tmp_path: Path,
                                                                      monkeypatch):
    renderer = TakeRenderer(tmp_path)
    job = TakeJob(3, GenerationRequest(prompt="rain", seconds=0.5, steps=2, seed=1), None)

    def engine_failure(request):
        raise BackendError("The engine failed; try again.")

    monkeypatch.setattr(renderer.generator, "generate", engine_failure)
    assert renderer.render(job) == RenderedTake(3, failure="The engine failed; try again.")

    def bug(request):
        raise KeyError("oops")

    monkeypatch.setattr(renderer.generator, "generate", bug)
    failure = renderer.render(job).failure
    assert failure.startswith("The take failed unexpectedly (") and failure.endswith(".")


class _DeadProcess:
    exitcode = -9

    def is_alive(self) -> bool:
        return False


def test_a_worker_that_dies_costs_only_its_take(monkeypatch: pytest.MonkeyPatch):
    pool = WorkerPool.__new__(WorkerPool)
    started = []
    monkeypatch.setattr(pool, "_start", lambda devices, restarts=0: started.append(restarts)
                        or "new worker", raising=False)
    from engines.batch.workers import _Worker

    pool._workers = [_Worker(_DeadProcess(), None, None, job=TakeJob(5, None, None))]
    lost = pool._lost_take()
    assert lost.index == 5 and "exit code -9" in lost.failure
    assert started == [1] and pool._workers == ["new worker"]


# ---- estimate --------------------------------------------------------------------------------


def test_the_estimate_says_where_its_figure_comes_from(tmp_path: Path):
    plan = plan_for(tmp_path, "name,prompt,seconds,variations\na,rain,2,3\n")
    guess = estimate(plan.takes, [], jobs=1)
    assert guess.audio_seconds == 6.0 and guess.seconds > 0
    assert guess.source.startswith("per-model constant")
    earlier = [{"status": "ok", "model": "demo", "seconds": 1.0,
                "timings_ms": {"wall": 500.0}}]
    measured = estimate(plan.takes, earlier, jobs=2)
    assert measured.seconds == pytest.approx(1.5) and measured.source.startswith("measured")
    big = plan_for(tmp_path, "name,prompt,model\na,rain,medium\n")
    assert estimate(big.takes, [], jobs=1).seconds is None


def test_tensorrt_gets_one_worker_per_gpu_by_default(tmp_path: Path, monkeypatch):
    from engines.batch.session import choose_workers
    from engines.models.inventory import default_catalog

    monkeypatch.setattr(gpu_probe, "_driver_module", lambda: FakeCudaDriver(H200, count=2))
    gpu_probe.probe_gpu.cache_clear()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sound_list = read_list(write(tmp_path / "l.csv", "name,prompt,variations\na,rain,3\n"))
    catalog = default_catalog(tmp_path)
    for backend, jobs, expected in (("tensorrt", None, (2, ["0", "1"])),
                                    ("tensorrt", 3, (3, ["0", "1", "0"])),
                                    ("onnxruntime", None, (1, [None]))):
        plan = make_plan(sound_list, tmp_path / "out", template="{name}_{n:02}",
                         defaults=RowDefaults(model="sm-sfx", backend=backend),
                         finishing_for=no_finishing, earlier=[], force=False)
        assert choose_workers(catalog, plan, jobs) == expected, backend
