"""``run_full_council``: the three stages, the metadata, and the middleware events."""

from __future__ import annotations

import asyncio
import secrets
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from llm_council.aggregate import aggregate_reviews
from llm_council.bias_checks import bias_check_summary
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
from llm_council.reviewer_fingerprints import reviewer_fingerprints
from llm_council.stages import (
    Seat,
    collect_answers,
    collect_check_reviews,
    collect_reviews,
    synthesize,
)

log = structlog.get_logger("llm_council.council")


def _seat(member: CouncilMember) -> Seat:
    try:
        return Seat(member, create_provider(member.spec, member.options))
    except ConfigError as error:
        raise ConfigError(f"member '{member.name}' ({member.spec}): {error}") from None


def _degraded(answers: Sequence[MemberAnswer], reviews: Sequence[Review]) -> list[dict[str, str]]:
    failures = [
        {"stage": "answer", "member": a.member, "error": a.error or ""} for a in answers if not a.ok
    ]
    for review in reviews:
        if review.parse_status == "missing":
            failures.append(
                {"stage": "review", "member": review.reviewer, "error": review.error or "no review"}
            )
        elif review.parse_status == "unparseable":
            failures.append(
                {
                    "stage": "review",
                    "member": review.reviewer,
                    "error": f"unparseable review: {review.parse_error}",
                }
            )
    return failures


def _call_metadata(
    config: CouncilConfig,
    gate: CallGate,
    answers: Sequence[MemberAnswer],
    check_usage: dict[str, int],
) -> dict[str, Any]:
    """What the session deadline and the answer cap did to the counted calls, and the
    tokens every call used (bias checks included: they cost tokens too)."""
    usage = gate.token_usage()
    return {
        "session_deadline_s": config.session_deadline_s,
        "deadline_reached": gate.given_up > 0,
        "calls_given_up_at_deadline": gate.given_up,
        "token_usage": {key: usage[key] + check_usage.get(key, 0) for key in usage},
        "max_answer_chars": config.max_answer_chars,
        "truncated_answers": [
            {
                "member": a.member,
                "original_chars": a.original_chars,
                "kept_chars": len(a.text or ""),
            }
            for a in answers
            if a.original_chars is not None
        ],
    }


def session_costs(config: CouncilConfig) -> SessionCosts:
    """The session's cost tally (:meth:`SessionCosts.for_members`, ADR 0058)."""
    specs = [member.spec for member in (*config.members, config.chairman)]
    return SessionCosts.for_members(specs, config.prices, config.max_cost_usd)


