"""UCS labels through the real command line (issue 31, items 1, 2, 4 and 8), in this process: a
batch list's variations get UCS names numbered in their FXName block and keep their labels in
the library; `library show` prints them; `library label` changes only the labels given and
never the audio; `library export` uses the stored labels without the flags again (a flag given
again replaces only its own field); a CatID no UCS list checked is written and said once, and
with a list an unknown one is refused with the closest. wavinfo reads the files' labels back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import wavinfo

from main import main

ROW = ("name,prompt,seconds,variations,seed,preset,category,fx_name\n"
       "footstep_gravel,footstep on gravel,0.6,3,100,Game SFX one-shot,FOOTGrvl,Gravel Step\n")
UCS_LIST = ("CatID,Category,SubCategory\nFOOTGrvl,FOOTSTEPS,GRAVEL\n"
            "FOOTMetl,FOOTSTEPS,METAL\nDOORWood,DOORS,WOOD\n")


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def ixml(path: Path) -> dict[str, str | None]:
    root = wavinfo.WavInfoReader(str(path)).ixml.raw_xml.getroot()
    return {key: root.findtext(where) for key, where in (
        ("CATID", "USER/CATID"), ("CATEGORY", "USER/CATEGORY"), ("FXNAME", "USER/FXNAME"),
        ("creatorId", "ASWG/creatorId"), ("sourceId", "ASWG/sourceId"))}


def shown(capsys, take: int) -> dict:
    code, out, err = cli(capsys, "library", "show", str(take), "--json")
    assert code == 0, err
    return json.loads(out)


def audio_sha(capsys, take: int) -> str:
    path = Path(shown(capsys, take)["files"]["audio"]["path"])
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_batch_of_ucs_variations_is_numbered_and_keeps_its_labels(capsys, tmp_path: Path,
                                                                    home: Path, models: Path):
    sounds = tmp_path / "sounds.csv"
    sounds.write_text(ROW)
    out = tmp_path / "out"
    code, _, err = cli(capsys, "batch", str(sounds), "--out", str(out), "--models-dir",
                       str(models), "--name", "ucs", "--creator", "JD", "--source", "SA3")
    assert code == 0, err
    names = [f"FOOTGrvl_Gravel Step {n:02}_JD_SA3.wav" for n in (1, 2, 3)]
    assert sorted(p.name for p in out.glob("*.wav")) == names
    assert err.count("'FOOTGrvl' was not checked") == 1  # no UCS list: said once
    assert "library import-ucs" in err
    ids = [item["library_id"] for item in json.loads((out / "manifest.json").read_text())
           ["items"]]
    for n, take in enumerate(ids, start=1):
        data = shown(capsys, take)
        assert data["labels"] == {"catid": "FOOTGrvl", "category": "", "subcategory": "",
                                  "fx_name": "Gravel Step", "creator": "JD", "source": "SA3"}
        assert (data["variation"], data["variations"]) == (n, 3)
    code, text, _ = cli(capsys, "library", "show", str(ids[1]))
    assert "labels       CatID FOOTGrvl, FX name 'Gravel Step', creator JD, source SA3" in text
    assert "variation    2 of 3" in text

    # Every later export names and labels by the stored labels; {n} is the variation number.
    dest = tmp_path / "export"
    code, listed, err = cli(capsys, "library", "export", str(ids[2]), str(ids[0]), "--to",
                            str(dest), "--name", "ucs")
    assert code == 0, err
    assert [Path(line).name for line in listed.splitlines() if not line.startswith(" ")] == \
        [names[2], names[0]]
    assert ixml(dest / names[2]) == {"CATID": "FOOTGrvl", "CATEGORY": None,
                                     "FXNAME": "Gravel Step", "creatorId": "JD",
                                     "sourceId": "SA3"}
    code, listed, err = cli(capsys, "library", "export", str(ids[1]), "--to", str(dest),
                            "--name", "ucs", "--category", "FOOTMetl")
    assert code == 0, err  # the FX name, creator and source stay the take's
    assert (dest / "FOOTMetl_Gravel Step 02_JD_SA3.wav").is_file()
    code, listed, err = cli(capsys, "library", "export", str(ids[0]), "--to", str(dest),
                            "--name", "{category}_{name}_{n:02}", "--raw")
    assert code == 0, err
    # The take is kept under its sound's name; its number is said once (issue 31, item 3).
    assert [Path(line).name for line in listed.splitlines()] == ["FOOTGrvl_footstep_gravel_01.wav"]


def test_library_label_changes_only_what_it_is_given_and_never_the_audio(
        capsys, tmp_path: Path, home: Path, models: Path):
    clip = tmp_path / "click.wav"
    code, _, err = cli(capsys, "generate", "--models-dir", str(models), "--prompt", "ui click",
                       "--seconds", "0.5", "--seed", "3", "--out", str(clip), "--category",
                       "NOTAREALCAT")
    assert code == 0, err
    assert err.count("'NOTAREALCAT' was not checked") == 1 and "import-ucs" in err
    assert ixml(clip)["CATID"] == "NOTAREALCAT"  # written as given
    take = json.loads(clip.with_suffix(".json").read_text())["library_id"]
    before = audio_sha(capsys, take)
    assert shown(capsys, take)["labels"]["catid"] == "NOTAREALCAT"

    code, out, err = cli(capsys, "library", "label", str(take), "--fx-name", "Soft Click",
                         "--creator", "JD")
    assert code == 0 and out.strip() == (f"take #{take} labels: CatID NOTAREALCAT, FX name "
                                         "'Soft Click', creator JD"), err
    # With the user's UCS list imported, an unknown CatID is refused with the closest ones.
    ucs = tmp_path / "ucs.csv"
    ucs.write_text(UCS_LIST)
    code, out, err = cli(capsys, "library", "import-ucs", str(ucs))
    assert code == 0 and "3 categories" in out, err
    code, out, err = cli(capsys, "library", "label", str(take), "--category", "FOOTGrvel")
    assert code == 2 and out == "" and "FOOTGrvl" in err and err.count("\n") == 1, err
    assert shown(capsys, take)["labels"]["catid"] == "NOTAREALCAT"  # nothing changed
    code, out, err = cli(capsys, "library", "label", str(take), "--category", "FOOTGrvl")
    assert code == 0 and "CatID FOOTGrvl (FOOTSTEPS / GRAVEL)" in out and err == "", err
    labels = shown(capsys, take)["labels"]
    assert labels == {"catid": "FOOTGrvl", "category": "FOOTSTEPS", "subcategory": "GRAVEL",
                      "fx_name": "Soft Click", "creator": "JD", "source": ""}

    dest = tmp_path / "out"
    code, out, err = cli(capsys, "library", "export", str(take), "--to", str(dest), "--name",
                         "ucs")
    assert code == 0, err
    assert ixml(dest / "FOOTGrvl_Soft Click_JD.wav") == {
        "CATID": "FOOTGrvl", "CATEGORY": "FOOTSTEPS", "FXNAME": "Soft Click",
        "creatorId": "JD", "sourceId": None}
    code, out, err = cli(capsys, "library", "label", str(take), "--clear", "fx-name",
                         "creator")
    assert code == 0 and out.strip() == (f"take #{take} labels: CatID FOOTGrvl (FOOTSTEPS / "
                                         "GRAVEL)"), err
    code, _, err = cli(capsys, "library", "label", str(take), "--creator", "X", "--clear",
                       "creator")
    assert code == 2 and "opposite" in err
    code, _, err = cli(capsys, "library", "label", str(take))
    assert code == 2 and "No label was given" in err
    code, _, err = cli(capsys, "library", "label", str(take), "99", "--source", "SA3")
    assert code == 2 and "#99" in err
    assert shown(capsys, take)["labels"]["source"] == ""  # refused before any change
    assert audio_sha(capsys, take) == before  # relabelling never touches the audio


def test_generate_variations_under_a_ucs_name_number_the_fx_name(capsys, tmp_path: Path,
                                                                  home: Path, models: Path):
    out = tmp_path / "FOOTGrvl_Gravel Step_JD.wav"
    code, _, err = cli(capsys, "generate", "--models-dir", str(models), "--prompt",
                       "footstep on gravel", "--seconds", "0.5", "--seed", "7",
                       "--variations", "2", "--category", "FOOTGrvl", "--fx-name",
                       "Gravel Step", "--creator", "JD", "--out", str(out))
    assert code == 0, err
    made = [tmp_path / f"FOOTGrvl_Gravel Step {n:02}_JD.wav" for n in (1, 2)]
    assert sorted(tmp_path.glob("*.wav")) == made
    for n, path in enumerate(made, start=1):
        take = json.loads(path.with_suffix(".json").read_text())["library_id"]
        data = shown(capsys, take)
        assert (data["variation"], data["variations"]) == (n, 2)
        assert data["labels"]["fx_name"] == "Gravel Step" and ixml(path)["CATID"] == "FOOTGrvl"
