"""The three stages as functions over typed values; config and providers are passed in.

collect_answers (stage 1) -> collect_reviews (stage 2) -> aggregate (aggregate.py) ->
synthesize (stage 3); collect_check_reviews (live bias checks) runs next to stage 3.
Every provider call passes the session's
:class:`~llm_council.providers.calling.CallGate` (one semaphore, the session deadline) into
:func:`~llm_council.providers.calling.call_with_retries`, so concurrency, retries,
timeouts and the deadline are handled once. Stage-1 answers longer than
``config.max_answer_chars`` are cut here, before anyone else sees them.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from llm_council.anonymize import assign_labels, reversed_labels
from llm_council.bias_checks import (
    chosen_for_check,
    draw_check_kind,
    pad_text,
    reshuffled_labels,
    signed_text,
    treated_candidate,
)
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.infra.log_setup import redact
from llm_council.prompts import (
    ANSWER_SYSTEM,
    REVIEW_SCHEMA_NAME,
    REVIEW_SYSTEM,
    ReviewPromptCandidate,
    build_review_prompt,
    build_synthesis_prompt,
    new_nonce,
    review_verdict_schema,
)
from llm_council.providers.base import (
    CompletionRequest,
    Provider,
    StructuredOutputMode,
    Task,
    is_structured_output_refusal,
)
from llm_council.providers.calling import CallGate, CallOutcome
from llm_council.providers.registry import split_spec
from llm_council.ranking_parser import parse_review
from llm_council.results import (
    CandidateScore,
    LabelAssignment,
    MemberAnswer,
    ModelStanding,
    Review,
    Synthesis,
)
from llm_council.session_context import SessionContext


@dataclass(frozen=True)
class Seat:
    """A council member and the provider that answers for it this session."""

    member: CouncilMember
    provider: Provider


_T = TypeVar("_T")


async def gather_in_turn(calls: Iterable[Coroutine[Any, Any, _T]]) -> list[_T]:
    """``asyncio.gather`` of ``calls``, each started in turn and given one turn of the event
    loop before the next is built, so its request is on the wire while the others are built.

    Started all at once, every call's request would wait for all of them to be built:
    aiohttp (before Python 3.12's eager tasks) writes a request in a task of its own,
    queued behind the other calls' request building. The replies then come back bunched,
    and their handling is serialized after the last one arrives; sent in turn, they come
    back spread out and each is handled while the next is still on its way (ADR 0035).
    The calls still all run concurrently, in the same order, with gather's semantics.
    """
    tasks: list[asyncio.Task[_T]] = []
    try:
        for call in calls:
            tasks.append(asyncio.ensure_future(call))
            await asyncio.sleep(0)
    except BaseException:  # cancelled while starting: stop the calls already started
        for task in tasks:
            task.cancel()
        raise
    return list(await asyncio.gather(*tasks))


def error_text(error: Exception | None) -> str | None:
    """An error as it may be shown (metadata, logs): every configured secret redacted."""
    return None if error is None else redact(str(error))


def call_seed(session_seed: int, member_name: str, stage: str) -> int:
    """A per-call sampling seed derived from the session seed (reproducible runs)."""
    digest = hashlib.sha256(f"{session_seed}\x00{member_name}\x00{stage}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


async def _call(
    seat: Seat, request: CompletionRequest, config: CouncilConfig, gate: CallGate
) -> CallOutcome:
    return await gate.call(seat.provider, request, config.retry, request.task, seat.member.name)


async def collect_answers(session: SessionContext, seats: Sequence[Seat]) -> list[MemberAnswer]:
    """Stage 1: every member answers the query concurrently."""
    query, config, session_seed, gate = session.query, session.config, session.seed, session.gate

    async def answer(seat: Seat) -> MemberAnswer:
        request = CompletionRequest.from_prompt(
            query,
            system=ANSWER_SYSTEM,
            task="answer",
            seed=call_seed(session_seed, seat.member.name, "answer"),
        )
        outcome = await _call(seat, request, config, gate)
        text = outcome.completion.text if outcome.completion else None
        original_chars = None
        if text is not None and len(text) > config.max_answer_chars:
            # cut here so reviewers and the chairman never get more than the cap
            original_chars, text = len(text), text[: config.max_answer_chars]
        return MemberAnswer(
            member=seat.member.name,
            spec=seat.member.spec,
            text=text,
            original_chars=original_chars,
            error=error_text(outcome.error),
            attempts=outcome.attempts,
            duration_s=round(outcome.duration_s, 4),
        )

    return await gather_in_turn(answer(seat) for seat in seats)


def _request(prompt: str, system: str, task: Task, seed: int) -> CompletionRequest:
    return CompletionRequest.from_prompt(prompt, system=system, task=task, seed=seed)


def _review_request(
    query: str,
    label_to_model: dict[str, LabelAssignment],
    texts: Mapping[str, str],
    config: CouncilConfig,
    nonce: str,
    mode: StructuredOutputMode,
    seed: int,
) -> CompletionRequest:
    """The stage-2 request: the verdict schema on the native path, nonce-tagged text otherwise."""
    candidates = [
        ReviewPromptCandidate(label, texts[a.model]) for label, a in label_to_model.items()
    ]
    native = mode == "native"
    prompt = build_review_prompt(
        query, candidates, config.score_scale, nonce, "structured" if native else "nonce"
    )
    return CompletionRequest.from_prompt(
        prompt,
        system=REVIEW_SYSTEM,
        task="review",
        seed=seed,
        response_schema=review_verdict_schema(list(label_to_model)) if native else None,
        response_schema_name=REVIEW_SCHEMA_NAME,
    )


#: finish reasons by which a provider says its model declined to answer (OpenAI's
#: ``message.refusal`` and ``content_filter``, Anthropic's ``refusal``, Google's ``SAFETY``)
_REFUSAL_FINISH = frozenset({"refusal", "content_filter", "safety", "prohibited_content"})


def _provider_refusal(outcome: CallOutcome) -> str | None:
    """The provider's own refusal (a finish reason, never the reply's text), or None."""
    if outcome.completion is not None:
        reason = outcome.completion.finish_reason
    else:
        # an empty answer whose finish reason is a refusal is the provider's refusal field
        # (empty_answer_error), not a failure
        reason = outcome.error.finish_reason if outcome.error is not None else None
    if reason is not None and reason.lower() in _REFUSAL_FINISH:
        return f"the provider reports a refusal (finish_reason={reason})"
    return None


def _refused_structured_output(outcome: CallOutcome) -> str | None:
    error = outcome.error
    if error is not None and is_structured_output_refusal(error.status_code, str(error)):
        return error_text(error)  # redacted like every other error the metadata keeps
    return None


async def review_once(
    session: SessionContext,
    seat: Seat,
    label_to_model: dict[str, LabelAssignment],
    texts: Mapping[str, str],
    seed: int,
    base: Review,
) -> Review:
    """One stage-2 request of ``seat`` over ``label_to_model``, parsed into ``base``'s fields.

    ``seed`` is the call's own sampling seed (:func:`call_seed`), not the session's.
    """
    query, config, gate = session.query, session.config, session.gate
    nonce = new_nonce()
    mode = seat.provider.structured_output
    if gate.expired("review"):  # past the deadline: not even the prompt is built
        outcome = gate.give_up_unsent(seat.provider, "review")
    else:
        request = _review_request(query, label_to_model, texts, config, nonce, mode, seed)
        outcome = await _call(seat, request, config, gate)
    refused = _refused_structured_output(outcome) if mode == "native" else None
    if refused is not None:  # a server without json_schema: once more, nonce-tagged
        request = _review_request(query, label_to_model, texts, config, nonce, "nonce", seed)
        first_attempts, first_duration = outcome.attempts, outcome.duration_s
        outcome = await _call(seat, request, config, gate)
        outcome = CallOutcome(
            outcome.completion,
            outcome.error,
            outcome.attempts + first_attempts,
            outcome.duration_s + first_duration,
        )
        base = base.model_copy(update={"structured_output_refused": refused})
    provider_refusal = _provider_refusal(outcome)
    if provider_refusal is not None:
        return base.model_copy(
            update={
                "parse_status": "refused",
                "parse_error": provider_refusal,
                "raw_text": outcome.completion.text if outcome.completion else None,
                "attempts": outcome.attempts,
                "duration_s": round(outcome.duration_s, 4),
            }
        )
    if outcome.completion is None:
        return base.model_copy(
            update={
                "parse_status": "missing",
                "error": error_text(outcome.error),
                "attempts": outcome.attempts,
                "duration_s": round(outcome.duration_s, 4),
            }
        )
    parsed = parse_review(
        outcome.completion.text,
        list(label_to_model),
        config.score_scale,
        nonce=nonce,
        structured=outcome.completion.channel == "structured",
    )
    rank_of = {label: i for i, label in enumerate(parsed.ranking, start=1)}
    candidates = tuple(
        CandidateScore(
            candidate=a.model,
            label=label,
            display_index=a.display_index,
            score=parsed.scores.get(label),
            rank=rank_of.get(label),
            is_self_review=a.model == base.reviewer,
        )
        for label, a in label_to_model.items()
    )
    usage = outcome.completion.usage
    return base.model_copy(
        update={
            "candidates": candidates,
            "ranking": tuple(label_to_model[label].model for label in parsed.ranking),
            "parse_status": parsed.status,
            "parse_error": parsed.error,
            "rationale": parsed.rationale,
            "rationale_chars": parsed.rationale_chars,
            "raw_text": outcome.completion.text,
            "verdict_channel": parsed.channel,
            "attempts": outcome.attempts,
            "duration_s": round(outcome.duration_s, 4),
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
        }
    )


def _usable_weights(config: CouncilConfig, n_shown: int, n_others: int) -> dict[str, float]:
    """The configured mix, without ``identity`` when only the reviewer's own answer is shown."""
    weights = dict(config.bias_check_kinds)
    if n_others == 0 or n_shown == 0:
        weights.pop("identity", None)
    return weights


