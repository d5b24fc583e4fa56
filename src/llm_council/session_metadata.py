"""The metadata of one council session, built from what its stages produced.

:func:`session_metadata` builds the ``metadata`` dict of :class:`CouncilResult` in one place,
key by key in the order it is saved (the results JSON is a public format: keep the order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_council.bias_checks import bias_check_summary
from llm_council.config import CouncilConfig
from llm_council.providers.calling import CallGate
from llm_council.results import MemberAnswer, ModelStanding, Review, Synthesis
from llm_council.reviewer_fingerprints import reviewer_fingerprints
from llm_council.session_context import SessionContext


@dataclass(frozen=True)
class StageResults:
    """What the stages produced: the result and the metadata are built from it."""

    answers: list[MemberAnswer]
    reviews: list[Review]  # the counted reviews (both orders with ``review_orders = 2``)
    standings: list[ModelStanding]  # the raw aggregate
    synthesis: Synthesis
    chairman_labels: dict[str, dict[str, object]]
    check_reviews: list[Review] = field(default_factory=list)  # live bias checks (ADR 0024)
    check_usage: dict[str, int] = field(default_factory=dict)  # their token usage
    aggregation_metadata: dict[str, Any] = field(default_factory=dict)  # ADR 0046


def _degraded(answers: Sequence[MemberAnswer], reviews: Sequence[Review]) -> list[dict[str, str]]:
    """The calls that failed: answers, missing or unparseable reviews (synthesis: the caller)."""
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


def _bias_check_metadata(config: CouncilConfig, check_reviews: Sequence[Review]) -> dict[str, Any]:
    """``bias_checks`` when live checks are on (ADR 0024); nothing at all when they are off."""
    if config.bias_check_probability <= 0:
        return {}
    summary = bias_check_summary(
        check_reviews, config.bias_check_probability, config.bias_check_kinds
    )
    return {"bias_checks": summary}


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


def session_metadata(
    session: SessionContext, results: StageResults, durations: dict[str, float]
) -> dict[str, Any]:
    """The session's metadata as saved with the result, before the middleware adds its keys."""
    config, reviews, synthesis = session.config, results.reviews, results.synthesis
    degraded = _degraded(results.answers, reviews)
    if synthesis.is_fallback:
        degraded.append(
            {"stage": "synthesize", "member": synthesis.chairman, "error": synthesis.error or ""}
        )
    return {
        "session_id": session.session_id,
        "seed": session.seed,
        "started_at": session.started_at,
        "council_config_hash": session.config_hash,
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
        "chairman_label_to_model": results.chairman_labels,
        "aggregate_rankings": [s.model_dump() for s in results.standings],
        **results.aggregation_metadata,
        "review_parse_status": {r.reviewer: r.parse_status for r in reviews if r.review_order == 0},
        **_review_order_metadata(config, reviews),
        "degraded": degraded,
        **_call_metadata(config, session.gate, results.answers, results.check_usage),
        "cost_usd": session.gate.costs.as_metadata() if session.gate.costs is not None else None,
        **_bias_check_metadata(config, results.check_reviews),
        "stage_durations_s": {k: round(v, 4) for k, v in durations.items()},
    }
