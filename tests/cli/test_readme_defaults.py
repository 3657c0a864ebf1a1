"""The flag tables of docs/cli.md (the command-line reference, moved there from the README by
issue 33) say what the code does (issue 31, item 9): every default a table
states ("default 8", "`demo` (default)", "default by model: ...") is the default of that flag
in the argument parsers of `generate`, `batch` and `library export` - or, where a parser
leaves a flag unset, of the engine rule that fills it in - and every flag the tables name
exists. The example summary line has the length its command gets."""

from __future__ import annotations

import argparse
import re
import shlex
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from engines.adapters.choice import DEFAULT_STRENGTH
from engines.catalog.tables import TIERS
from engines.cli import batch, generate, library
from engines.cli.finishing import _VALUE_FLAGS
from engines.constants import DEFAULT_LIMITER_CEILING, SIGMA_MIN
from engines.finish.settings import (
    FADE_RANGE_MS,
    LOUDNESS_RANGE,
    TRIM_DB_RANGE,
    TRUE_PEAK_RANGE,
    FinishSettings,
)
from engines.request import (
    DEFAULT_A2A_NOISE_LEVEL,
    MAX_CFG,
    MAX_SEED,
    MAX_STEPS,
    default_seconds,
    default_seconds_help,
)
from engines.request_adapters import MAX_STRENGTH, MIN_STRENGTH

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
FLAG = re.compile(r"--[a-z][a-z0-9-]*")
# "default 8", "default -60", "default 1 = off", "(default 0.5)"
NUMBER_DEFAULT = re.compile(r"\bdefault (-?\d+(?:\.\d+)?)\b")
# "`canonical` (default)", "linear (default)", "the take's model (default)"
WORD_DEFAULT = re.compile(r"`?([\w.-]+)`? \(default\)")
FINISH_FIELDS = {spec.name: spec.default for spec in fields(FinishSettings)}
RANGE = re.compile(r"(?<![\w.])(-?\d+(?:\.\d+)?)\.\.(-?\d+(?:\.\d+)?)(?![\w.])")  # "-60..-5"
# The ranges the engine checks, by flag (engines.request, engines.finish.settings).
RANGES = {"--steps": (1, MAX_STEPS), "--seed": (0, MAX_SEED), "--cfg": (0, MAX_CFG),
          "--apg": (0, 1),  # engines.request checks apg against 0..1 in place
          "--init-noise-level": (SIGMA_MIN, 1), "--fade-in": FADE_RANGE_MS,
          "--fade-out": FADE_RANGE_MS, "--loudness": LOUDNESS_RANGE,
          "--true-peak": TRUE_PEAK_RANGE, "--trim-db": TRIM_DB_RANGE,
          "--lora": (MIN_STRENGTH, MAX_STRENGTH)}  # the strength of each FILE:STRENGTH
# Flags whose values carry a setting of their own: the default the table states is that
# setting's (a --lora FILE without :STRENGTH), not the flag's (no adapters).
ITEM_DEFAULTS = {"--lora": DEFAULT_STRENGTH}


def flag_rows(text: str) -> list[tuple[int, list[str], str]]:
    """(line number, flags, meaning) of every row of every `| flag | meaning |` table."""
    rows, in_table = [], False
    for number, line in enumerate(text.splitlines(), 1):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if cells[:2] == ["flag", "meaning"]:
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not set(cells[0]) <= set("- "):
            rows.append((number, FLAG.findall(cells[0]), cells[1].replace("\\|", "|")))
    return rows


def parsers() -> list[argparse.ArgumentParser]:
    export = next(a for a in library.build_parser()._actions
                  if isinstance(a, argparse._SubParsersAction)).choices["export"]
    return [generate.build_parser(), batch.build_parser(), export]


def actions() -> dict[str, list[argparse.Action]]:
    found: dict[str, list[argparse.Action]] = {}
    for parser in parsers():
        for action in parser._actions:
            for option in action.option_strings:
                found.setdefault(option, []).append(action)
    return found


