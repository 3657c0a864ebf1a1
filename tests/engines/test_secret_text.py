"""engines.secret_text cuts a connection line where its secrets are, so a front end can show
the rest and put the secrets back after edits: the cut never loses a character and no piece
shown holds a password."""

from __future__ import annotations

import pytest

from engines.secret_text import joined_secrets, masked, split_secrets

LINES = [
    "postgresql://designer:Sekr1t@studio:5432/sa3_team",
    "postgresql://designer:p@ss:w0rd@studio/sa3_team",  # a password with @ and : in it
    "postgresql://designer@studio/sa3_team?password=Sekr1t&sslmode=require",
    "postgresql://designer:Sekr1t/sa3_team",  # no @: libpq would read it as a port
    "host=studio password='a b c' user=designer",
    "postgresql://designer@studio:5432,backup:5433/sa3_team",  # no secret at all
    "",
]


@pytest.mark.parametrize("line", LINES)
def test_the_cut_puts_the_line_back_together_and_shows_no_secret(line):
    pieces, secrets = split_secrets(line)
    assert joined_secrets(pieces, secrets) == line
    assert len(pieces) == len(secrets) + 1
    assert "****".join(pieces) == masked(line)  # what is shown is what the log shows
    for secret in secrets:
        assert not any(secret and secret in piece for piece in pieces)


def test_the_secrets_are_the_passwords():
    assert split_secrets(LINES[1])[1] == ["p@ss:w0rd"]
    # masked() errs on the safe side here: the parameters after ?password= go with it
    assert split_secrets(LINES[2])[1] == ["Sekr1t&sslmode=require"]
    assert split_secrets(LINES[4])[1] == ["'a b c'"]
    assert split_secrets(LINES[5])[1] == []
