"""A reviewer's cases for issue 29, beyond the ones its fixes brought: each family attacked
again where the first round did not look. Through the real command line (in this process) and
direct SQL against a real PostgreSQL:

  - a forged NOTIFY (any login may send one, a reader too) never stops `team watch`;
  - the server itself refuses, whoever calls its functions, designer names that pass for
    another's (zero-width, direction, control characters), blank or 50 MB notes, prompts past
    a bound and file names that are not one plain name;
  - `team fetch --to` never writes outside its folder whatever file names the server holds
    (an older server, or its owner, may hold any), and prints none raw;
  - a connection line never hands its password to whatever answers on its port while the
    team's server is down (a program another local user started there asking for it in
    clear text);
  - `team add-designer --data` never connects through a socket folder under /tmp that is not
    the server's own any more;
  - a damaged settings file set aside keeps the publisher line private (0600);
  - a hard link in a batch folder is never published as the batch's file.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import struct
import threading
import time
from pathlib import Path

import pytest

from engines.paths import library_dir
from engines.settings import read_settings, settings_path, take_notices
from engines.store.library import ClipLibrary
from main import main
from tests.team_support import (
    SharedServer,
    add_take,
    engine_files,
    require_postgres,
    rows,
    team_library,
)

require_postgres()
import psycopg  # noqa: E402 - only once require_postgres has skipped where it is missing

SECRET = "Sekr1tPa55w0rd"


def _one_refusal(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "unexpectedly" not in err and "Traceback" not in err, err
    return lines[0]


def _published(team_server: SharedServer, tmp_path: Path, designer: str = "ann"):
    """A team library with one take `designer` published; (setup, admin line, take row as
    JSON, its audio file's row)."""
    setup = team_server.database()
    library = ClipLibrary(tmp_path / "library")
    take = add_take(library, engine_files(tmp_path / "engines"), "door slam", 7)
    with team_library(setup, designer, tmp_path / "outbox") as team:
        assert team.publish(library, [take.id]).published
    library.close()
    admin = team_server.admin(setup)
    record = rows(admin, "SELECT to_jsonb(t) - 'embedding' - 'search' - 'id' FROM takes t")[0][0]
    audio = rows(admin, "SELECT role, file_name, sha256, size, format FROM take_files "
                        "WHERE role = 'take'")[0]
    return setup, admin, record, audio


# ---- LISTEN/NOTIFY ---------------------------------------------------------------------------


def test_a_forged_notification_never_stops_team_watch(team_server, home, tmp_path, capsys,
                                                      monkeypatch):
    setup, _, _, _ = _published(team_server, tmp_path)
    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.reader_line)
    with ClipLibrary(tmp_path / "library") as library:
        later = add_take(library, engine_files(tmp_path / "engines"), "glass break", 8)

    def attack_then_publish() -> None:
        time.sleep(1.5)
        with psycopg.connect(setup.reader_line, autocommit=True) as conn:  # a reader's login
            for payload in ("\u00b2", "9" * 5000, "-1", "", "1 OR 1=1", "\u0663"):
                conn.execute("SELECT pg_notify('sa3_team_changes', %s)", (payload,))
            conn.execute("SELECT pg_notify('sa3_team_takes', 'not an id')")
        with team_library(setup, "bob", tmp_path / "outbox-bob") as team, \
                ClipLibrary(tmp_path / "library") as library:
            team.publish(library, [later.id])

    attacker = threading.Thread(target=attack_then_publish)
    attacker.start()
    try:
        code = main(["team", "watch", "--for", "6", "--as", "ann"])
    finally:
        attacker.join(60)
    said = capsys.readouterr()
    assert code == 0, said.err
    assert "unexpectedly" not in said.err and "Traceback" not in said.err, said.err
    assert "glass break" in said.out  # the real take after the forged ones is still told


# ---- the server refuses, whoever calls ---------------------------------------------------------


HIDDEN_NAMES = ["ann\u200b", "a\u202enn", "ann\x1b[31m", "ann\u2066", "ann\u00ad",
                "ann\U000e0041", "\ufeffann"]


@pytest.mark.parametrize("name", HIDDEN_NAMES, ids=ascii)
def test_the_server_refuses_a_designer_name_that_passes_for_another(team_server, tmp_path,
                                                                     name):
    setup, admin, _, _ = _published(team_server, tmp_path)
    with psycopg.connect(setup.publisher_line, autocommit=True) as conn:
        for statement in ("SELECT sa3_rate(1, %s, 1)", "SELECT sa3_note(1, %s, 'mine')",
                          "SELECT sa3_retag(1, %s, ARRAY['x'], NULL)"):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="designer name"):
                conn.execute(statement, (name,))
        # a name in any script is a name
        assert conn.execute("SELECT sa3_rate(1, %s, 4)", ("Zoë 山田",)).fetchone() == (True,)
    assert rows(admin, "SELECT designer FROM ratings UNION ALL SELECT designer FROM notes "
                       "UNION ALL SELECT designer FROM tags") == [("Zoë 山田",)]


