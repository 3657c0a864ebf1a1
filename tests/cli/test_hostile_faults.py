"""The hostile matrix, round 2 (issue 20): sound lists, presets, settings, closed pipes, kills,
locks and resumes, each through the real command line in its own process with its own data
folder, judged by the promises of tests/hostile_support.py (exit code, one clean sentence per
problem, no traceback or catch-all, every input byte-identical, only the expected files new).

A batch names each bad row on its own `error:` line and then sums up, so its cases say how many
error lines they expect; their good rows must still render (`rows`). What a table cannot judge
(a reader closing the pipe, a parent killed under its workers, a writer holding the library's
lock) has tests of its own below the table. Mounts need root and skip elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import soundfile as sf

from tests.cli.test_hostile_cli import SETTINGS_PATHS, set_aside
from tests.cli_runner import run_cli
from tests.hostile_support import (
    MAIN,
    REPO,
    Case,
    Check,
    Ctx,
    Result,
    Templates,
    all_of,
    audio_written,
    base_env,
    case_params,
    gen_args,
    judge_case,
    make_templates,
    write_wav,
)

pytestmark = pytest.mark.posix  # FIFOs, mounts, /proc, signals

DIGITS_400 = "9" * 400
DIGITS_5000 = "9" * 5000  # past Python's 4300-digit limit for int()
GOOD = "a,coin pickup,0.3,2,1"  # a row that renders fast
LIMIT_WORDS = ("4300", "int_max_str_digits", "integer string conversion", "digits")
OUT = "{out}/b"
OUTPUTS = ("out/b", "out/b/*")  # what a batch may write, even when a row fails
LONG_NUMBER = re.compile(r"\d{25,}")


# --------------------------------------------------------------------------------------------
# Setups and argv


def a_file(name: str, data: str | bytes):
    def setup(ctx: Ctx) -> None:
        path = ctx.root / name
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")

    return setup


def setups(*steps):
    def setup(ctx: Ctx) -> None:
        for step in steps:
            step(ctx)

    return setup


def json_row(key: str, raw_value: str) -> str:
    """A JSON list of a good row and a row whose `key` holds `raw_value` (JSON text)."""
    return ('[{"name": "a", "prompt": "coin pickup", "seconds": 0.3, "steps": 2, "seed": 1}, '
            f'{{"name": "b", "prompt": "coin pickup", "seconds": 0.3, "steps": 2, '
            f'"{key}": {raw_value}}}]')


def csv_rows(header: str, *rows: str) -> str:
    return "\n".join((header, *rows)) + "\n"


def batch(*extra: str, list_name: str = "list.csv", out: str = OUT,
          library: bool = False) -> list[str]:
    """`batch LIST --out DIR`; without the library unless asked (a batch whose rows partly
    fail keeps its good takes, which the judge would count against it)."""
    return ["batch", f"{{root}}/{list_name}", "--out", out,
            *([] if library else ["--no-library"]), *extra]


def user_settings(data: dict | str):
    text = data if isinstance(data, str) else json.dumps(data)

    def setup(ctx: Ctx) -> None:
        (ctx.home / "settings.json").write_text(text, encoding="utf-8")

    return setup


def preset(fields: str):
    """A settings file with the user preset "Mine" holding `fields` (raw JSON members)."""
    return user_settings('{"finish_presets": {"Mine": {' + fields + '}, '
                         '"Good": {"fade_in_ms": 5}}}')


def nested_settings(depth: int = 100000, kind: str = "list"):
    text = ("[" * depth + "]" * depth if kind == "list"
            else '{"a": ' * depth + "1" + "}" * depth)
    return user_settings(text)


def init_row_list(init: str) -> str:
    return csv_rows("name,prompt,seconds,steps,seed,init_audio", GOOD + ",",
                    f"b,coin pickup,0.3,2,2,{init}", "c,coin pickup,0.3,2,3,")


def wav_without_frames(ctx: Ctx) -> None:
    sf.write(ctx.root / "init.wav", [[0.0, 0.0]][:0], 44100, subtype="PCM_16")


def truncated_wav(ctx: Ctx) -> None:
    write_wav(ctx.root / "full.wav", 1.0)
    (ctx.root / "init.wav").write_bytes((ctx.root / "full.wav").read_bytes()[:30])
    (ctx.root / "full.wav").unlink()


def init_folder(ctx: Ctx) -> None:
    (ctx.root / "init.wav").mkdir()


def init_fifo(ctx: Ctx) -> None:
    os.mkfifo(ctx.root / "init.wav")


# -- an earlier run, then something done to what it left -------------------------------------

RESUME_LIST = csv_rows("name,prompt,seconds,steps,seed", "a,coin pickup,0.3,2,",
                       "b,rain on a roof,0.3,2,", "c,door creak,0.3,2,5")


def earlier_run(*tamper):
    def setup(ctx: Ctx) -> None:
        (ctx.root / "list.csv").write_text(RESUME_LIST, encoding="utf-8")
        ctx.must(batch())
        for step in tamper:
            step(ctx.out / "b")

    return setup


def truncate(name: str, keep: int | None = 0):
    def step(out: Path) -> None:
        data = (out / name).read_bytes()
        (out / name).write_bytes(data[:keep if keep is not None else len(data) // 2])

    return step


def replace_with_text(name: str):
    return lambda out: (out / name).write_text("not audio any more\n")


def remove(name: str):
    return lambda out: (out / name).unlink()


def edit_manifest(index: int, key: str, change):
    def step(out: Path) -> None:
        data = json.loads((out / "manifest.json").read_text())
        item = data["items"][index]
        item[key] = change(item[key])
        (out / "manifest.json").write_text(json.dumps(data), encoding="utf-8")

    return step


# -- hostile output folders (root) -----------------------------------------------------------


def read_only_out(ctx: Ctx) -> None:
    ctx.mount_tmpfs(ctx.out / "ro", "64k", ro=True)


def full_out(ctx: Ctx) -> None:
    ctx.fill(ctx.mount_tmpfs(ctx.out / "full", "64k"))


def immutable_out(ctx: Ctx) -> None:
    (ctx.out / "imm").mkdir()
    ctx.immutable(ctx.out / "imm")


# --------------------------------------------------------------------------------------------
# Checks


def rows(ok: tuple[str, ...] = (), failed: tuple[str, ...] = ()) -> Check:
    """The manifest exists and says `ok` for those files and failed for those names, with the
    failed row's place in its reason; every ok file decodes as audio."""

    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        if result.timed_out:
            return []
        try:
            items = json.loads((ctx.out / "b" / "manifest.json").read_text())["items"]
        except (OSError, ValueError, KeyError) as err:
            return [f"no readable manifest was written ({err})"]
        by_file = {item.get("file"): item for item in items}
        problems = []
        for name in ok:
            if (by_file.get(name) or {}).get("status") not in ("ok", "skipped"):
                problems.append(f"{name} was not rendered (manifest: {by_file.get(name)})")
        problems += audio_written(*(f"{{out}}/b/{name}" for name in ok))(
            ctx, Result(0, b"", b"", 0.0), before, after)
        for name in failed:
            found = [i for i in items if i.get("name") == name and i.get("status") == "failed"]
            if not found:
                problems.append(f"row {name} is not failed in the manifest")
            elif not re.match(r"(line \d+|item \[\d+\]): ", found[0].get("reason") or ""):
                problems.append(f"row {name}'s reason does not start with its place")
        return problems

    return check


