"""``run_full_council``: the three stages, the metadata, and the middleware events."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from llm_council.aggregate import aggregate_reviews
from llm_council.call_pricing import SessionCosts
from llm_council.config import CouncilConfig, CouncilMember, load_council_config
from llm_council.debiased_aggregate import chairman_standings, debiased_aggregate
from llm_council.errors import ConfigError, CouncilError
from llm_council.infra import tracing
from llm_council.infra.log_setup import ensure_default_logging, redact
from llm_council.middleware import (
    AdjustmentsRequested,
    Middleware,
    MiddlewareDispatcher,
    SessionCompleted,
    SessionStarted,
    Stage1Completed,
    Stage2Completed,
    discover_middleware,
)
from llm_council.providers.calling import CallGate
from llm_council.providers.registry import create_provider
from llm_council.results import CouncilResult, MemberAnswer, ModelStanding, Review, Synthesis
from llm_council.review_orders import merge_review_orders
from llm_council.session_context import SessionContext, StageClock
from llm_council.session_metadata import StageResults, session_metadata
from llm_council.stages import (
    Seat,
    collect_answers,
    collect_check_reviews,
    collect_reviews,
    synthesize,
)
from llm_council.storable_text import require_storable

log = structlog.get_logger("llm_council.council")


def _seat(member: CouncilMember) -> Seat:
    try:
        return Seat(member, create_provider(member.spec, member.options))
    except ConfigError as error:
        raise ConfigError(f"member '{member.name}' ({member.spec}): {error}") from None


def session_costs(config: CouncilConfig) -> SessionCosts:
    """The session's cost tally (:meth:`SessionCosts.for_members`, ADR 0058)."""
    specs = [member.spec for member in (*config.members, config.chairman)]
    return SessionCosts.for_members(specs, config.prices, config.max_cost_usd)


def _session_trace_summary(metadata: dict[str, Any]) -> dict[str, Any]:
    """Scalars of the metadata worth seeing on the session span (never text)."""
    return {
        "llm_council.degraded_count": len(metadata["degraded"]),
        "llm_council.degraded_stages": sorted({f["stage"] for f in metadata["degraded"]}),
        "llm_council.deadline_reached": metadata["deadline_reached"],
        "llm_council.truncated_answers": len(metadata["truncated_answers"]),
        "llm_council.middleware_errors": len(metadata["middleware_errors"]),
        "gen_ai.usage.input_tokens": metadata["token_usage"]["input_tokens"],
        "gen_ai.usage.output_tokens": metadata["token_usage"]["output_tokens"],
        "llm_council.calls_without_usage": metadata["token_usage"]["calls_without_usage"],
    }


async def run_full_council(
    query: str,
    *,
    config: CouncilConfig | None = None,
    seed: int | None = None,
    middleware: Sequence[Middleware] | None = None,
    session_id: str | None = None,
) -> CouncilResult:
    """Run one council session: answer, anonymized peer review, synthesis.

    ``middleware=None`` uses every registered middleware that is enabled (for example
    the bias audit with ``LLM_COUNCIL_BIAS_AUDIT=true``); pass a list to choose exactly.
    Raises :class:`CouncilError` only when the query is empty or no member could answer
    (its :class:`~llm_council.errors.InputError` when the query or ``session_id`` holds a
    lone UTF-16 surrogate, before any call: :mod:`llm_council.storable_text`). The session, its
    stages and its model calls are OpenTelemetry spans when tracing is configured
    (:mod:`llm_council.infra.tracing`).
    """
    if not query.strip():
        raise CouncilError("the query is empty")
    require_storable("the query", query)
    if session_id is not None:
        require_storable("session_id", session_id)
    ensure_default_logging()
    config = config or load_council_config()
    seed = secrets.randbits(31) if seed is None else seed
    session_id = session_id or uuid.uuid4().hex
    dispatcher = MiddlewareDispatcher(discover_middleware() if middleware is None else middleware)
    dispatcher.check_config()
    session_costs(config)  # a budget with an unpriced member stops here, before any call
    if config.aggregation == "debiased" and not dispatcher.supplies_adjustments():
        raise ConfigError(
            "aggregation = 'debiased' needs a middleware that supplies reviewer adjustments "
            "(the bias audit: LLM_COUNCIL_BIAS_AUDIT=true)"
        )
    seats = [_seat(m) for m in config.members]
    chairman = _seat(config.chairman)
    config_hash = config.config_hash()  # once per session: the span and the records share it
    span_attributes = {
        "llm_council.seed": seed,
        "llm_council.council_config_hash": config_hash,
        "llm_council.members": [m.name for m in config.members],
        "llm_council.chairman": config.chairman.name,
        "llm_council.session_deadline_s": config.session_deadline_s,
    }
    try:
        with tracing.session_span(session_id, span_attributes) as session_trace:
            session = await _open_session(query, config, config_hash, seed, session_id, dispatcher)
            result, middleware_results = await _run_session(session, seats, chairman)
            session_trace.add_middleware_results(middleware_results)
            session_trace.set(_session_trace_summary(result.metadata))
            return result
    finally:
        for seat in [*seats, chairman]:
            try:
                await seat.provider.aclose()
            except Exception as error:  # closing must never mask the session's outcome
                log.warning(
                    "provider_close_failed",
                    session_id=session_id,
                    provider=seat.provider.spec,
                    error=str(error),
                )


