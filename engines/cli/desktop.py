"""`sa3-studio install-desktop [--uninstall]`: SA3 Studio in the Linux desktop's menus, for this
user only (no root): a desktop entry in $XDG_DATA_HOME/applications and the app icon in
$XDG_DATA_HOME/icons/hicolor, as the freedesktop.org Desktop Entry and Icon Theme
specifications place them. Menus watch those folders, so the entry appears without a log-out.

The entry is resources/desktop/sa3-studio.desktop with Exec and TryExec pointing at the program
that runs this command: the bundle's executable, the `sa3-studio-gui` script of the
environment SA3 Studio is installed in (pip, pipx), or this Python with main.py in a clone.
Both files are replaced atomically (temporary file, then rename).

Exit codes: 0 done, 1 a file could not be written or removed, 2 not on Linux.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import sysconfig
from pathlib import Path

from engines.cli.support import (
    EXIT_OK,
    CommandFailed,
    UsageError,
    parser_class,
    run_command,
)
from engines.error_sentences import printable, sentence
from engines.paths import resource_file

DESKTOP_ID = "sa3-studio"  # the entry's file name and the icon's name in the theme
GUI_SCRIPT = "sa3-studio-gui"
_MAIN_PY = Path(__file__).resolve().parents[2] / "main.py"  # in a clone
# Characters that make an Exec argument need quotes (Desktop Entry spec, "The Exec key").
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")

_Parser = parser_class("sa3-studio install-desktop --help")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sa3-studio install-desktop",
                description="Add SA3 Studio to this user's desktop menus (Linux), or remove it.")
    p.add_argument("--uninstall", action="store_true", help="remove the entry and the icon")
    return p


def data_home() -> Path:
    """$XDG_DATA_HOME, or ~/.local/share when it is unset, empty or not absolute (the XDG
    Base Directory spec says to ignore a relative one)."""
    value = os.environ.get("XDG_DATA_HOME", "")
    if value and Path(value).is_absolute():
        return Path(value)
    return Path.home() / ".local" / "share"


def entry_path(home: Path) -> Path:
    return home / "applications" / f"{DESKTOP_ID}.desktop"


def icon_path(home: Path) -> Path:
    return home / "icons" / "hicolor" / "scalable" / "apps" / f"{DESKTOP_ID}.svg"


def launch_command() -> list[str]:
    """The command line that opens the window without a terminal."""
    if getattr(sys, "frozen", False):  # a PyInstaller bundle: its own executable
        return [sys.executable]
    script = Path(sysconfig.get_path("scripts")) / GUI_SCRIPT
    if script.is_file():
        return [str(script)]
    return [sys.executable, str(_MAIN_PY)]


def exec_argument(arg: str) -> str:
    """One argument as the Exec key wants it: `%` doubled, quoted when it holds a reserved
    character (inside the quotes `"`, `` ` ``, `$` and `\\` take a backslash)."""
    arg = arg.replace("%", "%%")
    if not (set(arg) & _RESERVED):
        return arg
    escaped = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return f'"{escaped}"'


def string_value(text: str) -> str:
    """A value of type string: backslash and control characters escaped (applied after the
    Exec quoting, so a literal backslash in a quoted argument becomes four)."""
    return (text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
            .replace("\r", "\\r"))


def desktop_entry(command: list[str]) -> str:
    """The shipped entry with Exec and TryExec set to `command`."""
    lines = []
    for line in resource_file("desktop", f"{DESKTOP_ID}.desktop").read_text(
            encoding="utf-8").splitlines():
        if line.startswith("Exec="):
            line = "Exec=" + string_value(" ".join(exec_argument(a) for a in command))
        elif line.startswith("TryExec="):
            line = "TryExec=" + string_value(command[0])
        lines.append(line)
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, data: bytes) -> None:
    """path holds the old bytes or all of the new ones, never part of them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.partial")
    try:
        temp.write_bytes(data)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def install(home: Path) -> tuple[Path, Path, list[str]]:
    """Write the icon, then the entry (so a menu never shows an entry without its icon)."""
    command = launch_command()
    entry, icon = entry_path(home), icon_path(home)
    svg = resource_file("icons", "app.svg").read_bytes()
    text = desktop_entry(command).encode("utf-8")
    try:
        write_atomic(icon, svg)
        write_atomic(entry, text)
    except OSError as exc:
        raise CommandFailed(sentence(f"Could not add SA3 Studio to the menus in "
                                     f"{printable(home)}", exc,
                                     "files already there were left as they were")) from exc
    return entry, icon, command


def uninstall(home: Path) -> list[Path]:
    """Remove the entry first, then the icon; returns the files that were there."""
    removed = []
    for path in (entry_path(home), icon_path(home)):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CommandFailed(sentence(f"Could not remove {printable(path)}", exc)) from exc
        removed.append(path)
    return removed


def main(argv: list[str]) -> int:
    """argv: the arguments after `install-desktop`."""

    def body() -> int:
        args = build_parser().parse_args(list(argv))
        if not sys.platform.startswith("linux"):
            raise UsageError("install-desktop is for Linux desktops; on Windows the installer "
                             "adds SA3 Studio to the Start menu.")
        home = data_home()
        if args.uninstall:
            removed = uninstall(home)
            print(printable("Removed " + ", ".join(map(str, removed)) + "." if removed else
                            "SA3 Studio was not in this user's menus; nothing to remove."))
            return EXIT_OK
        entry, icon, command = install(home)
        print(printable(f"SA3 Studio is in the desktop menus: {entry} (runs "
                        f"{' '.join(command)}), icon {icon}."))
        return EXIT_OK

    return run_command("install-desktop", body)