def resumed_honestly(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    """Every take the manifest calls done opens as audio with the frames it says, and its
    sidecar has the seed the manifest has."""
    if result.rc != 0:
        return []
    out = ctx.out / "b"
    problems = []
    for item in json.loads((out / "manifest.json").read_text())["items"]:
        if item["status"] not in ("ok", "skipped"):
            problems.append(f"{item['file']} is {item['status']} after the rerun")
            continue
        try:
            frames = sf.info(out / item["file"]).frames
        except Exception as err:  # noqa: BLE001 - reported as a problem of the case
            problems.append(f"{item['file']} is listed as done but does not open ({err})")
            continue
        if item.get("frames") not in (None, frames) or frames <= 0:
            problems.append(f"{item['file']} has {frames} frames, the manifest says "
                            f"{item.get('frames')}")
        seed = json.loads((out / item["sidecar"]).read_text()).get("seed")
        if seed != item["seed"]:
            problems.append(f"the manifest records seed {item['seed']} for {item['file']}, "
                            f"whose sidecar says {seed}")
    return problems


def short_numbers(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    found = LONG_NUMBER.search(result.out + result.err)
    return [f"the output echoes a number of {len(found[0])} digits"] if found else []


def nothing_rendered(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    took = re.search(r"\[\d+/\d+\]", result.out)
    return [f"takes were rendered before the refusal ({took[0]})"] if took else []


# --------------------------------------------------------------------------------------------
# The table

ROW_FAILS = dict(error_lines=2, may_create=OUTPUTS, never=LIMIT_WORDS)
DRY_ROW_FAILS = dict(error_lines=1, never=LIMIT_WORDS)
SAYS_ITEM_1 = (r"^error: item \[1\]: ",)
SAYS_LINE_3 = (r"^error: line 3: ",)
GENERATE_MINE = gen_args("--preset", "Mine")


def giant_json(key: str, raw: str, case_id: str) -> Case:
    return Case(case_id, batch(list_name="list.json"), 1, a_file("list.json", json_row(key, raw)),
                says=(*SAYS_ITEM_1, re.escape(key)), check=all_of(rows(("a_01.wav",), ("b",)),
                                                                  short_numbers), **ROW_FAILS)


def giant_preset(case_id: str, fields: str, says: str, argv=GENERATE_MINE, **kw) -> Case:
    return Case(case_id, argv, kw.pop("exit", 2), preset(fields),
                says=("Mine", says), check=short_numbers, never=LIMIT_WORDS, **kw)


def init_row(case_id: str, setup, init: str = "init.wav", says: str = "init|audio|file") -> Case:
    return Case(case_id, batch(), 1, setups(a_file("list.csv", init_row_list(init)), setup),
                says=(*SAYS_LINE_3, says),
                check=rows(("a_01.wav", "c_01.wav"), ("b",)), **ROW_FAILS)


def resume(case_id: str, *tamper) -> Case:
    return Case(case_id, batch(), 0, earlier_run(*tamper), may_change=OUTPUTS,
                may_create=OUTPUTS, check=resumed_honestly, warns=("rendered again",))


SETTINGS_OK = dict(may_change=SETTINGS_PATHS["may_change"],
                   may_create=(*SETTINGS_PATHS["may_create"], "out/b", "out/b/*", "out/a.*"))


def settings_case(case_id: str, argv, setup, required: bool, home: str = "models") -> Case:
    return Case(case_id, argv, 0, setup, home=home, check=set_aside(required), **SETTINGS_OK)


CASES: list[Case] = [
    # -- 1: numbers no float holds, in JSON and CSV lists: that row fails, the rest render --
    *(giant_json(key, DIGITS_400, f"list-json-400-digits-{key}")
      for key in ("seconds", "seed", "variations", "cfg", "steps", "init_noise_level", "apg")),
    *(giant_json(key, DIGITS_5000, f"list-json-5000-digits-{key}")
      for key in ("seconds", "seed", "variations", "cfg")),
    giant_json("seed", "-" + DIGITS_400, "list-json-negative-400-digits-seed"),
    giant_json("seconds", "1e999", "list-json-1e999-seconds"),
    giant_json("cfg", DIGITS_400 + ".5", "list-json-400-digit-decimal-cfg"),
    giant_json("seed", "1e400", "list-json-1e400-seed"),
    giant_json("seed", "18446744073709551617", "list-json-seed-past-64-bits"),
    Case("list-json-5000-digits-seed-dry-run", batch("--dry-run", list_name="list.json"), 1,
         a_file("list.json", json_row("seed", DIGITS_5000)), says=SAYS_ITEM_1,
         check=short_numbers, **DRY_ROW_FAILS),
    *(Case(f"list-csv-{digits}-digits-{key}", batch(), 1,
           a_file("list.csv", csv_rows(f"name,prompt,seconds,steps,{key}", GOOD.rsplit(",", 1)[0]
                                       + ",", f"b,coin pickup,0.3,2,{'9' * digits}")),
           says=(*SAYS_LINE_3, key), check=all_of(rows(("a_01.wav",), ("b",)), short_numbers),
           **ROW_FAILS)
      for key, digits in (("seed", 5000), ("seed", 400), ("variations", 5000), ("cfg", 400),
                          ("init_noise_level", 5000))),
    Case("list-csv-400-digits-seconds", batch(), 1,
         a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed", GOOD,
                                     f"b,coin pickup,{DIGITS_400},2,2")),
         says=(*SAYS_LINE_3, "seconds"),
         check=all_of(rows(("a_01.wav",), ("b",)), short_numbers), **ROW_FAILS),

    # -- 2, 17: a saved preset with a number out of every range --
    *(giant_preset(f"preset-400-digits-{field}-generate", f'"{field}": {DIGITS_400}', words)
      for field, words in (("trim_db", "trim threshold"), ("fade_in_ms", "fade in"),
                           ("loudness_lufs", "loudness"), ("loop_seam_s", "loop seam"),
                           ("rate", "sample rate"), ("trim_in_s", "trim in"))),
    giant_preset("preset-5000-digits-fade-out-generate", f'"fade_out_ms": {DIGITS_5000}',
                 "fade out"),
    giant_preset("preset-1e308-fade-in-generate", '"fade_in_ms": 1e308', r"1e\+308"),
    giant_preset("preset-minus-1e308-true-peak-generate", '"true_peak_dbtp": -1e308',
                 r"-1e\+308"),
    giant_preset("preset-1e999-loudness-generate", '"loudness_lufs": 1e999', "loudness"),
    giant_preset("preset-400-digits-library-export", f'"trim_db": {DIGITS_400}',
                 "trim threshold", ["library", "export", "1", "--preset", "Mine", "--to",
                                    "{out}/x"], home="library"),
    Case("preset-400-digits-batch-only-its-rows", batch(), 1,
         setups(preset(f'"trim_db": {DIGITS_400}'), a_file("list.csv", csv_rows(
             "name,prompt,seconds,steps,seed,preset", GOOD + ",", "b,coin pickup,0.3,2,2,Mine",
             "c,coin pickup,0.3,2,3,Good", "d,coin pickup,0.3,2,4,Mine"))),
         says=(*SAYS_LINE_3, "Mine", "trim threshold"), error_lines=3, may_create=OUTPUTS,
         check=all_of(rows(("a_01.wav", "c_01.wav"), ("b", "d")), short_numbers)),
    Case("preset-1e308-batch-only-its-rows", batch(), 1,
         setups(preset('"fade_in_ms": 1e308'), a_file("list.csv", csv_rows(
             "name,prompt,seconds,steps,seed,preset", GOOD + ",",
             "b,coin pickup,0.3,2,2,Mine"))),
         says=(*SAYS_LINE_3, r"1e\+308"), may_create=OUTPUTS, error_lines=2,
         check=all_of(rows(("a_01.wav",), ("b",)), short_numbers)),

    # -- 3: a settings file nested past any parser: set aside, every command works --
    settings_case("settings-nested-list-generate", gen_args(), nested_settings(), True),
    settings_case("settings-nested-object-generate", gen_args(),
                  nested_settings(kind="object"), True),
    settings_case("settings-nested-generate-preset", gen_args("--preset", "Game SFX one-shot"),
                  nested_settings(), True),
    settings_case("settings-nested-models-list", ["models", "list"], nested_settings(), True),
    settings_case("settings-nested-library-list", ["library", "list"], nested_settings(), False,
                  home="library"),
    settings_case("settings-nested-batch", batch(), setups(
        nested_settings(), a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed", GOOD))),
        True),
    settings_case("settings-nested-presets-only", gen_args(),
                  user_settings('{"finish_presets": ' + "[" * 100000 + "]" * 100000 + "}"),
                  True),
    Case("settings-5000-digit-number-is-read", gen_args(), 0,
         user_settings('{"something": ' + DIGITS_5000 + "}"), check=set_aside(False),
         **SETTINGS_OK),

    # -- 7: a row whose init audio is not audio: that row fails, the others render --
    init_row("init-row-empty-file", a_file("init.wav", b"")),
    init_row("init-row-wav-without-frames", wav_without_frames),
    init_row("init-row-text-file", a_file("init.wav", "just some text\n")),
    init_row("init-row-csv-as-audio", a_file("init.csv", "name,prompt\n"), "init.csv"),
    init_row("init-row-png", a_file("init.wav", b"\x89PNG\r\n\x1a\n" + bytes(200))),
    init_row("init-row-truncated-header", truncated_wav),
    init_row("init-row-damaged-header", a_file("init.wav", b"RIFF\x24\0\0\0WAVEfmt " + bytes(30))),
    init_row("init-row-folder", init_folder),
    init_row("init-row-fifo", init_fifo),
    init_row("init-row-missing", a_file("other.txt", "x"), "missing.wav", says="not found"),
    Case("init-row-json-index", batch(list_name="list.json"), 1, setups(
        a_file("init.wav", b""), a_file("list.json", json.dumps([
            {"name": "a", "prompt": "coin", "seconds": 0.3, "steps": 2, "seed": 1},
            {"name": "b", "prompt": "coin", "init_audio": "init.wav"}]))),
         says=(*SAYS_ITEM_1, "empty"), check=rows(("a_01.wav",), ("b",)), **ROW_FAILS),

    # -- 8: a rerun resumes only what is whole and what the manifest says it is --
    resume("resume-take-truncated-to-zero", truncate("a_01.wav", 0)),
    resume("resume-take-cut-in-half", truncate("b_01.wav", None)),
    resume("resume-take-replaced-by-text", replace_with_text("c_01.wav")),
    resume("resume-sidecar-removed", remove("a_01.json")),
    resume("resume-manifest-seed-edited", edit_manifest(1, "seed", lambda s: s + 1)),
    resume("resume-manifest-fixed-seed-edited", edit_manifest(2, "seed", lambda s: s + 7)),
    resume("resume-manifest-frames-edited", edit_manifest(0, "frames", lambda f: f + 1)),
    Case("resume-untouched-skips-everything", batch(), 0, earlier_run(), may_change=OUTPUTS,
         check=all_of(resumed_honestly, lambda ctx, result, b, a: [] if "3 skipped" in result.out
                      else ["an untouched earlier run was not skipped whole"])),

    # -- 9: one rule for variations and seeds --
    Case("variations-100-batch", batch(), 1, a_file("list.csv", csv_rows(
        "name,prompt,seconds,steps,seed,variations", GOOD + ",1", "b,coin,0.3,2,2,100")),
        says=(*SAYS_LINE_3, "1 to 99"), check=rows(("a_01.wav",), ("b",)), **ROW_FAILS),
    Case("variations-100-generate", gen_args("--variations", "100"), 2, says=("1 to 99",)),
    Case("seed-run-past-the-last-seed-batch", batch(), 1, a_file("list.csv", csv_rows(
        "name,prompt,seconds,steps,seed,variations", GOOD + ",1", "b,coin,0.3,2,4294967295,2")),
        says=(*SAYS_LINE_3, "4294967294"), check=rows(("a_01.wav",), ("b",)), **ROW_FAILS),
    Case("seed-past-the-last-seed-batch", batch(), 1, a_file("list.csv", csv_rows(
        "name,prompt,seconds,steps,seed", GOOD, "b,coin,0.3,2,4294967296")),
        says=(*SAYS_LINE_3, "0 to 4294967295"), check=rows(("a_01.wav",), ("b",)),
        **ROW_FAILS),
    Case("seed-past-the-last-seed-generate", gen_args("--seed", "4294967296"), 2,
         says=("0 to 4294967295",)),

    # -- 14: an output folder that cannot be written: one line, before any render --
    Case("batch-out-read-only-mount", batch(out="{out}/ro", library=True), 2,
         setups(read_only_out, a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed",
                                                           GOOD))),
         says=("read-only",), never=("make room",), check=nothing_rendered),
    Case("batch-out-under-read-only-mount", batch(out="{out}/ro/sub", library=True), 2,
         setups(read_only_out, a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed",
                                                           GOOD))),
         says=("read-only",), never=("make room",), check=nothing_rendered),
    Case("batch-out-full-mount", batch(out="{out}/full", library=True), 2,
         setups(full_out, a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed", GOOD))),
         says=("full", "make room"), check=nothing_rendered),
    Case("batch-out-under-full-mount", batch(out="{out}/full/sub", library=True), 2,
         setups(full_out, a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed", GOOD))),
         says=("full", "make room"), check=nothing_rendered),
    Case("batch-out-immutable-folder", batch(out="{out}/imm", library=True), 2,
         setups(immutable_out, a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed",
                                                           GOOD))),
         says=("protect|immutable|permi",), never=("make room",), check=nothing_rendered),
    Case("batch-out-read-only-dry-run", batch("--dry-run", out="{out}/ro", library=True), 0,
         setups(read_only_out, a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed",
                                                           GOOD)))),

    # -- 16: a sound list's remedies name its columns; the command line keeps its flags --
    Case("list-inpaint-without-init-names-the-column", batch(), 1, a_file("list.csv", csv_rows(
        "name,prompt,seconds,steps,seed,inpaint", GOOD + ",", "b,coin,0.5,2,2,0.1:0.3")),
        says=(*SAYS_LINE_3, "init_audio"), check=rows(("a_01.wav",), ("b",)),
        **{**ROW_FAILS, "never": ("--init-audio",)}),
    Case("list-noise-level-without-init-names-the-column", batch(), 1, a_file(
        "list.csv", csv_rows("name,prompt,seconds,steps,seed,init_noise_level", GOOD + ",",
                             "b,coin,0.5,2,2,0.5")),
        says=(*SAYS_LINE_3, "init_audio"), check=rows(("a_01.wav",), ("b",)),
        **{**ROW_FAILS, "never": ("--init-audio",)}),
    Case("list-negative-prompt-names-the-cfg-column", batch(), 0, a_file("list.csv", csv_rows(
        "name,prompt,seconds,steps,seed,negative_prompt", GOOD + ",", "b,coin,0.3,2,2,noise")),
        warns=("row's cfg",), never=("--cfg",), may_create=OUTPUTS,
        check=rows(("a_01.wav", "b_01.wav"))),
    Case("list-negative-prompt-two-workers", batch("--jobs", "2"), 0,
         a_file("list.csv", csv_rows("name,prompt,seconds,steps,seed,negative_prompt",
                                     GOOD + ",", "b,coin,0.3,2,2,noise")),
         warns=("row's cfg",), never=("--cfg",), may_create=OUTPUTS,
         check=rows(("a_01.wav", "b_01.wav"))),
    Case("generate-inpaint-without-init-keeps-the-flag", gen_args("--inpaint", "0.1:0.3"), 2,
         says=("--init-audio FILE",)),
    Case("generate-negative-prompt-keeps-the-flag", gen_args("--negative-prompt", "noise"), 0,
         warns=("--cfg",), may_create=("out/a.*",)),
]

