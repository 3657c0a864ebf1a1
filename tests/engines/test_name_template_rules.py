"""The name rules of issue 31: an empty field drops with its separator, the variation number is
said once and is the take's number in its set (never its place in an export), and UCS names
number a set's variations at the end of the FXName block."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engines.delivery.delivery_take import Labels, from_audio
from engines.delivery.names import (
    FALLBACK_NAME,
    numbered_stem,
    render_name,
    take_stem,
)
from engines.delivery.ucs import FX_NAME_MAX
from engines.store.export_plan import ExportOptions
from engines.store.library import ClipLibrary
from tests.engines.test_library import engine_files_in, make_result


@pytest.mark.parametrize(("template", "values", "expected"), [
    ("{category}_{name}_{n:02}", {"name": "footstep_gravel"}, "footstep_gravel_01"),
    ("{category}_{name}_{n:02}", {"name": "step", "category": "FOOTGrvl"},
     "FOOTGrvl_step_01"),
    ("{name}_{category}_{n:02}", {"name": "step"}, "step_01"),
    ("{name} - {preset}", {"name": "step"}, "step"),
    ("{catid}_{fxname}_{creator}_{source}", {"catid": "A", "fxname": "B"}, "A_B"),
    ("{category}_{catid}.{name}", {"name": "step"}, "step"),
    ("{name}_{seed}_{n:02}", {"name": "door"}, "door_01"),  # imported: no seed
    ("{category}_{preset}", {}, FALLBACK_NAME),
])
def test_an_empty_field_drops_with_its_separator(template, values, expected):
    assert render_name(template, **values) == expected


def _take(name: str, catid: str = "", fx_name: str = ""):
    return from_audio(np.zeros((4, 2), np.int16), prompt="footstep on gravel",
                      name=name, seed=100).with_labels(Labels(catid=catid, fx_name=fx_name))


def test_the_variation_number_is_said_once():
    # A batch take of an earlier version was kept under its file's name, number and all.
    assert take_stem("{category}_{name}_{n:02}", _take("footstep_gravel_01"), 1) == \
        "footstep_gravel_01"
    assert take_stem("{name}_{n:02}", _take("footstep_gravel_02"), 2) == "footstep_gravel_02"
    # A name whose number is not the variation's keeps it; no {n}: the name as it is.
    assert take_stem("{name}_{n:02}", _take("door_11"), 1) == "door_11_01"
    assert take_stem("{name}", _take("footstep_gravel_01"), 1) == "footstep_gravel_01"


def test_ucs_names_number_the_fx_name_block_of_a_set():
    names = [render_name("ucs", catid="FOOTGrvl", fxname="Gravel Step", creator="JD",
                         source="SA3", n=n, of=3) for n in (1, 2, 3)]
    assert names == ["FOOTGrvl_Gravel Step 01_JD_SA3", "FOOTGrvl_Gravel Step 02_JD_SA3",
                     "FOOTGrvl_Gravel Step 03_JD_SA3"]
    assert render_name("ucs", catid="FOOTGrvl", fxname="Gravel Step", n=1, of=1) == \
        "FOOTGrvl_Gravel Step"  # a sound made once has no number
    long = render_name("ucs", catid="DOORWood", fxname="Creaking old wooden door opening",
                       n=12, of=12)
    fx = long.split("_")[1]
    assert fx.endswith(" 12") and len(fx) <= FX_NAME_MAX
    assert take_stem("ucs", _take("FOOTGrvl_Gravel Step 01_JD", "FOOTGrvl", "Gravel Step 01"),
                     1, of=2) == "FOOTGrvl_Gravel Step 01"
    # generate --variations --out NAME: a UCS name numbers its FXName block, others _NN.
    assert numbered_stem("FOOTGrvl_Gravel Step_JD_SA3", 2, "FOOTGrvl") == \
        "FOOTGrvl_Gravel Step 02_JD_SA3"
    assert numbered_stem("gravel", 2, "FOOTGrvl") == "gravel_02"


def test_export_numbers_each_take_in_its_own_set(tmp_path: Path):
    files = engine_files_in(tmp_path / "engines")
    out = tmp_path / "out"
    out.mkdir()
    with ClipLibrary(tmp_path / "library") as lib:
        steps = [lib.add(make_result(files, prompt="footstep", seed=s), name="step")
                 for s in (10, 11, 12)]
        kept = lib.add(make_result(files, prompt="coin", seed=5), name="coin",
                       variation=2, variations=4)  # its number, kept when it was made
        door = lib.add(make_result(files, prompt="door", seed=40), name="door")
        wavs = lib.export([steps[2].id, kept.id, door.id, steps[0].id], out,
                          ExportOptions(template="{name}_{n:02}"))
    assert [p.name for p in wavs] == ["step_03.wav", "coin_02.wav", "door_01.wav",
                                      "step_01.wav"]
