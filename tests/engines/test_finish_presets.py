"""Finishing settings (validation sentences, dict round trip) and presets, built in and saved
through a real settings file."""

from __future__ import annotations

import json
import os

import pytest

from engines.errors import RequestError, StudioError
from engines.finish.presets import (
    BUILTIN_PRESETS,
    SETTINGS_KEY,
    delete_preset,
    get_preset,
    list_presets,
    save_preset,
)
from engines.finish.settings import FinishSettings
from engines.settings import read_settings, settings_path, update_settings

# -------------------------------------------------------------------------------------------
# Settings


@pytest.mark.parametrize("changes, sentence", [
    ({"loudness_lufs": -70.0},
     "loudness -70 LUFS is out of range; choose a value from -60 to -5 LUFS."),
    ({"true_peak_dbtp": 0.5},
     "true peak 0.5 dBTP is out of range; choose a value from -20 to 0 dBTP."),
    ({"fade_in_ms": 12000.0},
     "fade in 12000 ms is out of range; choose a value from 0 to 10000 ms."),
    ({"fade_out_ms": -1.0},
     "fade out -1 ms is out of range; choose a value from 0 to 10000 ms."),
    ({"loudness_lufs": -60.001},
     "loudness -60.001 LUFS is out of range; choose a value from -60 to -5 LUFS."),
    ({"rate": 22050}, "sample rate 22050 Hz is not offered; choose 44100 or 48000 Hz."),
    ({"format": "mp3"},
     "format 'mp3' is not offered; choose one of wav16, wav24, wav32f, flac, ogg."),
    ({"fade_curve": "s-curve"},
     "fade curve 's-curve' is not offered; choose one of linear, equal-power, exponential."),
    ({"trim_in_s": 2.0, "trim_out_s": 1.0},
     "trim out point 1 s is not after the in point 2 s; move the out point later."),
    ({"loudness_lufs": float("nan")},
     "loudness is nan; choose a finite value from -60 to -5 LUFS."),
])
def test_validate_says_one_sentence(changes, sentence):
    with pytest.raises(RequestError) as caught:
        FinishSettings(**changes).validate()
    assert str(caught.value) == sentence


def test_defaults_are_valid_and_identity():
    settings = FinishSettings().validate()
    assert settings.is_identity
    assert not FinishSettings(mono=True).is_identity
    assert not FinishSettings(rate=48000).is_identity
    assert not FinishSettings(loop=True).is_identity
    assert FinishSettings(format="flac").is_identity  # the file format is the writer's


def test_dict_round_trip():
    settings = FinishSettings(trim=True, trim_in_s=0.25, fade_in_ms=5.0, fade_curve="exponential",
                              loudness_lufs=-16.0, true_peak_dbtp=-1.5, peak_mode="reduce",
                              rate=48000, mono=True, format="flac", preset="mine")
    data = json.loads(json.dumps(settings.to_dict()))
    assert FinishSettings.from_dict(data) == settings


def test_from_dict_skips_unknown_keys_and_fills_defaults():
    settings = FinishSettings.from_dict({"loudness_lufs": -20, "from_the_future": 1})
    assert settings == FinishSettings(loudness_lufs=-20.0)
    assert isinstance(settings.loudness_lufs, float)


@pytest.mark.parametrize("data, words", [
    ({"trim": "yes"}, "'trim' must be true or false, not 'yes'"),
    ({"loudness_lufs": "-18"}, "'loudness_lufs' must be a number or null"),
    ({"rate": 48000.0}, "'rate' must be a whole number"),
    ({"fade_in_ms": True}, "'fade_in_ms' must be a number, not True"),
    ({"format": 24}, "'format' must be text"),
])
def test_from_dict_is_strict_about_types(data, words):
    with pytest.raises(RequestError, match="^finishing setting " + words.replace("(", r"\(")):
        FinishSettings.from_dict(data)


def test_from_dict_validates_values_and_shape():
    with pytest.raises(RequestError, match="loudness -99 LUFS is out of range"):
        FinishSettings.from_dict({"loudness_lufs": -99})
    with pytest.raises(RequestError, match="must be a JSON object"):
        FinishSettings.from_dict(["loudness", -18])  # type: ignore[arg-type]


# -------------------------------------------------------------------------------------------
# Presets


def test_builtins_are_valid_and_as_the_issue_describes():
    for name, settings in BUILTIN_PRESETS.items():
        settings.validate()
        assert settings.preset == name
    sfx = BUILTIN_PRESETS["Game SFX one-shot"]
    assert (sfx.trim, sfx.fade_in_ms, sfx.fade_out_ms) == (True, 2.0, 30.0)
    assert (sfx.loudness_lufs, sfx.true_peak_dbtp, sfx.rate, sfx.format) == (-18, -1, 48000,
                                                                          "wav24")
    ambience = BUILTIN_PRESETS["Ambience loop"]
    assert ambience.loop and ambience.loudness_lufs == -24 and ambience.true_peak_dbtp == -1
    click = BUILTIN_PRESETS["UI click"]
    assert click.trim and click.mono and click.format == "wav16"
    assert (click.fade_in_ms, click.fade_out_ms) == (1.0, 10.0)
    assert BUILTIN_PRESETS["Raw"].is_identity


