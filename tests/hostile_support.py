"""Machinery for tests/cli/test_hostile_*.py: run the real command line (in this process, through
tests/cli_runner.py, or in a subprocess where a case needs one) against a hostile world made of
real files, tmpfs mounts and local HTTP servers, and judge what it did.

A case is one row of a table (`Case`): how to set the world up, the argv, the exit code the
README promises, the files that may or must appear. `run_case` snapshots the case's folder tree
(path -> sha256 / dir / link, plus permission bits) before and after one CLI process and
returns every broken promise as a list of sentences, so one failure report tells the fixer
everything at once:

- the exit code (0 done; 2 refused: bad input, nothing written; 1 failed at run time; 130
  cancelled);
- no traceback, no logging crash, no catch-all ("failed unexpectedly");
- a failure is one sentence: exactly one stderr line starting with "error: " (others may only
  be "warning: " lines), ending with a full stop, without Python class names, control
  characters, leaked surrogate escapes or numbers with more than two decimals;
- nothing that existed before vanished or changed, and nothing new appeared except what the
  case allows (on failure: the log folder, empty data-folder skeleton folders and SQLite's own
  -wal/-shm bookkeeping; on success: anything in the data folder plus the case's outputs).

Root-only worlds (tmpfs mounts, chattr +i) skip cleanly elsewhere; every mount and immutable
flag is undone in `Ctx.cleanup`, which runs even when the case failed.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest
import soundfile as sf

from tests.cli_runner import run_cli as in_process_cli

REPO = Path(__file__).resolve().parent.parent
MAIN = REPO / "main.py"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0

Argv = Sequence[str | bytes] | Callable[["Ctx"], Sequence[str | bytes]]
Check = Callable[["Ctx", "Result", dict, dict], list[str]]

# Raw Python names a user must never read in a sentence.
_CLASS_NAME = re.compile(
    r"\b(?:[A-Z][A-Za-z0-9]*(?:Error|Exception)|Errno|Traceback|KeyboardInterrupt|"
    r"StopIteration|errno \d+)\b")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # anything but \t and \n
_SURROGATE = re.compile(r"\\udc[89a-f][0-9a-f]|[\udc80-\udcff]", re.IGNORECASE)
_LONG_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d{3,}(?![\w])")
MAX_SENTENCE = 2000  # a sentence, not an echo of a 100k prompt

# Always allowed (relative to the case's root; "{home}" is the data folder).
# The library's own bookkeeping (database, SQLite's -wal/-shm, the edit journal) may appear or
# change even when a command fails; whether a take was kept is judged by counting the takes.
LIBRARY_BOOKKEEPING = ("{home}/library/library.sqlite3", "{home}/library/library.sqlite3-wal",
                       "{home}/library/library.sqlite3-shm", "{home}/library/library-edits.jsonl")
ALWAYS_MAY_CREATE = ("{home}/logs", "{home}/logs/*", *LIBRARY_BOOKKEEPING)
ALWAYS_MAY_CHANGE = ("{home}/logs/*", *LIBRARY_BOOKKEEPING)
# Empty folders the data folder's skeleton is made of: allowed to appear even on failure.
SKELETON_DIRS = ("{home}", "{home}/models", "{home}/library", "{home}/library/audio",
                 "{home}/library/trash", "{home}/cache")
# On success the data folder may grow (library, caches, logs).
SUCCESS_MAY_CREATE = ("{home}", "{home}/*")


# --------------------------------------------------------------------------------------------
# The table


@dataclass(frozen=True)
class Case:
    """One hostile situation. `exit` is the promised code (or the acceptable codes)."""

    id: str
    argv: Argv
    exit: int | tuple[int, ...]
    setup: Callable[[Ctx], None] | None = None
    home: str = "models"  # "models": data folder with the demo set; "library": with 2 takes;
    #                       "fresh": an empty folder; "none": the setup decides
    creates: tuple[str, ...] = ()  # must exist afterwards when it exits 0
    may_create: tuple[str, ...] = ()
    may_change: tuple[str, ...] = ()  # may change or vanish
    vanishes: tuple[str, ...] = ()  # must be gone afterwards when it exits 0
    says: tuple[str, ...] = ()  # regexes (ignoring case) the error line must match
    warns: tuple[str, ...] = ()  # regexes some warning line must match (when it exits 0)
    never: tuple[str, ...] = ()  # text that must appear nowhere in stdout/stderr
    check: Check | None = None
    timeout: float = 60.0
    umask: int | None = None
    interrupt_after: float | None = None  # send SIGINT this many seconds after the start
    cwd: str | None = None  # relative to the case root; default: the repository root
    allow_cr: bool = False  # progress lines may use \r on stdout
    # A failure after the render (the output could not be moved into place) keeps the take in
    # the library, and the error line must say under which id: the render is not lost.
    keeps_take: bool = False
    # A batch names every bad row on its own line, then sums up: that many 'error: ' lines.
    error_lines: int = 1
    # Run in a real process (a signal is sent, or the process itself is judged); every other
    # case runs the command in the test process (tests/cli_runner.py), which is 10-50x faster.
    process: bool = False

    @property
    def needs_process(self) -> bool:
        return self.process or self.interrupt_after is not None

    @property
    def exits(self) -> tuple[int, ...]:
        return (self.exit,) if isinstance(self.exit, int) else tuple(self.exit)


@dataclass
class Result:
    rc: int | None
    stdout: bytes
    stderr: bytes
    seconds: float
    timed_out: bool = False

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")

    def lines(self, prefix: str) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith(prefix)]

    @property
    def error_line(self) -> str:
        found = self.lines("error: ") or self.lines("cancelled: ")
        return found[0] if found else ""

    def excerpt(self, limit: int = 400) -> str:
        text = (self.err.strip() or self.out.strip()).replace("\n", " | ")
        return text[:limit] + ("..." if len(text) > limit else "")


# --------------------------------------------------------------------------------------------
# Module-wide templates: a data folder with the demo set built, and one with a library of two
# takes, made once through the real CLI and copied into each case that needs them.


@dataclass
class Templates:
    root: Path
    models: Path  # <data>/models with the demo set built
    library_home: Path  # a data folder with models/ and a library of two takes (ids 1 and 2)


def base_env(home: Path | str, scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SA3_", "HF_", "HUGGING", "PYTEST", "COV_"))}
    (scratch / "userhome").mkdir(parents=True, exist_ok=True)
    env.update({
        "SA3_STUDIO_HOME": str(home),
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(scratch / "userhome"),
        "HF_HOME": str(scratch / "hf"),
        "HF_ENDPOINT": "http://127.0.0.1:9",  # never the real hub
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring",
        "LANG": "C.UTF-8",
    })
    env.pop("LC_ALL", None)
    return env


def run_cli(argv: Sequence[str | bytes], env: dict[str, str], *, cwd: Path = REPO,
            timeout: float = 60.0, umask: int | None = None,
            interrupt_after: float | None = None, process: bool = False) -> Result:
    """`python main.py ARGV` in this process, or (`process`, or a SIGINT to send) in its own
    process group, killed (whole group) past `timeout`."""
    if not process and interrupt_after is None:
        start = time.monotonic()
        done = in_process_cli(argv, env=env, cwd=cwd, umask=umask, timeout=timeout, text=False)
        return Result(done.returncode, done.stdout, done.stderr, time.monotonic() - start,
                      done.returncode is None)
    cmd: list[str | bytes] = [sys.executable, str(MAIN), *argv]

    def preexec() -> None:
        if umask is not None:
            os.umask(umask)

    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=preexec)
    timed_out = False
    try:
        if interrupt_after is not None:
            try:
                stdout, stderr = proc.communicate(timeout=interrupt_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
                stdout, stderr = proc.communicate(timeout=timeout)
        else:
            stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stdout, stderr = proc.communicate()
    return Result(None if timed_out else proc.returncode, stdout, stderr,
                  time.monotonic() - start, timed_out)


def case_params(cases: Sequence[Case]) -> list[Any]:
    """The table as pytest parameters: cases run in a real process are marked `slow`."""
    return [pytest.param(case, id=case.id, marks=[pytest.mark.slow] if case.needs_process else [])
            for case in cases]


def gen_args(*extra: str | bytes, out: str | bytes = "{out}/a.wav",
             prompt: str | bytes = "coin pickup, bright") -> list[str | bytes]:
    """A fast demo render (0.5 s, 2 steps, fixed seed); later flags in `extra` win."""
    return ["generate", "--prompt", prompt, "--seconds", "0.5", "--steps", "2", "--seed", "3",
            *extra, "--out", out]


def make_templates(root: Path, models: Path | None = None) -> Templates:
    """`models`: a models folder with the demo set built (copied in, not built again)."""
    home = root / "library-home"
    out = root / "out"
    home.mkdir(parents=True)
    out.mkdir()
    if models is not None:
        shutil.copytree(models, home / "models")
    env = base_env(home, root / "scratch")
    for prompt, seed, name in (("coin pickup, bright", "1", "a.wav"),
                               ("rain on a tin roof", "2", "b.wav")):
        result = run_cli(["generate", "--prompt", prompt, "--seconds", "0.5", "--steps", "2",
                          "--seed", seed, "--out", str(out / name)], env)
        if result.rc != 0:
            raise RuntimeError(f"could not make the template library: {result.excerpt()}")
    shutil.rmtree(home / "logs", ignore_errors=True)
    return Templates(root, home / "models", home)


def write_wav(path: Path | str | bytes, seconds: float = 1.0, *, subtype: str = "PCM_16",
              data: np.ndarray | None = None) -> None:
    """A valid 44.1 kHz stereo file (a quiet chirp unless `data` is given)."""
    if data is None:
        t = np.arange(int(seconds * 44100)) / 44100.0
        mono = 0.3 * np.sin(2 * np.pi * (220 + 200 * t) * t)
        data = np.stack([mono, mono * 0.8], axis=1).astype(np.float32)
    with open(path, "wb") as handle:  # bytes paths (invalid UTF-8 names) work through open()
        sf.write(handle, data, 44100, subtype=subtype, format="WAV")


def sha256_of(path: Path | str | bytes) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------
# The world of one case


class Ctx:
    """A case's folders (`root`: snapshotted tree; `scratch`: not judged), environment,
    and the hostile things it set up, undone by `cleanup`."""

    def __init__(self, base: Path, templates: Templates) -> None:
        self.base = base
        self.templates = templates
        self.root = base / "t"
        self.scratch = base / "scratch"
        self.root.mkdir()
        self.scratch.mkdir()
        self.home: Path = self.root / "home"
        self.out = self.root / "out"
        self.out.mkdir()
        self.env: dict[str, str] = {}
        self.vars: dict[str, Any] = {}
        self._cleanups: list[Callable[[], None]] = []

    # -- data folders --

    def fresh_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)

    def home_with_models(self, home: Path | None = None) -> None:
        home = home or self.home
        home.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self.templates.models, home / "models", dirs_exist_ok=True)

    def home_with_library(self, home: Path | None = None) -> None:
        shutil.copytree(self.templates.library_home, home or self.home, dirs_exist_ok=True)

    def library_audio(self, take: int) -> Path:
        found = sorted((self.home / "library" / "audio").glob(f"{take:06d}-*.wav"))
        assert found, f"template take {take} has no audio file"
        return found[0]

    # -- running --

    def full_env(self) -> dict[str, str]:
        env = base_env(self.home, self.scratch)
        env.update(self.env)
        return env

    def expand(self, item: str | bytes) -> str | bytes:
        names = {"{out}": self.out, "{home}": self.home, "{root}": self.root}
        for token, path in names.items():
            if isinstance(item, bytes):
                item = item.replace(token.encode(), os.fsencode(path))
            else:
                item = item.replace(token, str(path))
        return item

    def cli(self, argv: Sequence[str | bytes], **kwargs: Any) -> Result:
        return run_cli([self.expand(a) for a in argv], self.full_env(), **kwargs)

    def must(self, argv: Sequence[str | bytes]) -> Result:
        """Run a setup step that has to work (e.g. make a take), or fail the case."""
        result = self.cli(argv)
        if result.rc != 0:
            pytest.fail(f"setup step {argv[:2]} exited {result.rc}: {result.excerpt()}")
        return result

    # -- hostile surroundings --

    def mount_tmpfs(self, path: Path, size: str = "256k", *, ro: bool = False) -> Path:
        if not IS_ROOT:
            pytest.skip("mounting a tmpfs needs root")
        path.mkdir(parents=True, exist_ok=True)
        options = f"size={size},mode=0755" + (",ro" if ro else "")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", os.fsencode(path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        self._cleanups.append(lambda: _unmount(path))
        return path

    def remount_ro(self, path: Path) -> None:
        done = subprocess.run(["mount", "-o", "remount,ro", os.fsencode(path)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot remount read-only: {done.stderr.strip()}")

    def fill(self, folder: Path) -> None:
        """Fill the file system under `folder` until it has no byte left."""
        with open(folder / "filler.bin", "wb", buffering=0) as handle:
            chunk = b"\xa5" * 4096
            try:
                while True:
                    handle.write(chunk)
            except OSError as err:
                if err.errno != errno.ENOSPC:
                    raise
            try:
                while True:
                    handle.write(b"\xa5")
            except OSError as err:
                if err.errno != errno.ENOSPC:
                    raise

    def immutable(self, path: Path) -> None:
        if not IS_ROOT:
            pytest.skip("chattr +i needs root")
        done = subprocess.run(["chattr", "+i", os.fsencode(path)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {done.stderr.strip()}")
        self._cleanups.append(lambda: subprocess.run(["chattr", "-i", os.fsencode(path)],
                                                     capture_output=True))

    def chmod(self, path: Path, mode: int) -> None:
        old = stat.S_IMODE(os.lstat(path).st_mode)
        os.chmod(path, mode)
        self._cleanups.append(lambda: os.chmod(path, old))

    def serve(self, server: Any) -> Any:
        """Start a server object with start()/stop() and stop it at cleanup."""
        server.start()
        self._cleanups.append(server.stop)
        return server

    def cleanup(self) -> None:
        while self._cleanups:
            action = self._cleanups.pop()
            try:
                action()
            except Exception:  # noqa: BLE001 - a cleanup must never hide the case's result
                pass


def _unmount(path: Path) -> None:
    target = os.fsencode(path)
    if subprocess.run(["umount", target], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", target], capture_output=True)


# --------------------------------------------------------------------------------------------
# Servers for the hub cases


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RawServer:
    """Answers every connection on 127.0.0.1 with the same bytes, then hangs up."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._stop = threading.Event()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def start(self) -> RawServer:
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        threading.Thread(target=self._loop, daemon=True, name="raw-server").start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            try:
                conn.settimeout(1.0)
                try:
                    conn.recv(65536)
                except OSError:
                    pass
                conn.sendall(self.answer)
            except OSError:
                pass
            finally:
                conn.close()

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()