# generate still wraps a run of seeds past the last one (engines/cli/generate.py, not ours to
# change in this round): the rule is the batch's; this case holds generate to it.
GENERATE_SEED_RUN = Case("seed-run-past-the-last-seed-generate",
                         gen_args("--seed", "4294967295", "--variations", "2"), 2,
                         says=("4294967294",))


# --------------------------------------------------------------------------------------------
# The table's test


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory, models: Path) -> Templates:
    return make_templates(tmp_path_factory.mktemp("hostile-faults-templates"), models)


def test_the_table_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("case", case_params(CASES))
def test_hostile_faults(case: Case, templates: Templates, tmp_path: Path):
    judge_case(case, templates, tmp_path)


def test_generate_refuses_a_seed_run_past_the_last_seed(templates: Templates, tmp_path: Path):
    judge_case(GENERATE_SEED_RUN, templates, tmp_path)


# --------------------------------------------------------------------------------------------
# 4: a reader that closes stdout at once


def _home_with_library(tmp_path: Path, templates: Templates) -> Path:
    import shutil

    home = tmp_path / "home"
    shutil.copytree(templates.library_home, home)
    return home


PIPED = [
    ("library-list", ["library", "list"], ()),
    ("library-list-json", ["library", "list", "--json"], ()),
    ("library-show-json", ["library", "show", "1", "--json"], ()),
    ("library-show", ["library", "show", "1"], ()),
    ("models-list", ["models", "list"], ()),
    ("generate-list-models", ["generate", "--list-models"], ()),
    ("help", ["--help"], ()),
    ("generate", gen_args(out="{tmp}/a.wav"), ("a.wav", "a.json")),
    ("generate-variations", gen_args("--variations", "2", out="{tmp}/v.wav"),
     ("v_01.wav", "v_02.wav")),
    ("batch", ["batch", "{tmp}/list.csv", "--out", "{tmp}/b"], ("b/a_01.wav", "b/c_01.wav",
                                                                 "b/manifest.json")),
    ("batch-two-workers", ["batch", "{tmp}/list.csv", "--out", "{tmp}/b", "--jobs", "2"],
     ("b/a_01.wav", "b/c_01.wav", "b/manifest.json")),
    ("batch-dry-run", ["batch", "{tmp}/list.csv", "--out", "{tmp}/b", "--dry-run"], ()),
]


