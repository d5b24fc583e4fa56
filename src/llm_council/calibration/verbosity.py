"""Verbosity: does the judge reward length? Two numbers, because they answer two questions.

- ``length_correlation`` (Pearson r, Fisher-z interval) between log(words_a / words_b) and
  the position-balanced preference for a (+1/0/-1 averaged over the two orders): does a
  BIGGER length gap move the verdict more (a dose-response)?
- ``prefers_longer``: share of decisive pairs of unequal length won by the longer answer
  (Wilson interval, exact sign test against 1/2): how OFTEN does the longer answer win?

A judge can pick the longer answer 80% of the time with r near 0 (it picks "longer"
whatever the size of the gap), so the checklist tests both. A longer answer may also
simply be better: where human labels exist, ``excess_over_humans`` compares the judge's
length score with the humans' on the same pairs (longer won = 1, shorter = 0; pairs where
both are decisive; paired t interval) and the checklist uses that instead of the raw rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llm_council.calibration.estimates import MIN_N_FOR_INTERVAL, finite, mean_estimate, rate
from llm_council.calibration.outcomes import PairOutcome
from llm_council.stats.inference.proportions import sign_test_p_value

_PREFERENCE = {"a": 1.0, "b": -1.0, "tie": 0.0}


def words(text: str) -> int:
    return max(1, len(text.split()))


def correlation_with_interval(
    x: Sequence[float], y: Sequence[float], conf: float
) -> tuple[float, float, float, float] | None:
    """Pearson r, its two-sided p and Fisher-z interval; None if undefined (constant input)."""
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    from scipy import stats as scipy_stats  # deferred: scipy.stats costs ~1 s to import

    result = scipy_stats.pearsonr(x, y)
    if len(x) <= 3:  # the Fisher-z interval needs n > 3
        return (float(result.statistic), float(result.pvalue), math.nan, math.nan)
    interval = result.confidence_interval(confidence_level=conf)
    return (float(result.statistic), float(result.pvalue), interval.low, interval.high)


def verbosity(all_evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any]:
    # imported verdicts (FastChat, MT-bench) may carry no answer text: nothing to measure
    evaluated = [o for o in all_evaluated if o.pair.metadata.get("answer_text") is not False]
    lengths = [(words(o.pair.response_a), words(o.pair.response_b)) for o in evaluated]
    log_ratio = [math.log(words_a / words_b) for words_a, words_b in lengths]
    preference = [(_PREFERENCE[o.verdict_ab] + _PREFERENCE[o.verdict_ba]) / 2 for o in evaluated]
    correlation = correlation_with_interval(log_ratio, preference, conf)
    too_few = correlation is None or len(evaluated) < MIN_N_FOR_INTERVAL
    longer_wins = decisive = 0
    differences = []
    for outcome, (words_a, words_b) in zip(evaluated, lengths, strict=True):
        if words_a == words_b:
            continue
        longer = "a" if words_a > words_b else "b"
        if outcome.consolidated == "tie":
            continue
        human = outcome.pair.human_label
        if human is not None and human != "tie":
            differences.append(float(outcome.consolidated == longer) - float(human == longer))
        decisive += 1
        longer_wins += outcome.consolidated == longer
    prefers_longer = rate(longer_wins, decisive, conf)
    prefers_longer["sign_test_p"] = sign_test_p_value(longer_wins, decisive)
    return {
        "length_correlation": correlation[0] if correlation else None,
        "length_correlation_p": correlation[1] if correlation else None,
        "length_correlation_ci": (
            [None, None]
            if too_few or correlation is None
            else [finite(correlation[2]), finite(correlation[3])]
        ),
        "length_correlation_n": len(evaluated),
        "pairs_without_text": len(all_evaluated) - len(evaluated),
        "length_measure": "log(words_a / words_b) vs position-balanced preference for a",
        "prefers_longer": prefers_longer,
        "excess_over_humans": mean_estimate(differences, conf),
    }
