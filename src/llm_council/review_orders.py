"""One verdict per reviewer from its reviews in two display orders (``review_orders = 2``).

Reviewing the same answers twice, the second time in the reverse order, and averaging is
the standard remedy for position bias (MT-bench's swapped pairwise judgments, Zheng et al.
2023; AlpacaEval's order averaging): a slot effect linear in the slot cancels exactly in
the average, any other slot effect is halved on average. The raw aggregate counts each
reviewer once, from the merged review; the audit's records keep both reviews with their
own positions (ADR 0046).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from llm_council.results import CandidateScore, Review


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _or_minus_infinity(value: float | None) -> float:
    return -math.inf if value is None else value


def merge_review_orders(reviews: Sequence[Review]) -> list[Review]:
    """The reviews with each reviewer's parsed orders merged into one, in first-seen order.

    A merged review keeps the first order's labels and fields; per candidate its score is
    the mean of the scores it got in the parsed orders (None when none scored it) and its
    rank comes from the mean of its ranks (then the mean score, higher first, then the
    name). A reviewer with one parsed order keeps that review as it is; with none, its
    first review. Check reviews pass through unchanged. With one order per reviewer this
    returns ``reviews`` as they are.
    """
    by_reviewer: dict[str, list[Review]] = defaultdict(list)
    for review in reviews:
        if review.check_kind is None:
            by_reviewer[review.reviewer].append(review)
    if all(len(orders) == 1 for orders in by_reviewer.values()):
        return list(reviews)
    merged: list[Review] = []
    done: set[str] = set()
    for review in reviews:
        if review.check_kind is not None:
            merged.append(review)
            continue
        if review.reviewer in done:
            continue
        done.add(review.reviewer)
        orders = by_reviewer[review.reviewer]
        parsed = [order for order in orders if order.ok]
        if len(parsed) < 2:
            merged.append(parsed[0] if parsed else orders[0])
            continue
        merged.append(_merged(parsed))
    return merged


def _merged(parsed: Sequence[Review]) -> Review:
    first = parsed[0]
    scores: dict[str, list[float]] = defaultdict(list)
    ranks: dict[str, list[float]] = defaultdict(list)
    for review in parsed:
        for verdict in review.candidates:
            if verdict.score is not None and math.isfinite(verdict.score):
                scores[verdict.candidate].append(verdict.score)
            if verdict.rank is not None:
                ranks[verdict.candidate].append(verdict.rank)
    ranked = [c for c in (v.candidate for v in first.candidates) if ranks[c]]
    mean_rank = {c: _mean(ranks[c]) or 0.0 for c in ranked}
    # an unscored candidate sorts after the scored ones at the same mean rank
    mean_score = {c: _mean(scores[c]) for c in ranked}
    ranked.sort(key=lambda c: (mean_rank[c], -_or_minus_infinity(mean_score[c]), c))
    new_rank = {candidate: place for place, candidate in enumerate(ranked, start=1)}
    candidates = tuple(
        CandidateScore(
            candidate=v.candidate,
            label=v.label,
            display_index=v.display_index,
            score=_mean(scores[v.candidate]),
            rank=new_rank.get(v.candidate),
            is_self_review=v.is_self_review,
        )
        for v in first.candidates
    )
    return first.model_copy(update={"candidates": candidates, "ranking": tuple(ranked)})
