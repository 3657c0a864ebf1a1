"""Text from users and files made safe to show, and labels that would show as nothing.

A prompt, a name, a tag, a file name or a cell of a list can hold characters a terminal (or a
label) acts on instead of showing: ESC starts an escape sequence that can rewrite the screen,
U+202E turns the rest of the line around (`evil\u202eSAW.exe` reads `evilexe.WAS`), U+2066..2069
reorder it too, zero-width characters and U+FEFF hide inside words, U+2028/2029 break lines.
`terminal_text` shows every one of them as a visible escape (`\\u202e`, `\\x1b`), so what is
printed is what is there; `terminal_json` does the same inside JSON, where the escape is valid
JSON and reads back as the same character.

`looks_blank` is the other half: a tag, name or label made only of such characters and spaces
shows as nothing (or as an escape after the above), so the engines refuse it when it is given.
"""

from __future__ import annotations

import json
import unicodedata

# Categories shown as escapes: controls (Cc), format characters (Cf: bidirectional marks,
# overrides and isolates, zero-width characters, U+FEFF, soft hyphen, tag characters) and the
# line and paragraph separators (Zl, Zp).
_HIDDEN_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp"))
# Letters and symbols that draw nothing (Hangul fillers, the blank braille pattern) and the
# other default-ignorable characters that are not Cf: they can make a label look empty.
_BLANK_LETTERS = frozenset(chr(c) for c in (0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800))
_IGNORABLE_RANGES = ((0x034F, 0x034F), (0x17B4, 0x17B5), (0x180B, 0x180F), (0xFE00, 0xFE0F),
                     (0xE0000, 0xE0FFF), (0xE0100, 0xE01EF))
# Tab, new line and carriage return read as a space on one line (a note, a wrapped prompt).
_SPACES = {0x09: " ", 0x0A: " ", 0x0D: " "}


def is_hidden(char: str) -> bool:
    """Whether a terminal would act on `char` or show nothing for it (see the module text)."""
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or char in _BLANK_LETTERS


def _escape(char: str) -> str:
    code = ord(char)
    if code in _SPACES:
        return _SPACES[code]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_text(text: object) -> str:
    """`text` with every hidden character (controls, bidirectional and zero-width characters,
    line separators, blank fillers) shown as a visible escape; tab and new lines become
    spaces. Lone surrogates are left for the caller (engines.error_sentences.printable shows them
    as the bytes they were)."""
    value = str(text)
    if value.isascii():  # the usual case: only C0 controls and DEL can hide in ASCII
        if value.isprintable():
            return value
        return "".join(_escape(c) if c < " " or c == "\x7f" else c for c in value)
    return "".join(_escape(c) if not ("\ud800" <= c <= "\udfff") and is_hidden(c) else c
                   for c in value)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes an astral character as its UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def terminal_json(payload: object, indent: int | None = 2) -> str:
    """JSON for a terminal: non-ASCII text kept readable, but every hidden character (JSON
    escapes C0 controls itself; DEL, C1 controls, bidirectional and zero-width characters it
    leaves raw) written as a \\u escape, which any JSON reader turns back into that character."""
    text = json.dumps(payload, indent=indent, ensure_ascii=False)
    if text.isascii() and "\x7f" not in text:
        return text
    return "".join(_json_escape(c) if c == "\x7f" or (not c.isascii() and is_hidden(c)
                                                      and not "\ud800" <= c <= "\udfff")
                   else c for c in text)


def _invisible(char: str) -> bool:
    if char.isspace() or is_hidden(char) or unicodedata.category(char) == "Zs":
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _IGNORABLE_RANGES)


def looks_blank(text: str) -> bool:
    """Whether non-empty `text` is made only of spaces and characters that show as nothing
    (zero-width, bidirectional, control, filler): a label that would look empty. False for ""
    (callers decide what empty means: "take the name off", "no tag")."""
    return bool(text) and all(_invisible(c) for c in text)


def blank_label_sentence(what: str, text: str) -> str:
    """One sentence refusing `what` ("The tag", "The name") that `looks_blank`."""
    return (f"{what} '{terminal_text(text)}' is made only of invisible characters (zero-width, "
            f"direction or control characters, or spaces), so it would look empty; give one "
            f"people can read.")
