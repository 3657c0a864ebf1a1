"""Named finishing presets: a few built in, the user's own in the settings file under
"finish_presets" ({name: FinishSettings.to_dict()}).

Loudness figures are starting points, not rules (GAME_AUDIO.md). Sony ASWG-R001 asks a game's
whole mix, measured over 30 min or more of play, for -24 LUFS +-2 on home consoles (Wwise's
documentation quotes the same paper as -23 +-2) and -18 LUFS +-2 on handhelds, true peak at or
under -1 dBTP. Those are whole-mix figures: a single asset's level is the designer's choice, so
the built-ins below only pick sensible places to start:
- one-shots and UI sounds at -18 LUFS: short sounds read low on an integrated meter (the gate
  keeps only their loud part) and must cut through a mix, so the handheld figure suits them;
- ambiences and music beds at -24 LUFS, the home-console mix target: they play underneath
  everything else (Screwloose Games' audio guide also brings music to about -24 LUFS in engine);
- -1 dBTP everywhere, the ASWG-R001 ceiling, which leaves room for lossy encoding too;
- 48 kHz, what game engines and middleware mix at; 24-bit, except 16-bit for tiny UI sounds.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engines.error_sentences import printable, sentence
from engines.errors import RequestError, StudioError
from engines.finish.settings import MAX_PRESET_NAME, FinishSettings
from engines.settings import read_settings, update_settings

log = logging.getLogger(__name__)

SETTINGS_KEY = "finish_presets"

BUILTIN_PRESETS: dict[str, FinishSettings] = {
    "Game SFX one-shot": FinishSettings(
        trim=True, fade_in_ms=2.0, fade_out_ms=30.0, fade_curve="equal-power",
        loudness_lufs=-18.0, true_peak_dbtp=-1.0, rate=48000, format="wav24",
        preset="Game SFX one-shot"),
    "Ambience loop": FinishSettings(
        loop=True, loop_seam_s=0.5, loudness_lufs=-24.0, true_peak_dbtp=-1.0, rate=48000,
        format="wav24", preset="Ambience loop"),
    "UI click": FinishSettings(
        trim=True, fade_in_ms=1.0, fade_out_ms=10.0, mono=True, loudness_lufs=-18.0,
        true_peak_dbtp=-1.0, rate=48000, format="wav16", preset="UI click"),
    "Music bed": FinishSettings(
        fade_in_ms=10.0, fade_out_ms=1000.0, fade_curve="equal-power", loudness_lufs=-24.0,
        true_peak_dbtp=-1.0, rate=48000, format="wav24", preset="Music bed"),
    "Raw": FinishSettings(preset="Raw"),
}


def is_builtin(name: str) -> bool:
    return name.casefold() in {builtin.casefold() for builtin in BUILTIN_PRESETS}


def _user_presets(data_dir: Path) -> dict[str, object]:
    stored = read_settings(data_dir).get(SETTINGS_KEY, {})
    if not isinstance(stored, dict):
        log.warning("ignoring %s: not a JSON object", SETTINGS_KEY)
        return {}
    return stored


def list_presets(data_dir: Path) -> list[str]:
    """The built-in names, then the user's presets in alphabetical order."""
    user = sorted((name for name in _user_presets(data_dir) if not is_builtin(name)),
                  key=str.casefold)
    return [*BUILTIN_PRESETS, *user]


def get_preset(data_dir: Path, name: str) -> FinishSettings:
    """The preset called `name`; RequestError (one sentence) naming the presets there are when
    there is none, or saying how to fix a damaged saved one."""
    if name in BUILTIN_PRESETS:
        return BUILTIN_PRESETS[name]
    user = _user_presets(data_dir)
    if name not in user or is_builtin(name):
        raise _unknown(data_dir, name)
    try:
        return FinishSettings.from_dict(user[name])  # type: ignore[arg-type]
    except RequestError as err:
        raise RequestError(f"The saved preset {printable(name)!r} is damaged ({err}"
                           .rstrip(".") + "); save it again or delete it.") from None


def _unknown(data_dir: Path, name: str) -> RequestError:
    names = ", ".join(list_presets(data_dir))
    return RequestError(f"There is no finishing preset {printable(name)!r}; choose one of: "
                        f"{names}.")


def _check_name(name: str) -> str:
    clean = name.strip() if isinstance(name, str) else ""
    if not clean or not clean.isprintable():
        raise RequestError("A preset needs a name of printable characters; type one.")
    if len(clean) > MAX_PRESET_NAME:
        raise RequestError(f"The preset name is {len(clean)} characters long; use at most "
                           f"{MAX_PRESET_NAME}.")
    if is_builtin(clean):
        raise RequestError(f"{clean!r} is a built-in preset and cannot be changed; save yours "
                           "under another name.")
    return clean


def save_preset(data_dir: Path, name: str, settings: FinishSettings) -> str:
    """Stores `settings` as the user preset `name` (replacing one of that name) and returns
    the name as stored. RequestError for a bad name or settings, StudioError when the settings
    file cannot be written."""
    clean = _check_name(name)
    settings.validate()
    stored = dict(_user_presets(data_dir))
    stored[clean] = {**settings.to_dict(), "preset": clean}
    _write(data_dir, stored, f"Could not save the preset {clean!r}")
    return clean


def delete_preset(data_dir: Path, name: str) -> None:
    """Removes the user preset `name`. Built-ins cannot be deleted; an unknown name is a
    RequestError listing the presets there are."""
    if is_builtin(name):
        raise RequestError(f"{name!r} is a built-in preset and cannot be deleted; choose "
                           "another preset instead.")
    stored = dict(_user_presets(data_dir))
    if name not in stored:
        raise _unknown(data_dir, name)
    del stored[name]
    _write(data_dir, stored, f"Could not delete the preset {name!r}")


def _write(data_dir: Path, stored: dict[str, object], what: str) -> None:
    try:
        update_settings(data_dir, {SETTINGS_KEY: stored})
    except OSError as err:
        raise StudioError(sentence(what, err)) from err
