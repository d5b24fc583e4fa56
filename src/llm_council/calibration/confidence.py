"""Is the judge's stated confidence calibrated against human labels? ECE and a reliability curve.

Every verdict (each order, each repetition) that carries a confidence, on a pair with a
human label, is one observation: its confidence ``c`` and whether it is right (the
verdict equals the human label; a tie against a decided label is wrong).

**Binning**: ``M = 10`` equal-width bins ``B_m = ((m-1)/M, m/M]``, the first closed at 0
(Guo, Pleiss, Sun & Weinberger 2017, "On Calibration of Modern Neural Networks", ICML,
eq. 3; Naeini, Cooper & Hauskrecht 2015, "Obtaining Well Calibrated Probabilities Using
Bayesian Binning", AAAI, who introduced ECE):

.. math::

    \\mathrm{ECE} = \\sum_{m=1}^{M} \\frac{|B_m|}{n}\\,
    \\bigl|\\mathrm{acc}(B_m) - \\mathrm{conf}(B_m)\\bigr|

with ``acc`` the share right and ``conf`` the mean confidence in the bin. The reliability
curve is that table, each bin's accuracy with its Wilson interval. The Brier score
``mean((c - right)^2)`` (Brier 1950) is given beside it. ECE has no interval here: the
verdicts of one pair share its difficulty, and a plug-in ECE is biased upward at small n.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from llm_council.calibration.confidence_map import fit_confidence_map, in_first_half
from llm_council.calibration.estimates import finite
from llm_council.calibration.outcomes import PairOutcome
from llm_council.stats.inference.proportions import wilson_interval

ECE_BINS = 10
#: below this many observations the section says why instead of giving numbers
MIN_CONFIDENCE_VERDICTS = 30


def bin_index(confidence: float, bins: int = ECE_BINS) -> int:
    """The bin ``((m-1)/M, m/M]`` holding ``confidence`` (0 goes to the first bin).

    Rounded to 9 decimals first: 0.3 * 10 is 3.0000000000000004 in floating point, which
    would put an edge value in the bin above its own."""
    return min(max(math.ceil(round(confidence * bins, 9)) - 1, 0), bins - 1)


def expected_calibration_error(
    confidences: Sequence[float], correct: Sequence[bool], bins: int = ECE_BINS
) -> float:
    """ECE over equal-width bins (see the module docstring); nan with no observations."""
    if len(confidences) != len(correct):
        raise ValueError(f"{len(confidences)} confidences but {len(correct)} outcomes")
    n = len(confidences)
    if n == 0:
        return math.nan
    totals = [[0, 0.0, 0] for _ in range(bins)]  # count, sum of confidence, right
    for value, right in zip(confidences, correct, strict=True):
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"confidence must be in [0, 1], got {value!r}")
        cell = totals[bin_index(value, bins)]
        cell[0] += 1
        cell[1] += value
        cell[2] += bool(right)
    return sum(
        (count / n) * abs(hits / count - total / count) for count, total, hits in totals if count
    )


def reliability_curve(
    confidences: Sequence[float],
    correct: Sequence[bool],
    confidence_level: float,
    bins: int = ECE_BINS,
) -> list[dict[str, Any]]:
    """One row per non-empty bin: bounds, n, mean confidence, accuracy and its interval."""
    rows = []
    for m in range(bins):
        members = [
            (c, r) for c, r in zip(confidences, correct, strict=True) if bin_index(c, bins) == m
        ]
        if not members:
            continue
        hits = sum(bool(r) for _, r in members)
        low, high = wilson_interval(hits, len(members), confidence_level)
        rows.append(
            {
                "bin_low": m / bins,
                "bin_high": (m + 1) / bins,
                "n": len(members),
                "mean_confidence": sum(c for c, _ in members) / len(members),
                "accuracy": hits / len(members),
                "ci_low": finite(low),
                "ci_high": finite(high),
            }
        )
    return rows


def confidence_calibration(
    evaluated: Sequence[PairOutcome], confidence_level: float
) -> dict[str, Any] | None:
    """The report's section, or ``None`` when no verdict carries a confidence."""
    stated = False
    confidences: list[float] = []
    correct: list[bool] = []
    halves: list[bool] = []
    for outcome in evaluated:
        for verdicts, values in (
            (outcome.ab, outcome.ab_confidences),
            (outcome.ba, outcome.ba_confidences),
        ):
            for verdict, value in zip(verdicts, values, strict=False):
                if value is None:
                    continue
                stated = True
                if outcome.pair.human_label is not None:
                    confidences.append(value)
                    correct.append(verdict == outcome.pair.human_label)
                    halves.append(in_first_half(outcome.pair.pair_id))
    if not stated:
        return None
    if len(confidences) < MIN_CONFIDENCE_VERDICTS:
        return {
            "available": False,
            "reason": f"{len(confidences)} verdicts with a confidence and a human label; "
            f"need {MIN_CONFIDENCE_VERDICTS}",
        }
    n = len(confidences)
    return {
        "available": True,
        "n_verdicts": n,
        "bins": ECE_BINS,
        "binning": "equal width ((m-1)/M, m/M], M = 10 (Guo et al. 2017)",
        "ece": expected_calibration_error(confidences, correct),
        "brier": sum((c - r) ** 2 for c, r in zip(confidences, correct, strict=True)) / n,
        "mean_confidence": sum(confidences) / n,
        "accuracy": sum(correct) / n,
        "reliability": reliability_curve(confidences, correct, confidence_level),
        "isotonic": isotonic_correction(confidences, correct, halves),
        # the map for later runs is fitted on every verdict (calibrate --save-confidence-map)
        "isotonic_map": dataclasses.asdict(fit_confidence_map(confidences, correct)),
    }


def isotonic_correction(
    confidences: Sequence[float], correct: Sequence[bool], halves: Sequence[bool]
) -> dict[str, Any]:
    """ECE of each half of the pairs before and after the isotonic map fitted on the other
    half (:mod:`~llm_council.calibration.confidence_map`); ``available`` is false when a
    half has fewer than MIN_CONFIDENCE_VERDICTS verdicts."""
    sides = []
    for fit_side in (True, False):
        fit = [i for i, half in enumerate(halves) if half == fit_side]
        held = [i for i, half in enumerate(halves) if half != fit_side]
        if min(len(fit), len(held)) < MIN_CONFIDENCE_VERDICTS:
            return {
                "available": False,
                "reason": f"halves of {len(fit)} and {len(held)} verdicts; need "
                f"{MIN_CONFIDENCE_VERDICTS} in each",
            }
        mapping = fit_confidence_map([confidences[i] for i in fit], [correct[i] for i in fit])
        held_confidences = [confidences[i] for i in held]
        held_correct = [correct[i] for i in held]
        sides.append(
            {
                "n_held_out": len(held),
                "ece_before": expected_calibration_error(held_confidences, held_correct),
                "ece_after": expected_calibration_error(
                    mapping.apply(held_confidences), held_correct
                ),
            }
        )
    total = sum(side["n_held_out"] for side in sides)
    return {
        "available": True,
        "method": "isotonic regression (PAVA) fitted on one half of the pairs, ECE on the "
        "other half, both ways (Zadrozny & Elkan 2002)",
        "halves": sides,
        "ece_before": sum(s["ece_before"] * s["n_held_out"] for s in sides) / total,
        "ece_after": sum(s["ece_after"] * s["n_held_out"] for s in sides) / total,
    }
