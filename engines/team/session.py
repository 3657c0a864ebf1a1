"""Connecting to the team's server, and its failures as sentences: a server that cannot be
reached (TeamUnreachable: work goes on locally, publishes wait in the outbox), a login it
refuses or a right the login lacks (TeamRefused: retrying changes nothing), anything else
(TeamError)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from engines.errors import Advice, Remedy
from engines.lazy import lazy_import
from engines.team.connection import TEAM_SETTING, TeamConnection, masked
from engines.team.errors import TeamError, TeamRefused, TeamUnreachable
from engines.team.migrations import check_schema
from engines.team.writes import REFUSED_NAME

if TYPE_CHECKING:
    import psycopg as psycopg_types

psycopg = lazy_import("psycopg")
log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 3
HNSW_EF_SEARCH = 100  # candidates "more like this" weighs: recall@10 0.87 at pgvector's 40
APPLICATION_NAME = "SA3 Studio"
LIBPQ_REQUIRE_AUTH = 160000  # the libpq release that has require_auth
# SQLSTATE classes and codes (PostgreSQL, Appendix A). Only a failure to reach the server is
# worded as "cannot be reached": psycopg calls a program limit or a full disk an
# OperationalError too, and retrying those later changes nothing.
_LOGIN_REFUSED = ("28000", "28P01")  # invalid authorization, invalid password
_NO_RIGHT = "42501"  # insufficient_privilege
_NO_DATABASE = "3D000"  # invalid_catalog_name
_CONNECTION_CLASS = "08"  # connection exception
_GONE = ("57P01", "57P02", "57P03", "53300")  # shut down, crashed, starting, too many clients
_TOO_LARGE_CLASS = "54"  # program limit exceeded: stack depth, index row size, ...
_BAD_VALUE_CLASSES = ("22", "23")  # data exception, integrity constraint violation
_SHORT_CLASS = "53"  # insufficient resources: disk full, out of memory
_TRY_AGAIN_CLASS = "40"  # serialization failure, deadlock
_CANCELLED = "57014"  # query_canceled (a statement timeout)

def connect(connection: TeamConnection, check: bool = True) -> psycopg_types.Connection:
    """An autocommit connection to the team library, its schema checked (`check`)."""
    try:
        conn = psycopg.connect(connection.conninfo, autocommit=True,
                               connect_timeout=CONNECT_TIMEOUT_S,
                               application_name=APPLICATION_NAME,
                               **no_cleartext_password(connection.conninfo))
    except psycopg.Error as err:
        raise reworded(err, connection) from err
    if check:
        try:
            check_schema(conn, connection.where)
        except BaseException:
            conn.close()
            raise
    tune(conn)
    return conn


def no_cleartext_password(line: str) -> dict[str, str]:
    """libpq's require_auth refusing to send the password itself (libpq 16+), unless the line
    says otherwise: whatever answers at the line's address while the team's server is down (a
    program another local user started on its port) could ask for it and keep it. A server of
    ours asks for SCRAM, which never sends the password."""
    if psycopg.pq.version() < LIBPQ_REQUIRE_AUTH:
        return {}
    try:
        given = psycopg.conninfo.conninfo_to_dict(line)
    except psycopg.Error:
        return {}
    return {} if "require_auth" in given else {"require_auth": "!password"}


def tune(conn: psycopg_types.Connection) -> None:
    """The settings every team connection searches with."""
    # A plan for the words at hand, never a generic one (psycopg prepares a statement run
    # five times, and a generic plan of a search by a common word is the wrong plan for a
    # rare one: seconds instead of milliseconds over a million takes).
    conn.execute("SET plan_cache_mode = force_custom_plan")
    try:  # pgvector 0.8+: a filtered "more like this" keeps searching until it has enough
        conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
    except psycopg.Error:
        log.info("this pgvector has no iterative index scans; filtered searches may return "
                 "fewer takes")


def reworded(err: BaseException, connection: TeamConnection) -> TeamError:
    """A psycopg failure as the sentence a user can act on, by its SQLSTATE's class."""
    where = connection.where
    state = getattr(err, "sqlstate", None) or _refused_at_startup(err)
    detail = masked(_first_line(err))  # libpq may quote the connection string it was given
    if state in _LOGIN_REFUSED:
        return TeamRefused(Advice(f"The team library at {where} refused the login "
                                  f"'{connection.user}' ({detail}); check {{0}}: it should be "
                                  "the line the team's server printed.",
                                  Remedy.setting(TEAM_SETTING)))
    if state == _NO_RIGHT:
        return read_only(connection)
    if state == REFUSED_NAME:
        return TeamRefused(Advice(f"The team library at {where} refused that ({detail}), so "
                                  "nothing was changed; set {0} to that designer's own "
                                  "connection line, or write under your own name.",
                                  Remedy.setting(TEAM_SETTING)))
    if state == _NO_DATABASE:
        return TeamError(Advice(f"The team server has no team library at {where}; check {{0}}, "
                                "or run {1} on the server to make it.",
                                Remedy.setting(TEAM_SETTING), Remedy.command("team init")))
    if unreachable(err, state):
        return TeamUnreachable(f"The team library at {where} cannot be reached ({detail}); "
                               "you can keep working on the local library, and publishes wait "
                               "in the outbox until it is back.")
    log.info("team library error (%s): %s", state, masked(str(err)))  # never the raw line
    return TeamError(f"The team library at {where} {_refusal(state)} ({detail}); nothing was "
                     f"changed{_what_to_do(state)}.")