async def _check_review(
    session: SessionContext,
    seat: Seat,
    original: dict[str, LabelAssignment],
    texts: Mapping[str, str],
) -> Review | None:
    """The reviewer's bias-check review (ADR 0024), or None when it was not chosen."""
    config, session_seed = session.config, session.seed
    reviewer = seat.member.name
    if not chosen_for_check(session_seed, reviewer, config.bias_check_probability):
        return None
    n_others = sum(a.model != reviewer for a in original.values())
    kind = draw_check_kind(
        session_seed, reviewer, _usable_weights(config, len(original), n_others), len(original)
    )
    if kind is None:
        return None
    label_to_model, shown_texts, target = original, texts, None
    if kind == "reshuffle":
        label_to_model = reshuffled_labels(original, session_seed, reviewer)
    elif kind in ("padding", "identity"):
        target = treated_candidate(original, session_seed, reviewer, kind)
        changed = (
            pad_text(texts[target])
            if kind == "padding"
            else signed_text(texts[target], split_spec(seat.member.spec)[1])
        )
        shown_texts = {**texts, target: changed}
    base = Review(
        reviewer=reviewer,
        label_to_model=label_to_model,
        score_scale=config.score_scale,
        check_kind=kind,
        check_target=target,
    )
    # a fresh sampling seed: a repeat under the original seed would replay, not re-ask
    seed = call_seed(session_seed, reviewer, f"review-check:{kind}")
    return await review_once(session, seat, label_to_model, shown_texts, seed, base)


