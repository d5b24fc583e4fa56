"""The debiased stage-2 aggregate: scores with each reviewer's known biases removed.

The core cannot know a reviewer's biases; a middleware that keeps its history (the bias
audit) supplies them as plain numbers, one :class:`ReviewerAdjustment` per reviewer,
through :meth:`~llm_council.middleware.Middleware.reviewer_adjustments` (ADR 0046). Each
score a reviewer gave another member's answer becomes

.. math::

    \\tilde y_{rc} = y_{rc} - \\lambda_r - s_r[p_{rc}] - b_r (\\log_2 L_c - \\overline{\\log_2 L})

(leniency :math:`\\lambda_r`, slot effect :math:`s_r` at the display slot :math:`p_{rc}`
it saw the answer at, length slope :math:`b_r` in points per doubling of the answer's
characters, centred on the session's mean log length). Self-votes are left out, as in the
raw aggregate (:mod:`llm_council.aggregate`). A reviewer that reviewed twice, in two
orders (``review_orders = 2``), counts once: its adjusted scores of a candidate are
averaged over its orders first. Places order by the mean adjusted score (higher is
better), then the raw mean rank, then the name. With every adjustment zero this is the
ranking by mean score, which is why the benchmark reports that column too.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from llm_council.results import ModelStanding, Review


@dataclass(frozen=True)
class ReviewerAdjustment:
    """What one reviewer's history says it adds to a score, in score points.

    ``slot_effects[i]`` is the points it adds at display slot ``i`` (A = 0) beyond its
    leniency (slots it was never measured at add 0); ``length_slope`` is points per
    doubling of an answer's characters; ``n_scores`` the history scores behind them.
    """

    leniency: float = 0.0
    slot_effects: tuple[float, ...] = ()
    length_slope: float = 0.0
    n_scores: int = 0

    def slot_effect(self, display_index: int) -> float:
        if 0 <= display_index < len(self.slot_effects):
            return self.slot_effects[display_index]
        return 0.0

    def is_finite(self) -> bool:
        values = (self.leniency, self.length_slope, *self.slot_effects)
        return all(math.isfinite(value) for value in values)


class DebiasedStanding(BaseModel):
    """A member's place in the debiased aggregate, and how much each adjustment moved it.

    The ``*_adjustment`` fields are mean points taken off its scores (negative: added):
    ``mean_score - debiased_mean_score`` is their sum.
    """

    model_config = ConfigDict(frozen=True)

    model: str
    place: int
    debiased_mean_score: float | None
    mean_score: float | None
    score_votes: int
    leniency_adjustment: float
    slot_adjustment: float
    length_adjustment: float
    raw_place: int


@dataclass
class _Votes:
    adjusted: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    leniency: list[float] = field(default_factory=list)
    slot: list[float] = field(default_factory=list)
    length: list[float] = field(default_factory=list)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def centred_log_lengths(answer_chars: Mapping[str, int]) -> dict[str, float]:
    """``log2(characters)`` of each answer minus the session's mean (an empty answer counts
    as 1 character)."""
    logs = {member: math.log2(max(chars, 1)) for member, chars in answer_chars.items()}
    if not logs:
        return {}
    centre = _mean(list(logs.values()))
    return {member: value - centre for member, value in logs.items()}


def debiased_aggregate(
    reviews: Sequence[Review],
    answer_chars: Mapping[str, int],
    adjustments: Mapping[str, ReviewerAdjustment],
    raw_standings: Sequence[ModelStanding],
) -> list[DebiasedStanding]:
    """Standings from ``reviews`` after removing ``adjustments`` (see the module docstring).

    ``answer_chars``: each answer's length in characters, as the reviewers saw it.
    Reviewers without an entry in ``adjustments`` are taken as they are (all zero). Check
    reviews (``check_kind``) and unparsed reviews add nothing. ``raw_standings`` (from
    :func:`~llm_council.aggregate.aggregate_reviews`) break ties and give ``raw_place``.
    """
    lengths = centred_log_lengths(answer_chars)
    none = ReviewerAdjustment()
    # (reviewer, candidate) -> per order: (raw, leniency, slot, length)
    per_reviewer: dict[tuple[str, str], list[tuple[float, float, float, float]]] = defaultdict(list)
    for review in reviews:
        if not review.ok or review.check_kind is not None:
            continue
        adjustment = adjustments.get(review.reviewer, none)
        for verdict in review.candidates:
            if verdict.is_self_review or verdict.score is None or not math.isfinite(verdict.score):
                continue
            per_reviewer[(review.reviewer, verdict.candidate)].append(
                (
                    verdict.score,
                    adjustment.leniency,
                    adjustment.slot_effect(verdict.display_index),
                    adjustment.length_slope * lengths.get(verdict.candidate, 0.0),
                )
            )
    votes: dict[str, _Votes] = defaultdict(_Votes)
    for (_, candidate), orders in per_reviewer.items():
        raw, leniency, slot, length = (_mean([order[i] for order in orders]) for i in range(4))
        entry = votes[candidate]
        entry.raw.append(raw)
        entry.leniency.append(leniency)
        entry.slot.append(slot)
        entry.length.append(length)
        entry.adjusted.append(raw - leniency - slot - length)
    raw_place = {standing.model: standing.place for standing in raw_standings}
    rows = []
    for model in raw_place:
        entry = votes.get(model, _Votes())
        if entry.adjusted:
            parts = (_mean(entry.leniency), _mean(entry.slot), _mean(entry.length))
            means: tuple[float | None, float | None] = (_mean(entry.adjusted), _mean(entry.raw))
        else:
            parts, means = (0.0, 0.0, 0.0), (None, None)
        rows.append((model, means[0], means[1], len(entry.adjusted), parts))
    rows.sort(
        key=lambda row: (
            -(row[1] if row[1] is not None else -math.inf),
            raw_place[row[0]],
            row[0],
        )
    )
    return [
        DebiasedStanding(
            model=model,
            place=place,
            debiased_mean_score=debiased,
            mean_score=raw,
            score_votes=n_votes,
            leniency_adjustment=parts[0],
            slot_adjustment=parts[1],
            length_adjustment=parts[2],
            raw_place=raw_place[model],
        )
        for place, (model, debiased, raw, n_votes, parts) in enumerate(rows, start=1)
    ]


def chairman_standings(
    raw_standings: Sequence[ModelStanding], debiased: Sequence[DebiasedStanding]
) -> list[ModelStanding]:
    """The raw standings reordered and renumbered by the debiased places (what the
    chairman is shown when ``aggregation = "debiased"``)."""
    by_model = {standing.model: standing for standing in raw_standings}
    return [
        by_model[entry.model].model_copy(update={"place": entry.place})
        for entry in debiased
        if entry.model in by_model
    ]
