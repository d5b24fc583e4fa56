"""The audit's tests never see the developer's threshold overrides; a real PostgreSQL."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from fakes.postgres_server import PostgresServer, unavailable_reason
from llm_council.bias_audit.session.thresholds import ENV_VARIABLES


@pytest.fixture(autouse=True)
def _default_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ENV_VARIABLES.values():
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[PostgresServer]:
    """One server per test module that uses it, stopped when that module's tests are done
    (CI must run these tests: there, a missing server fails instead of skipping)."""
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the PostgreSQL store tests: {reason}")
        pytest.skip(reason)
    server = PostgresServer.start()
    yield server
    server.stop()


@pytest.fixture
def empty_database_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database per test (no llm-council schema)."""
    return postgres_server.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def store_url(empty_database_url: str) -> str:
    """A fresh database per test with the store's schema, as `llm-council store-migrate`
    leaves it (writers never create it, ADR 0056)."""
    from llm_council.bias_audit.records.postgres_schema import migrate_store

    migrate_store(empty_database_url)
    return empty_database_url