async def _synthesis_and_checks(
    session: SessionContext,
    clock: StageClock,
    ok_answers: list[MemberAnswer],
    reviewer_seats: list[Seat],
    chairman: Seat,
    shown: tuple[list[ModelStanding], dict[str, str] | None],
) -> tuple[Synthesis, dict[str, dict[str, object]], list[Review], dict[str, int]]:
    """Stage 3, with the live bias checks (when on) in a task of their own next to it.

    ``shown`` is the standings the chairman sees and its ranking notes. Returns the
    synthesis, the chairman's label map, the check reviews and their token usage.
    """
    # Checks (if any) are scheduled now but only start once this task suspends: the
    # synthesis runs first, so its request leaves before any check's is even built.
    checks_task = (
        asyncio.create_task(_bias_check_stage(session, ok_answers, reviewer_seats))
        if session.config.bias_check_probability > 0
        else None
    )
    check_reviews: list[Review] = []
    check_usage: dict[str, int] = {}
    try:
        with clock.stage("stage3", span="synthesize") as stage:
            synthesis, chairman_labels = await synthesize(
                session, ok_answers, shown[0], chairman, shown[1]
            )
            stage.set({"llm_council.fallback": synthesis.is_fallback})
            stage.log(fallback=synthesis.is_fallback)
        if checks_task is not None:
            check_reviews, check_usage = await checks_task
    finally:  # a failed or cancelled session leaves no check running behind it
        if checks_task is not None:
            checks_task.cancel()
    return synthesis, chairman_labels, check_reviews, check_usage


async def _bias_check_stage(
    session: SessionContext, ok_answers: list[MemberAnswer], reviewer_seats: list[Seat]
) -> tuple[list[Review], dict[str, int]]:
    """The live bias checks (ADR 0024) through their own gate (ADR 0031): their own slots
    and the whole session deadline, never the counted calls'. Returns the check reviews and
    their token usage."""
    config, gate = session.config, session.gate
    check_gate = CallGate(
        config.max_concurrency,
        config.session_deadline_s,
        started_at=gate.started_at,
        stage="bias_check",
        costs=gate.costs,  # checks cost money too; the budget stops only counted reviews
    )
    with tracing.stage_span("bias_check") as stage_trace:
        # the checks' calls go through their own gate; everything else is the session's
        checks = await collect_check_reviews(
            dataclasses.replace(session, gate=check_gate), ok_answers, reviewer_seats
        )
        stage_trace.set(
            {
                "llm_council.succeeded": sum(r.ok for r in checks),
                "llm_council.calls": len(checks),
                "llm_council.calls_given_up_at_deadline": check_gate.given_up,
            }
        )
    return checks, check_gate.token_usage()


async def _debiased_stage(
    session: SessionContext,
    answers: Sequence[MemberAnswer],
    reviews: Sequence[Review],
    standings: list[ModelStanding],
) -> tuple[dict[str, Any], list[ModelStanding], dict[str, str] | None]:
    """``aggregation = "debiased"`` (ADR 0046): the metadata keys, the standings the chairman
    sees and its ranking notes. Without adjustments (the middleware failed or had none to
    give) the chairman sees the raw aggregate and the metadata says so."""
    reviewers = tuple(dict.fromkeys(r.reviewer for r in reviews if r.ok))
    adjustments = await session.dispatcher.reviewer_adjustments(
        AdjustmentsRequested(session.session_id, session.config_hash, reviewers)
    )
    if adjustments is None:
        return {"debiased_rankings": None, "aggregation_used": "raw"}, standings, None
    chars = {a.member: len(a.text) for a in answers if a.text is not None}
    debiased = debiased_aggregate(reviews, chars, adjustments, standings)
    notes = {
        d.model: f"debiased mean score {d.debiased_mean_score:.2f}"
        for d in debiased
        if d.debiased_mean_score is not None
    }
    metadata = {
        "debiased_rankings": [d.model_dump() for d in debiased],
        "aggregation_used": "debiased",
        "reviewer_adjustments": {
            reviewer: {
                "leniency": a.leniency,
                "slot_effects": list(a.slot_effects),
                "length_slope_per_doubling": a.length_slope,
                "n_scores": a.n_scores,
            }
            for reviewer, a in sorted(adjustments.items())
        },
    }
    return metadata, chairman_standings(standings, debiased), notes