def _review_labels(
    seat: Seat, texts: Mapping[str, str], config: CouncilConfig, session_seed: int
) -> dict[str, LabelAssignment]:
    """The labels ``seat`` reviews under: its own shuffled order, its own answer recused
    if configured (shared by the review and the reviewer's bias check)."""
    reviewer = seat.member.name
    shown = [m for m in texts if not (config.self_review == "recuse" and m == reviewer)]
    return assign_labels(shown, reviewer, session_seed)


async def collect_reviews(
    session: SessionContext, answers: Sequence[MemberAnswer], reviewer_seats: Sequence[Seat]
) -> list[Review]:
    """Stage 2: each reviewer ranks and scores the answers under its own shuffled labels.

    Returns the reviews in seat order; with ``config.review_orders = 2`` the reviews in the
    reverse orders follow, in seat order, each with ``review_order = 1`` (ADR 0046). Bias
    checks are not issued here: see :func:`collect_check_reviews` (ADR 0031).
    """
    config, session_seed = session.config, session.seed
    texts = {a.member: a.text for a in answers if a.text is not None}

    async def review(seat: Seat, review_order: int = 0) -> Review:
        label_to_model = _review_labels(seat, texts, config, session_seed)
        if review_order:
            label_to_model = reversed_labels(label_to_model)
        base = Review(
            reviewer=seat.member.name,
            label_to_model=label_to_model,
            score_scale=config.score_scale,
            review_order=review_order,
        )
        if not label_to_model:
            return base.model_copy(
                update={"parse_status": "missing", "error": "no answers to review"}
            )
        # the second order gets its own sampling seed: it is a second look, not a replay
        stage = f"review:order-{review_order + 1}" if review_order else "review"
        seed = call_seed(session_seed, seat.member.name, stage)
        return await review_once(session, seat, label_to_model, texts, seed, base)

    # review_orders = 2 (ADR 0046): every first-order review, then every second-order one
    return await gather_in_turn(
        review(seat, order) for order in range(config.review_orders) for seat in reviewer_seats
    )


