"""The command line in a hostile world, round 3 (issue 29, items 12 and 14 to 16), judged by the
promises of tests/hostile_support.py (exit code, one sentence, no traceback or catch-all, no file
changed that should not be) plus one of its own: no character a terminal acts on or shows as
nothing - controls, bidirectional and zero-width characters, line separators - reaches stdout
or stderr raw, whatever the user or a file put in a name, tag, prompt, cell or file name.

Families: a UCS list with a cell over the csv limit, in UTF-16/32, as a pipe; the offline switch
of huggingface_hub against `models gpu-runtime`; `library list --like` with hours of audio;
sound lists as a pipe, with a huge cell, in UTF-16; text with hidden characters in `library`
rename/tag/list/show, `generate` and `batch`; labels made only of invisible characters.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import subprocess
import sys
import tracemalloc
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.hostile_support import (
    MAIN,
    Case,
    Ctx,
    Result,
    Templates,
    gen_args,
    judge_case,
    make_templates,
    write_wav,
)

pytestmark = pytest.mark.posix  # named pipes

GEN_OUT = ("out/a.wav", "out/a.json")
UCS = ("Category,SubCategory,CatID,CatShort,Explanations,Synonyms - Comma Separated\n"
       "DOORS,WOOD,DOORWood,DOOR,Wooden doors,\"door, wood\"\n"
       "RAIN,GENERAL,RAINGen,RAIN,Rain falling,\"rain, drizzle\"\n")
BIG_CELL = "x" * 200_000  # over the csv module's 128 KB field limit, well quoted
# What a hostile name, tag or prompt holds: a right-to-left override that turns "fdp.exe"
# around, isolates, zero-width characters, a BOM, a line separator, ESC and a C1 CSI.
BIDI = "invoice\u202efdp.exe \u2066x\u2069 zero\u200bwidth\ufeff line\u2028sep \x1b[2J\x9b1m"
BIDI_TAG = "tag\u202eevil \u2066x\u2069 zw\u200bj\ufeff"
INVISIBLE = "\u200b\u200c\u2066\u2069\ufeff"
HIDDEN = {"Cc", "Cf", "Zl", "Zp"}


def no_hidden_characters(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    """Nothing a terminal acts on or hides (but new lines) in what the command printed."""
    problems = []
    for name, text in (("stdout", result.out), ("stderr", result.err)):
        found = sorted({c for c in text if c != "\n" and unicodedata.category(c) in HIDDEN})
        if found:
            problems.append(f"{name} prints hidden characters raw: {ascii(''.join(found))}")
    return problems


def stdout_has(*texts: str):
    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        return [f"stdout does not show {text!r}" for text in texts if text not in result.out]

    return check


def all_of(*checks):
    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        return [problem for one in checks for problem in one(ctx, result, before, after)]

    return check


def sidecar_category(category: str):
    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        text = (ctx.out / "a.json").read_text(encoding="utf-8")
        return [] if f'"category": "{category}"' in text else [
            f"the sidecar does not carry the category {category} from the UCS list"]

    return check


# --------------------------------------------------------------------------------------------
# Setups


def ucs_list(data: bytes | None = None, *, fifo: bool = False):
    def setup(ctx: Ctx) -> None:
        target = ctx.home / "ucs.csv"
        if fifo:
            os.mkfifo(target)
        else:
            target.write_bytes(data or b"")

    return setup


def sound_list(data: bytes | None = None, *, fifo: bool = False, name: str = "list.csv"):
    def setup(ctx: Ctx) -> None:
        if fifo:
            os.mkfifo(ctx.root / name)
        else:
            (ctx.root / name).write_bytes(data or b"")

    return setup


def environment(**values: str):
    def setup(ctx: Ctx) -> None:
        ctx.env.update(values)

    return setup


def hostile_take(ctx: Ctx) -> None:
    """Take 1 renamed and tagged with hidden characters (as a script or another tool could)."""
    ctx.must(["library", "rename", "1", BIDI])
    ctx.must(["library", "tag", "1", BIDI_TAG])  # `library tag` refuses ESC (a control)


def long_flac(name: str, hours: float, rate: int = 8000):
    """Hours of near-silence at 8 kHz: a small FLAC that decodes to gigabytes at 44.1 kHz."""
    def setup(ctx: Ctx) -> None:
        write_long_flac(ctx.root / name, hours, rate)

    return setup


def write_long_flac(path: Path, hours: float, rate: int = 8000) -> None:
    block = np.zeros(rate * 600, dtype=np.int16)
    block[::101] = 1  # not pure digital silence
    with sf.SoundFile(path, "w", rate, 1, "PCM_16", format="FLAC") as handle:
        for _ in range(int(hours * 6)):
            handle.write(block)


def hostile_file_name(ctx: Ctx) -> None:
    write_wav(ctx.root / f"{BIDI.replace('/', '_')}.wav", 0.3)


# --------------------------------------------------------------------------------------------
# The table

LIST_HEADER = "name,prompt,seconds\n"
CASES = [
    # -- item 12 and 16: a UCS list with a cell over the csv limit, or one that is a pipe --
    Case("ucs-200kb-cell", gen_args("--category", "DOORWood"), 2,
         ucs_list((UCS + f'BIG,CELL,BIGCell,BIG,"{BIG_CELL}",x\n').encode()),
         says=(r"cell larger than 128 KB", r"line 4", r"import the UCS CSV again")),
    Case("ucs-list-is-a-pipe", gen_args("--category", "DOORWood"), 2, ucs_list(fifo=True),
         says=(r"not a regular file", r"import the UCS CSV again"), timeout=20),
    # -- item 14: a UTF-16 or UTF-32 UCS list is read as what its byte-order mark says --
    Case("ucs-utf16-case-fix", gen_args("--category", "doorwood"), 2,
         ucs_list(UCS.encode("utf-16")), says=(r"written 'DOORWood' in your UCS list",)),
    Case("ucs-utf32-be-case-fix", gen_args("--category", "RAINGEN"), 2,
         ucs_list(codecs.BOM_UTF32_BE + UCS.encode("utf-32-be")),
         says=(r"written 'RAINGen' in your UCS list",)),
    Case("ucs-utf16-be-renders", gen_args("--category", "DOORWood"), 0,
         ucs_list(codecs.BOM_UTF16_BE + UCS.encode("utf-16-be")), creates=GEN_OUT,
         check=sidecar_category("DOORS")),
    Case("ucs-utf16-without-mark", gen_args("--category", "DOORWood"), 2,
         ucs_list(UCS.encode("utf-16-le")), says=(r"NUL bytes", r"byte-order mark")),
    Case("ucs-utf16-broken", gen_args("--category", "DOORWood"), 2,
         ucs_list(codecs.BOM_UTF16_LE + UCS.encode("utf-16-le")[:-2] + b"\x00\xd8"),
         says=(r"not valid UTF-16",)),
    # -- the same lists given to `library import-ucs` --
    Case("import-ucs-utf16", ["library", "import-ucs", "{root}/list.csv"], 0,
         sound_list(UCS.encode("utf-16")), home="library", creates=("home/ucs.csv",),
         check=stdout_has("2 categories")),
    Case("import-ucs-200kb-cell", ["library", "import-ucs", "{root}/list.csv"], 2,
         sound_list((UCS + f'BIG,CELL,BIGCell,BIG,"{BIG_CELL}",x\n').encode()), home="library",
         says=(r"cell larger than 128 KB, the most one cell may hold, at line 4",)),
    Case("import-ucs-pipe", ["library", "import-ucs", "{root}/list.csv"], 2,
         sound_list(fifo=True), home="library", says=(r"not a regular file",), timeout=20),
    Case("import-ucs-utf32-without-mark", ["library", "import-ucs", "{root}/list.csv"], 2,
         sound_list(UCS.encode("utf-32-le")), home="library", says=(r"NUL bytes",)),
    # -- item 12: huggingface_hub's offline switch blocks the package indexes too --
    Case("gpu-runtime-offline", ["models", "gpu-runtime", "--cuda", "12"], 2,
         environment(HF_HUB_OFFLINE="1"), home="fresh",
         says=(r"offline mode is on", r"unset HF_HUB_OFFLINE", r"models gpu-runtime")),
    Case("gpu-runtime-transformers-offline", ["models", "gpu-runtime", "--cuda", "13"], 2,
         environment(TRANSFORMERS_OFFLINE="yes"), home="fresh", says=(r"offline mode",)),
    # -- item 12: hours of audio to search by: an excerpt, said so --
    Case("like-hours-of-audio", ["library", "list", "--like", "{root}/long.flac"], 0,
         long_flac("long.flac", 2.0), home="library",
         warns=(r"'long\.flac' is 2 h 0 min long; only its first 6 min 20 s were compared",),
         check=stdout_has("closest first")),
    # -- item 16: sound lists that are pipes, or hold a cell over the csv limit --
    Case("batch-list-is-a-pipe", ["batch", "{root}/list.csv", "--out", "{out}/b"], 2,
         sound_list(fifo=True), says=(r"not a regular file", r"pipe"), timeout=20),
    Case("batch-list-200kb-cell", ["batch", "{root}/list.csv", "--out", "{out}/b"], 2,
         sound_list(f'{LIST_HEADER}rain,"{BIG_CELL}",1\n'.encode()),
         says=(r"cell larger than 128 KB", r"at line 2", r"shorten")),
    Case("batch-json-list-is-a-pipe", ["batch", "{root}/list.json", "--out", "{out}/b"], 2,
         sound_list(fifo=True, name="list.json"), says=(r"not a regular file",), timeout=20),
    # -- item 14: sound lists in UTF-16 (Excel's "Unicode Text": tabs) --
    Case("batch-utf16-tab-list", ["batch", "{root}/list.txt", "--out", "{out}/b", "--dry-run"],
         0, sound_list("name\tprompt\tseconds\nrain_\u00e9t\u00e9\train on a roof\t0.5\n"
                       .encode("utf-16"), name="list.txt"),
         check=stdout_has("rain_\u00e9t\u00e9_01.wav", "1 take(s) to render")),
    Case("batch-utf16-without-mark", ["batch", "{root}/list.csv", "--out", "{out}/b"], 2,
         sound_list(f"{LIST_HEADER}rain,rain,1\n".encode("utf-16-le")),
         says=(r"NUL bytes",)),
    # -- item 15: hidden characters never reach the terminal raw --
    Case("library-rename-hidden", ["library", "rename", "1", BIDI], 0, home="library",
         check=all_of(no_hidden_characters, stdout_has("\\u202e", "\\u2066", "\\u200b"))),
    Case("library-tag-hidden", ["library", "tag", "2", "ok\u202etag", "zw\u200bj"], 0,
         home="library", check=all_of(no_hidden_characters, stdout_has("ok\\u202etag"))),
    Case("library-list-hidden", ["library", "list"], 0, hostile_take, home="library",
         check=all_of(no_hidden_characters, stdout_has("invoice\\u202efdp.exe"))),
    Case("library-list-search-tag-hidden", ["library", "list", "--search", "tag\u202eevil"], 0,
         hostile_take, home="library",
         check=all_of(no_hidden_characters, stdout_has("1 of 1 take shown"))),
    Case("library-list-search-hidden", ["library", "list", "--search", "zero\u200bwidth"], 0,
         hostile_take, home="library",
         check=all_of(no_hidden_characters, stdout_has("zero\\u200bwidth"))),
    Case("library-show-hidden", ["library", "show", "1"], 0, hostile_take, home="library",
         check=all_of(no_hidden_characters,
                      stdout_has("invoice\\u202efdp.exe", "tag\\u202eevil"))),
    Case("library-list-json-hidden", ["library", "list", "--json"], 0, hostile_take,
         home="library", check=no_hidden_characters),
    Case("library-show-json-hidden", ["library", "show", "1", "--json"], 0, hostile_take,
         home="library", check=no_hidden_characters),
    Case("library-show-hidden-file-name", ["library", "show", f"{{root}}/{BIDI}.wav"], 2,
         hostile_file_name, home="library", says=(r"not a take from this library",),
         check=no_hidden_characters),
    Case("library-like-hidden-missing-file", ["library", "list", "--like", f"{{root}}/{BIDI}"],
         2, home="library", says=(r"does not exist",), check=no_hidden_characters),
    Case("library-rename-unknown-id-hidden", ["library", "rename", f"1{BIDI}", "x"], 2,
         home="library", says=(r"not a take id",), check=no_hidden_characters),
    Case("generate-hidden-prompt", gen_args(prompt=BIDI), 0, creates=GEN_OUT,
         check=no_hidden_characters),
    Case("batch-hidden-cells", ["batch", "{root}/list.csv", "--out", "{out}/b", "--dry-run"],
         1, sound_list(f"name,prompt,seconds,model\n{BIDI.replace(',', ' ')},rain,abc,\n"
                       f"ok,{BIDI},0.5,demo\u202e\n".encode()),
         error_lines=2, check=no_hidden_characters),
    # -- item 15: labels made only of invisible characters are refused by the engines --
    Case("library-tag-invisible", ["library", "tag", "1", INVISIBLE], 2, home="library",
         says=(r"only of invisible characters", r"\\u200b")),
    Case("library-tag-zero-width-among-others", ["library", "tag", "1", "door,\u200b"], 2,
         home="library", says=(r"The tag '\\u200b'",)),
    Case("library-rename-invisible", ["library", "rename", "1", f" {INVISIBLE} "], 2,
         home="library", says=(r"The name .* only of invisible characters",)),
    Case("library-label-invisible", ["library", "label", "1", "--fx-name", INVISIBLE], 2,
         home="library", says=(r"only of invisible characters",)),
    Case("library-label-hidden", ["library", "label", "1", "--creator", "ab\u202ecd"], 0,
         home="library", check=all_of(no_hidden_characters, stdout_has("ab\\u202ecd"))),
    Case("generate-category-invisible", gen_args("--category", "\u200b\u200b"), 2,
         says=(r"category ID .* only of invisible characters",)),
    Case("generate-fx-name-invisible", gen_args("--fx-name", "\u2066\u2069 \u3164"), 2,
         says=(r"FX name .* only of invisible characters",)),
    Case("batch-name-invisible", ["batch", "{root}/list.csv", "--out", "{out}/b"], 1,
         sound_list(f"{LIST_HEADER}{INVISIBLE},rain,0.5\n".encode()),
         may_create=("out/b", "out/b/manifest.json"), says=(r"only of invisible characters",),
         error_lines=2, check=no_hidden_characters),
]


# --------------------------------------------------------------------------------------------
# The tests


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    return make_templates(tmp_path_factory.mktemp("hostile-round3-templates"))


def test_the_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_round3(case: Case, templates: Templates, tmp_path: Path):
    judge_case(case, templates, tmp_path)


def test_the_hidden_character_judge_is_no_rubber_stamp():
    said = Result(0, "take \u202eevil\n".encode(), b"warning: zero\xe2\x80\x8bwidth.\n", 0.1)
    problems = no_hidden_characters(None, said, {}, {})  # type: ignore[arg-type]
    assert len(problems) == 2 and "\\u202e" in problems[0] and "\\u200b" in problems[1]
    assert no_hidden_characters(None, Result(0, b"a\\u202eb\n", b"", 0.1), {}, {}) == []


def test_hours_of_audio_to_search_by_are_never_decoded_whole(templates: Templates,
                                                              tmp_path: Path):
    """2 h at 8 kHz is 2.5 GB as 44.1 kHz float stereo; the search reads only the first
    6 min 20 s. tracemalloc sees numpy's buffers, not soxr's: a whole decode of this file
    traces 460 MB in libsndfile's buffer alone, the excerpt 135 MB in all (measured)."""
    ctx = Ctx(tmp_path, templates)
    ctx.home_with_library()
    write_long_flac(ctx.root / "long.flac", 2.0)
    tracemalloc.start()
    try:
        result = ctx.cli(["library", "list", "--like", str(ctx.root / "long.flac"), "--json"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        ctx.cleanup()
    assert result.rc == 0, result.excerpt()
    assert len(json.loads(result.out)) == 2  # both takes of the library, ranked
    print(f"peak traced allocation: {peak / 1e6:.0f} MB")
    assert peak < 300e6, f"searching by a 2 h file allocated {peak / 1e6:.0f} MB at its peak"


# Runs main.py as __main__ and, as the process ends, writes its own peak resident size (the
# kernel's VmHWM of this process image, from after its exec) to stderr.
PEAK_AT_EXIT = ("import atexit, runpy, sys\n"
                "def peak():\n"
                "    with open('/proc/self/status') as status:\n"
                "        sys.stderr.write(next(l for l in status if l.startswith('VmHWM')))\n"
                "atexit.register(peak)\n"
                "sys.argv = sys.argv[1:]\n"
                "runpy.run_path(sys.argv[0], run_name='__main__')\n")


@pytest.mark.slow
def test_six_hours_of_audio_to_search_by_stay_small_in_a_real_process(templates: Templates,
                                                                      tmp_path: Path):
    """The issue's case, measured as the OS sees it: 6 h at 8 kHz in a small FLAC took 8.8 GB
    of memory decoded whole; the process's peak resident size must stay under 1 GB (about
    0.3 GB measured, 0.06 GB for a 5 s file). Read as the child's own VmHWM at its exit: the
    rusage of a child counts the parent's resident size from before its exec (a test worker
    that built a 50,000-row library reads as 1.3 GB whatever the child does)."""
    ctx = Ctx(tmp_path, templates)
    ctx.home_with_library()
    write_long_flac(ctx.root / "six.flac", 6.0)
    out, err = ctx.scratch / "out.txt", ctx.scratch / "err.txt"
    try:
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen([sys.executable, "-c", PEAK_AT_EXIT, str(MAIN), "library",
                                     "list", "--like", str(ctx.root / "six.flac")],
                                    env=ctx.full_env(), stdin=subprocess.DEVNULL,
                                    stdout=stdout, stderr=stderr)
            try:
                status = proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        said = err.read_text(encoding="utf-8", errors="replace")
    finally:
        ctx.cleanup()
    assert status == 0, said
    assert "6 h 0 min long; only its first 6 min 20 s were compared" in said
    peak_kb = int(re.search(r"VmHWM:\s*(\d+) kB", said).group(1))
    assert peak_kb < 1 << 20, f"peak resident size {peak_kb >> 10} MB"


def test_team_tables_and_json_escape_hidden_characters(capsys: pytest.CaptureFixture[str]):
    """`team list/show/search` print through engines.cli.team_output (a server is the team
    tests' business; what reaches the terminal is this module's)."""
    from engines.cli.team_output import say_entries
    from engines.team.entries import TeamEntry, TeamFile

    entry = TeamEntry(7, BIDI, BIDI, "", 1, "demo", "", "t2a", 1.0, "ann\u202eeve", "",
                      "2026-01-01T00:00:00", 4.0, 2, ["tag\u2066x\u2069", "zw\u200b"],
                      files=[TeamFile("audio", "take\u202evaw.flac", "ab" * 32, 10, "flac")])
    say_entries([entry], as_json=False, files=True)
    table = capsys.readouterr().out
    say_entries([entry], as_json=True)
    shown = capsys.readouterr().out
    for text in (table, shown):
        assert not {c for c in text if c != "\n" and unicodedata.category(c) in HIDDEN}
    assert "ann\\u202eeve" in table and "take\\u202evaw.flac" in table
    assert json.loads(shown)[0]["designer"] == "ann\u202eeve"  # the JSON still reads back
