"""Export names: template fields and format specs, sentences for bad templates, names safe on
every file system, and unique paths that never point at an existing file."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from engines.delivery.names import (
    DEFAULT_TEMPLATE,
    MAX_NAME_BYTES,
    check_template,
    render_name,
    safe_file_name,
    unique_path,
)
from engines.errors import RequestError

DAY = dt.date(2025, 3, 7)


def test_fields_and_format_specs():
    name = render_name("{category}_{name}_{seed}_{n:02}_{preset}_{date}", name="Door creak",
                       seed=1234, n=3, preset="Game SFX one-shot", date=DAY,
                       category="DOORWood")
    assert name == "DOORWood_Door creak_1234_03_Game SFX one-shot_20250307"
    assert render_name("{n:03}-{seed:x}", n=7, seed=255) == "007-ff"
    assert render_name("{prompt}", prompt="rain on a tin roof") == "rain on a tin roof"


def test_default_template_numbers_variations():
    names = [render_name(DEFAULT_TEMPLATE, name="whoosh", n=n) for n in range(1, 4)]
    assert names == ["whoosh_01", "whoosh_02", "whoosh_03"]


def test_missing_values_and_today():
    assert render_name("{name}_{seed}", name="a") == "a"  # an empty field and its "_" go
    assert render_name("{date}") == dt.date.today().strftime("%Y%m%d")


@pytest.mark.parametrize("template, words", [
    ("{title}", "field {title} is unknown; use {name}, {prompt}, {seed}, {n}, {preset}, "
                "{date}, {category}, {catid}, {fxname}, {creator}, {source}."),
    ("{}", "field {} is unknown"),
    ("{name.upper}", "field {name.upper} is unknown"),
    ("{name!r}", "has a conversion or a nested field"),
    ("{n:{w}}", "has a conversion or a nested field"),
    ("{name", "unmatched { or }"),
    ("name}", "unmatched { or }"),
    ("{n:zz}", "The format {n:zz} in the name template does not fit n (1)"),
    ("{prompt:05d}", "does not fit prompt"),
])
def test_bad_templates_are_sentences(template, words):
    with pytest.raises(RequestError) as caught:
        check_template(template)
    text = str(caught.value)
    assert words in text and text.endswith((".", "..."))


def test_literal_braces_are_allowed():
    assert render_name("{{x}}_{n}", n=2) == "{x}_2"


@pytest.mark.parametrize("raw, safe", [
    ("a/b\\c", "a-b-c"),
    ('what? <now>: "yes" | *', 'what- -now-- -yes- - -'),
    ("line\nbreak\ttab", "line break tab"),
    ("bell\x07 and escape\x1b[31m", "bell and escape[31m"),
    ("evil\u202egnp.exe", "evilgnp.exe"),  # a right-to-left override would hide the extension
    ("  ..hidden.  ", "hidden"),
    ("--flag", "flag"),
    ("-.-.hidden", "hidden"),
    ("CON", "CON_"),
    ("nul.wav", "nul_.wav"),  # Windows takes "NUL.anything" for the device too
    ("", "take"),
    ("///", "take"),
    ("Regen auf Blech — 雨の音 — دقيقة", "Regen auf Blech — 雨の音 — دقيقة"),
])
def test_safe_file_name(raw, safe):
    assert safe_file_name(raw) == safe


def test_long_names_are_cut_on_a_character_boundary():
    name = safe_file_name("雨" * 200)  # 3 bytes each
    assert len(name.encode("utf-8")) <= MAX_NAME_BYTES
    assert name == "雨" * (MAX_NAME_BYTES // 3)
    prompt = "a very long prompt " * 40
    assert len(render_name("{prompt}_{n:02}", prompt=prompt).encode()) <= MAX_NAME_BYTES


@pytest.mark.posix
def test_unique_path_never_returns_an_existing_file(tmp_path):
    first = unique_path(tmp_path, "rain_01", ".wav")
    assert first == tmp_path / "rain_01.wav" and not first.exists()
    first.write_bytes(b"x")
    second = unique_path(tmp_path, "rain_01", "wav")  # the dot is optional
    assert second == tmp_path / "rain_01_2.wav"
    second.write_bytes(b"y")
    (tmp_path / "rain_01_3.wav").mkdir()  # a folder in the way counts too
    os.symlink(tmp_path / "nowhere", tmp_path / "rain_01_4.wav")  # so does a dangling link
    assert unique_path(tmp_path, "rain_01", ".wav") == tmp_path / "rain_01_5.wav"
    assert first.read_bytes() == b"x" and second.read_bytes() == b"y"


def test_unique_path_makes_the_name_safe(tmp_path):
    path = unique_path(tmp_path, "../../escape", ".wav")
    assert path.parent == tmp_path and path.name == "escape.wav"