def _bias_check_metadata(config: CouncilConfig, check_reviews: Sequence[Review]) -> dict[str, Any]:
    """``bias_checks`` when live checks are on (ADR 0024); nothing at all when they are off."""
    if config.bias_check_probability <= 0:
        return {}
    summary = bias_check_summary(
        check_reviews, config.bias_check_probability, config.bias_check_kinds
    )
    return {"bias_checks": summary}


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
    Raises :class:`CouncilError` only when no member could answer. The session, its
    stages and its model calls are OpenTelemetry spans when tracing is configured
    (:mod:`llm_council.infra.tracing`).
    """
    if not query.strip():
        raise CouncilError("the query is empty")
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
            result, middleware_results = await _run_session(
                query, config, config_hash, seed, session_id, dispatcher, seats, chairman
            )
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


async def _synthesis_stage(
    query: str,
    ok_answers: list[MemberAnswer],
    standings: list[ModelStanding],
    chairman: Seat,
    config: CouncilConfig,
    seed: int,
    gate: CallGate,
    ranking_notes: dict[str, str] | None = None,
) -> tuple[Synthesis, dict[str, dict[str, object]]]:
    """Stage 3 in its span (the bias checks, when on, run next to it in a task of their own)."""
    with tracing.stage_span("synthesize") as stage_trace:
        synthesis, chairman_labels = await synthesize(
            query, ok_answers, standings, chairman, config, seed, gate, ranking_notes
        )
        stage_trace.set({"llm_council.fallback": synthesis.is_fallback})
    return synthesis, chairman_labels


async def _bias_check_stage(
    query: str,
    ok_answers: list[MemberAnswer],
    reviewer_seats: list[Seat],
    config: CouncilConfig,
    seed: int,
    gate: CallGate,
) -> tuple[list[Review], dict[str, int]]:
    """The live bias checks (ADR 0024) through their own gate (ADR 0031): their own slots
    and the whole session deadline, never the counted calls'. Returns the check reviews and
    their token usage."""
    check_gate = CallGate(
        config.max_concurrency,
        config.session_deadline_s,
        started_at=gate.started_at,
        stage="bias_check",
        costs=gate.costs,  # checks cost money too; the budget stops only counted reviews
    )
    with tracing.stage_span("bias_check") as stage_trace:
        checks = await collect_check_reviews(
            query, ok_answers, reviewer_seats, config, seed, check_gate
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
    session_id: str,
    config_hash: str,
    dispatcher: MiddlewareDispatcher,
    answers: Sequence[MemberAnswer],
    reviews: Sequence[Review],
    standings: list[ModelStanding],
) -> tuple[dict[str, Any], list[ModelStanding], dict[str, str] | None]:
    """``aggregation = "debiased"`` (ADR 0046): the metadata keys, the standings the chairman
    sees and its ranking notes. Without adjustments (the middleware failed or had none to
    give) the chairman sees the raw aggregate and the metadata says so."""
    reviewers = tuple(dict.fromkeys(r.reviewer for r in reviews if r.ok))
    adjustments = await dispatcher.reviewer_adjustments(
        AdjustmentsRequested(session_id, config_hash, reviewers)
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


def _review_order_metadata(config: CouncilConfig, reviews: Sequence[Review]) -> dict[str, Any]:
    """``review_orders = 2`` (ADR 0046): the second orders' label maps and parse statuses;
    nothing at all with one order."""
    if config.review_orders == 1:
        return {}
    second = [r for r in reviews if r.review_order == 1]
    return {
        "review_orders": {
            "orders": config.review_orders,
            "label_to_model": {
                r.reviewer: {label: a.model_dump() for label, a in r.label_to_model.items()}
                for r in second
            },
            "review_parse_status": {r.reviewer: r.parse_status for r in second},
        }
    }


async def _run_session(
    query: str,
    config: CouncilConfig,
    config_hash: str,
    seed: int,
    session_id: str,
    dispatcher: MiddlewareDispatcher,
    seats: list[Seat],
    chairman: Seat,
) -> tuple[CouncilResult, dict[str, Any]]:
    """The three stages and the metadata; also returns what the middleware added."""
    started_at = datetime.now(UTC).isoformat(timespec="milliseconds")
    session_start = time.perf_counter()
    durations: dict[str, float] = {}
    bound_log = log.bind(session_id=session_id)
    await dispatcher.session_started(
        SessionStarted(session_id, query, tuple(m.name for m in config.members), config_hash, seed)
    )
    gate = CallGate(config.max_concurrency, config.session_deadline_s, costs=session_costs(config))
    stage_start = time.perf_counter()
    with tracing.stage_span("answer") as stage_trace:
        answers = await collect_answers(query, seats, config, seed, gate)
        ok_answers = [a for a in answers if a.ok]
        stage_trace.set(
            {"llm_council.succeeded": len(ok_answers), "llm_council.calls": len(answers)}
        )
    durations["stage1"] = time.perf_counter() - stage_start
    bound_log.info(
        "stage1_done",
        answered=len(ok_answers),
        failed=len(answers) - len(ok_answers),
        duration_s=round(durations["stage1"], 3),
    )
    if not ok_answers:
        reasons = redact("; ".join(f"{a.member}: {a.error}" for a in answers))
        raise CouncilError(f"every council member failed to answer: {reasons}")
    await dispatcher.stage1_completed(Stage1Completed(session_id, tuple(answers)))

    stage_start = time.perf_counter()
    answered = {a.member for a in ok_answers}
    reviewer_seats = [seat for seat in seats if seat.member.name in answered]
    with tracing.stage_span("review") as stage_trace:
        reviews = await collect_reviews(query, ok_answers, reviewer_seats, config, seed, gate)
        stage_trace.set(
            {"llm_council.succeeded": sum(r.ok for r in reviews), "llm_council.calls": len(reviews)}
        )
    # with review_orders = 2 each reviewer counts once, its two orders averaged (ADR 0046)
    standings = aggregate_reviews(merge_review_orders(reviews), [a.member for a in ok_answers])
    durations["stage2"] = time.perf_counter() - stage_start
    bound_log.info(
        "stage2_done",
        parsed=sum(r.ok for r in reviews),
        reviews=len(reviews),
        duration_s=round(durations["stage2"], 3),
    )
    # the bias checks are still to come (ADR 0031): this event has the counted reviews only
    await dispatcher.stage2_completed(
        Stage2Completed(session_id, tuple(answers), tuple(reviews), tuple(standings))
    )

    aggregation_metadata: dict[str, Any] = {}
    shown_standings, ranking_notes = standings, None
    if config.aggregation == "debiased":
        stage_start = time.perf_counter()
        aggregation_metadata, shown_standings, ranking_notes = await _debiased_stage(
            session_id, config_hash, dispatcher, ok_answers, reviews, standings
        )
        durations["debias"] = time.perf_counter() - stage_start  # the history read shows here

    stage_start = time.perf_counter()
    # Checks (if any) are scheduled now but only start once this task suspends: the
    # synthesis runs first, so its request leaves before any check's is even built.
    checks_task = (
        asyncio.create_task(
            _bias_check_stage(query, ok_answers, reviewer_seats, config, seed, gate)
        )
        if config.bias_check_probability > 0
        else None
    )
    check_reviews: list[Review] = []
    check_usage: dict[str, int] = {}
    try:
        synthesis, chairman_labels = await _synthesis_stage(
            query, ok_answers, shown_standings, chairman, config, seed, gate, ranking_notes
        )
        durations["stage3"] = time.perf_counter() - stage_start
        bound_log.info(
            "stage3_done", fallback=synthesis.is_fallback, duration_s=round(durations["stage3"], 3)
        )
        if checks_task is not None:
            check_reviews, check_usage = await checks_task
    finally:  # a failed or cancelled session leaves no check running behind it
        if checks_task is not None:
            checks_task.cancel()
    # middleware sees the check reviews after the reviews, each flagged ``check_kind``
    all_reviews = (*reviews, *check_reviews)

    degraded = _degraded(answers, reviews)
    if synthesis.is_fallback:
        degraded.append(
            {"stage": "synthesize", "member": synthesis.chairman, "error": synthesis.error or ""}
        )
    metadata: dict[str, Any] = {
        "session_id": session_id,
        "seed": seed,
        "started_at": started_at,
        "council_config_hash": config_hash,
        "members": [{"name": m.name, "spec": m.spec} for m in config.members],
        # each reviewer's set-up as hashes, for the bias audit's records (ADR 0062)
        "reviewer_fingerprints": reviewer_fingerprints(config),
        "chairman": {"name": config.chairman.name, "spec": config.chairman.spec},
        "self_review": config.self_review,
        "score_scale": list(config.score_scale),
        "label_to_model": {
            r.reviewer: {label: a.model_dump() for label, a in r.label_to_model.items()}
            for r in reviews
            if r.review_order == 0
        },
        "chairman_label_to_model": chairman_labels,
        "aggregate_rankings": [s.model_dump() for s in standings],
        **aggregation_metadata,
        "review_parse_status": {r.reviewer: r.parse_status for r in reviews if r.review_order == 0},
        **_review_order_metadata(config, reviews),
        "degraded": degraded,
        **_call_metadata(config, gate, answers, check_usage),
        "cost_usd": gate.costs.as_metadata() if gate.costs is not None else None,
        **_bias_check_metadata(config, check_reviews),
        "stage_durations_s": {k: round(v, 4) for k, v in durations.items()},
    }
    added = await dispatcher.session_completed(
        SessionCompleted(
            session_id,
            query,
            config_hash,
            tuple(answers),
            all_reviews,
            tuple(standings),
            synthesis,
            started_at,
            dict(metadata),
        )
    )
    metadata.update(added)
    metadata["middleware_errors"] = list(dispatcher.errors)
    metadata["duration_s"] = round(time.perf_counter() - session_start, 4)
    bound_log.info("session_done", degraded=len(degraded), duration_s=metadata["duration_s"])
    result = CouncilResult(
        stage1=answers,
        stage2=reviews,
        stage3=synthesis,
        metadata=metadata,
        bias_check_reviews=check_reviews,
    )
    return result, added
