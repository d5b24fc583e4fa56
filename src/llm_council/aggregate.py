"""Combine the reviews into one standing per member, self-votes excluded.

For each review, the reviewer's own answer is removed from its ranking and the rest are
re-ranked 1..k, so a reviewer that put itself first does not push the others down.
Per member: mean rank (lower is better), Borda points (k - rank for each vote: the
number of answers it beat), and mean score over the scores actually given (a missing
score is left out, never counted as 0). Places order by mean rank, then mean score,
then name; every tie that decided a place is explained in ``tie_note``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from llm_council.results import ModelStanding, Review

_EPS = 1e-9


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate_reviews(reviews: Sequence[Review], candidates: Sequence[str]) -> list[ModelStanding]:
    """Standings for ``candidates`` from the parsed ``reviews`` (unparsed reviews add nothing)."""
    ranks: dict[str, list[float]] = defaultdict(list)
    borda: dict[str, float] = defaultdict(float)
    scores: dict[str, list[float]] = defaultdict(list)
    self_votes: dict[str, int] = defaultdict(int)
    for review in reviews:
        if not review.ok:
            continue
        others = [model for model in review.ranking if model != review.reviewer]
        k = len(others)
        for rank, model in enumerate(others, start=1):
            ranks[model].append(rank)
            borda[model] += k - rank
        for verdict in review.candidates:
            if verdict.is_self_review:
                self_votes[verdict.candidate] += 1
            elif verdict.score is not None:
                scores[verdict.candidate].append(verdict.score)

    rows = [
        (model, _mean(ranks[model]), _mean(scores[model]), len(ranks[model]), len(scores[model]))
        for model in candidates
    ]

    def sort_key(row: tuple[str, float | None, float | None, int, int]) -> tuple[float, float, str]:
        model, mean_rank, mean_score, _, _ = row
        return (
            mean_rank if mean_rank is not None else float("inf"),
            -(mean_score if mean_score is not None else float("-inf")),
            model,
        )

    rows.sort(key=sort_key)
    standings = []
    for place, row in enumerate(rows, start=1):
        model, mean_rank, mean_score, rank_votes, score_votes = row
        standings.append(
            ModelStanding(
                model=model,
                place=place,
                mean_rank=mean_rank,
                borda_points=borda[model],
                mean_score=mean_score,
                rank_votes=rank_votes,
                score_votes=score_votes,
                excluded_self_votes=self_votes[model],
                tie_note=_tie_note(row, rows),
            )
        )
    return standings


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) < _EPS


def _tie_note(
    row: tuple[str, float | None, float | None, int, int],
    rows: Sequence[tuple[str, float | None, float | None, int, int]],
) -> str | None:
    model, mean_rank, mean_score, _, _ = row
    tied_rank = [r for r in rows if r[0] != model and _same(r[1], mean_rank)]
    if not tied_rank:
        return None
    names = ", ".join(r[0] for r in tied_rank)
    rank_text = "no ranking votes" if mean_rank is None else f"mean rank {mean_rank:.2f}"
    tied_both = [r for r in tied_rank if _same(r[2], mean_score)]
    if tied_both:
        return f"tied with {names} on {rank_text} and mean score; ordered by name"
    return f"tied with {names} on {rank_text}; ordered by mean score"