def http_answer(status: str, body: bytes, content_type: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


# --------------------------------------------------------------------------------------------
# Snapshots


_hash_cache: dict[tuple[int, ...], str] = {}


def _file_hash(path: str, st: os.stat_result) -> str:
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _hash_cache:
        try:
            _hash_cache[key] = sha256_of(path)
        except OSError as err:
            return f"unreadable:{err.errno}:{st.st_size}:{st.st_mtime_ns}"
    return _hash_cache[key]


def snapshot(root: Path) -> dict[str, tuple]:
    """Every path under `root` (relative, "/"-separated) -> ("dir", mode) / ("file", mode,
    sha256) / ("link", target) / ("other", mode). Symbolic links are not followed."""
    found: dict[str, tuple] = {}
    top = str(root)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, top).replace(os.sep, "/")
            try:
                st = os.lstat(path)
            except OSError:
                continue
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir", mode)
            elif stat.S_ISREG(st.st_mode):
                found[rel] = ("file", mode, _file_hash(path, st))
            else:
                found[rel] = ("other", mode)
    return found


def _match(rel: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, p) for p in patterns)


def _show(rel: str) -> str:
    return ascii(rel)[1:-1] if not rel.isprintable() else rel


# --------------------------------------------------------------------------------------------
# Judging


