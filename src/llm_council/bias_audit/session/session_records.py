"""Turn a completed session into privacy-safe :class:`ReviewRecord` lines.

One record per (reviewer, candidate) the reviewer was shown, whether or not the review
produced a verdict: a refused, unparseable or failed review leaves its records with score
and rank null and ``review_status`` saying why (ADR 0027), so abstentions are countable
and never enter an estimate (every estimate reads scored records only). A record carries ids,
display positions, lengths and scores, and never the query or any answer text: lengths
are counted here and the text goes no further.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from llm_council.bias_audit.records.schema import ReviewerFingerprint, ReviewRecord
from llm_council.bias_audit.session.score_table import AnswerLengths, answer_lengths, word_count
from llm_council.bias_audit.session.similarity import SimilarityByMember
from llm_council.bias_checks import pad_text, signed_text
from llm_council.middleware import SessionCompleted
from llm_council.results import CandidateScore, Review
from llm_council.stats.ranking.rank_consistency import score_rank_discordance

_RECORD_LIST = TypeAdapter(list[ReviewRecord])


def utc_timestamp() -> str:
    """Now, ISO 8601 in UTC with milliseconds (``2026-11-22T03:04:05.678+00:00``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _changed_lengths(event: SessionCompleted, review: Review) -> tuple[int, int]:
    """Lengths of the answer a padding or identity check changed, as the reviewer saw it
    (ADR 0024): the same functions that changed it, applied again to the stored answer."""
    candidate = review.check_target
    text = next((a.text for a in event.answers if a.member == candidate and a.text), "")
    if review.check_kind == "padding":
        shown = pad_text(text)
    else:
        spec = next(
            (
                m.get("spec", "")
                for m in event.metadata.get("members", [])
                if m.get("name") == review.reviewer
            ),
            "",
        )
        shown = signed_text(text, spec.partition(":")[2])
    return len(shown), word_count(shown)


_TREATING_KINDS = ("padding", "identity")
#: ``check_kind`` of the records of a reviewer's second review order (``review_orders = 2``,
#: ADR 0046): kept apart from the first order's, so the report's observational estimates
#: (``check_kind IS NULL``) count each reviewer once per session
SECOND_ORDER_KIND = "second_order"


def review_status(review: Review) -> str:
    """The record's ``review_status``: the parse status, with a failed call as ``error``."""
    if review.parse_status == "missing" and review.error is not None:
        return "error"
    return review.parse_status


def _shown_entries(review: Review) -> list[CandidateScore]:
    """The review's verdict per shown answer, in display order; without a verdict (a failed
    call), one unscored, unranked entry per label the reviewer was shown."""
    if review.candidates:
        entries = list(review.candidates)
    else:
        entries = [
            CandidateScore(
                candidate=assignment.model,
                label=label,
                display_index=assignment.display_index,
                is_self_review=assignment.model == review.reviewer,
            )
            for label, assignment in review.label_to_model.items()
        ]
    return sorted(entries, key=lambda entry: entry.display_index)


def session_review_outcomes(event: SessionCompleted) -> dict[str, dict[str, Any]]:
    """Per reviewer of the session (bias checks left out): its ``review_status``, and the
    pairs it both scored and ranked with different scores, and how many of them it ranked
    against its own scores (ADR 0027)."""
    outcomes: dict[str, dict[str, Any]] = {}
    for review in event.reviews:
        if review.check_kind is not None or review.review_order != 0:
            continue
        pairs = score_rank_discordance(
            [math.nan if c.score is None else c.score for c in review.candidates],
            [math.nan if c.rank is None else c.rank for c in review.candidates],
        )
        outcomes[review.reviewer] = {
            "review_status": review_status(review),
            "comparable_pairs": pairs.comparable,
            "mismatched_pairs": pairs.discordant,
        }
    return outcomes


def reviewer_fingerprints(event: SessionCompleted) -> dict[str, ReviewerFingerprint]:
    """The event's valid reviewer fingerprints (ADR 0062) by reviewer; one that fails the
    record's bounds (an oversize model id, a non-finite temperature) is left out, so the
    reviews are still recorded, without a fingerprint."""
    raw = event.metadata.get("reviewer_fingerprints")
    if not isinstance(raw, dict):
        return {}
    valid: dict[str, ReviewerFingerprint] = {}
    for reviewer, fingerprint in raw.items():
        try:
            valid[str(reviewer)] = ReviewerFingerprint.model_validate(fingerprint)
        except ValidationError:
            continue
    return valid


def records_from_session(
    event: SessionCompleted,
    *,
    timestamp: str,
    query_hash: str | None,
    similarity: SimilarityByMember | None = None,
    lengths: AnswerLengths | None = None,
) -> list[ReviewRecord]:
    """The session's records, in review order then display order, each with
    ``session_n_records`` set to their number.

    ``similarity`` (:func:`~llm_council.bias_audit.session.similarity.similarities_between_answers`)
    fills ``similarity_to_own``: the candidate's answer against the reviewer's own stage-1
    answer; null for a self-review, a reviewer without an answer, or no similarity.
    ``lengths``: :func:`~llm_council.bias_audit.session.score_table.answer_lengths` of the
    event's answers when the caller has them (counted here otherwise).
    """
    by_member = similarity or {}
    if lengths is None:
        lengths = answer_lengths(event.answers)
    fields: list[dict[str, Any]] = []
    fingerprints = reviewer_fingerprints(event)
    original_position = {
        review.reviewer: {a.model: a.display_index for a in review.label_to_model.values()}
        for review in event.reviews
        if review.check_kind is None and review.review_order == 0
    }
    for review in event.reviews:
        shown = _shown_entries(review)
        status = review_status(review)
        # a second review order (ADR 0046) is recorded like a check review: its own
        # positions, and where the first order showed each answer
        check_kind = review.check_kind or (SECOND_ORDER_KIND if review.review_order else None)
        for entry in shown:
            chars, words = lengths.get(entry.candidate, (0, 0))
            check: dict[str, Any] = {}
            if check_kind is not None:
                treating = check_kind in _TREATING_KINDS
                treated = review.check_target == entry.candidate
                if treating and treated:
                    chars, words = _changed_lengths(event, review)
                check = {
                    "check_kind": check_kind,
                    "check_of_position": original_position.get(review.reviewer, {}).get(
                        entry.candidate
                    ),
                    "check_treated": treated if treating else None,
                }
            score = entry.score if entry.score is not None and math.isfinite(entry.score) else None
            own = by_member.get(review.reviewer, {})
            similarity_to_own = None if entry.is_self_review else own.get(entry.candidate)
            fields.append(
                {
                    "session_id": event.session_id,
                    "timestamp": timestamp,
                    "reviewer_id": review.reviewer,
                    "model_id": entry.candidate,
                    "position": entry.display_index,
                    "n_candidates": len(shown),
                    "response_length_chars": chars,
                    "response_length_words": words,
                    "score_value": score,
                    "score_scale": review.score_scale,
                    "rank": entry.rank,
                    "is_self_review": entry.is_self_review,
                    "council_config_hash": event.council_config_hash,
                    "query_hash": query_hash,
                    "rationale_chars": review.rationale_chars,
                    "review_status": status,
                    "similarity_to_own": similarity_to_own,
                    "reviewer_fingerprint": fingerprints.get(review.reviewer),
                    **check,
                }
            )
    # every record carries its session's record count (schema 2), so the store's
    # with_session_counts finds nothing to copy
    for record_fields in fields:
        record_fields["session_n_records"] = len(fields)
    # one validation call for the whole session is cheaper than one per record
    return _RECORD_LIST.validate_python(fields)
