"""Which record store a session writes to: the embedded JSONL file or a shared PostgreSQL.

``$LLM_COUNCIL_BIAS_STORE`` (or the ``spec`` passed in) is either a file path (JSONL, the
embedded default, ADR 0006) or a ``postgresql://`` / ``postgres://`` URL (ADR 0020).
:func:`open_store` returns a :class:`RecordWriter` for it: ``check()`` refuses a bad store
before the session's model calls, and ``await write_session(records)`` writes one session
all or nothing without blocking the event loop (the JSONL append runs in a worker thread;
the PostgreSQL writer is async). A URL's password never appears in a description, an
error or a log line: :func:`redact_url`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from llm_council.bias_audit.records.jsonl_store import (
    STORE_VARIABLE,
    append_records,
    check_append_target,
    store_path,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.store_urls import is_postgres_url, redact_url
from llm_council.errors import MissingDependencyError
from llm_council.infra.install_hints import extra_install_hint

__all__ = ["RecordWriter", "is_postgres_url", "open_store", "redact_url", "store_spec"]


class RecordWriter(Protocol):
    """Where one session's records go; ``description`` is safe to log (no password)."""

    @property
    def description(self) -> str: ...

    def check(self) -> None:
        """Raise :class:`~llm_council.errors.RecordError` if this store cannot be used."""

    async def write_session(self, records: Sequence[ReviewRecord]) -> int:
        """Write the records, all or nothing; return how many this call added."""
        ...


def store_spec(environ: Mapping[str, str] | None = None) -> str:
    """The configured store: a ``postgresql://`` URL as given, else the JSONL path."""
    env = os.environ if environ is None else environ
    configured = env.get(STORE_VARIABLE, "").strip()
    if is_postgres_url(configured):
        return configured
    return str(store_path(env))


class JsonlWriter:
    """The embedded JSONL store (:mod:`llm_council.bias_audit.records.jsonl_store`)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def description(self) -> str:
        return str(self.path)

    def check(self) -> None:
        check_append_target(self.path)

    async def write_session(self, records: Sequence[ReviewRecord]) -> int:
        # the append takes a file lock and writes: keep both off the event loop
        return await asyncio.to_thread(append_records, self.path, records)


def open_store(spec: str | Path | None = None) -> RecordWriter:
    """The writer for ``spec`` (default: :func:`store_spec`); PostgreSQL needs the extra."""
    chosen = store_spec() if spec is None else spec
    if is_postgres_url(chosen):
        try:
            from llm_council.bias_audit.records.postgres_store import PostgresWriter
        except ImportError as error:
            raise MissingDependencyError(
                f"a PostgreSQL record store needs the 'postgres' extra ({error.name} is "
                "missing): " + extra_install_hint("postgres")
            ) from None
        return PostgresWriter.for_url(str(chosen))
    return JsonlWriter(Path(chosen).expanduser())
