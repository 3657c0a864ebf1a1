"""The command line in a hostile world (issue 10): a table of cases, each run through the real
CLI in its own process with its own data folder, judged by one set of promises (see
tests/hostile_support.py): the exit code the README promises (0 done; 2 refused, one line,
nothing written; 1 failed at run time with a sentence; 130 cancelled), no traceback, no
catch-all, one clean sentence on stderr, and every file that was there before still there and
intact, with only the expected files new.

Most cases are refused before anything renders; those that render use the demo model set at
0.5 s and 2 steps. Cases needing root (tmpfs mounts, chattr +i) skip elsewhere.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.hostile_support import (
    IS_ROOT,
    Case,
    Check,
    Ctx,
    RawServer,
    Result,
    Templates,
    all_of,
    audio_written,
    case_params,
    closed_port,
    gen_args,
    http_answer,
    judge_case,
    make_templates,
    sha256_of,
    write_wav,
)

pytestmark = pytest.mark.posix  # mounts, chattr, modes, names that are not UTF-8

GEN_OUT = ("out/a.wav", "out/a.json")
HUGE = "1180591620717411303424"  # 2**70: past every integer SQLite or C can hold
CTRL_PROMPT = "boom \x1b[31mRED\x1b[0m \x07bell \rCR \x9b2J end"
BAD = b"\xff\xfe"  # never valid UTF-8


# --------------------------------------------------------------------------------------------
# Setups


def init_wav(name: str = "init.wav", seconds: float = 0.5):
    def setup(ctx: Ctx) -> None:
        write_wav(ctx.root / name, seconds)

    return setup


def init_bytes(data: bytes):
    def setup(ctx: Ctx) -> None:
        (ctx.root / "init.wav").write_bytes(data)

    return setup


def init_data(data: np.ndarray, subtype: str):
    def setup(ctx: Ctx) -> None:
        write_wav(ctx.root / "init.wav", data=data, subtype=subtype)

    return setup


def home_is_file(ctx: Ctx) -> None:
    ctx.home.write_bytes(b"a file where the data folder should be\n")


def home_under_read_only_mount(ctx: Ctx) -> None:
    ctx.home = ctx.mount_tmpfs(ctx.root / "ro", ro=True) / "home"


def home_parent_is_file(ctx: Ctx) -> None:
    (ctx.root / "plain").write_bytes(b"a file\n")
    ctx.home = ctx.root / "plain" / "home"


def library_on_full_disk(ctx: Ctx) -> None:
    ctx.fill(ctx.mount_tmpfs(ctx.home / "library", "256k"))


def library_with_takes_on_full_disk(ctx: Ctx) -> None:
    library = ctx.mount_tmpfs(ctx.home / "library", "2m")
    shutil.copytree(ctx.templates.library_home / "library", library, dirs_exist_ok=True)
    ctx.fill(library)


def home_on_full_disk(ctx: Ctx) -> None:
    ctx.home_with_models(ctx.root / "models-home")  # models on a roomy disk: --models-dir
    ctx.fill(ctx.mount_tmpfs(ctx.home, "256k"))


def read_only_library(ctx: Ctx) -> None:
    library = ctx.mount_tmpfs(ctx.home / "library", "8m")
    shutil.copytree(ctx.templates.library_home / "library", library, dirs_exist_ok=True)
    ctx.remount_ro(library)


def read_only_home(ctx: Ctx) -> None:
    home = ctx.mount_tmpfs(ctx.home, "32m")
    ctx.home_with_library(home)
    ctx.remount_ro(home)


def read_only_dir(ctx: Ctx) -> None:
    ctx.mount_tmpfs(ctx.out / "ro", ro=True)


def full_dir(ctx: Ctx) -> None:
    ctx.fill(ctx.mount_tmpfs(ctx.out / "full", "256k"))


def small_dir(ctx: Ctx) -> None:
    ctx.mount_tmpfs(ctx.out / "small", "128k")  # room for one take, not for two


def dir_in_the_way(name: str):
    def setup(ctx: Ctx) -> None:
        (ctx.out / name).mkdir()
        (ctx.out / name / "keep.txt").write_text("the user's file\n")

    return setup


def immutable_file(name: str):
    def setup(ctx: Ctx) -> None:
        write_wav(ctx.out / name, 0.2)
        ctx.immutable(ctx.out / name)

    return setup


def immutable_dir(ctx: Ctx) -> None:
    (ctx.out / "imm").mkdir()
    (ctx.out / "imm" / "keep.txt").write_text("the user's file\n")
    ctx.immutable(ctx.out / "imm")


def symlink_to_read_only_file(ctx: Ctx) -> None:
    ro = ctx.mount_tmpfs(ctx.out / "ro", "1m")
    write_wav(ro / "target.wav", 0.2)
    ctx.remount_ro(ro)
    (ctx.out / "link.wav").symlink_to(ro / "target.wav")


def previous_take_with_sidecar_folder(ctx: Ctx) -> None:
    write_wav(ctx.out / "prev.wav", 0.3)
    (ctx.out / "prev.json").mkdir()
    (ctx.out / "prev.json" / "keep.txt").write_text("the user's file\n")


def invalid_utf8_out_folder(ctx: Ctx) -> None:
    os.mkdir(os.fsencode(ctx.out) + b"/d" + BAD)


def invalid_utf8_init(ctx: Ctx) -> None:
    write_wav(os.fsencode(ctx.root) + b"/init-" + BAD + b".wav", 0.5)


def out_is_init(ctx: Ctx) -> None:
    write_wav(ctx.out / "in.wav", 0.5)
    ctx.vars["init_sha"] = sha256_of(ctx.out / "in.wav")


def out_is_init_link(ctx: Ctx) -> None:
    out_is_init(ctx)
    os.link(ctx.out / "in.wav", ctx.out / "link.wav")  # the same file under another name


def take_with_control_characters(ctx: Ctx) -> None:
    ctx.must(gen_args(prompt=CTRL_PROMPT, out="{out}/c.wav"))
    take = json.loads((ctx.out / "c.json").read_text()).get("library_id")
    if take is None:
        pytest.fail("setup: the take with control characters was not kept in the library")
    ctx.vars["take"] = str(take)


def show_control_take(*extra: str):
    return lambda ctx: ["library", "show", ctx.vars["take"], *extra]


def stale_partials(ctx: Ctx) -> None:
    old = time.time() - 2 * 86400
    for name, data in ((".a.deadbeef.partial.wav", b"RIFF\0\0\0\0WAVEhalf a take"),
                       (".a.deadbeef.partial.json", b'{"half": ')):
        (ctx.out / name).write_bytes(data)
        os.utime(ctx.out / name, (old, old))


def settings(data: bytes | None = None, folder: bool = False):
    def setup(ctx: Ctx) -> None:
        path = ctx.home / "settings.json"
        if folder:
            path.mkdir()
            (path / "keep.txt").write_text("the user's file\n")
        else:
            path.write_bytes(data)

    return setup


def hub_endpoint(make_server):
    def setup(ctx: Ctx) -> None:
        server = make_server()
        if isinstance(server, str):
            ctx.env["HF_ENDPOINT"] = server
            return
        ctx.env["HF_ENDPOINT"] = ctx.serve(server).endpoint

    return setup


def closed_hub() -> str:
    return f"http://127.0.0.1:{closed_port()}"


def empty_fake_hub():
    from tests.fake_hub import FakeHub

    return FakeHub()


def random_bytes_hub() -> RawServer:
    return RawServer(random.Random(1010).randbytes(3000))


def library_db_bytes(data: bytes):
    def setup(ctx: Ctx) -> None:
        (ctx.home / "library" / "library.sqlite3").write_bytes(data)

    return setup


def library_db_folder(ctx: Ctx) -> None:
    db = ctx.home / "library" / "library.sqlite3"
    db.unlink()
    db.mkdir()
    (db / "keep.txt").write_text("the user's file\n")


def library_db_from_the_future(ctx: Ctx) -> None:
    conn = sqlite3.connect(ctx.home / "library" / "library.sqlite3")
    conn.execute("PRAGMA user_version = 999")
    conn.close()


def take_audio_deleted(ctx: Ctx) -> None:
    ctx.library_audio(1).unlink()


def plain_wav_in_out(ctx: Ctx) -> None:
    write_wav(ctx.out / "plain.wav", 0.2)


def garbage_in_out(ctx: Ctx) -> None:
    (ctx.out / "junk.wav").write_bytes(random.Random(7).randbytes(5000))


def sub_folder(ctx: Ctx) -> None:
    (ctx.out / "sub").mkdir()


def non_utf8_home(ctx: Ctx) -> None:
    ctx.home = ctx.root / os.fsdecode(b"h" + BAD + b"ome")
    ctx.home_with_models()


def non_utf8_home_with_take(ctx: Ctx) -> None:
    non_utf8_home(ctx)
    ctx.must(gen_args(out="{out}/first.wav"))


def a_file(name: str):
    def setup(ctx: Ctx) -> None:
        (ctx.root / name).write_bytes(b"not a folder\n")

    return setup


def onnxruntime_takes_long_command_lines(_ctx: Ctx) -> None:
    """The GPU machine's onnxruntime 1.30 crashed (SIGSEGV, inside its own import) whenever
    the command line held 100 KB, before any of our code ran; 1.32 here does not. Where
    importing it alone under such a command line crashes, the case cannot say anything about
    us."""
    probe = subprocess.run([sys.executable, "-c", "import onnxruntime", "x" * 100_000],
                           capture_output=True, timeout=120)
    if probe.returncode < 0:
        pytest.skip(f"this onnxruntime crashes on import with a 100 KB command line "
                    f"(signal {-probe.returncode}), before any SA3 Studio code runs")


def unreadable_init(ctx: Ctx) -> None:
    if IS_ROOT:
        pytest.skip("root reads files whatever their mode")
    write_wav(ctx.root / "init.wav", 0.5)
    ctx.chmod(ctx.root / "init.wav", 0)


def fifo_init(ctx: Ctx) -> None:
    os.mkfifo(ctx.root / "init.wav")


# --------------------------------------------------------------------------------------------
# Checks


def names_home(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    if result.rc == 0 or str(ctx.home) in result.error_line:
        return []
    return [f"the error line does not name the data folder {ctx.home}"]


def library_id_is_null(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    if result.rc != 0:
        return []
    try:
        meta = json.loads((ctx.out / "a.json").read_text())
    except (OSError, ValueError) as err:
        return [f"out/a.json is not readable JSON ({err})"]
    if meta.get("library_id") is not None:
        return ["the sidecar claims a library id although the library could not keep it"]
    return []


def mode_is(mode: int, *names: str) -> Check:
    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        if result.rc != 0:
            return []
        problems = []
        for name in names:
            got = os.stat(ctx.out / name).st_mode & 0o777
            if got != mode:
                problems.append(f"out/{name} has mode {got:04o}, expected {mode:04o} from the "
                                "umask")
        return problems

    return check


def stdout_has(*texts: str) -> Check:
    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        if result.rc != 0:
            return []
        return [f"stdout does not contain {text!r}" for text in texts if text not in result.out]

    return check


def set_aside(required: bool) -> Check:
    """A damaged settings file is either left alone (when the command never read it) or moved
    aside whole, with a warning; it is never deleted."""

    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        home = os.path.relpath(ctx.home, ctx.root)
        key = f"{home}/settings.json"

        def tree(snap: dict, top: str) -> dict:
            # content only: a settings file read is made private (0600), which is no change
            return {rel[len(top):]: (v[0], *v[2:]) if v[0] in ("file", "dir") else v
                    for rel, v in snap.items() if rel == top or rel.startswith(top + "/")}

        original = tree(before, key)
        if tree(after, key) == original:
            return ["the damaged settings file was neither set aside nor reported"] \
                if required else []
        problems = []
        siblings = {rel.split("/")[len(key.split("/")) - 1] for rel in after
                    if rel.startswith(f"{home}/settings.json") and rel != key
                    and not rel.startswith(key + "/")}
        if not any(tree(after, f"{home}/{name}") == original for name in siblings):
            problems.append("the damaged settings content is not kept anywhere (deleted?)")
        if not any("settings" in w.lower() for w in result.lines("warning: ")):
            problems.append("no warning line tells that the settings file was set aside")
        return problems

    return check


def salvaged(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    """The damaged database's bytes are kept somewhere, and the takes are listed again."""
    problems = []
    home = os.path.relpath(ctx.home, ctx.root)
    old = before.get(f"{home}/library/library.sqlite3")
    if old and old[0] == "file" and old[2] != after.get(f"{home}/library/library.sqlite3"):
        new = set(after) - set(before)
        if not any(after[rel][0] == "file" and after[rel][2] == old[2] for rel in new):
            problems.append("the damaged database's bytes were not kept aside")
    if result.rc == 0 and "2 of 2 takes" not in result.out:
        problems.append("the takes were not salvaged from their audio files ('2 of 2 takes' "
                        "missing from the listing)")
    return problems


