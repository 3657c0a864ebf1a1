"""`generate --lora FILE[:STRENGTH]` (repeatable, as Stable Audio 3's own CLI) and a sound
list's `lora` column: every bad adapter is one sentence on stderr naming the fix in the
command line's words, exit code 2, nothing written; a good list row carries its adapters
(paths relative to the list) into its takes and into the parameters that decide a rerun."""

from __future__ import annotations

import pytest

from engines.adapters.choice import AdapterChoice
from engines.batch.items import RowDefaults, RowError, parse_row
from engines.batch.plan import params_hash
from engines.cli.generate import build_parser
from main import main
from tests.adapter_support import write_adapter


def test_lora_is_repeatable_and_takes_an_optional_strength():
    args = build_parser().parse_args(["--prompt", "x", "--lora", "a.safetensors:0.8",
                                      "--lora", "b.safetensors"])
    assert args.lora == ["a.safetensors:0.8", "b.safetensors"]
    assert build_parser().parse_args(["--prompt", "x"]).lora == []


def _refused(capsys, tmp_path, models, *lora: str) -> str:
    out = tmp_path / "take.wav"
    argv = ["generate", "--prompt", "door", "--seed", "1", "--models-dir", str(models),
            "--no-library", "--out", str(out)]
    for item in lora:
        argv += ["--lora", item]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert not out.exists() and not out.with_suffix(".json").exists()
    return err


@pytest.mark.parametrize(("variant", "baked", "said"), [
    ("bora", True, "per input column"),
    ("dora-cols", True, "per input column"),
    ("dora-rows", False, "without baked row norms"),
])
def test_a_variant_the_branch_cannot_serve_is_refused_with_its_reason(
        capsys, tmp_path, models, home, variant, baked, said):
    adapter = write_adapter(tmp_path / f"{variant}.safetensors", variant, baked=baked)
    err = _refused(capsys, tmp_path, models, str(adapter))
    assert said in err and f"{variant}.safetensors" in err and "--lora FILE" in err


@pytest.mark.parametrize(("strength", "shown"), [("11", "11"), ("-0.5", "-0.5"),
                                                 ("nan", "nan"), ("high", "'high'")])
def test_a_strength_out_of_range_names_the_range_and_the_flag(
        capsys, tmp_path, models, home, strength, shown):
    adapter = write_adapter(tmp_path / "warm.safetensors")
    err = _refused(capsys, tmp_path, models, f"{adapter}:{strength}")
    assert shown in err and "0 to 10" in err and "--lora FILE:STRENGTH" in err


def test_a_missing_or_unreadable_adapter_file_is_refused(capsys, tmp_path, models, home):
    err = _refused(capsys, tmp_path, models, str(tmp_path / "gone.safetensors"))
    assert "gone.safetensors" in err and "was not found" in err and "--lora FILE" in err
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"not a safetensors file at all")
    err = _refused(capsys, tmp_path, models, str(junk))
    assert "junk.safetensors" in err and "--lora FILE" in err
    pickle = tmp_path / "trained.ckpt"
    pickle.write_bytes(b"\x80\x04")
    assert "trained.ckpt" in _refused(capsys, tmp_path, models, str(pickle))


# ---- the sound list's lora column ----------------------------------------------------------


def test_a_list_row_takes_its_adapters_from_paths_beside_the_list(tmp_path):
    folder = tmp_path / "list"
    warm = write_adapter(folder / "adapters" / "warm.safetensors", seed=1)
    dusty = write_adapter(folder / "my pads.safetensors", "dora-rows", 2, seed=2)
    row = {"name": "creak", "prompt": "door creak", "seed": "3",
           "lora": 'adapters/warm.safetensors:0.8 "my pads.safetensors":0.5'}
    spec = parse_row("line 2", row, folder, RowDefaults())
    assert spec.adapters == (AdapterChoice(warm.resolve(), 0.8),
                             AdapterChoice(dusty.resolve(), 0.5))
    assert spec.request(3).adapters == spec.adapters
    # JSON lists take objects too; the same adapters are the same take to a rerun.
    same = parse_row("item [0]", {**row, "lora": [
        "adapters/warm.safetensors:0.8", {"file": "my pads.safetensors", "strength": 0.5}]},
        folder, RowDefaults())
    assert params_hash(same, 1, None, "wav16") == params_hash(spec, 1, None, "wav16")
    louder = parse_row("line 3", {**row, "lora": "adapters/warm.safetensors:0.9"}, folder,
                       RowDefaults())
    assert params_hash(louder, 1, None, "wav16") != params_hash(spec, 1, None, "wav16")
    plain = parse_row("line 4", {k: v for k, v in row.items() if k != "lora"}, folder,
                      RowDefaults())
    assert plain.adapters == () and params_hash(plain, 1, None, "wav16") != \
        params_hash(spec, 1, None, "wav16")


@pytest.mark.parametrize(("cell", "said"), [
    ("missing.safetensors", "missing.safetensors' was not found"),
    ("warm.safetensors:12", "0 to 10 (FILE:STRENGTH in the row's lora column;"),
    ("warm.safetensors:loud", "'loud', which is not a number"),
])
def test_a_bad_lora_cell_names_its_row_and_the_column(tmp_path, cell, said):
    write_adapter(tmp_path / "warm.safetensors")
    with pytest.raises(RowError) as caught:
        parse_row("line 5", {"name": "x", "prompt": "y", "lora": cell}, tmp_path, RowDefaults())
    text = str(caught.value)
    assert text.startswith("line 5: ") and said in text and "--lora" not in text


def test_a_stack_over_the_engines_rank_is_refused_before_anything_is_written(
        capsys, tmp_path, models, home):
    rank_16 = write_adapter(tmp_path / "wide.safetensors", rank=16)
    err = _refused(capsys, tmp_path, models, *[f"{rank_16}:0.2"] * 5)  # 80 > the demo's 64
    assert "80" in err and "64" in err and "--lora" in err
