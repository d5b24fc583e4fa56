"""A store URL's password never shows, whatever characters it holds (ADR 0056; issue 37
part B, item 1), against a real server.

Before: ``redact_url`` used ``urlsplit``, which ends the credentials at a raw ``#`` or
``?`` that libpq reads as part of the password, so ``metadata.bias_audit.record_store``
carried the password in clear on every successful session, and errors and logs too; a
raw ``/`` or ``@`` leaked part of it.
"""

from __future__ import annotations

import asyncio
import json
import re
import string
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from fakes.postgres_server import PostgresServer
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.bias_audit.records.stores import open_store
from llm_council.errors import RecordError

psycopg = pytest.importorskip("psycopg")
postgres_errors = pytest.importorskip("llm_council.bias_audit.records.postgres_errors")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")

PRINTABLE = "".join(chr(code) for code in range(0x20, 0x7F))
SEPARATORS = "@/?#&:=%"


def _role_url(store_url: str, password: str) -> str:
    """A login role with ``password``, and a URL that carries it raw (as a user types it)."""
    name = f"r_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(store_url, autocommit=True) as connection:
        connection.execute(
            psycopg.sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
                psycopg.sql.Identifier(name), psycopg.sql.Literal(password)
            )
        )
    host = store_url.split("@", 1)[1]
    return f"postgresql://{name}:{password}@{host}"


def _council_session(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], str]:
    from llm_council import run_full_council
    from llm_council.config import CouncilConfig, CouncilMember

    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", url)
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(3)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    with capture_logs() as logs:
        result = asyncio.run(run_full_council("q?", config=config, seed=1))
    return result.metadata["bias_audit"], json.dumps(logs, default=str)


@pytest.mark.parametrize("password", ["se#cr?et:Pw", "#lead?ing", "p?password=x&y#z", "a:b:c#d"])
def test_a_password_libpq_accepts_never_shows_on_a_successful_session(
    store_url: str, monkeypatch: pytest.MonkeyPatch, password: str
) -> None:
    url = _role_url(store_url, password)
    audit, logs = _council_session(url, monkeypatch)
    assert audit["records_written"] == 9 and "record_store_error" not in audit
    assert audit["record_store"] == url.replace(f":{password}@", ":***@")
    assert password not in json.dumps(audit) and password not in logs


@pytest.mark.parametrize(
    "password", ["half/Secret-Tail", "half@Secret-Tail", "Ab1x@Cd2y/Secret-Tail"]
)
def test_a_raw_at_or_slash_in_the_password_is_refused_without_any_of_it(
    postgres_server: PostgresServer, password: str
) -> None:
    url = f"postgresql://llm_council:{password}@127.0.0.1:{postgres_server.port}/postgres"
    with pytest.raises(RecordError) as raised:
        asyncio.run(open_store(url).write_session([]))
    message = str(raised.value)
    assert "percent-encode" in message and "\n" not in message
    for piece in [password, *re.split(r"[@/]", password)]:
        assert piece not in message, piece
    assert message.startswith("postgresql://llm_council:***@127.0.0.1:")


def test_a_percent_escape_that_is_not_utf8_is_one_clear_error() -> None:
    # found by the property test below: "%80" decodes to a byte psycopg cannot read as
    # UTF-8, and its UnicodeDecodeError escaped check_url as a traceback
    url = "postgresql://llm_council:s3cr3tpw%80x@127.0.0.1:5432/postgres"
    with pytest.raises(RecordError) as raised:
        postgres_errors.check_url(url)
    message = str(raised.value)
    assert "does not decode as UTF-8" in message and "\n" not in message
    assert "s3cr3tpw" not in message
    assert message.startswith("postgresql://llm_council:***@127.0.0.1:5432")


def _neutral(password: str) -> str:
    """``password`` with every character that cannot change how the URL is parsed made
    ``x``: separators stay, and so do the two characters after each ``%``."""
    kept = []
    hold = 0
    for character in password:
        if character == "%":
            kept.append(character)
            hold = 2
        elif hold:
            kept.append(character)
            hold -= 1
        else:
            kept.append(character if character in SEPARATORS else "x")
    return "".join(kept)