def test_the_server_refuses_blank_and_oversized_text_and_names_that_are_paths(team_server,
                                                                              tmp_path):
    setup, admin, record, audio = _published(team_server, tmp_path)
    role, _, sha256, size, kind = audio
    before = rows(admin, "SELECT count(*) FROM takes")

    def publish(key: str, take: dict, file_name: str = "fine.wav", note: str | None = None):
        files = [{"role": role, "name": file_name, "sha256": sha256, "size": size,
                  "format": kind}]
        with psycopg.connect(setup.publisher_line, autocommit=True) as conn:
            conn.execute("SELECT * FROM sa3_publish(%s, %s, NULL, 'mallory', %s, 0, NULL, %s)",
                         (key, json.dumps(take), json.dumps(files), note))

    for n, name in enumerate(["../../escape.wav", "/tmp/escape.wav", "..", "a/b.wav",
                              "a\\b.wav", "evil\u202ewav.exe", "line\nbreak.wav", "x" * 256]):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="file name"):
            publish(f"path-{n}", record, name)
    with pytest.raises(psycopg.errors.StringDataRightTruncation):
        publish("huge-prompt", {**record, "prompt": "p" * 20_000})
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="note"):
        publish("huge-note", record, note="n" * 20_000)
    with psycopg.connect(setup.publisher_line, autocommit=True) as conn:
        for body in ("   ", "n" * 10_001):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="note"):
                conn.execute("SELECT sa3_note(1, 'mallory', %s)", (body,))
    assert rows(admin, "SELECT count(*) FROM takes") == before
    assert rows(admin, "SELECT count(*) FROM notes") == [(0,)]
    publish("plain", record, "Zoë's door (take 2).wav", note="a real note")  # plain ones pass
    assert rows(admin, "SELECT count(*) FROM notes") == [(1,)]


def test_a_designer_name_with_hidden_characters_is_bad_input(team_server, home, tmp_path,
                                                             capsys, monkeypatch):
    setup, admin, _, _ = _published(team_server, tmp_path)
    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.publisher_line)
    assert main(["team", "rate", "1", "3", "--as", "ann\u200b"]) == 2
    said = _one_refusal(capsys.readouterr().err)
    assert "\\u200b" in said and "\u200b" not in said
    assert main(["team", "add-designer", "a\u202enn", "--admin",
                 team_server.server.admin_conninfo(setup.publisher_line.rsplit("/", 1)[-1])]) \
        == 2
    said = _one_refusal(capsys.readouterr().err)
    assert "\u202e" not in said
    assert rows(admin, "SELECT count(*) FROM ratings") == [(0,)]
    assert rows(admin, "SELECT count(*) FROM designer_logins") == [(0,)]


# ---- fetch writes only inside --to -------------------------------------------------------------