async def collect_check_reviews(
    session: SessionContext, answers: Sequence[MemberAnswer], reviewer_seats: Sequence[Seat]
) -> list[Review]:
    """The bias-check reviews (ADR 0024) of the reviewers chosen for one, in seat order;
    empty when ``config.bias_check_probability`` is 0.

    ``session.gate`` is the checks' own gate (ADR 0031): its own concurrency slots and the
    session's whole deadline, so a check never takes a slot, a deadline share or a place in
    the queue from a counted call. The council issues the checks once the counted reviews
    are in, next to the synthesis, and waits for them before the session ends.
    """
    config, session_seed = session.config, session.seed
    if config.bias_check_probability <= 0:
        return []
    texts = {a.member: a.text for a in answers if a.text is not None}

    async def check(seat: Seat) -> Review | None:
        label_to_model = _review_labels(seat, texts, config, session_seed)
        if not label_to_model:
            return None
        return await _check_review(session, seat, label_to_model, texts)

    checks = await gather_in_turn(check(seat) for seat in reviewer_seats)
    return [review for review in checks if review is not None]


async def synthesize(
    session: SessionContext,
    answers: Sequence[MemberAnswer],
    standings: Sequence[ModelStanding],
    chairman: Seat,
    ranking_notes: Mapping[str, str] | None = None,
) -> tuple[Synthesis, dict[str, dict[str, object]]]:
    """Stage 3: the chairman writes the final answer from the anonymized answers.

    Returns the synthesis and the chairman's label map. If the chairman fails, the
    top-ranked answer is returned instead, flagged ``is_fallback``. ``ranking_notes``
    replace a member's "mean rank" note in the ranking the chairman reads (the debiased
    aggregate's scores, ADR 0046).
    """
    query, config, session_seed, gate = session.query, session.config, session.seed, session.gate
    texts = {a.member: a.text for a in answers if a.text is not None}
    label_to_model = assign_labels(list(texts), f"chairman:{chairman.member.name}", session_seed)
    label_of = {a.model: label for label, a in label_to_model.items()}
    notes = ranking_notes or {}
    lines = [
        f"{s.place}. {label_of[s.model]} ({notes[s.model]})"
        if s.model in notes
        else f"{s.place}. {label_of[s.model]} (mean rank {s.mean_rank:.2f})"
        if s.mean_rank is not None
        else f"{s.place}. {label_of[s.model]} (unranked)"
        for s in standings
        if s.model in label_of
    ]
    prompt = build_synthesis_prompt(
        query,
        [ReviewPromptCandidate(label, texts[a.model]) for label, a in label_to_model.items()],
        lines,
        new_nonce(),
    )
    request = _request(
        prompt,
        ANSWER_SYSTEM,
        "synthesize",
        call_seed(session_seed, chairman.member.name, "synthesize"),
    )
    outcome = await _call(chairman, request, config, gate)
    label_map = {label: a.model_dump() for label, a in label_to_model.items()}
    if outcome.completion is not None:
        synthesis = Synthesis(
            chairman=chairman.member.name,
            text=outcome.completion.text,
            attempts=outcome.attempts,
            duration_s=round(outcome.duration_s, 4),
        )
        return synthesis, label_map
    top = next((s.model for s in standings if s.model in texts), next(iter(texts)))
    fallback = Synthesis(
        chairman=chairman.member.name,
        text=texts[top] or "",
        is_fallback=True,
        error=f"chairman failed ({error_text(outcome.error)}); "
        f"returning the top-ranked answer, by {top}",
        attempts=outcome.attempts,
        duration_s=round(outcome.duration_s, 4),
    )
    return fallback, label_map
