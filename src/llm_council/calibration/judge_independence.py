"""How many independent judges several judges are worth, measured against human labels.

Replay of a file with two or more judges (ours or an imported judgment log, ADR 0023):
on the pairs EVERY judge evaluated in both orders and that carry a human label, a judge's
error is ``consolidated verdict != human label`` (1 or 0; an order flip consolidates to
``tie``, see :mod:`llm_council.calibration.outcomes`). The correlation of these error
indicators across judges gives the Kish effective number
:func:`llm_council.stats.reliability.effective_judges.effective_judges` with a bootstrap interval
over
pairs.

Indicators, not signed errors: coding verdicts as +1/0/-1 and subtracting the label makes
independent judges' errors correlate (both errors take the sign of the label, so their
correlation equals the error rate), which would report correlation where there is none.

Caveat shown with the number: the human label is the reference, so an item the humans
got wrong is an error shared by every judge that got it right; noisy labels lower
``n_eff`` (10% label noise makes 5 independent 80%-accurate judges look like 3; see
docs/calibration.md). Too few (:func:`too_few_reason`): a point estimate without an
interval and no flag.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from llm_council.calibration.estimates import finite
from llm_council.calibration.outcomes import PairOutcome, outcomes_from_judgments
from llm_council.calibration.pairs import Pair
from llm_council.stats.reliability.effective_judges import effective_judges

MIN_SHARED_PAIRS = 30
MIN_EXPECTED_JOINT = 5
ERROR_DEFINITION = "consolidated verdict != human label (order flips count as tie)"
METHOD = (
    "Kish n_eff = k / (1 + (k-1) * mean pairwise correlation of error indicators);"
    " percentile bootstrap over pairs"
)
LABEL_NOISE_CAVEAT = (
    "errors are counted against the human label: pairs the humans got wrong count as"
    " errors shared by every judge, so noisy labels lower n_eff"
)


def outcomes_by_judge(pairs: Sequence[Pair], judges: Sequence[str]) -> dict[str, list[PairOutcome]]:
    """Each judge's outcomes on its own records."""
    return {
        judge: outcomes_from_judgments([p for p in pairs if p.judge == judge]) for judge in judges
    }


def shared_error_matrix(
    outcomes: Mapping[str, Sequence[PairOutcome]],
) -> tuple[list[str], list[str], np.ndarray, int]:
    """``(judges, pair ids, errors[pair, judge], pairs dropped for conflicting labels)``.

    Pairs: evaluated by every judge, with a human label, the same label in every judge's
    record (a pair whose records disagree on the label is dropped and counted).
    """
    judges = sorted(outcomes)
    evaluated = {
        judge: {o.pair.pair_id: o for o in judge_outcomes if o.evaluated}
        for judge, judge_outcomes in outcomes.items()
    }
    common = sorted(set.intersection(*(set(ids) for ids in evaluated.values())))
    kept: list[str] = []
    conflicting = 0
    for pair_id in common:
        labels = {evaluated[judge][pair_id].pair.human_label for judge in judges}
        if labels == {None}:
            continue
        if len(labels) > 1:
            conflicting += 1
            continue
        kept.append(pair_id)
    errors = np.array(
        [
            [
                float(evaluated[j][i].consolidated != evaluated[j][i].pair.human_label)
                for j in judges
            ]
            for i in kept
        ],
        dtype=float,
    ).reshape(len(kept), len(judges))
    return judges, kept, errors, conflicting