async def _open_session(
    query: str,
    config: CouncilConfig,
    config_hash: str,
    seed: int,
    session_id: str,
    dispatcher: MiddlewareDispatcher,
) -> SessionContext:
    """Tell the middleware the session started, then start its call gate (and deadline)."""
    started_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    started_perf = time.perf_counter()
    await dispatcher.session_started(
        SessionStarted(session_id, query, tuple(m.name for m in config.members), config_hash, seed)
    )
    gate = CallGate(config.max_concurrency, config.session_deadline_s, costs=session_costs(config))
    return SessionContext(
        session_id=session_id,
        query=query,
        config=config,
        config_hash=config_hash,
        seed=seed,
        dispatcher=dispatcher,
        gate=gate,
        started_at=started_at,
        started_perf=started_perf,
        log=log.bind(session_id=session_id),
    )


async def _answer_stage(
    session: SessionContext, clock: StageClock, seats: list[Seat]
) -> list[MemberAnswer]:
    """Stage 1: every member answers; raises :class:`CouncilError` when none could."""
    with clock.stage("stage1", span="answer") as stage:
        answers = await collect_answers(session, seats)
        ok_answers = [a for a in answers if a.ok]
        stage.set({"llm_council.succeeded": len(ok_answers), "llm_council.calls": len(answers)})
        stage.log(answered=len(ok_answers), failed=len(answers) - len(ok_answers))
    if not ok_answers:
        reasons = redact("; ".join(f"{a.member}: {a.error}" for a in answers))
        raise CouncilError(f"every council member failed to answer: {reasons}")
    await session.dispatcher.stage1_completed(Stage1Completed(session.session_id, tuple(answers)))
    return answers


async def _review_stage(
    session: SessionContext,
    clock: StageClock,
    answers: list[MemberAnswer],
    reviewer_seats: list[Seat],
) -> tuple[list[Review], list[ModelStanding]]:
    """Stage 2: the members who answered review the answers; the raw aggregate of them."""
    ok_answers = [a for a in answers if a.ok]
    with clock.stage("stage2", span="review") as stage:
        reviews = await collect_reviews(session, ok_answers, reviewer_seats)
        stage.set(
            {"llm_council.succeeded": sum(r.ok for r in reviews), "llm_council.calls": len(reviews)}
        )
        # with review_orders = 2 each reviewer counts once, its two orders averaged (ADR 0046)
        standings = aggregate_reviews(merge_review_orders(reviews), [a.member for a in ok_answers])
        stage.log(parsed=sum(r.ok for r in reviews), reviews=len(reviews))
    # the bias checks are still to come (ADR 0031): this event has the counted reviews only
    await session.dispatcher.stage2_completed(
        Stage2Completed(session.session_id, tuple(answers), tuple(reviews), tuple(standings))
    )
    return reviews, standings


async def _complete_session(
    session: SessionContext, results: StageResults, metadata: dict[str, Any]
) -> tuple[CouncilResult, dict[str, Any]]:
    """Hand the finished session to the middleware; the result and what the middleware added."""
    added = await session.dispatcher.session_completed(
        SessionCompleted(
            session.session_id,
            session.query,
            session.config_hash,
            tuple(results.answers),
            # middleware sees the check reviews after the reviews, each flagged ``check_kind``
            (*results.reviews, *results.check_reviews),
            tuple(results.standings),
            results.synthesis,
            session.started_at,
            dict(metadata),
        )
    )
    metadata.update(added)
    metadata["middleware_errors"] = list(session.dispatcher.errors)
    metadata["duration_s"] = round(time.perf_counter() - session.started_perf, 4)
    session.log.info(
        "session_done", degraded=len(metadata["degraded"]), duration_s=metadata["duration_s"]
    )
    result = CouncilResult(
        stage1=results.answers,
        stage2=results.reviews,
        stage3=results.synthesis,
        metadata=metadata,
        bias_check_reviews=results.check_reviews,
    )
    return result, added


async def _run_session(
    session: SessionContext, seats: list[Seat], chairman: Seat
) -> tuple[CouncilResult, dict[str, Any]]:
    """The three stages and the metadata, one line a stage; also returns what the
    middleware added."""
    clock = StageClock(session.log)
    answers = await _answer_stage(session, clock, seats)
    ok_answers = [a for a in answers if a.ok]
    answered = {a.member for a in ok_answers}
    reviewer_seats = [seat for seat in seats if seat.member.name in answered]
    reviews, standings = await _review_stage(session, clock, answers, reviewer_seats)
    aggregation_metadata: dict[str, Any] = {}
    shown: tuple[list[ModelStanding], dict[str, str] | None] = (standings, None)
    if session.config.aggregation == "debiased":
        with clock.stage("debias"):  # the history read shows here
            aggregation_metadata, shown_standings, ranking_notes = await _debiased_stage(
                session, ok_answers, reviews, standings
            )
        shown = (shown_standings, ranking_notes)
    synthesis, chairman_labels, check_reviews, check_usage = await _synthesis_and_checks(
        session, clock, ok_answers, reviewer_seats, chairman, shown
    )
    results = StageResults(
        answers=answers,
        reviews=reviews,
        standings=standings,
        synthesis=synthesis,
        chairman_labels=chairman_labels,
        check_reviews=check_reviews,
        check_usage=check_usage,
        aggregation_metadata=aggregation_metadata,
    )
    metadata = session_metadata(session, results, clock.durations)
    return await _complete_session(session, results, metadata)
