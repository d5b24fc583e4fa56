"""How the report writes numbers for people: decimals, p-values, intervals, slot letters.

Shared by the text renderer, the other renderers and the dashboard, so none of them imports
another for a number format.
"""

from __future__ import annotations

import math

from llm_council.bias_audit.report.estimates import Interval


def fmt(value: float, digits: int = 2) -> str:
    """A number for people: ``n/a`` for NaN, fixed decimals otherwise."""
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def fmt_p(value: float) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.2g}" if value >= 1e-4 else "<1e-4"


def fmt_interval(interval: Interval, digits: int = 2) -> str:
    low, high = fmt(interval.ci_low, digits), fmt(interval.ci_high, digits)
    return f"{fmt(interval.estimate, digits)} [{low}, {high}]"


def slot_letter(position: int) -> str:
    return chr(65 + position) if 0 <= position < 26 else str(position)