@pytest.mark.slow  # the pipe a real process writes to
@pytest.mark.parametrize("argv, made", [p[1:] for p in PIPED], ids=[p[0] for p in PIPED])
def test_a_closed_stdout_is_no_failure(argv, made, templates: Templates, tmp_path: Path):
    """stdout is a pipe whose reader is gone before the first line: nothing on stderr, the
    work done to the end (every file written), the exit code the work earns."""
    home = _home_with_library(tmp_path, templates)
    (tmp_path / "list.csv").write_text(csv_rows("name,prompt,seconds,steps,seed", GOOD,
                                                "c,rain,0.3,2,2"))
    args = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    proc = subprocess.Popen([sys.executable, str(MAIN), *args], cwd=REPO,
                            env=base_env(home, tmp_path / "scratch"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader exits at once, like `| true`
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert err.decode() == "" and proc.returncode == 0, (proc.returncode, err.decode())
    for name in made:
        assert sf.info(tmp_path / name).frames > 0 if name.endswith(".wav") else \
            (tmp_path / name).stat().st_size > 0, name


# --------------------------------------------------------------------------------------------
# 6: workers die with the batch that started them


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone
    except OSError:
        return False


@pytest.mark.slow  # signals to a real process and its workers
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_workers_die_with_their_batch(how: int, templates: Templates, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    import shutil

    shutil.copytree(templates.models, home / "models")
    (tmp_path / "list.csv").write_text(csv_rows(
        "name,prompt,seconds,steps,seed", *(f"s{i},coin {i},2,8,{i}" for i in range(30))))
    argv = [sys.executable, str(MAIN), "batch", str(tmp_path / "list.csv"), "--out",
            str(tmp_path / "b"), "--jobs", "2", "--no-library"]
    env = base_env(home, tmp_path / "scratch")
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = proc.stdout.readline()  # a take is done: both workers are up
        family = _children(proc.pid)
        family |= {pid for child in family for pid in _children(child)}
        assert first and len(family) >= 3, (first, family)  # 2 workers + the resource tracker
        proc.send_signal(how)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(pid) for pid in family):
            time.sleep(0.1)
        left = [pid for pid in family if _alive(pid)]
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in family:  # leftovers hold the stderr pipe open: end them before reading it
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    err = proc.stderr.read().decode()
    assert not left, f"still running 5 s after the batch was killed: {left}"
    noise = [line for line in err.splitlines() if not line.startswith(("cancelled: ",
                                                                       "warning: "))]
    assert not noise, noise
    again = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, timeout=300)
    assert again.returncode == 0, again.stderr.decode()  # the rerun finishes the list


# --------------------------------------------------------------------------------------------
# 10: reading the library never waits for a writer


HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE takes SET rating = rating WHERE id = 1")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@pytest.mark.parametrize("argv", [["library", "list"], ["library", "list", "--json"],
                                  ["library", "show", "1"], ["library", "show", "1", "--json"],
                                  ["library", "list", "--search", "rain"]],
                         ids=["list", "list-json", "show", "show-json", "search"])
def test_reading_the_library_does_not_wait_for_a_writer(argv, templates: Templates,
                                                         tmp_path: Path):
    home = _home_with_library(tmp_path, templates)
    db = home / "library" / "library.sqlite3"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(db)], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        done = run_cli(argv, cwd=REPO, timeout=60, env=base_env(home, tmp_path / "scratch"))
        took = time.monotonic() - started
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and took < 5, (took, done.stderr)
    assert "coin pickup" in done.stdout or "rain" in done.stdout
    with sqlite3.connect(db) as conn:  # the writer's lock and the library are unharmed
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM takes").fetchone()[0] == 2


def test_the_harness_counts_error_lines():
    """A batch case expects one error line per bad row plus the summary."""
    from tests.hostile_support import output_problems

    case = Case("judge", ["batch"], 1, error_lines=2)
    both = "error: line 3: seed 1e+400 is out of range.\nerror: 1 of 2 item(s) failed.\n"
    assert output_problems(case, Result(1, b"", both.encode(), 0.1)) == []
    assert any("exactly 2" in p for p in output_problems(
        case, Result(1, b"", b"error: line 3: seed is out of range.\n", 0.1)))