def test_user_preset_round_trips_through_the_settings_file(tmp_path):
    update_settings(tmp_path, {"theme": "dark"})  # other settings stay as they are
    mine = FinishSettings(trim=True, trim_db=-50.0, fade_out_ms=80.0, loudness_lufs=-16.0,
                          true_peak_dbtp=-2.0, rate=48000, format="wav24")
    assert save_preset(tmp_path, "  Footsteps  ", mine) == "Footsteps"
    on_disk = json.loads(settings_path(tmp_path).read_text(encoding="utf-8"))
    assert on_disk["theme"] == "dark"
    assert on_disk[SETTINGS_KEY]["Footsteps"]["loudness_lufs"] == -16.0
    got = get_preset(tmp_path, "Footsteps")
    assert got == FinishSettings(**{**mine.to_dict(), "preset": "Footsteps"})
    assert list_presets(tmp_path) == [*BUILTIN_PRESETS, "Footsteps"]

    save_preset(tmp_path, "alarm", FinishSettings(mono=True))
    assert list_presets(tmp_path)[-2:] == ["alarm", "Footsteps"]  # alphabetical, any case
    delete_preset(tmp_path, "Footsteps")
    assert "Footsteps" not in list_presets(tmp_path)
    assert read_settings(tmp_path)["theme"] == "dark"


def test_unknown_preset_lists_the_names(tmp_path):
    save_preset(tmp_path, "Mine", FinishSettings())
    with pytest.raises(RequestError) as caught:
        get_preset(tmp_path, "Nope")
    assert str(caught.value) == ("There is no finishing preset 'Nope'; choose one of: "
                                 "Game SFX one-shot, Ambience loop, UI click, Music bed, Raw, "
                                 "Mine.")
    with pytest.raises(RequestError, match="no finishing preset 'Nope'"):
        delete_preset(tmp_path, "Nope")


def test_builtins_cannot_be_deleted_or_overwritten(tmp_path):
    with pytest.raises(RequestError, match="built-in preset and cannot be deleted"):
        delete_preset(tmp_path, "Raw")
    with pytest.raises(RequestError, match="built-in preset and cannot be changed"):
        save_preset(tmp_path, "ui click", FinishSettings())
    with pytest.raises(RequestError, match="needs a name"):
        save_preset(tmp_path, "  ", FinishSettings())


def test_damaged_saved_preset_is_a_sentence(tmp_path):
    update_settings(tmp_path, {SETTINGS_KEY: {"Broken": {"loudness_lufs": "loud"}}})
    assert "Broken" in list_presets(tmp_path)
    with pytest.raises(RequestError, match="^The saved preset 'Broken' is damaged .*again"):
        get_preset(tmp_path, "Broken")
    update_settings(tmp_path, {SETTINGS_KEY: ["not", "a", "mapping"]})
    assert list_presets(tmp_path) == list(BUILTIN_PRESETS)


def test_invalid_settings_are_not_saved(tmp_path):
    with pytest.raises(RequestError, match="loudness"):
        save_preset(tmp_path, "Too quiet", FinishSettings(loudness_lufs=-80.0))
    assert not settings_path(tmp_path).exists()


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True,
                    reason="root writes into read-only folders")
def test_unwritable_settings_folder_is_a_sentence(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(StudioError, match="^Could not save the preset 'Mine': "):
            save_preset(tmp_path, "Mine", FinishSettings())
    finally:
        tmp_path.chmod(0o700)


def test_missing_settings_folder_is_a_sentence(tmp_path):
    with pytest.raises(StudioError, match="^Could not save the preset 'Mine': .*exist"):
        save_preset(tmp_path / "gone", "Mine", FinishSettings())


@pytest.mark.parametrize("data, sentence", [
    ({"fade_in_ms": 1e308},
     "fade in 1e+308 ms is out of range; choose a value from 0 to 10000 ms."),
    ({"trim_db": int("9" * 400)},
     "trim threshold is far out of range; choose a value from -120 to -10 dBFS."),
    ({"true_peak_dbtp": -1e308},
     "true peak -1e+308 dBTP is out of range; choose a value from -20 to 0 dBTP."),
    ({"rate": int("9" * 400)}, "sample rate 1e+400 Hz is not offered; choose 44100 or 48000 Hz."),
    ({"loudness_lufs": float("inf")},
     "loudness is far out of range; choose a value from -60 to -5 LUFS."),
])
def test_numbers_past_any_range_are_refused_in_a_few_digits(data, sentence):
    with pytest.raises(RequestError) as caught:
        FinishSettings.from_dict(data)
    assert str(caught.value) == sentence


def test_a_saved_preset_with_a_huge_number_names_the_preset(tmp_path):
    (tmp_path / "settings.json").write_text(
        '{"finish_presets": {"Mine": {"fade_out_ms": ' + "9" * 5000 + "}}}", encoding="utf-8")
    with pytest.raises(RequestError) as caught:
        get_preset(tmp_path, "Mine")
    assert str(caught.value) == ("The saved preset 'Mine' is damaged (fade out is far out of "
                                 "range; choose a value from 0 to 10000 ms); save it again or "
                                 "delete it.")
