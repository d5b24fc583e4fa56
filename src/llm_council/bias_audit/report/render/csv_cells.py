"""How every CSV section of the report formats its cells (one long table, CSV_COLUMNS)."""

from __future__ import annotations

import math

from llm_council.bias_audit.report.estimates import Interval

#: ``(section, subject, metric, estimate, ci_low, ci_high, p_value, n)``
CsvRow = tuple[str, str, str, str, str, str, str, str]


def cell_text(value: float | int | None) -> str:
    """A number as CSV text: full precision (``repr`` of a Python float, so a numpy scalar
    reads ``5.5``, never ``np.float64(5.5)``); empty for None, NaN or infinity."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(float(value)) if isinstance(value, float) else str(value)


def interval_row(section: str, subject: str, metric: str, value: Interval, n: int | None) -> CsvRow:
    """One estimate with its interval and p-value as a row."""
    return (
        section,
        subject,
        metric,
        cell_text(value.estimate),
        cell_text(value.ci_low),
        cell_text(value.ci_high),
        cell_text(value.p_value),
        cell_text(n),
    )
