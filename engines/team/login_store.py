"""The passwords `team init` keeps, in DATA/logins.json (mode 0600, written atomically): the
team's logins, whose connection lines it prints again on every run, and, for a server of our
own, its superuser's (every login on that server needs a password, through the Unix socket
too). What is in that file is the only way a file of that name counts as ours."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from pathlib import Path

from engines.error_sentences import sentence, shown
from engines.private_files import write_private_text
from engines.team.errors import TeamError

LOGINS_FILE = "logins.json"
SUPERUSER = "postgres"
OUR_LOGINS = frozenset({SUPERUSER, "sa3_publisher", "sa3_reader"})
PASSWORD_BYTES = 18
SCRAM_ITERATIONS = 4096  # PostgreSQL's scram_iterations default


def new_password() -> str:
    return secrets.token_urlsafe(PASSWORD_BYTES)


def read_logins(path: Path) -> dict[str, str]:
    """The passwords kept in `path`; {} when there is no such file or it holds none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) \
        else {}


def is_ours(path: Path) -> bool:
    """Whether `path` is a logins file `team init` wrote: a JSON object of our logins'
    passwords and nothing else (an unrelated logins.json is never overwritten)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and set(data) <= OUR_LOGINS and all(
        isinstance(value, str) for value in data.values())


def keep_logins(path: Path, changes: dict[str, str]) -> None:
    """Merge `changes` into the passwords in `path`, written to a 0600 temporary file and
    renamed over it; nothing is written when they are already there."""
    saved = read_logins(path)
    if all(saved.get(login) == password for login, password in changes.items()):
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_private_text(path, json.dumps({**saved, **changes}, indent=2) + "\n")
    except OSError as err:
        raise TeamError(sentence(f"Could not keep the team's logins in {shown(path)}", err)) \
            from err


def scram_verifier(password: str) -> str:
    """What PostgreSQL stores for `password` (RFC 5802/7677, as libpq's PQencryptPasswordConn
    makes it): handed to the server instead of the password, so the password itself is never
    in a command, a file the server user reads, or the server's log."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode("utf-8"), salt, SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    words = [base64.b64encode(part).decode("ascii") for part in (salt, stored_key, server_key)]
    return f"SCRAM-SHA-256${SCRAM_ITERATIONS}:{words[0]}${words[1]}:{words[2]}"