def sentence_problems(line: str, what: str) -> list[str]:
    problems = []
    body = line.split(": ", 1)[1] if ": " in line else line
    if not body.rstrip().endswith("."):
        problems.append(f"{what} does not end with a full stop")
    if _CLASS_NAME.search(line):
        problems.append(f"{what} names a Python class or errno ({_CLASS_NAME.search(line)[0]})")
    if _CONTROL.search(line):
        problems.append(f"{what} holds a control character "
                        f"({ascii(_CONTROL.search(line)[0])})")
    if _SURROGATE.search(line):
        problems.append(f"{what} holds a raw surrogate escape instead of a readable byte")
    if _LONG_DECIMAL.search(line):
        problems.append(f"{what} shows an unrounded number ({_LONG_DECIMAL.search(line)[0]})")
    if len(line) > MAX_SENTENCE:
        problems.append(f"{what} is {len(line)} characters long, not one sentence")
    return problems


def output_problems(case: Case, result: Result) -> list[str]:
    problems: list[str] = []
    both = result.out + "\n" + result.err
    for marker in ("Traceback", "--- Logging error ---"):
        if marker in both:
            problems.append(f"'{marker}' in the output")
    if "failed unexpectedly" in both:
        problems.append("the catch-all answered ('failed unexpectedly')")
    for text in case.never:
        if text.lower() in both.lower():
            problems.append(f"the output says '{text}'")
    for name, raw in (("stdout", result.stdout), ("stderr", result.stderr)):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{name} is not valid UTF-8")
    shown = result.out if not case.allow_cr else result.out.replace("\r", "")
    if _CONTROL.search(shown):
        problems.append(f"stdout holds a raw control character "
                        f"({ascii(_CONTROL.search(shown)[0])})")
    lines = [line for line in result.err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    cancels = [line for line in lines if line.startswith("cancelled: ")]
    warnings = [line for line in lines if line.startswith("warning: ")]
    others = [line for line in lines if line not in errors + cancels + warnings]
    if others:
        problems.append(f"stderr has {len(others)} line(s) that are neither 'error: ' nor "
                        f"'warning: ' (first: {others[0][:160]!r})")
    for line in warnings:
        problems += sentence_problems(line, "a warning line")
    if result.rc is None:
        return problems
    if result.rc == 0:
        if errors:
            problems.append("it exited 0 but printed an 'error: ' line")
        for pattern in case.warns:
            if not any(re.search(pattern, w, re.IGNORECASE) for w in warnings):
                problems.append(f"no warning line matches /{pattern}/")
        return problems
    wanted = cancels if result.rc == 130 else errors
    label = "'cancelled: '" if result.rc == 130 else "'error: '"
    count = 1 if result.rc == 130 else case.error_lines
    if len(wanted) != count:
        problems.append(f"{len(wanted)} {label} lines on stderr instead of exactly "
                        f"{'one' if count == 1 else count}")
    for line in wanted[1:]:
        problems += sentence_problems(line, "a further error line")
    for line in wanted[:1]:
        problems += sentence_problems(line, "the error line")
        for pattern in case.says:
            if not re.search(pattern, line, re.IGNORECASE):
                problems.append(f"the error line does not match /{pattern}/")
    return problems


def file_problems(case: Case, ctx: Ctx, before: dict, after: dict, succeeded: bool) -> list[str]:
    home = os.path.relpath(ctx.home, ctx.root).replace(os.sep, "/")

    def expand(patterns: Sequence[str]) -> list[str]:
        return [p.replace("{home}", home) for p in patterns]

    may_create = expand(ALWAYS_MAY_CREATE) + expand(case.may_create)
    if succeeded:
        may_create += expand(SUCCESS_MAY_CREATE) + expand(case.creates)
    may_change = expand(ALWAYS_MAY_CHANGE) + expand(case.may_change)
    skeleton = expand(SKELETON_DIRS)
    problems = []
    new = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    for rel in new:
        if _match(rel, may_create):
            continue
        if after[rel][0] == "dir" and _match(rel, skeleton):
            continue
        problems.append(f"unexpected new {after[rel][0]} '{_show(rel)}'")
    for rel in gone:
        if not _match(rel, may_change + expand(case.vanishes)):
            problems.append(f"'{_show(rel)}' vanished")
    for rel in changed:
        if rel == f"{home}/settings.json" and _made_private(before[rel], after[rel]):
            continue
        if not _match(rel, may_change):
            kind = before[rel][0]
            detail = ("permissions" if kind in ("file", "dir") and before[rel][2:] == after[rel][2:]
                      else "content")
            problems.append(f"'{_show(rel)}' changed ({detail})")
    if succeeded:
        for pattern in expand(case.creates):
            if not any(fnmatch.fnmatchcase(rel, pattern) for rel in after):
                problems.append(f"'{_show(pattern)}' was not written")
        for pattern in expand(case.vanishes):
            if any(fnmatch.fnmatchcase(rel, pattern) for rel in after):
                problems.append(f"'{_show(pattern)}' is still there")
    return problems


def _made_private(before: tuple, after: tuple) -> bool:
    """The settings file read and made readable by its owner alone (0600: it may hold the
    team's publisher line), its content unchanged: a promise kept, not a change."""
    return before[0] == after[0] == "file" and before[2:] == after[2:] and after[1] == 0o600


def count_takes(home: Path) -> int | None:
    """How many takes the library database at `home` holds (None: no readable database). Read
    as an immutable file, so the look itself leaves no trace."""
    db = Path(home) / "library" / "library.sqlite3"
    try:
        if not db.is_file():
            return None
        conn = sqlite3.connect(f"file:{quote(os.fsencode(db))}?immutable=1", uri=True)
        try:
            return conn.execute("SELECT count(*) FROM takes").fetchone()[0]
        finally:
            conn.close()
    except (sqlite3.Error, OSError, ValueError):
        return None


def run_case(case: Case, ctx: Ctx) -> tuple[Result, list[str]]:
    """Set up, snapshot, run, snapshot, judge. Returns the result and every problem found."""
    if case.home == "models":
        ctx.home_with_models()
    elif case.home == "library":
        ctx.home_with_library()
    elif case.home == "fresh":
        ctx.fresh_home()
    if case.setup is not None:
        case.setup(ctx)
    argv = case.argv(ctx) if callable(case.argv) else case.argv
    cwd = ctx.root / case.cwd if case.cwd else REPO
    takes_before = count_takes(ctx.home)
    before = snapshot(ctx.root)
    result = ctx.cli(argv, cwd=cwd, timeout=case.timeout, umask=case.umask,
                     interrupt_after=case.interrupt_after, process=case.needs_process)
    after = snapshot(ctx.root)
    takes_after = count_takes(ctx.home)
    problems = []
    if result.timed_out:
        problems.append(f"did not finish within {case.timeout:g} s")
    elif result.rc not in case.exits:
        expected = " or ".join(str(c) for c in case.exits)
        problems.append(f"exit {result.rc}, expected {expected}")
    problems += output_problems(case, result)
    succeeded = result.rc == 0 and 0 in case.exits
    problems += file_problems(case, ctx, before, after, succeeded)
    kept = (takes_after or 0) - (takes_before or 0)
    if not succeeded and kept > 0 and case.keeps_take:
        if f"kept in the library as #{takes_after}" not in result.err:
            problems.append("a take kept after a late failure is not named in the error line")
    elif not succeeded and kept > 0:
        problems.append(f"the library kept {(takes_after or 0) - (takes_before or 0)} take(s) "
                        "although the command did not succeed")
    if succeeded and takes_before is not None and (takes_after or 0) < takes_before:
        problems.append(f"the library lost takes ({takes_before} before, {takes_after} after)")
    if case.check is not None and not result.timed_out:
        problems += case.check(ctx, result, before, after)
    return result, problems


def judge_case(case: Case, templates: Templates, tmp_path: Path) -> None:
    """Run `case` in a world of its own under `tmp_path` and fail with every problem found.
    A passing case's tree is removed (each copies the demo set, 7 MB); a failing one's kept."""
    ctx = Ctx(tmp_path, templates)
    try:
        result, problems = run_case(case, ctx)
    finally:
        ctx.cleanup()
    print(f"[{case.id}] exit {result.rc} in {result.seconds:.1f} s: {result.excerpt(600)}")
    if not problems:
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert not problems, (f"[{case.id}] exit {result.rc}: " + "; ".join(problems)
                          + f"\n  output: {result.excerpt()}")


# --------------------------------------------------------------------------------------------
# Extra checks used by several cases


def audio_written(*names: str) -> Check:
    """The outputs decode as audio with frames, and their sidecars are JSON objects."""

    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        if result.rc != 0:
            return []
        problems = []
        for name in names:
            path = ctx.expand(name)
            try:
                with open(path, "rb") as handle:
                    frames = sf.info(handle).frames
                if frames <= 0:
                    problems.append(f"{_show(os.fsdecode(path))} has no audio frames")
            except Exception as err:  # noqa: BLE001 - reported as a problem of the case
                problems.append(f"{_show(os.fsdecode(path))} is not readable audio ({err})")
            sidecar = os.path.splitext(os.fsdecode(path))[0] + ".json"
            try:
                with open(sidecar, "rb") as handle:
                    if not isinstance(json.load(handle), dict):
                        problems.append(f"{_show(sidecar)} is not a JSON object")
            except Exception as err:  # noqa: BLE001
                problems.append(f"the sidecar {_show(sidecar)} is not readable JSON ({err})")
        return problems

    return check


def all_of(*checks: Check) -> Check:
    def check(ctx: Ctx, result: Result, before: dict, after: dict) -> list[str]:
        problems: list[str] = []
        for one in checks:
            problems += one(ctx, result, before, after)
        return problems

    return check

