"""Text as SQLite and libsndfile accept it (the library and every file the app writes)."""

from __future__ import annotations


def storable(text: str) -> str:
    """`text` as SQLite and libsndfile can store it: valid UTF-8. Bytes of a file name or
    argument that were not UTF-8 reach Python as lone surrogates, which both refuse with a
    UnicodeEncodeError; they are kept visible as \\xff escapes instead."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # surrogates that were never bytes (U+D800 and friends)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