def unreachable(err: BaseException, state: str) -> bool:
    """Whether the failure is the server out of reach (no answer, a lost connection, a server
    shutting down or full), rather than an answer refusing what was asked."""
    if state[:2] == _CONNECTION_CLASS or state in _GONE:
        return True
    return not state and isinstance(err, psycopg.OperationalError)  # libpq: no answer


def _refusal(state: str) -> str:
    if state[:2] == _TOO_LARGE_CLASS:
        return "refused that as too large for the server"
    if state[:2] in _BAD_VALUE_CLASSES:
        return "refused a value it was given"
    if state[:2] == _SHORT_CLASS:
        return "is short of room or memory"
    if state[:2] == _TRY_AGAIN_CLASS:
        return "was busy with the same takes"
    if state == _CANCELLED:
        return "stopped that for taking too long"
    return "could not do that"


def _what_to_do(state: str) -> str:
    if state[:2] == _TOO_LARGE_CLASS:
        return "; ask for less (fewer words, shorter tags)"
    if state[:2] == _SHORT_CLASS:
        return "; tell whoever runs the team's server"
    if state[:2] == _TRY_AGAIN_CLASS or state == _CANCELLED:
        return "; try again"
    return "; see the log file for details"


def read_only(connection: TeamConnection) -> TeamRefused:
    """The refusal of a change to a login that may only read."""
    return TeamRefused(Advice(f"The login '{connection.user}' may only read the team library "
                              f"at {connection.where}, so nothing was changed; to publish, "
                              "rate or tag, set {0} to a publisher's connection line.",
                              Remedy.setting(TEAM_SETTING)))


def _refused_at_startup(err: BaseException) -> str:
    """The SQLSTATE of a connection the server refused as it started (libpq gives none: there
    is no result to carry it), from the server's words; "" for anything else."""
    text = str(err)
    if "authentication failed" in text or "no pg_hba.conf entry" in text:
        return _LOGIN_REFUSED[1]
    if 'database "' in text and "does not exist" in text:
        return _NO_DATABASE
    return ""


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    words = text[0] if text else type(err).__name__
    # libpq's "connection failed: connection to server at ... failed: Connection refused"
    words = words.rsplit(": ", 1)[-1] if "connection" in words.lower() else words
    return words.strip().rstrip(".")[:200]
