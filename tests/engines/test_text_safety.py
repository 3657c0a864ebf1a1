"""Text from users and files, made safe to show (engines.text_display) and read from lists in
whatever encoding a spreadsheet saved (engines.text_files), issue 29 items 14 to 16. The oracles
are Python's own: unicodedata says which characters are controls or format characters, the
`unicode_escape` and `json` codecs read the escapes back, and the csv module's own limit."""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import sys
import unicodedata
from pathlib import Path

import pytest

from engines.error_sentences import printable
from engines.text_display import looks_blank, terminal_json, terminal_text
from engines.text_files import (
    TextFileError,
    cell_limit_phrase,
    cell_too_large,
    decode_text,
    kind_problem,
)

HIDDEN_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}
ALL_HIDDEN = "".join(chr(c) for c in range(sys.maxunicode + 1)
                     if not 0xD800 <= c <= 0xDFFF
                     and unicodedata.category(chr(c)) in HIDDEN_CATEGORIES)
ATTACKS = ["invoice\u202efdp.exe", "a\u2066b\u2067c\u2068d\u2069e", "zero\u200bwidth\u200c\u200d",
           "bom\ufeffhere", "line\u2028sep\u2029para", "\x1b[2J\x1b]0;title\x07",
           "csi\x9b31m", "tag\U000e0041chars", "lrm\u200e rlm\u200f alm\u061c"]


def _shown_chars(text: str) -> set[str]:
    return {unicodedata.category(c) for c in text}


# --------------------------------------------------------------------------------------------
# terminal_text / printable


def test_no_hidden_character_survives_and_every_one_reads_back():
    """Every control, format and separator character Unicode has (unicodedata decides, not
    our list) comes out as a visible ASCII escape that `unicode_escape` turns back into it."""
    chars = ALL_HIDDEN.replace("\t", "").replace("\n", "").replace("\r", "")
    shown = terminal_text(chars)
    assert shown.isascii() and shown.isprintable()
    assert codecs.decode(shown, "unicode_escape") == chars


@pytest.mark.parametrize("text", ATTACKS)
def test_attacks_are_shown_as_escapes(text: str):
    for show in (terminal_text, printable):
        shown = show(text)
        assert not (_shown_chars(shown) & HIDDEN_CATEGORIES), ascii(shown)
        assert codecs.decode(shown, "unicode_escape") == text


def test_readable_text_is_left_alone():
    """Accents, CJK, Arabic and Hebrew letters (right-to-left by themselves, not by a control),
    emoji and no-break spaces are what people write: unchanged."""
    text = "Café 雨の音 مطر גשם 🌧️ door\u00a0slam ½"
    assert terminal_text(text) == text
    assert printable(text) == text


def test_tabs_and_new_lines_read_as_spaces_and_bytes_as_bytes():
    assert terminal_text("a\tb\nc\rd") == "a b c d"
    assert printable("name\udcff.wav") == "name\\xff.wav"  # a file name's byte that is not UTF-8


def test_terminal_json_reads_back_the_same_values():
    payload = {"prompt": "".join(ATTACKS), "tags": ["ok\u202etag", "雨"], "n": 3,
               "del": "x\x7fy\x85z"}
    text = terminal_json(payload)
    assert not (_shown_chars(text) & HIDDEN_CATEGORIES - {"Cc"})  # new lines of the indent only
    assert all(c in "\n" or unicodedata.category(c) != "Cc" for c in text)
    assert "雨" in text  # readable text is not escaped
    assert json.loads(text) == payload
    assert json.loads(terminal_json(payload, None)) == payload


# --------------------------------------------------------------------------------------------
# looks_blank


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200c\u200d", " \u2066\u2069 ", "\ufeff",
                                  "\u202e", "\u3164", "\u2800", "\u115f\u1160", "\x1b", "\u00ad",
                                  "\u2028", "\ufe0f", "\U000e0020", "\u180e", "\u034f\u2060"])
def test_labels_that_show_as_nothing_look_blank(text: str):
    assert looks_blank(text)


@pytest.mark.parametrize("text", ["", "a", "a\u200b", "雨", "\u202eevil", "½", "_", "-", "🌧",
                                  "\u00e9", "e\u0301"])
def test_labels_with_something_to_see_do_not(text: str):
    assert not looks_blank(text)


# --------------------------------------------------------------------------------------------
# decode_text


LIST = "name,prompt\nrain,pluie sur un toit de tôle 雨\n"


@pytest.mark.parametrize("codec", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be",
                                   "utf-32", "utf-32-le", "utf-32-be"])
def test_a_byte_order_mark_decides_the_encoding(codec: str):
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE,
           "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}.get(codec, b"")
    assert decode_text(bom + LIST.encode(codec)) == LIST


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_wide_text_without_a_mark_is_refused_not_read_as_a_code_page(codec: str):
    with pytest.raises(TextFileError, match="NUL bytes.*byte-order mark"):
        decode_text(LIST.encode(codec), fallback="cp1252")


def test_a_broken_wide_text_and_a_code_page():
    with pytest.raises(TextFileError, match="UTF-16 byte-order mark but is not valid UTF-16"):
        decode_text(codecs.BOM_UTF16_LE + b"a\x00\x00\xd8b\x00")  # a lone surrogate
    with pytest.raises(TextFileError, match="not UTF-8"):
        decode_text("tôle".encode("cp1252"))
    assert decode_text("tôle".encode("cp1252"), fallback="cp1252") == "tôle"


# --------------------------------------------------------------------------------------------
# kind_problem, the csv cell limit


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_is_not_called_missing(tmp_path: Path):
    os.mkfifo(tmp_path / "list.csv")
    (tmp_path / "ok.csv").write_text(LIST)
    (tmp_path / "link.csv").symlink_to(tmp_path / "ok.csv")
    assert kind_problem(tmp_path / "list.csv") == ("is not a regular file but a pipe, device or "
                                                   "socket")
    assert kind_problem(tmp_path / "nope.csv") == "does not exist"
    assert kind_problem(tmp_path) == "is a folder"
    assert kind_problem(tmp_path / "ok.csv") is None
    assert kind_problem(tmp_path / "link.csv") is None


def test_a_cell_over_the_csv_limit_is_named_with_the_limit_and_line():
    text = 'name,prompt\nrain,"' + "x" * (csv.field_size_limit() + 10) + '"\n'
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    with pytest.raises(csv.Error) as caught:
        list(reader)
    assert cell_too_large(caught.value)
    assert cell_limit_phrase(reader.line_num) == (
        f"has a cell larger than {csv.field_size_limit() // 1024} KB, the most one cell may "
        "hold, at line 2")
    with pytest.raises(csv.Error) as other:
        list(csv.reader(io.StringIO('a,"b"c\n'), strict=True))
    assert not cell_too_large(other.value)
