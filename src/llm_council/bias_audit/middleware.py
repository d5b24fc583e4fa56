"""``BiasAuditMiddleware``: the audit as an opt-in plug-in of the council.

Enabled by ``LLM_COUNCIL_BIAS_AUDIT=true`` (or 1/yes/on; an unknown word is a
ConfigError), or by the reference council's ``BIAS_AUDIT_ENABLED=true`` when ours is
unset (ours wins when both are set). At the
end of a session it computes the :class:`BiasAuditResult` (stored at
``metadata["bias_audit"]``) and writes one record per (reviewer, candidate) to the
record store (JSONL, or PostgreSQL for a ``postgresql://`` URL). Configuration errors
(bad threshold, hashing on without a secret, a store path that is not a regular file, a
bad store URL) are raised by :meth:`check_config` before the session's first model call,
so they stop the run instead of surfacing after it.
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

import structlog

from llm_council.bias_audit.audit import audit_score_table
from llm_council.bias_audit.query_hash import env_flag, query_hash_from_env
from llm_council.bias_audit.record_stores import open_store
from llm_council.bias_audit.records import (
    records_from_session,
    session_review_outcomes,
    utc_timestamp,
)
from llm_council.bias_audit.score_table import answer_lengths, score_table_from_session
from llm_council.bias_audit.similarity import (
    SimilarityByMember,
    SimilarityUnavailable,
    similarities_between_answers,
    similarity_from_env,
)
from llm_council.bias_audit.store import PartialWriteError
from llm_council.bias_audit.thresholds import load_thresholds
from llm_council.errors import RecordError
from llm_council.middleware import Middleware, SessionCompleted

ENABLE_VARIABLE = "LLM_COUNCIL_BIAS_AUDIT"
REFERENCE_ENABLE_VARIABLE = "BIAS_AUDIT_ENABLED"  # the reference council's switch (ADR 0015)

log = structlog.get_logger("llm_council.bias_audit")


class BiasAuditMiddleware(Middleware):
    """Per-session bias statistics in the metadata, and records in the store."""

    name: ClassVar[str] = "bias_audit"

    def enabled(self) -> bool:
        """The switch (ours wins when set); a word that is not true/false is a ConfigError,
        so a typo such as ``ture`` stops the run instead of silently turning the audit off."""
        ours_set = os.environ.get(ENABLE_VARIABLE, "").strip() != ""
        return env_flag(ENABLE_VARIABLE if ours_set else REFERENCE_ENABLE_VARIABLE, os.environ)

    def check_config(self) -> None:
        """Bad thresholds, or hashing on without a secret, stop the session before it runs."""
        load_thresholds()
        query_hash_from_env("")
        open_store().check()  # a FIFO, directory or device as the store, or a bad URL
        similarity_from_env()  # an unknown LLM_COUNCIL_SIMILARITY

    async def on_session_end(self, event: SessionCompleted) -> dict[str, Any]:
        thresholds = load_thresholds()
        query_hash = query_hash_from_env(event.query)
        lengths = answer_lengths(event.answers)  # words counted once, for table and records
        table = score_table_from_session(event.answers, event.reviews, lengths=lengths)
        audit = audit_score_table(table, thresholds).model_dump(mode="json")
        audit["review_outcomes"] = session_review_outcomes(event)  # ADR 0027
        similarity = await self._similarity(event, audit)
        records = records_from_session(
            event,
            timestamp=utc_timestamp(),
            query_hash=query_hash,
            similarity=similarity,
            lengths=lengths,
        )
        try:
            # awaited, never blocking the loop: JSONL in a worker thread, PostgreSQL async
            audit["records_written"] = await open_store().write_session(records)
        except RecordError as error:
            # the statistics are still worth returning when only the store failed
            log.warning("bias_records_not_written", error=str(error))
            audit["records_written"] = 0
            audit["record_store_error"] = str(error)
            if isinstance(error, PartialWriteError):  # rollback failed: say what is there
                audit["records_left_incomplete"] = error.records_left
        return audit

    @staticmethod
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
