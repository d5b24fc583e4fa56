"""JSON shapes of the report's estimates: a value, its interval and n, or "too few".

Below :data:`MIN_N_FOR_INTERVAL` items an interval is not printed (``too_few: true``,
bounds ``null``): a kappa of 1.0 from 4 pairs has a zero standard error and would show a
zero-width interval, which reads as certainty. Wilson intervals for rates stay (they are
honest at any n) and carry their n.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llm_council.stats.inference.proportions import mean_t_interval, wilson_interval
from llm_council.stats.reliability.agreement import KappaResult

MIN_N_FOR_INTERVAL = 10


def finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def rate(successes: int, n: int, confidence: float) -> dict[str, Any]:
    """``successes / n`` with its Wilson interval."""
    low, high = wilson_interval(successes, n, confidence)
    return {
        "successes": successes,
        "n": n,
        "rate": successes / n if n else None,
        "ci_low": finite(low),
        "ci_high": finite(high),
    }


def rate_95(successes: int, n: int) -> dict[str, Any]:
    """:func:`rate` at 95%: the probes' rates (``rate`` and bounds ``None`` when n is 0)."""
    return rate(successes, n, 0.95)


def kappa_estimate(result: KappaResult) -> dict[str, Any]:
    """A kappa with its FCE interval, or ``too_few`` (small n or a degenerate zero SE)."""
    too_few = result.n < MIN_N_FOR_INTERVAL or result.standard_error == 0.0
    return {
        "kappa": finite(result.kappa),
        "kappa_se": None if too_few else finite(result.standard_error),
        "kappa_ci": [None, None] if too_few else [finite(result.ci_low), finite(result.ci_high)],
        "n": result.n,
        "too_few": too_few,
    }


def mean_estimate(values: Sequence[float], confidence: float) -> dict[str, Any]:
    """A mean with its t interval (see
    :func:`~llm_council.stats.inference.proportions.mean_t_interval`)."""
    mean, low, high = mean_t_interval(values, confidence) if values else (math.nan,) * 3
    too_few = len(values) < MIN_N_FOR_INTERVAL
    return {
        "estimate": finite(mean),
        "ci_low": None if too_few else finite(low),
        "ci_high": None if too_few else finite(high),
        "n": len(values),
        "too_few": too_few,
    }


def significantly_positive(estimate: dict[str, Any]) -> bool:
    """The interval lies above zero (a one-sided test at (1 - confidence) / 2)."""
    return not estimate["too_few"] and (estimate["ci_low"] or 0.0) > 0.0