def read_only_answer(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    if result.rc == 0 or "read-only" in result.error_line.lower():
        return []
    return ["a read-only library failed without saying 'read-only'"]


def no_raw_controls(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
    found = [ascii(c.decode("latin-1")) for c in (b"\x1b", b"\x07", b"\r", b"\xc2\x9b")
             if c in result.stdout]
    return [f"stdout prints raw control characters {', '.join(found)}"] if found else []


# --------------------------------------------------------------------------------------------
# The table


# A render whose output fails after it keeps its take in the library (see Case.keeps_take).
KEPT_TAKE = dict(keeps_take=True, may_create=("{home}/library/audio/*",))


def out_failures(kind: str, setup, folder: str, says: str, name: str = "x",
                 late: bool = False) -> list[Case]:
    """Issue 4: the same failure for a .wav, a .flac and a --no-library render. Most are
    refused before the render (exit 2, nothing written); `late` ones (a disk that fills up
    while writing) can only fail after it: exit 1, and the take is kept in the library."""
    target = f"{{out}}/{folder}{name}" if folder else f"{{out}}/{name}"
    code = 1 if late else 2
    kept = KEPT_TAKE if late else {}
    return [
        Case(f"out-{kind}-wav", gen_args(out=f"{target}.wav"), code, setup, says=(says,),
             **kept),
        Case(f"out-{kind}-flac", gen_args(out=f"{target}.flac"), code, setup, says=(says,),
             **kept),
        Case(f"out-{kind}-no-library", gen_args("--no-library", out=f"{target}.wav"), code,
             setup, says=(says,)),
    ]


def out_dir_in_the_way() -> list[Case]:
    return [
        Case("out-is-folder-wav", gen_args(out="{out}/x.wav"), 2, dir_in_the_way("x.wav"),
             says=("folder|directory",)),
        Case("out-is-folder-flac", gen_args(out="{out}/x.flac"), 2, dir_in_the_way("x.flac"),
             says=("folder|directory",)),
        Case("out-is-folder-no-library", gen_args("--no-library", out="{out}/x.wav"), 2,
             dir_in_the_way("x.wav"), says=("folder|directory",)),
    ]


def out_immutable_file() -> list[Case]:
    """An immutable file can only be found out when it is replaced, after the render: exit 1,
    the take kept in the library and named, the old sidecar put back."""
    says = "protect|immutable|permi"
    return [
        Case("out-immutable-file-wav", gen_args(out="{out}/x.wav"), 1, immutable_file("x.wav"),
             says=(says,), **KEPT_TAKE),
        Case("out-immutable-file-flac", gen_args(out="{out}/x.flac"), 1,
             immutable_file("x.flac"), says=(says,), **KEPT_TAKE),
        Case("out-immutable-file-no-library", gen_args("--no-library", out="{out}/x.wav"), 1,
             immutable_file("x.wav"), says=(says,)),
    ]


def bad_number(flag: str, value: str, says: str, *extra: str, setup=None) -> Case:
    return Case(f"{flag.strip('-')}-{value}", gen_args(*extra, flag, value), 2, setup,
                says=(says,))


INIT = ("--init-audio", "{root}/init.wav")
SPAN_SAYS = ("span|START:END",)
NOT_ARGPARSE = ("expected at least one argument", "expected one argument")
SETTINGS_PATHS = dict(may_change=("{home}/settings.json", "{home}/settings.json/*"),
                      may_create=("{home}/settings.json*",))
HUB = dict(home="fresh", exit=(1, 2), timeout=20.0, never=("Retrying", "UnicodeDecodeError"))
DOWNLOAD_DRY = ["models", "download", "sm-sfx", "--onnx", "--dry-run"]

CASES: list[Case] = [
    # -- controls: the world works when nothing is hostile --
    Case("control-generate", gen_args(), 0, creates=GEN_OUT, check=audio_written("{out}/a.wav")),
    Case("control-library-list", ["library", "list"], 0, home="library",
         check=stdout_has("2 of 2 takes")),

    # -- 1: the data folder cannot be created --
    Case("home-is-file-generate", gen_args(), 2, home_is_file, home="none",
         says=("SA3_STUDIO_HOME",), check=names_home),
    Case("home-is-file-library-list", ["library", "list"], 2, home_is_file, home="none",
         says=("SA3_STUDIO_HOME",), check=names_home),
    Case("home-is-file-models-list", ["models", "list"], 2, home_is_file, home="none",
         says=("SA3_STUDIO_HOME",), check=names_home),
    Case("home-read-only-mount-generate", gen_args(), 2, home_under_read_only_mount,
         home="none", says=("SA3_STUDIO_HOME",), check=names_home),
    Case("home-read-only-mount-library-list", ["library", "list"], 2,
         home_under_read_only_mount, home="none", says=("SA3_STUDIO_HOME",), check=names_home),
    Case("home-parent-is-file-generate", gen_args(), 2, home_parent_is_file, home="none",
         says=("SA3_STUDIO_HOME",), check=names_home),

    # -- 2: an init file whose name is not UTF-8 --
    Case("init-invalid-utf8-name", gen_args("--init-audio", b"{root}/init-" + BAD + b".wav"),
         0, invalid_utf8_init, creates=GEN_OUT, check=audio_written("{out}/a.wav")),
    Case("init-invalid-utf8-name-inpaint",
         gen_args("--init-audio", b"{root}/init-" + BAD + b".wav", "--inpaint", "0.1:0.3"), 0,
         invalid_utf8_init, creates=GEN_OUT, check=audio_written("{out}/a.wav")),

    # -- 3: the library's disk is full, --out is on a roomy one --
    Case("library-disk-full", gen_args(), 0, library_on_full_disk, creates=GEN_OUT,
         warns=("library",), check=all_of(audio_written("{out}/a.wav"), library_id_is_null)),
    Case("library-with-takes-disk-full", gen_args(), 0, library_with_takes_on_full_disk,
         creates=GEN_OUT, warns=("library",),
         check=all_of(audio_written("{out}/a.wav"), library_id_is_null)),
    Case("home-disk-full", gen_args("--models-dir", "{root}/models-home/models"), 0,
         home_on_full_disk, home="none", creates=GEN_OUT, warns=("library",),
         check=all_of(audio_written("{out}/a.wav"), library_id_is_null)),

    # -- 4: the default output cannot be written: exit 2, one sentence, every format --
    *out_failures("read-only", read_only_dir, "ro/", "read-only|read only"),
    *out_failures("disk-full", full_dir, "full/", "full|space", late=True),
    *out_dir_in_the_way(),
    *out_immutable_file(),
    *out_failures("immutable-folder", immutable_dir, "imm/", "protect|immutable|permi"),
    *out_failures("name-too-long", None, "", "too long", name="a" * 300),

    # -- 5: a sidecar that cannot be written never costs the existing file --
    Case("sidecar-is-folder-keeps-previous", gen_args(out="{out}/prev.wav"), (1, 2),
         previous_take_with_sidecar_folder),
    Case("sidecar-is-folder-keeps-previous-no-library",
         gen_args("--no-library", out="{out}/prev.wav"), (1, 2),
         previous_take_with_sidecar_folder),

    # -- 6: arguments that are not UTF-8 --
    Case("prompt-invalid-utf8", gen_args(prompt=b"coin " + BAD + b" pickup"), (0, 2),
         creates=GEN_OUT),
    Case("negative-prompt-invalid-utf8",
         gen_args("--negative-prompt", b"wind " + BAD, "--cfg", "2"), (0, 2), creates=GEN_OUT),
    Case("out-invalid-utf8-name", gen_args(out=b"{out}/take-" + BAD + b".wav"), 0,
         creates=("out/take-\udcff\udcfe.wav", "out/take-\udcff\udcfe.json")),
    Case("out-invalid-utf8-folder", gen_args(out=b"{out}/d" + BAD + b"/x.wav"), 0,
         invalid_utf8_out_folder,
         creates=("out/d\udcff\udcfe/x.wav", "out/d\udcff\udcfe/x.json")),
    Case("home-invalid-utf8-generate", gen_args(), 0, non_utf8_home, home="none",
         creates=GEN_OUT, check=audio_written("{out}/a.wav")),
    Case("home-invalid-utf8-library-list", ["library", "list"], 0, non_utf8_home_with_take,
         home="none", check=stdout_has("1 of 1 take")),

    # -- 7: ids and limits no integer type holds --
    Case("show-huge-id", ["library", "show", HUGE], 2, home="library"),
    Case("export-huge-id", ["library", "export", HUGE, "--to", "{out}"], 2, home="library"),
    # A limit past anything a library holds means "all of them".
    Case("list-huge-limit", ["library", "list", "--limit", "99999999999999999999999"], 0,
         home="library", check=stdout_has("2 of 2 takes")),
    Case("show-negative-id", ["library", "show", "-1"], 2, home="library"),
    Case("export-negative-id", ["library", "export", "-1", "--to", "{out}"], 2,
         home="library"),
    Case("export-zero-id", ["library", "export", "0", "--to", "{out}"], 2, home="library"),
    Case("show-unknown-id", ["library", "show", "99"], 2, home="library"),
    Case("show-superscript-digit", ["library", "show", "\u00b2"], 2, home="library"),
    Case("list-huge-min-rating", ["library", "list", "--min-rating", "99999999999999999999"],
         2, home="library", says=("rating",)),

    # -- 8: exports that cannot be written leave nothing behind --
    Case("export-zip-read-only", ["library", "export", "1", "--zip", "{out}/ro/x.zip"], (1, 2),
         read_only_dir, home="library", says=("read-only|read only",)),
    Case("export-zip-disk-full", ["library", "export", "1", "2", "--zip", "{out}/full/x.zip"],
         (1, 2), full_dir, home="library", says=("full|space",)),
    Case("export-zip-disk-fills-up", ["library", "export", "1", "2",
                                      "--zip", "{out}/small/x.zip"],
         (1, 2), small_dir, home="library", says=("full|space",)),
    # the first take fits, the second does not: what was finished may stay, no temporary may
    Case("export-to-disk-fills-up", ["library", "export", "1", "2", "--to", "{out}/small"],
         (1, 2), small_dir, home="library", says=("full|space",),
         may_create=("out/small/*_01.wav", "out/small/*_01.json")),
    Case("export-zip-target-is-folder", ["library", "export", "1", "--zip", "{out}/x.zip"],
         (1, 2), dir_in_the_way("x.zip"), home="library", says=("folder|directory",)),
    Case("export-to-read-only", ["library", "export", "1", "--to", "{out}/ro"], (1, 2),
         read_only_dir, home="library", says=("read-only|read only",)),
    Case("export-to-full-disk", ["library", "export", "1", "--to", "{out}/full"], (1, 2),
         full_dir, home="library", says=("full|space",)),

    # -- 9: a damaged settings file is set aside, never deleted, and never stops a command --
    Case("settings-json-list-library-list", ["library", "list"], 0, settings(b"[1, 2]\n"),
         home="library", check=set_aside(False), **SETTINGS_PATHS),
    Case("settings-folder-library-list", ["library", "list"], 0, settings(folder=True),
         home="library", check=set_aside(False), **SETTINGS_PATHS),
    Case("settings-not-json-library-list", ["library", "list"], 0, settings(b"{oops"),
         home="library", check=set_aside(False), **SETTINGS_PATHS),
    Case("settings-invalid-utf8-library-list", ["library", "list"], 0,
         settings(b'{"a": "\xff\xfe"}'), home="library", check=set_aside(False),
         **SETTINGS_PATHS),
    Case("settings-json-list-models-list", ["models", "list"], 0, settings(b"[1, 2]\n"),
         home="fresh", check=set_aside(True), **SETTINGS_PATHS),
    Case("settings-folder-models-list", ["models", "list"], 0, settings(folder=True),
         home="fresh", check=set_aside(True), **SETTINGS_PATHS),
    Case("settings-invalid-utf8-models-list", ["models", "list"], 0,
         settings(b'{"extra_model_dirs": ["\xff\xfe"]}'), home="fresh", check=set_aside(True),
         **SETTINGS_PATHS),
    Case("settings-not-json-generate", gen_args(), 0, settings(b"\x00\x01 not json"),
         creates=GEN_OUT, check=set_aside(True), **SETTINGS_PATHS),
    Case("settings-invalid-utf8-generate", gen_args(), 0, settings(b"{\"a\": \"\xff\"}"),
         creates=GEN_OUT, check=set_aside(True), **SETTINGS_PATHS),
    Case("settings-extra-dirs-not-a-list", ["models", "list"], 0,
         settings(b'{"extra_model_dirs": 5}'), home="fresh", check=set_aside(False),
         **SETTINGS_PATHS),
    Case("settings-extra-dirs-unusable-paths", ["models", "list"], 0,
         settings(b'{"extra_model_dirs": ["\\u0000x", "\\ud800", 7, null]}'), home="fresh",
         check=set_aside(False), **SETTINGS_PATHS),

    # -- 10, 11: a hub that is not there, or not a hub --
    Case("hub-closed-port-dry-run", DOWNLOAD_DRY, setup=hub_endpoint(closed_hub), **HUB),
    Case("hub-closed-port-download", DOWNLOAD_DRY[:-1], setup=hub_endpoint(closed_hub), **HUB),
    Case("hub-random-bytes", DOWNLOAD_DRY, setup=hub_endpoint(random_bytes_hub), **HUB),
    Case("hub-http-500", DOWNLOAD_DRY, setup=hub_endpoint(lambda: RawServer(http_answer(
        "500 Internal Server Error", b'{"error": "boom"}'))), **HUB),
    Case("hub-html-page", DOWNLOAD_DRY, setup=hub_endpoint(lambda: RawServer(http_answer(
        "200 OK", b"<html><body>captive portal</body></html>", "text/html"))), **HUB),
    Case("hub-json-not-utf8", DOWNLOAD_DRY, setup=hub_endpoint(lambda: RawServer(http_answer(
        "200 OK", b'[{"path": "\xff\xfe"}]'))), **HUB),
    Case("hub-repository-missing", DOWNLOAD_DRY, setup=hub_endpoint(empty_fake_hub), **HUB),
    Case("hub-endpoint-not-a-url", DOWNLOAD_DRY, setup=hub_endpoint(lambda: "not a url"),
         **HUB),

    # -- 12: a read-only library is read, never "close other copies" --
    Case("read-only-library-list", ["library", "list"], (0, 1, 2), read_only_library,
         never=("close other copies",),
         check=all_of(read_only_answer, stdout_has("2 of 2 takes"))),
    Case("read-only-library-show", ["library", "show", "1"], (0, 1, 2), read_only_library,
         never=("close other copies",), check=read_only_answer),
    Case("read-only-home-library-list", ["library", "list"], (0, 1, 2), read_only_home,
         home="none", never=("close other copies",),
         check=all_of(read_only_answer, stdout_has("2 of 2 takes"))),
    Case("read-only-library-export", ["library", "export", "1", "--to", "{out}"], 0,
         read_only_library, never=("close other copies",),
         creates=("out/*.wav", "out/*.json")),
    Case("read-only-library-generate", gen_args(), 0, read_only_library, creates=GEN_OUT,
         warns=("library",), never=("close other copies",),
         check=all_of(audio_written("{out}/a.wav"), library_id_is_null)),

    # -- 13: inpaint spans: our rule, not argparse's --
    Case("inpaint-negative-start", gen_args(*INIT, "--inpaint", "-1:1"), 2, init_wav(),
         says=SPAN_SAYS, never=NOT_ARGPARSE),
    Case("inpaint-negative-start-equals", gen_args(*INIT, "--inpaint=-1:1"), 2, init_wav(),
         says=SPAN_SAYS, never=NOT_ARGPARSE),
    Case("inpaint-reversed", gen_args(*INIT, "--inpaint", "0.4:0.1"), 2, init_wav(),
         says=SPAN_SAYS),
    Case("inpaint-nan", gen_args(*INIT, "--inpaint", "nan:0.2"), 2, init_wav(),
         says=SPAN_SAYS),
    Case("inpaint-not-a-span", gen_args(*INIT, "--inpaint", "abc"), 2, init_wav(),
         says=SPAN_SAYS),
    Case("inpaint-without-init", gen_args("--inpaint", "0:0.2"), 2, says=("init",)),

    # -- 16: the output replaces its own init file --
    # An output never replaces an input of its own run (issue 19): refused before the render.
    Case("out-is-init", gen_args("--init-audio", "{out}/in.wav", out="{out}/in.wav"), 2,
         out_is_init, says=("would replace the init audio",)),
    Case("out-is-init-hard-link", gen_args("--init-audio", "{out}/in.wav",
                                           out="{out}/link.wav"), 2, out_is_init_link,
         says=("would replace the init audio",)),
    Case("out-in-library-audio", gen_args(out="{home}/library/audio/x.wav"), 2,
         home="library", says=("inside the sound library",)),
    Case("export-into-library-trash", ["library", "export", "1", "--to",
                                       "{home}/library/trash"], 2, home="library",
         says=("inside the sound library",)),

    # -- 17: control characters never reach the terminal raw --
    Case("control-chars-prompt-generate", gen_args(prompt=CTRL_PROMPT), 0, creates=GEN_OUT,
         check=no_raw_controls),
    Case("control-chars-library-list", ["library", "list"], 0, take_with_control_characters,
         home="library", check=all_of(no_raw_controls, stdout_has("boom"))),
    Case("control-chars-library-search", ["library", "list", "--search", "boom"], 0,
         take_with_control_characters, home="library",
         check=all_of(no_raw_controls, stdout_has("boom"))),
    Case("control-chars-library-show", show_control_take(), 0,
         take_with_control_characters, home="library",
         check=all_of(no_raw_controls, stdout_has("boom"))),
    Case("control-chars-library-show-json", show_control_take("--json"), 0,
         take_with_control_characters, home="library", check=no_raw_controls),
    Case("control-chars-out-name", gen_args(out="{out}/bell\x07\x1b[2J.wav"), 0,
         creates=("out/bell\x07\x1b[2J.wav", "out/bell\x07\x1b[2J.json"),
         check=no_raw_controls),
    Case("control-chars-in-error", gen_args(out="{out}/no\x1b[31msuch/x.wav"), 2),

    # -- 19: leftovers, permissions, export folders, option lists, rounding --
    Case("stale-partials-cleaned", gen_args(), 0, stale_partials, creates=GEN_OUT,
         vanishes=("out/.a.deadbeef.partial.wav", "out/.a.deadbeef.partial.json")),
    Case("umask-022", gen_args(out="{out}/p.wav"), 0, umask=0o022,
         creates=("out/p.wav", "out/p.json"), check=mode_is(0o644, "p.wav", "p.json")),
    Case("umask-077", gen_args(out="{out}/p.wav"), 0, umask=0o077,
         creates=("out/p.wav", "out/p.json"), check=mode_is(0o600, "p.wav", "p.json")),
    Case("export-to-new-relative-folder", ["library", "export", "1", "--to", "../new-folder"],
         0, sub_folder, home="library", cwd="out/sub",
         creates=("out/new-folder", "out/new-folder/*.wav", "out/new-folder/*.json")),
    Case("export-no-destination", ["library", "export", "1"], 2, home="library",
         says=("--to", "--zip")),
    Case("seconds-999-rounded", gen_args("--seconds", "999"), 2, says=("seconds",)),
    Case("interrupted-render", gen_args("--seconds", "200", "--steps", "50"), 130,
         interrupt_after=3.0, timeout=40.0),

    # -- cousins: flags and numbers --
    Case("unknown-flag-generate", gen_args("--bogus"), 2, says=("--bogus",)),
    Case("unknown-flag-library", ["library", "list", "--bogus"], 2, home="library",
         says=("--bogus",)),
    Case("unknown-library-command", ["library", "frob"], 2, home="library"),
    Case("unknown-models-command", ["models", "frob"], 2, home="fresh"),
    Case("unknown-top-command", ["frob"], 2, home="fresh", timeout=30.0),
    bad_number("--seconds", "nan", "seconds"),
    bad_number("--seconds", "inf", "seconds"),
    bad_number("--seconds", "-5", "seconds"),
    bad_number("--seconds", "0", "seconds"),
    bad_number("--seconds", "five", "seconds"),
    bad_number("--seconds", "1e400", "seconds"),
    bad_number("--steps", "0", "steps"),
    bad_number("--steps", "99999999999999999999999", "steps"),
    bad_number("--steps", "2.5", "steps"),
    bad_number("--seed", "4294967296", "seed"),
    bad_number("--seed", "-1", "seed"),
    bad_number("--seed", "99999999999999999999999999", "seed"),
    bad_number("--cfg", "nan", "cfg"),
    bad_number("--cfg", "inf", "cfg"),
    bad_number("--cfg", "16", "cfg"),
    bad_number("--apg", "-0.5", "apg"),
    bad_number("--apg", "nan", "apg"),
    bad_number("--init-noise-level", "0", "noise", *INIT, setup=init_wav()),
    bad_number("--init-noise-level", "nan", "noise", *INIT, setup=init_wav()),
    bad_number("--init-noise-level", "1e308", "noise", *INIT, setup=init_wav()),
    bad_number("--limiter-ceiling", "nan", "limiter"),
    bad_number("--limiter-ceiling", "-1", "limiter"),

    # -- cousins: prompts --
    Case("empty-prompt", gen_args(prompt=""), (0, 2), creates=GEN_OUT),
    Case("blank-prompt", gen_args(prompt=" \t "), (0, 2), creates=GEN_OUT),
    Case("prompt-100k-chars", gen_args(prompt="rain " * 20000), 0,
         onnxruntime_takes_long_command_lines, creates=GEN_OUT,
         warns=("token",), check=audio_written("{out}/a.wav"), process=True),
    Case("prompt-100k-chars-bad-seconds", gen_args("--seconds", "nan",
                                                   prompt="rain " * 20000), 2),

    # -- cousins: init files --
    Case("init-empty-file", gen_args(*INIT), 2, init_bytes(b""), says=("init",)),
    Case("init-garbage", gen_args(*INIT), 2, init_bytes(random.Random(3).randbytes(4096)),
         says=("init",)),
    Case("init-is-folder", gen_args(*INIT), 2, lambda ctx: (ctx.root / "init.wav").mkdir(),
         says=("init",)),
    Case("init-missing", gen_args(*INIT), 2, says=("init",)),
    Case("init-unreadable", gen_args(*INIT), 2, unreadable_init, says=("init",)),
    Case("init-zero-frames", gen_args(*INIT), 2,
         init_data(np.zeros((0, 2), np.int16), "PCM_16"), says=("init",)),
    Case("init-nan-samples", gen_args(*INIT), 2,
         init_data(np.full((22050, 2), np.nan, np.float32), "FLOAT"), says=("init",)),
    Case("init-is-fifo", gen_args(*INIT), 2, fifo_init, timeout=30.0, says=("init",)),

    # -- cousins: where things go --
    Case("models-dir-missing", gen_args("--models-dir", "{root}/nope"), 2,
         says=("models-dir",)),
    Case("models-dir-is-file", gen_args("--models-dir", "{root}/plain"), 2, a_file("plain"),
         says=("models-dir",)),
    Case("model-not-installed", gen_args("--model", "medium"), 2),
    Case("out-missing-folder", gen_args(out="{out}/nope/x.wav"), 2, says=("folder",)),
    Case("out-unknown-suffix", gen_args(out="{out}/x.mp3"), 2),
    Case("out-missing", ["generate", "--prompt", "coin"], 2, says=("--out",)),
    Case("prompt-missing", ["generate", "--out", "{out}/a.wav"], 2, says=("--prompt",)),
    Case("format-mismatch", gen_args("--format", "flac"), 2, says=("format",)),
    Case("out-symlink-to-read-only-file", gen_args(out="{out}/link.wav"), 2,
         symlink_to_read_only_file),

    # -- cousins: a damaged library --
    Case("library-db-garbage", ["library", "list"], 0,
         library_db_bytes(random.Random(5).randbytes(8192)), home="library",
         may_create=("{home}/library/*",), warns=("damaged|moved|rebuilt",), check=salvaged),
    Case("library-db-empty-file", ["library", "list"], 0, library_db_bytes(b""),
         home="library", may_create=("{home}/library/*",), warns=("damaged|moved|rebuilt|empty",),
         check=salvaged),
    Case("library-db-is-folder", ["library", "list"], (0, 1, 2), library_db_folder,
         home="library", may_create=("{home}/library/*",),
         may_change=("{home}/library/library.sqlite3/*",)),
    Case("library-db-from-newer-app", ["library", "list"], (1, 2), library_db_from_the_future,
         home="library", says=("newer",)),
    Case("library-audio-deleted-show", ["library", "show", "1"], 0, take_audio_deleted,
         home="library", check=stdout_has("MISSING")),
    Case("library-audio-deleted-list", ["library", "list"], 0, take_audio_deleted,
         home="library", check=stdout_has("MISSING")),
    Case("library-audio-deleted-export", ["library", "export", "1", "--to", "{out}"], 2,
         take_audio_deleted, home="library", says=("missing",)),
    Case("library-audio-deleted-export-zip", ["library", "export", "1", "--zip",
                                              "{out}/x.zip"], 2,
         take_audio_deleted, home="library", says=("missing",)),
    Case("library-show-file-without-note", ["library", "show", "{out}/plain.wav"], 2,
         plain_wav_in_out, home="library"),
    Case("library-show-garbage-file", ["library", "show", "{out}/junk.wav"], 2,
         garbage_in_out, home="library"),
    Case("library-show-folder", ["library", "show", "{out}"], 2, home="library"),
    Case("library-search-invalid-utf8", ["library", "list", "--search", BAD], (0, 2),
         home="library"),
    Case("library-search-fts-quote", ["library", "list", "--search", '"coin'], 0,
         home="library"),
    Case("library-search-fts-operators", ["library", "list", "--search", "AND OR NOT * NEAR("],
         0, home="library"),

    # -- cousins: models --
    Case("models-build-unknown-set", ["models", "build", "nope"], 2, home="fresh"),
    Case("models-add-folder-missing", ["models", "add-folder", "{root}/nope"], 2, home="fresh"),
    Case("models-add-folder-file", ["models", "add-folder", "{root}/plain"], 2,
         a_file("plain"), home="fresh"),
    Case("models-remove-folder-unknown", ["models", "remove-folder", "{root}"], 2,
         home="fresh"),
    Case("models-download-no-sets", ["models", "download"], 2, home="fresh"),
    Case("models-download-bad-arch", ["models", "download", "sm-sfx", "--arch", "sm_x",
                                      "--dry-run"], 2, home="fresh", says=("arch",)),
    Case("models-list-models-dir-file", ["models", "--models-dir", "{root}/plain", "list"], 2,
         a_file("plain"), home="fresh"),
    Case("models-token-empty", ["models", "token"], 2, home="fresh", says=("token",)),
]


# --------------------------------------------------------------------------------------------
# The test


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory, models: Path) -> Templates:
    return make_templates(tmp_path_factory.mktemp("hostile-templates"), models)


def test_the_table_is_big_and_its_ids_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(CASES) >= 80


def test_the_judge_catches_broken_promises(tmp_path: Path):
    """The judging itself, on made-up outcomes: a harness that passes everything is no test."""
    from tests.hostile_support import file_problems, output_problems, snapshot

    case = Case("judge", ["generate"], 2, says=("folder",))

    def said(rc: int, err: str, out: str = "") -> list[str]:
        return output_problems(case, Result(rc, out.encode(), err.encode(), 0.1))

    assert said(2, "error: The folder 'x' does not exist; create it.\n") == []
    assert any("Traceback" in p for p in said(2, "Traceback (most recent call last):\n"))
    assert any("exactly one" in p for p in said(2, "error: a folder.\nerror: b folder.\n"))
    assert any("full stop" in p for p in said(2, "error: no folder here\n"))
    assert any("class" in p for p in said(2, "error: OSError: [Errno 28] folder.\n"))
    assert any("control" in p for p in said(2, "error: the \x1b[2J folder.\n"))
    assert any("unrounded" in p for p in said(2, "error: 380.436 s is too long, folder.\n"))
    assert any("catch-all" in p for p in said(1, "error: folder failed unexpectedly.\n"))
    assert any("neither" in p for p in said(2, "error: folder.\nINFO: noise\n"))
    assert any("/folder/" in p for p in said(2, "error: the disk is full.\n"))
    assert any("stdout" in p for p in said(0, "", "take \x07 done"))

    ctx = Ctx(tmp_path, Templates(tmp_path, tmp_path, tmp_path))
    (ctx.out / "keep.wav").write_bytes(b"one")
    (ctx.out / "gone.wav").write_bytes(b"two")
    before = snapshot(ctx.root)
    (ctx.out / "keep.wav").write_bytes(b"changed")
    (ctx.out / "gone.wav").unlink()
    (ctx.out / "new.json").write_text("{}")
    (ctx.home / "logs").mkdir(parents=True)
    (ctx.home / "logs" / "sa3-studio.log").write_text("fine\n")
    problems = file_problems(case, ctx, before, snapshot(ctx.root), succeeded=False)
    assert sorted(problems) == sorted(["'out/keep.wav' changed (content)",
                                       "'out/gone.wav' vanished",
                                       "unexpected new file 'out/new.json'"])


@pytest.mark.parametrize("case", case_params(CASES))
def test_hostile_cli(case: Case, templates: Templates, tmp_path: Path):
    judge_case(case, templates, tmp_path)
