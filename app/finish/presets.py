"""The Finish panel's stored choices: finishing presets and the export name template, both
in the settings file (engines.finish.presets, engines.settings). Every failure is one sentence
in the notifier and a safe answer (the built-ins, the default template), never an exception.
"""

from __future__ import annotations

from dataclasses import replace

from app.common.expected_errors import SETTINGS_ERRORS
from app.common.notifier import Notifier
from engines import paths
from engines import settings as stored_settings
from engines.delivery.names import (
    DEFAULT_TEMPLATE,
    TEMPLATE_SETTING,
    check_template,
    stored_template,
)
from engines.finish.presets import BUILTIN_PRESETS, delete_preset, list_presets, save_preset
from engines.finish.settings import FinishSettings


def preset_names(notifier: Notifier) -> list[str]:
    try:
        return list_presets(paths.data_dir())
    except SETTINGS_ERRORS as exc:  # the built-ins still work
        notifier.failed("Could not read your finishing presets", exc)
        return list(BUILTIN_PRESETS)


def save_panel_preset(notifier: Notifier, name: str, settings: FinishSettings) -> str | None:
    """Store the panel's chain as the user preset `name`; the name as stored, or None."""
    # Trim points belong to one take's audio, not to a recipe for any take.
    settings = replace(settings, trim_in_s=None, trim_out_s=None)
    try:
        stored = save_preset(paths.data_dir(), name, settings)
    except SETTINGS_ERRORS as exc:  # one sentence
        notifier.failed("Could not save the preset", exc)
        return None
    notifier.status(f"Saved the finishing preset {stored!r}.")
    return stored


def delete_named_preset(notifier: Notifier, name: str) -> bool:
    if not name:
        notifier.error("Choose one of your presets to delete.")
        return False
    try:
        delete_preset(paths.data_dir(), name)
    except SETTINGS_ERRORS as exc:  # e.g. a built-in: one sentence
        notifier.failed(f"Could not delete the preset {name!r}", exc)
        return False
    notifier.status(f"Deleted the finishing preset {name!r}.")
    return True


def load_template(notifier: Notifier) -> str:
    """The stored export name template, or the default (a damaged one is said once)."""
    try:
        return stored_template()
    except SETTINGS_ERRORS as exc:  # the default still names files
        notifier.failed("Could not use the stored export name template", exc)
        return DEFAULT_TEMPLATE


def store_template(notifier: Notifier, text: str) -> str:
    """Keep `text` as the export name template; returns the template in force afterwards."""
    text = text.strip() or DEFAULT_TEMPLATE
    try:
        check_template(text)
    except SETTINGS_ERRORS as exc:  # one sentence; the old template stays
        notifier.failed("Could not use that name template", exc)
        return load_template(notifier)
    try:
        stored_settings.update_settings(paths.data_dir(), {TEMPLATE_SETTING: text})
    except SETTINGS_ERRORS as exc:  # still used for this session
        notifier.failed("Could not keep the name template for next time", exc)
    return text
