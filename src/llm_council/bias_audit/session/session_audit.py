"""The bias audit of one finished session: statistics, records, and the store write.

:class:`~llm_council.bias_audit.middleware.BiasAuditMiddleware` imports this module only
when the audit is on: its statistics pull numpy and scipy (about 0.3 s of start-up),
which a council running without the audit should not pay.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import structlog

from llm_council.bias_audit.records.background_rebuild import rebuild_once_in_background
from llm_council.bias_audit.records.jsonl_store import PartialWriteError
from llm_council.bias_audit.records.query_hash import query_hash_from_env
from llm_council.bias_audit.records.reviewer_profiles import fresh_profiles, load_profiles
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.store_urls import is_postgres_url, redact_url
from llm_council.bias_audit.records.stores import open_store, store_spec
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.noise_priors import History
from llm_council.bias_audit.session.result import BiasAuditResult
from llm_council.bias_audit.session.score_table import answer_lengths, score_table_from_session
from llm_council.bias_audit.session.session_records import (
    records_from_session,
    session_review_outcomes,
    utc_timestamp,
)
from llm_council.bias_audit.session.similarity import (
    SimilarityByMember,
    SimilarityUnavailable,
    similarities_between_answers,
    similarity_from_env,
)
from llm_council.bias_audit.session.thresholds import load_thresholds
from llm_council.errors import RecordError
from llm_council.middleware import SessionCompleted

log = structlog.get_logger("llm_council.bias_audit")


def check_audit_config() -> None:
    """Bad thresholds, or hashing on without a secret, stop the session before it runs."""
    load_thresholds()
    query_hash_from_env("")
    open_store().check()  # a FIFO, directory or device as the store, or a bad URL
    similarity_from_env()  # an unknown LLM_COUNCIL_SIMILARITY


async def audit_session(
    event: SessionCompleted, *, written: list[ReviewRecord] | None = None
) -> dict[str, Any]:
    """The session's :class:`BiasAuditResult` as JSON, after writing its records
    (``written``: as in :func:`audit_session_result`)."""
    _, audit = await audit_session_result(event, written=written)
    return audit


async def audit_session_result(
    event: SessionCompleted,
    *,
    store: str | Path | None = None,
    write: bool = True,
    written: list[ReviewRecord] | None = None,
) -> tuple[BiasAuditResult, dict[str, Any]]:
    """The session's result, and its JSON with what happened to the records.

    ``store``: where the records go (default: the environment's store); ``write=False``
    computes everything and writes nothing (``records_written`` 0). The JSON adds
    ``records_written``, ``record_store`` (the store's description, password redacted)
    and, when the store failed, ``record_store_error``. ``written``, when given, is
    extended with the records once the store has taken all of them, so the anytime
    monitor folds the session from memory instead of re-reading it (ADR 0053).
    """
    thresholds = load_thresholds()
    query_hash = query_hash_from_env(event.query) if event.query else None
    lengths = answer_lengths(event.answers)  # words counted once, for table and records
    table = score_table_from_session(event.answers, event.reviews, lengths=lengths)
    history = await _store_history(store)
    result = audit_score_table(table, thresholds, history=history)
    audit = result.model_dump(mode="json")
    audit["review_outcomes"] = session_review_outcomes(event)  # ADR 0027
    similarity = await _similarity(event, audit)
    records = records_from_session(
        event,
        timestamp=utc_timestamp(),
        query_hash=query_hash,
        similarity=similarity,
        lengths=lengths,
    )
    if not write:
        audit["records_written"] = 0
        return result, audit
    try:
        writer = open_store(store)
        audit["record_store"] = writer.description
        # awaited, never blocking the loop: JSONL in a worker thread, PostgreSQL async
        audit["records_written"] = await writer.write_session(records)
        if written is not None and audit["records_written"] == len(records):
            written.extend(records)
    except RecordError as error:
        # the statistics are still worth returning when only the store failed
        log.warning("bias_records_not_written", error=str(error))
        audit.setdefault("record_store", _store_description(store))
        audit["records_written"] = 0
        audit["record_store_error"] = str(error)
        if isinstance(error, PartialWriteError):  # rollback failed: say what is there
            audit["records_left_incomplete"] = error.records_left
    return result, audit


def _store_description(store: str | Path | None) -> str:
    """Where records were meant to go when the store could not even be opened (no password)."""
    spec = str(store) if store is not None else store_spec()
    return redact_url(spec) if is_postgres_url(spec) else spec


#: a stale or missing profile summary is rebuilt inside the session only up to this store
#: size (about 5 s of streaming on this project's 2-core machine); a larger store is
#: rebuilt in a background thread while this session runs without history (ADR 0045)
REBUILD_IN_SESSION_MAX_BYTES = 32 * 1024 * 1024


async def _store_history(store: str | Path | None = None) -> History:
    """The store's reviewer profiles (ADR 0045; ``store`` else the configured one), read
    before this session's records are appended; a PostgreSQL store's from its profile
    tables (ADR 0048). A store that cannot be read gives no history and a log line, never
    a failed session."""
    spec = str(store) if store is not None else store_spec()
    if is_postgres_url(spec):
        from llm_council.bias_audit.session.postgres_history import postgres_history

        return await postgres_history(spec)
    path = Path(spec).expanduser()
    try:
        fresh = fresh_profiles(path)  # the usual case: a stat and a few journal lines
        if fresh is not None:
            return fresh
        if path.stat().st_size > REBUILD_IN_SESSION_MAX_BYTES:
            _rebuild_in_background(path)
            log.warning("reviewer_history_rebuilding", store=str(path))
            return {}
        # off the loop: a stale or missing summary is rebuilt from the whole store
        return await asyncio.to_thread(load_profiles, path)
    except (OSError, ValueError) as error:
        log.warning("reviewer_history_not_read", error=str(error))
        return {}


def _rebuild_in_background(path: Path) -> None:
    """Rebuild a large store's profile summary in a daemon thread, one per store."""
    rebuild_once_in_background(
        f"profiles:{path.absolute()}",
        lambda: load_profiles(path),
        lambda error: log.warning("reviewer_history_not_rebuilt", error=str(error)),
        thread_name="reviewer-profiles",
    )


async def _similarity(event: SessionCompleted, audit: dict[str, Any]) -> SimilarityByMember:
    """Answer-to-answer similarities for ``similarity_to_own`` (style mimicry).

    Sets ``audit["similarity_method"]``; a failed embeddings call is logged and noted in
    ``audit["similarity_error"]`` and leaves the similarities null, never the session.
    """
    method = similarity_from_env()
    audit["similarity_method"] = method.name if method is not None else "off"
    if method is None:
        return {}
    answers = {a.member: a.text for a in event.answers if a.text is not None}
    try:
        return await similarities_between_answers(answers, method)
    except SimilarityUnavailable as error:
        log.warning("similarity_not_computed", method=method.name, error=str(error))
        audit["similarity_error"] = str(error)
        return {}