def _outputs(server: PostgresServer, password: str) -> list[str]:
    """What a user or a log may see of a URL with ``password`` (wrong for the server):
    the redacted form, the URL check, a write's error, and the history's log lines."""
    url = f"postgresql://llm_council:{password}@127.0.0.1:{server.port}/postgres"
    seen = [redact_url(url)]
    try:
        postgres_errors.check_url(url)
        seen.append("accepted")
    except RecordError as error:
        seen.append(str(error))
    from llm_council.bias_audit.records.stores import open_store
    from llm_council.bias_audit.session.postgres_history import postgres_history

    with capture_logs() as logs:
        try:
            asyncio.run(open_store(url).write_session([]))
            seen.append("written")
        except RecordError as error:
            seen.append(str(error))
        asyncio.run(postgres_history(url))
    seen.append(json.dumps(logs, default=str))
    return seen


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(password=st.text(alphabet=PRINTABLE, min_size=8, max_size=24))
def test_no_password_of_printable_characters_shows_anywhere(
    postgres_server: PostgresServer, password: str
) -> None:
    neutral_outputs = _outputs(postgres_server, _neutral(password))
    for output, neutral in zip(_outputs(postgres_server, password), neutral_outputs, strict=True):
        # the whole password, and every run of 6+ characters between separators, unless the
        # same text shows for a password without it (a word of the message, the port)
        pieces = [password, *(p for p in re.split(r"[@/?#&:=%]", password) if len(p) >= 6)]
        for piece in pieces:
            assert piece not in output or piece in neutral, (piece, output)
    postgres_store.PostgresWriter._by_url.clear()


@pytest.mark.parametrize("password", ["00000 =  ", "  lead  spaces  ", "abc  def   ghi"])
def test_a_password_with_runs_of_spaces_never_shows_in_the_url_check(password: str) -> None:
    # libpq quotes the raw part it refuses; the one-line message collapsed its spaces, and
    # the collapsed password was not blanked (found by Hypothesis: "00000 =  ")
    url = f"postgresql://llm_council:{password}@127.0.0.1:5432/postgres"
    with pytest.raises(RecordError) as raised:
        postgres_errors.check_url(url)
    message = str(raised.value)
    for piece in (password, password.strip(), " ".join(password.split())):
        assert piece not in message, message


def test_redaction_needs_no_url_parser() -> None:
    # urlsplit raised on these (an unclosed "[", a port out of range) or showed the rest
    assert redact_url("postgresql://u:pw@[::1/db") == "postgresql://u:***@[::1/db"
    assert redact_url("postgresql://u:pw@h:99999/db") == "postgresql://u:***@h:99999/db"
    assert redact_url("postgresql://u:p#w@h/db") == "postgresql://u:***@h/db"
    assert redact_url("postgres://h/db?password=s3#x&sslmode=require") == (
        "postgres://h/db?password=***&sslmode=require"
    )
    assert redact_url("postgresql://u@h/db?PASSWORD=a") == "postgresql://u@h/db?PASSWORD=***"
    assert redact_url("not a url") == "not a url"
    assert set(string.printable) >= set(PRINTABLE)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    password=st.text(
        alphabet="".join(c for c in PRINTABLE if c not in "@/%"), min_size=8, max_size=20
    )
)
def test_a_working_password_of_printable_characters_never_shows(
    store_url: str, password: str, caplog: pytest.LogCaptureFixture
) -> None:
    # every printable character libpq may read raw in a password ('@' and '/' are
    # refused, '%' starts a percent-encoding): refused, failed or written, it never shows
    url = _role_url(store_url, password)
    try:
        postgres_errors.check_url(url)
    except RecordError as error:  # e.g. libpq refuses a raw space
        assert password not in str(error)
        event("URL refused")
        return
    store = open_store(url)
    with capture_logs() as logs:
        try:
            outcome = f"wrote {asyncio.run(store.write_session([]))}"
        except RecordError as error:  # e.g. libpq trims a trailing space: wrong password
            outcome = str(error)
    event("written" if outcome.startswith("wrote") else "connection refused")
    shown = json.dumps([store.description, outcome, logs, caplog.text], default=str)
    assert password not in shown
    assert store.description == url.replace(f":{password}@", ":***@")
    postgres_store.PostgresWriter._by_url.clear()
