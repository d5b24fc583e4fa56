"""The human ceiling: how well annotators agree with each other, and the judge beside them.

On pairs that carry two or more human votes, the humans' own agreement is the ceiling a
judge can be held to: a judge that agrees with a random annotator as well as one annotator
agrees with another is "as good as the humans", whatever the kappa threshold says.

Both kappas are Cohen's kappa over {a, tie, b} of a table in which every pair counts once:

- humans: every ordered pair of two different votes on the pair, each weighted
  :math:`1/(m(m-1))` (``m`` votes): the agreement of two annotators drawn at random;
- judge: the judge's consolidated verdict against each vote, weighted :math:`1/m`: the
  agreement of the judge with an annotator drawn at random.

This is the comparison of Zheng et al. (2023), *Judging LLM-as-a-Judge with MT-Bench and
Chatbot Arena*, section 4.2 (judge-human against human-human agreement on the same
questions), with kappa in place of raw agreement so that the label mix does not decide.
The interval of each kappa and of their difference is a percentile bootstrap over pairs
(Efron & Tibshirani 1993, ch. 13), paired: both kappas are recomputed on the same drawn
pairs. The judge is "as good as the humans" when its kappa reaches the lower bound of the
humans' interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from llm_council.calibration.outcomes import PairOutcome
from llm_council.stats.reliability.agreement import cohen_kappa_from_table

CATEGORY_INDEX = {"a": 0, "tie": 1, "b": 2}
#: fewer pairs with several votes than this: the ceiling is not estimated
MIN_PAIRS_FOR_CEILING = 10


def _contributions(
    judge: int, votes: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One pair's share of the humans' table and of the judge's table (each sums to 1)."""
    counts = np.bincount(votes, minlength=3).astype(float)
    m = float(votes.size)
    humans = (np.outer(counts, counts) - np.diag(counts)) / (m * (m - 1.0))
    judge_row = np.zeros((3, 3))
    judge_row[judge] = counts / m
    return humans, judge_row


def _kappa(table: NDArray[np.float64]) -> float:
    # the table's total is the number of pairs: Cohen's kappa reads proportions from it
    return cohen_kappa_from_table(table).kappa  # type: ignore[arg-type]


def _interval(values: list[float], confidence: float) -> tuple[float | None, float | None]:
    finite = [value for value in values if not math.isnan(value)]
    if len(finite) < len(values) / 2 or not finite:
        return None, None
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def human_ceiling(
    evaluated: Sequence[PairOutcome],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any] | None:
    """The humans' agreement with each other and the judge's with them (module docstring);
    ``None`` when no pair has two or more votes."""
    voted = [
        (
            CATEGORY_INDEX[outcome.consolidated],
            np.asarray([CATEGORY_INDEX[vote.winner] for vote in outcome.pair.human_votes]),
        )
        for outcome in evaluated
        if len(outcome.pair.human_votes) > 1
    ]
    if not voted:
        return None
    parts = [_contributions(judge, votes) for judge, votes in voted]
    human_parts = np.stack([human for human, _ in parts])
    judge_parts = np.stack([judge for _, judge in parts])
    humans = _kappa(human_parts.sum(axis=0))
    judge = _kappa(judge_parts.sum(axis=0))
    result: dict[str, Any] = {
        "pairs": len(voted),
        "votes_per_pair": float(np.mean([votes.size for _, votes in voted])),
        "human_kappa": None if math.isnan(humans) else humans,
        "judge_kappa": None if math.isnan(judge) else judge,
        "human_kappa_ci": [None, None],
        "judge_kappa_ci": [None, None],
        "difference_ci": [None, None],
        "as_good_as_humans": None,
        "too_few": len(voted) < MIN_PAIRS_FOR_CEILING,
        "method": "Cohen's kappa of random annotator pairs vs judge-annotator pairs "
        "(Zheng et al. 2023), paired bootstrap over pairs",
    }
    if result["too_few"] or math.isnan(humans) or math.isnan(judge):
        return result
    rng = np.random.default_rng(seed)
    human_draws, judge_draws, differences = [], [], []
    for _ in range(resamples):
        # a resample's table: each pair's share times how often it was drawn
        drawn = np.bincount(rng.integers(0, len(voted), size=len(voted)), minlength=len(voted))
        human_value = _kappa(np.tensordot(drawn, human_parts, axes=1))
        judge_value = _kappa(np.tensordot(drawn, judge_parts, axes=1))
        human_draws.append(human_value)
        judge_draws.append(judge_value)
        differences.append(judge_value - human_value)
    result["human_kappa_ci"] = list(_interval(human_draws, confidence))
    result["judge_kappa_ci"] = list(_interval(judge_draws, confidence))
    result["difference_ci"] = list(_interval(differences, confidence))
    human_low = result["human_kappa_ci"][0]
    result["as_good_as_humans"] = human_low is not None and judge >= human_low
    return result