def test_fetch_never_writes_outside_its_folder_whatever_names_the_server_holds(
        team_server, home, tmp_path, capsys, monkeypatch):
    setup, admin, _, audio = _published(team_server, tmp_path)
    role, _, sha256, size, kind = audio
    hostile = ["../../escape.wav", "/tmp/escape-review29.wav", "..", "", "a\nb\x1b[2J.wav",
               "sub/../../up.wav", "..\\..\\win.wav", "rtl\u202evaw.exe"]
    with psycopg.connect(admin, autocommit=True) as conn:  # the owner may write anything
        for n, name in enumerate(hostile):
            team_id = conn.execute(
                "INSERT INTO takes (take_key, content_sha256, prompt, mode, seconds, "
                "sample_rate, samples, provenance, designer, created) SELECT %s, "
                "content_sha256, prompt, mode, seconds, sample_rate, samples, provenance, "
                "'mallory', created FROM takes WHERE id = 1 RETURNING id", (f"h{n}",)
            ).fetchone()[0]
            conn.execute("ALTER TABLE take_files DISABLE TRIGGER take_files_bounds")
            conn.execute("INSERT INTO take_files (take_id, role, file_name, sha256, size, "
                         "format) VALUES (%s, %s, %s, %s, %s, %s)",
                         (team_id, role, name, sha256, size, kind))
            conn.execute("ALTER TABLE take_files ENABLE TRIGGER take_files_bounds")
    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.reader_line)
    outer = tmp_path / "fetched"
    inner = outer / "a" / "b"
    inner.mkdir(parents=True)
    for team_id in range(2, 2 + len(hostile)):
        assert main(["team", "fetch", str(team_id), "--to", str(inner)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out, out
    written = sorted(p for p in outer.rglob("*") if p.is_file())
    assert len(written) == len(hostile) and all(p.parent == inner for p in written), written
    assert not Path("/tmp/escape-review29.wav").exists()
    assert not any(tmp_path.glob("*.wav")) and not any(outer.glob("*.wav"))


# ---- a line's password stays with the line -----------------------------------------------------


class _PasswordCatcher:
    """What another local user could run on the team's port while the server is down: it
    answers like PostgreSQL and asks for the password in clear text."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with client:
                try:
                    length, code = struct.unpack("!ii", client.recv(8))
                    if code == 80877103:  # SSLRequest: no TLS here
                        client.sendall(b"N")
                        length, code = struct.unpack("!ii", client.recv(8))
                    client.recv(length - 8)
                    client.sendall(b"R" + struct.pack("!ii", 8, 3))  # cleartext, please
                    self.received.append(client.recv(4096))
                except (OSError, struct.error):
                    pass

    def close(self) -> None:
        self.listener.close()


def test_a_line_never_hands_its_password_to_whatever_answers_on_its_port(home, capsys,
                                                                         monkeypatch):
    catcher = _PasswordCatcher()
    try:
        monkeypatch.setenv("SA3_STUDIO_TEAM", f"postgresql://sa3_publisher:{SECRET}@127.0.0.1:"
                                              f"{catcher.port}/sa3_team")
        assert main(["team", "list"]) == 1
    finally:
        catcher.close()
    said = capsys.readouterr()
    assert catcher.received and not any(SECRET.encode() in got for got in catcher.received)
    assert SECRET not in said.out + said.err
    log = home / "logs" / "sa3-studio.log"
    assert SECRET not in (log.read_text() if log.exists() else "")


# ---- the socket folder, when add-designer connects ---------------------------------------------


def test_add_designer_never_connects_through_a_socket_folder_that_is_not_the_servers(
        tmp_path, home, capsys):
    """A server whose socket lived under /tmp (a long data path) and a reboot later: someone
    else made that folder again, open to all, and waits there with a socket of their own."""
    data = tmp_path / ("d" * 90) / "server"
    cluster = data / "postgres"
    cluster.mkdir(parents=True)
    (cluster / "PG_VERSION").write_text("18\n")
    theirs = Path(tempfile_dir()) / f"sa3-team-review29-{os.getpid()}"
    theirs.mkdir()
    try:
        theirs.chmod(0o777)
        (cluster / "sa3_team.conf").write_text(
            f"port = '55432'\nunix_socket_directories = '{theirs}'\n")
        (data / "logins.json").write_text(json.dumps({"postgres": SECRET}))
        assert main(["team", "add-designer", "dee", "--data", str(data)]) == 2
        said = _one_refusal(capsys.readouterr().err)
        assert "socket folder" in said and SECRET not in said
        assert os.listdir(theirs) == []
    finally:
        shutil.rmtree(theirs, ignore_errors=True)


def tempfile_dir() -> str:
    return "/tmp" if os.path.isdir("/tmp") else str(Path.home())


# ---- secrets at rest -----------------------------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
def test_a_damaged_settings_file_set_aside_keeps_the_line_private(home):
    path = settings_path(home)
    path.write_text('{"team_connection": "postgresql://sa3_publisher:' + SECRET + '@h/db",')
    path.chmod(0o644)  # as an older release wrote it
    assert read_settings(home) == {}
    assert any("damaged" in notice for notice in take_notices())  # said, and said once
    (aside,) = home.glob("settings.json.damaged-*")
    assert SECRET in aside.read_text()  # kept for the user...
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600  # ...and for the user alone


# ---- batch folders -------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "link"), reason="hard links")
def test_a_hard_link_in_a_batch_folder_is_never_published_as_its_file(team_server, home,
                                                                     tmp_path, capsys,
                                                                     monkeypatch):
    setup = team_server.database()
    monkeypatch.setenv("SA3_STUDIO_TEAM", setup.publisher_line)
    out = tmp_path / "batch"
    out.mkdir()
    elsewhere = tmp_path / "private"
    elsewhere.mkdir()
    with ClipLibrary(library_dir()) as library:
        files = engine_files(tmp_path / "engines")
        takes = [add_take(library, files, f"coin {n}", n) for n in range(2)]
        paths = library.export([t.id for t in takes], out)
    # take 1's file replaced by a hard link to a file kept elsewhere (same bytes here, so the
    # frames and sizes the manifest recorded match): the folder no longer holds it alone
    private = elsewhere / "kept.wav"
    shutil.copyfile(paths[1], private)
    paths[1].unlink()
    os.link(private, paths[1])
    manifest = {"items": [{"status": "ok", "library_id": t.id, "file": p.name}
                          for t, p in zip(takes, paths, strict=True)]}
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert main(["team", "publish", "--batch", str(out), "--as", "ann"]) == 2
    said = capsys.readouterr()
    refusal = _one_refusal(said.err)
    assert paths[1].name in refusal and "hard link" in refusal, refusal
    assert rows(team_server.admin(setup), "SELECT prompt FROM takes") == [("coin 0",)]

