"""The command line's log file never holds a team connection line's password: whatever logs
one after the CLI set up its log (a message, its arguments, an exception's text in the
traceback of a command that failed unexpectedly) reaches the file masked."""

from __future__ import annotations

import logging
import os
import socket
import stat

from engines import paths
from engines.cli.support import EXIT_FAILED, run_command
from engines.team.connection import TEAM_ENV

SECRET = "Sekr1tPa55w0rd"


def _line(port: int = 5432) -> str:
    return f"postgresql://sa3_publisher:{SECRET}@studio-server:{port}/sa3_team"


def _log_text() -> str:
    for handler in logging.getLogger().handlers:
        handler.flush()
    log_file = paths.log_file()
    assert log_file is not None and log_file.exists()
    assert stat.S_IMODE(os.stat(log_file).st_mode) == 0o600
    return log_file.read_text(encoding="utf-8")


def test_a_command_that_fails_quoting_the_line_logs_it_masked(home, capsys):
    def body() -> int:
        # a library's error text quotes the line it was given, password and all (libpq does)
        raise RuntimeError(f"connection to {_line()} refused: password={SECRET}")

    assert run_command("team", body) == EXIT_FAILED
    text = _log_text()
    assert "RuntimeError: connection to postgresql://sa3_publisher:****@studio-server" in text
    assert "Traceback (most recent call last)" in text  # the details are still there
    assert SECRET not in text
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err


def test_any_logger_after_the_cli_set_up_its_log_is_masked(home):
    def body() -> int:
        logging.getLogger("engines.team.watcher").warning("lost %s", _line())
        logging.getLogger("engines.cli.team").error("keyword line host=x password=%s", SECRET)
        return 0

    assert run_command("team", body) == 0
    text = _log_text()
    assert "lost postgresql://sa3_publisher:****@studio-server:5432/sa3_team" in text
    assert "keyword line host=x password=****" in text
    assert SECRET not in text


def test_team_list_against_an_unreachable_server_keeps_the_password_out(home, capsys,
                                                                        monkeypatch):
    from main import main

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(TEAM_ENV, _line(port).replace("studio-server", "127.0.0.1"))
    code = main(["team", "list"])
    out = capsys.readouterr()
    assert code != 0 and out.err.strip()
    assert SECRET not in out.out + out.err
    assert SECRET not in _log_text()
