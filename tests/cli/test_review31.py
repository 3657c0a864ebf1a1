"""Issue 31 tried as a new game sound designer would, through the real command line (in this
process): what the review found and what it holds.

- A set of variations named by a template without {n} (`batch --name "{catid}_{fxname}"`,
  `{name}`) is numbered as `generate --variations --out NAME` numbers it, instead of failing
  every variation after the first ("already the name of a take").
- A number that is part of the user's FX name ("Level Up 1") stays in a sound made once; only
  a set's variation number is said once.
- A template whose fields are all empty names the file by the take, never just "take.wav".
- A CatID in the wrong case is refused with the list's own spelling (UCS asks that the case of
  a CatID be kept as the list has it), and nothing is changed.
wavinfo (a reader no one here wrote) reads the labels back.
"""

from __future__ import annotations

import json
from pathlib import Path

import wavinfo

from main import main

ROW = ("name,prompt,seconds,variations,seed,preset,category,fx_name\n"
       "footstep_gravel,footstep on gravel,0.6,3,100,Game SFX one-shot,FOOTGrvl,Gravel Step\n")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def files(out: str) -> list[str]:
    return [Path(line).name for line in out.splitlines() if line and not line.startswith(" ")]


def fx_name_in(path: Path) -> str | None:
    return wavinfo.WavInfoReader(str(path)).ixml.raw_xml.getroot().findtext("USER/FXNAME")


def test_a_batch_template_without_n_numbers_each_variation(capsys, tmp_path: Path, home: Path,
                                                           models: Path):
    sounds = tmp_path / "sounds.csv"
    sounds.write_text(ROW)
    for template, expected in (
            ("{catid}_{fxname}", [f"FOOTGrvl_Gravel Step {n:02}.wav" for n in (1, 2, 3)]),
            ("{name}", [f"footstep_gravel_{n:02}.wav" for n in (1, 2, 3)])):
        out = tmp_path / template.strip("{}").replace("}_{", "-")
        code, _, err = cli(capsys, "batch", str(sounds), "--out", str(out), "--models-dir",
                           str(models), "--name", template, "--no-library")
        assert code == 0, err
        assert "already the name" not in err
        assert sorted(p.name for p in out.glob("*.wav")) == expected
        items = json.loads((out / "manifest.json").read_text())["items"]
        assert [(item["status"], item["file"]) for item in items] == \
            [("ok", name) for name in expected]
        assert {fx_name_in(out / name) for name in expected} == {"Gravel Step"}


def test_a_number_in_the_fx_name_of_a_sound_made_once_is_kept(capsys, tmp_path: Path,
                                                              home: Path, models: Path):
    made = tmp_path / "made"
    made.mkdir()
    code, _, err = cli(capsys, "generate", "--prompt", "level up jingle", "--seconds", "0.5",
                       "--seed", "1", "--category", "UIMisc", "--fx-name", "Level Up 1",
                       "--models-dir", str(models), "--out", str(made / "lvl.wav"))
    assert code == 0, err
    dest = tmp_path / "export"
    code, out, err = cli(capsys, "library", "export", "1", "--to", str(dest), "--name", "ucs")
    assert code == 0, err
    assert files(out) == ["UIMisc_Level Up 1.wav"]
    code, out, err = cli(capsys, "library", "export", "1", "--to", str(dest), "--name",
                         "{fxname}")
    assert code == 0, err
    assert files(out) == ["Level Up 1.wav"]
    assert fx_name_in(dest / "Level Up 1.wav") == "Level Up 1"


def test_a_template_of_only_empty_fields_names_the_file_by_the_take(capsys, tmp_path: Path,
                                                                    home: Path, models: Path):
    made = tmp_path / "made"
    made.mkdir()
    for prompt, seed in (("coin pickup", "1"), ("door slam", "9")):
        code, _, err = cli(capsys, "generate", "--prompt", prompt, "--seconds", "0.5",
                           "--seed", seed, "--models-dir", str(models),
                           "--out", str(made / f"{seed}.wav"))
        assert code == 0, err
    code, out, err = cli(capsys, "library", "export", "1", "2", "--to", str(tmp_path / "x"),
                         "--name", "{category}_{catid}")
    assert code == 0, err
    assert files(out) == ["coin-pickup.wav", "door-slam.wav"]  # not take.wav, take_2.wav


def test_a_catid_in_the_wrong_case_is_refused_with_the_lists_spelling(
        capsys, tmp_path: Path, home: Path, models: Path):
    ucs = tmp_path / "ucs.csv"
    ucs.write_text("Category,SubCategory,CatID\nFOOTSTEPS,GRAVEL,FOOTGrvl\n")
    assert cli(capsys, "library", "import-ucs", str(ucs))[0] == 0
    made = tmp_path / "made"
    made.mkdir()
    code, _, err = cli(capsys, "generate", "--prompt", "footstep on gravel", "--seconds", "0.5",
                       "--seed", "1", "--models-dir", str(models), "--out",
                       str(made / "a.wav"))
    assert code == 0, err
    code, _, err = cli(capsys, "library", "label", "1", "--category", "footgrvl")
    assert code == 2
    assert "'footgrvl' is written 'FOOTGrvl' in your UCS list" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    code, out, _ = cli(capsys, "library", "show", "1", "--json")
    assert json.loads(out)["labels"]["catid"] == ""  # nothing was changed
    code, _, err = cli(capsys, "library", "label", "1", "--category", "FOOTGrvl")
    assert code == 0, err
    code, out, _ = cli(capsys, "library", "show", "1", "--json")
    assert json.loads(out)["labels"]["category"] == "FOOTSTEPS"
