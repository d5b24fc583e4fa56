"""``BiasAuditMiddleware``: the audit as an opt-in plug-in of the council.

Enabled by ``LLM_COUNCIL_BIAS_AUDIT=true`` (or 1/yes/on; an unknown word is a
ConfigError), or by the reference council's ``BIAS_AUDIT_ENABLED=true`` when ours is
unset (ours wins when both are set). At the
end of a session it computes the :class:`BiasAuditResult` (stored at
``metadata["bias_audit"]``) and writes one record per (reviewer, candidate) to the
record store (JSONL, or PostgreSQL for a ``postgresql://`` URL), then adds the anytime
monitor's answer at ``metadata["bias_audit"]["monitor"]`` (ADR 0053). Configuration errors
(bad threshold, hashing on without a secret, a store path that is not a regular file, a
bad store URL) are raised by :meth:`check_config` before the session's first model call,
so they stop the run instead of surfacing after it.

The entry point loads this class in every process that runs a council, audit on or off;
the work itself (:mod:`.session_audit`, numpy and scipy) is imported only when the audit
is on, so a council without it starts about 0.3 s sooner.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, ClassVar

import structlog

from llm_council.bias_audit.records.query_hash import env_flag
from llm_council.debiased_aggregate import ReviewerAdjustment
from llm_council.middleware import AdjustmentsRequested, Middleware, SessionCompleted

ENABLE_VARIABLE = "LLM_COUNCIL_BIAS_AUDIT"
REFERENCE_ENABLE_VARIABLE = "BIAS_AUDIT_ENABLED"  # the reference council's switch (ADR 0015)

log = structlog.get_logger("llm_council.bias_audit")


async def _monitor_answer(appended: list[Any]) -> dict[str, Any]:
    """The anytime monitor after this session's append (ADR 0053; ``appended``: the
    session's records as written, folded from memory), off the event loop; a failure is
    logged and answered as ``unavailable``, never raised into the session."""
    from llm_council.bias_audit.records.monitor_status import monitor_unavailable
    from llm_council.bias_audit.records.monitor_update import monitor_after_session
    from llm_council.bias_audit.records.stores import store_spec

    try:
        return await asyncio.to_thread(monitor_after_session, store_spec(), appended)
    except Exception as error:  # noqa: BLE001 - the monitor never fails a session
        reason = f"{type(error).__name__}: {error}".splitlines()[0]
        log.warning("bias_monitor_failed", error=reason)
        return monitor_unavailable(reason)


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
        from llm_council.bias_audit.session.session_audit import check_audit_config

        check_audit_config()

    async def on_session_end(self, event: SessionCompleted) -> dict[str, Any]:
        from llm_council.bias_audit.session.session_audit import audit_session

        written: list[Any] = []  # the records as the store took them, for the monitor
        audit = await audit_session(event, written=written)
        audit["monitor"] = await _monitor_answer(written)
        return audit

    async def reviewer_adjustments(
        self, event: AdjustmentsRequested
    ) -> Mapping[str, ReviewerAdjustment] | None:
        """Each reviewer's leniency, slot effects and length slope from this council's past
        sessions in the configured store (ADR 0046), read off the event loop."""
        from llm_council.bias_audit.records.stores import store_spec
        from llm_council.bias_audit.session.history_adjustments import reviewer_adjustments

        return await asyncio.to_thread(
            reviewer_adjustments,
            store_spec(),
            event.reviewers,
            council_config_hash=event.council_config_hash,
        )
