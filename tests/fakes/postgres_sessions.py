"""What the PostgreSQL store tests share besides the server (``tests/bias_audit/conftest.py``
starts it): writing sessions through the store's real writer, and reading one number or
the reviewer profiles back with plain SQL."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


def write(url: str, *sessions: Sequence[Any]) -> list[int]:
    """Write each session (a list of records) through ``open_store(url)``, in order, in one
    event loop; the records each write added (0 for a session already stored)."""
    from llm_council.bias_audit.records.stores import open_store

    async def main() -> list[int]:
        store = open_store(url)
        return [await store.write_session(list(records)) for records in sessions]

    return asyncio.run(main())


def scalar(url: str, query: str, parameters: Sequence[Any] = ()) -> Any:
    """The first column of the first row of ``query`` (``None`` without a row)."""
    import psycopg

    with psycopg.connect(url) as connection:
        row = connection.execute(query, tuple(parameters) or None).fetchone()
    return None if row is None else row[0]


def count(url: str, query: str) -> int:
    """:func:`scalar` as an ``int`` (a ``count(*)`` or a generation)."""
    return int(scalar(url, query))


def fresh_profiles(url: str) -> Any:
    """The store's reviewer profiles when fresh, else ``None`` (one lookup, no rebuild)."""
    import psycopg

    from llm_council.bias_audit.records.postgres_profiles import lookup_profiles_sync

    with psycopg.connect(url) as connection:
        return lookup_profiles_sync(connection)
