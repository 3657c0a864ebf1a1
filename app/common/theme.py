"""The window's look: a dark Fusion palette that matches the black plots, the stylesheet in
resources/theme/dark.qss, and the SVG icons in resources/icons/.

The palette does most of the work: Fusion draws every control from it, including a greyed
Disabled group, so a disabled control looks disabled without a stylesheet rule per widget. The
stylesheet covers what a palette cannot say (slider parts, the Generate accent, splitter
handles). A missing or unreadable theme file is logged and the window opens anyway.
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path

from PySide6.QtGui import QColor, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from engines.paths import resources_dir

log = logging.getLogger(__name__)

THEME_PROPERTY = "sa3Theme"  # set on the QApplication once the theme is applied
STYLE = "Fusion"  # the same metrics and palette handling on every platform

# One set of colours for the palette and the stylesheet. The accent is the waveform's blue
# (app/widgets/waveform.py draws #7fc8ff on black).
COLORS = {
    # Fields sit lighter than the window: Fusion outlines them in a darker shade of the
    # window colour, which would vanish against a field darker than the window.
    "window": "#1e2024",
    "base": "#2a2d33",
    "alternate": "#26292e",
    "raised": "#32363d",
    "border": "#3f444c",
    "groove": "#464b54",
    "text": "#d8dde3",
    "muted": "#9aa3ad",
    "placeholder": "#737b85",
    "accent": "#7fc8ff",
    "accent_strong": "#4fa6e6",
    "accent_dim": "#2f6f9f",
    "selection": "#2a5a80",
    "on_accent": "#07131d",
    "disabled_text": "#6a717a",
    "disabled_fill": "#4a4f57",
    "disabled_groove": "#2a2e34",
    "disabled_handle": "#50555d",
    # live audition on: a warm "on air" colour, unlike the blue of Generate and selections
    "live": "#f0a04b",
    "live_strong": "#ffb866",
}


def icons_dir() -> Path:
    return resources_dir() / "icons"


def stylesheet_path() -> Path:
    return resources_dir() / "theme" / "dark.qss"


@cache
def icon(name: str) -> QIcon:
    """The icon resources/icons/<name>.svg; an empty icon (and a log line) when it is missing,
    so a lost file costs a picture, not the window."""
    path = icons_dir() / f"{name}.svg"
    if not path.is_file():
        log.warning("icon %s is missing", path)
        return QIcon()
    return QIcon(str(path))


def dark_palette() -> QPalette:
    c = {name: QColor(value) for name, value in COLORS.items()}
    pal = QPalette()
    role = QPalette.ColorRole
    for r, name in ((role.Window, "window"), (role.WindowText, "text"), (role.Base, "base"),
                    (role.AlternateBase, "alternate"), (role.ToolTipBase, "raised"),
                    (role.ToolTipText, "text"), (role.PlaceholderText, "placeholder"),
                    (role.Text, "text"), (role.Button, "raised"), (role.ButtonText, "text"),
                    (role.BrightText, "accent"), (role.Highlight, "selection"),
                    (role.HighlightedText, "text"), (role.Link, "accent"),
                    (role.LinkVisited, "accent_strong"), (role.Light, "border"),
                    (role.Midlight, "raised"), (role.Mid, "border"), (role.Dark, "base"),
                    (role.Shadow, "base")):
        pal.setColor(r, c[name])
    # Disabled: dimmer text, flatter buttons and fields, a grey (not blue) selection.
    off = QPalette.ColorGroup.Disabled
    for r in (role.WindowText, role.Text, role.ButtonText, role.HighlightedText):
        pal.setColor(off, r, c["disabled_text"])
    pal.setColor(off, role.Button, c["window"])
    pal.setColor(off, role.Base, c["window"])
    pal.setColor(off, role.Highlight, c["disabled_fill"])
    pal.setColor(off, role.Light, c["disabled_groove"])
    return pal


def stylesheet() -> str:
    """dark.qss with its colour tokens (@name@) filled in; "" when it cannot be read."""
    try:
        text = stylesheet_path().read_text(encoding="utf-8")
    except OSError:
        log.warning("the theme stylesheet %s could not be read", stylesheet_path(),
                    exc_info=True)
        return ""
    # longest names first, so @accent@ never eats the start of @accent_dim@
    for name in sorted(COLORS, key=len, reverse=True):
        text = text.replace(f"@{name}@", COLORS[name])
    return text


def apply_theme(app: QApplication) -> None:
    """Style, palette, stylesheet and application icon; once per application."""
    if app.property(THEME_PROPERTY):
        return
    app.setStyle(STYLE)
    app.setPalette(dark_palette())
    app.setStyleSheet(stylesheet())
    app.setWindowIcon(icon("app"))
    app.setProperty(THEME_PROPERTY, True)
