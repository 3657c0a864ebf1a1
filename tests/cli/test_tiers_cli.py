"""Codec tiers on the command line: `generate --codec-tier`, the `codec_tier` column of batch
lists, `library list --tier` and what `models list` says about the default pick (demo set,
subprocesses like a user's shell; the machine is faked where a test means one)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import main as entry
from engines import demo
from tests.cli_runner import run_cli
from tests.engines.test_tiers import TRT, engines_tree

REPO = Path(__file__).resolve().parents[2]


def test_models_list_names_the_default_pick_and_why(tmp_path: Path, h200_gpu, monkeypatch,
                                                    capsys) -> None:
    import engines.catalog

    monkeypatch.setattr(engines.catalog, "installed_tensorrt_version", lambda: TRT)
    models = engines_tree(tmp_path / "models", "sm_90", tiers=("canonical", "fp8_fast"))
    assert entry.main(["models", "--models-dir", str(models), "list"]) == 0
    out = capsys.readouterr().out
    sfx = out.split("sm-sfx:", 1)[1].split("\n\n", 1)[0]
    assert "default here: fp16mixed (default) DiT + canonical SAME-S codec on TensorRT: it is " \
           "the default on every machine" in sfx
    assert "codec tier fp8_fast  about 1.2x faster decode, audible artifacts - ready" in sfx
    assert re.search(r"codec tier fp8 +about 1.14x faster decode, near-transparent - not "
                     r"available - .*dec_fp8\.trt", sfx)
    assert "the default rule: the fp16mixed DiT with the canonical codec tier" in out


def _run(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SA3_STUDIO_HOME": str(home)}
    return run_cli(args, env=env, cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def cli_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tier-cli-models")


def test_generate_codec_tier_reaches_sidecar_library_and_filter(tmp_path: Path,
                                                                cli_models: Path) -> None:
    home = tmp_path / "home"
    common = ("--prompt", "door creak", "--seconds", "1", "--seed", "4", "--models-dir",
              str(cli_models))
    plain = _run(home, "generate", *common, "--out", str(tmp_path / "plain.wav"))
    assert plain.returncode == 0, plain.stderr
    rough = _run(home, "generate", *common, "--codec-tier", "coarse", "--out",
                 str(tmp_path / "rough.wav"))
    assert rough.returncode == 0, rough.stderr
    meta = json.loads((tmp_path / "rough.json").read_text())
    assert meta["decoder_tier"] == "coarse" and meta["request"]["codec_tier"] == "coarse"
    assert "rougher" in meta["tiers"]["codec_summary"]
    assert any(f["role"] == "decoder" and f["path"].endswith(demo.DECODER_COARSE_FILE)
               for f in meta["model_files"])
    plain_meta = json.loads((tmp_path / "plain.json").read_text())
    assert plain_meta["decoder_tier"] == "canonical" and plain_meta["request"]["codec_tier"] \
        is None

    listed = _run(home, "library", "list", "--tier", "coarse", "--json")
    assert listed.returncode == 0, listed.stderr
    takes = json.loads(listed.stdout)
    assert [t["id"] for t in takes] == [meta["library_id"]]
    assert takes[0]["provenance"]["decoder_tier"] == "coarse"
    from engines.store.wavmeta import read_metadata

    note = read_metadata(Path(takes[0]["files"]["audio"]["path"]))
    assert note["decoder_tier"] == "coarse"  # the embedded note, for a rebuilt library
    canonical = json.loads(_run(home, "library", "list", "--tier", "canonical",
                                "--json").stdout)
    assert [t["id"] for t in canonical] == [plain_meta["library_id"]]

    refused = _run(home, "generate", *common, "--codec-tier", "fp8", "--out",
                   str(tmp_path / "no.wav"))
    assert refused.returncode == 2 and not (tmp_path / "no.wav").exists()
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "Codec tier 'fp8' does not exist for demo" in lines[0]


def test_batch_rows_choose_their_codec_tier(tmp_path: Path, cli_models: Path) -> None:
    sound_list = tmp_path / "sounds.csv"
    sound_list.write_text("name,prompt,seconds,seed,steps,codec_tier\n"
                          "plain,coin pickup,0.5,3,2,\n"
                          "rough,coin pickup,0.5,3,2,coarse\n"
                          "wrong,coin pickup,0.5,3,2,fp8_fast\n")
    out = tmp_path / "out"
    done = _run(tmp_path / "home", "batch", str(sound_list), "--out", str(out),
                "--models-dir", str(cli_models), "--no-library")
    assert done.returncode != 0  # the bad row fails; the good ones are made
    assert "line 4" in done.stderr and "fp8_fast" in done.stderr
    sidecars = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")
                if p.name != "manifest.json"}
    assert sorted(meta["decoder_tier"] for meta in sidecars.values()) == ["canonical", "coarse"]
    rough = next(m for m in sidecars.values() if m["decoder_tier"] == "coarse")
    plain = next(m for m in sidecars.values() if m["decoder_tier"] == "canonical")
    assert rough["seed"] == plain["seed"] == 3


def test_a_rerun_with_another_tier_renders_again(tmp_path: Path) -> None:
    from engines.batch.items import RowDefaults, parse_row
    from engines.batch.plan import params_hash

    row = {"name": "a", "prompt": "coin", "seconds": "0.5", "seed": "3"}
    plain = parse_row("line 2", row, tmp_path, RowDefaults())
    rough = parse_row("line 2", {**row, "codec_tier": "coarse"}, tmp_path, RowDefaults())
    default_rough = parse_row("line 2", row, tmp_path, RowDefaults(codec_tier="coarse"))
    assert rough.codec_tier == default_rough.codec_tier == "coarse"
    assert params_hash(plain, 1, None, "wav16") != params_hash(rough, 1, None, "wav16")
    assert params_hash(rough, 1, None, "wav16") == params_hash(default_rough, 1, None, "wav16")