def effective_default(flag: str, action: argparse.Action) -> Any:
    """What a command uses when the flag is not given: the parser's default, or where the
    parser leaves None, the engine's rule (finishing settings, the request's defaults)."""
    if flag in ITEM_DEFAULTS:
        return ITEM_DEFAULTS[flag]
    if action.default not in (None, argparse.SUPPRESS):
        return action.default
    dest = action.dest
    if dest in _VALUE_FLAGS:
        return FINISH_FIELDS[_VALUE_FLAGS[dest]]
    return {"--init-noise-level": DEFAULT_A2A_NOISE_LEVEL,
            "--limiter-ceiling": DEFAULT_LIMITER_CEILING,
            "--codec-tier": TIERS[0],  # the catalog tries the tiers in this order: canonical
            }.get(flag)


def same(stated: str, value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        try:
            return float(stated) == float(value)
        except ValueError:
            return False
    return str(value) == stated


ROWS = flag_rows(CLI_DOC.read_text(encoding="utf-8"))


def test_the_cli_reference_has_flag_tables_for_generate_and_finishing():
    flags = {flag for _, row_flags, _ in ROWS for flag in row_flags}
    assert {"--seconds", "--steps", "--model", "--trim-db", "--loudness", "--preset"} <= flags


@pytest.mark.parametrize(("line", "flags", "meaning"), ROWS,
                         ids=[f"line{line}-{(row[0] if row else 'none')}"
                              for line, row, _ in ROWS])
def test_each_stated_default_is_the_codes(line: int, flags: list[str], meaning: str):
    known = actions()
    missing = [flag for flag in flags if flag not in known]
    assert not missing, f"docs/cli.md line {line} names flags no command has: {missing}"
    defaults = {flag: [effective_default(flag, a) for a in known[flag]] for flag in flags}
    for flag, values in defaults.items():  # generate, batch and export agree on each flag
        assert all(v == values[0] for v in values), (flag, values)
    stated = NUMBER_DEFAULT.findall(meaning) + WORD_DEFAULT.findall(meaning)
    for value in stated:
        assert any(same(value, values[0]) for values in defaults.values()), (
            f"docs/cli.md line {line} says default {value!r} for {flags}; the code's defaults are "
            f"{ {flag: values[0] for flag, values in defaults.items()} }")


@pytest.mark.parametrize(("line", "flags", "meaning"), ROWS,
                         ids=[f"line{line}-{(row[0] if row else 'none')}"
                              for line, row, _ in ROWS])
def test_each_stated_range_is_the_one_the_engine_checks(line: int, flags: list[str],
                                                        meaning: str):
    ranges = [RANGES[flag] for flag in flags if flag in RANGES]
    for low, high in RANGE.findall(meaning):
        assert any(float(low) == lo and float(high) == hi for lo, hi in ranges), (
            f"docs/cli.md line {line} says {low}..{high} for {flags}; the engine checks {ranges}")


def test_the_seconds_default_is_the_models_rule():
    (meaning,) = [meaning for _, flags, meaning in ROWS if flags == ["--seconds"]]
    assert f"default by model: {default_seconds_help()};" in meaning
    assert not NUMBER_DEFAULT.search(meaning)  # no single figure: it depends on the model


def test_the_example_summary_line_has_the_length_its_command_gets():
    text = CLI_DOC.read_text(encoding="utf-8")
    summary = re.search(r"^clip\.wav: (\d+\.\d\d) s of audio \|", text, re.MULTILINE)
    assert summary, "the example summary line of docs/cli.md is gone"
    commands = re.findall(r"`(python main\.py generate [^`]*--out clip\.wav)`",
                          text[:summary.start()])
    assert commands, "the example summary line has no command before it"
    args = generate.build_parser().parse_args(shlex.split(commands[-1])[3:])
    seconds = args.seconds if args.seconds is not None else default_seconds(args.model)
    assert float(summary.group(1)) == pytest.approx(seconds)