def too_few_reason(judges: Sequence[str], errors: np.ndarray) -> str | None:
    """Why no interval: too few pairs, or two judges expected to err (or be right)
    together by chance on fewer than :data:`MIN_EXPECTED_JOINT` pairs.

    The second rule is Cochran's (1954) expected-count rule for a 2x2 table, here the
    table of two judges' errors: with few expected joint errors the spread of their
    correlation depends on its value, and the bootstrap interval missed ``k`` for 10% of
    independent judges (5 judges, 100 pairs, 20% errors: 4 expected joint errors;
    docs/calibration.md).
    """
    n = errors.shape[0]
    if n < MIN_SHARED_PAIRS:
        return f"only {n} shared labelled pairs (< {MIN_SHARED_PAIRS})"
    rates = errors.mean(axis=0)
    for a, b in combinations(range(len(judges)), 2):
        both_wrong = n * rates[a] * rates[b]
        both_right = n * (1 - rates[a]) * (1 - rates[b])
        expected = min(both_wrong, both_right)
        if expected < MIN_EXPECTED_JOINT:
            kind = "err" if both_wrong <= both_right else "be right"
            return (
                f"judges {judges[a]!r} and {judges[b]!r} are expected to {kind} together"
                f" on only {expected:.1f} of {n} pairs by chance (< {MIN_EXPECTED_JOINT})"
            )
    return None


def judge_independence(
    outcomes: Mapping[str, Sequence[PairOutcome]],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The JSON-ready ``effective_judges`` section for two or more judges."""
    judges, pair_ids, errors, conflicting = shared_error_matrix(outcomes)
    section: dict[str, Any] = {
        "judges": judges,
        "k": len(judges),
        "shared_labelled_pairs": len(pair_ids),
        "pairs_with_conflicting_labels": conflicting,
        "error": ERROR_DEFINITION,
        "method": METHOD,
        "caveat": LABEL_NOISE_CAVEAT,
        "confidence": confidence,
    }
    n = len(pair_ids)
    rates = errors.mean(axis=0) if n else np.full(len(judges), math.nan)
    section["error_rates"] = {j: finite(float(r)) for j, r in zip(judges, rates, strict=True)}
    constant = [j for j, r in zip(judges, rates, strict=True) if not 0.0 < r < 1.0]
    if n < 2 or constant:
        reason = (
            f"only {n} shared labelled pairs"
            if n < 2
            else f"no variation in the errors of {', '.join(repr(j) for j in constant)}"
            " (always right or always wrong): its error correlation is undefined"
        )
        return {**section, "not_computed": reason, "too_few": True, "too_few_reason": reason}
    too_few = too_few_reason(judges, errors)
    result = effective_judges(
        errors, confidence=confidence, resamples=resamples, seed=seed, interval=too_few is None
    )
    has_interval = too_few is None and not math.isnan(result.ci_low)
    k = len(judges)
    section.update(
        {
            "not_computed": None,
            "too_few": too_few is not None,
            "too_few_reason": too_few,
            "mean_error_correlation": {
                "estimate": finite(result.mean_error_correlation),
                "ci_low": finite(result.rho_ci_low) if has_interval else None,
                "ci_high": finite(result.rho_ci_high) if has_interval else None,
            },
            "effective_judges": {
                "estimate": _bounded(result.effective_judges),
                "ci_low": _bounded(result.ci_low) if has_interval else None,
                "ci_high": _bounded(result.ci_high) if has_interval else None,
                "ci_high_unbounded": has_interval and math.isinf(result.ci_high),
            },
            # the interval lies below k: the judges share errors beyond chance
            "shared_error_detected": has_interval and result.ci_high < k,
            "pair_correlations": [
                {
                    "first": judges[a],
                    "second": judges[b],
                    "r": finite(float(result.pair_correlations[a, b])),
                }
                for a, b in combinations(range(k), 2)
            ],
            "resamples": result.resamples if has_interval else 0,
            "undefined_resamples": result.undefined_resamples,
        }
    )
    return section


def _bounded(value: float) -> float | None:
    return None if math.isinf(value) else finite(value)


def judge_independence_from_pairs(
    pairs: Sequence[Pair], judges: Sequence[str], *, confidence: float = 0.95
) -> dict[str, Any] | None:
    """The section for a replay file's judges; None for fewer than two judges."""
    if len(judges) < 2:
        return None
    return judge_independence(outcomes_by_judge(pairs, judges), confidence=confidence)
