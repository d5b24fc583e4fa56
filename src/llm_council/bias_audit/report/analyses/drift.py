"""Drift: each reviewer's leniency and position effect week by week, with a CUSUM test.

Per session a reviewer gets two numbers: its leniency that session (mean paired deviation
on others' answers, as in the reviewer profiles) and its position trend that session (the
slope of its paired deviation on display slot, points per slot later). Weeks are counted
from the first timed record in the window (``--since``/``--until``). A CUSUM test
(:mod:`llm_council.stats.bias_effects.drift`) asks whether the weekly level changed; its p-values
are
Holm-corrected over all (reviewer, quantity) tests, so a report with no drift anywhere
raises a false alarm with probability at most the significance level.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np

from llm_council.bias_audit.report.load.tables import nullable_floats
from llm_council.stats.bias_effects.drift import (
    CusumTest,
    WeeklySeries,
    cusum_change_test,
    cusum_null_statistics,
    weekly_series,
)
from llm_council.stats.inference.multiplicity import holm_adjusted

_QUANTITIES = {
    "leniency": "avg(deviation)",
    "position_trend": "regr_slope(deviation, position)",
}


#: Besag & Clifford's stopping count and draw cap for refining a small Monte Carlo p
_EXCEEDANCES_TO_STOP = 10
_MAX_DRAWS = 100_000
_CHUNK = 12_000


def refined_cusum_test(series: WeeklySeries, seed: int = 0) -> CusumTest:
    r"""The CUSUM test, with its Monte Carlo p refined past 4,000 draws when it is small.

    The first 4,000 draws give :math:`p = (1 + c)/4001` as before. With :math:`c < 10`
    exceedances (:math:`p < 0.0028`) the draws continue (a second stream) in the sequential
    Monte Carlo test of Besag & Clifford (1991, "Sequential Monte Carlo p-values",
    Biometrika 78(2)): stop at the 10th exceedance, at draw :math:`n`, with :math:`p = 10/n`,
    or at 100,000 draws with :math:`p = (1 + c)/100001`. Either way :math:`P(p \le u) \le u`
    under no change (for :math:`u \ge 11/4001` the event is the first stage's, below it
    Besag-Clifford's). Why: the report-wide procedure gives a drift series a level far
    below 1/4001 (ADR 0060); a p floored at 1/4001 could never be a finding there.
    """
    first = cusum_change_test(series, seed=seed)
    exceeded = round(first.p_value * (first.n_simulations + 1)) - 1
    # a non-finite statistic is no evidence: never refine it toward a smaller p
    if exceeded >= _EXCEEDANCES_TO_STOP or not np.isfinite(first.statistic):
        return first
    rng = np.random.default_rng([seed, 1])
    drawn = first.n_simulations
    while drawn < _MAX_DRAWS:
        size = min(_CHUNK, _MAX_DRAWS - drawn)
        hits = np.flatnonzero(
            cusum_null_statistics(series.standard_errors, size, rng) >= first.statistic
        )
        if exceeded + hits.size >= _EXCEEDANCES_TO_STOP:
            at = drawn + int(hits[_EXCEEDANCES_TO_STOP - exceeded - 1]) + 1
            return replace(first, p_value=_EXCEEDANCES_TO_STOP / at, n_simulations=at)
        exceeded += int(hits.size)
        drawn += size
    return replace(first, p_value=(1 + exceeded) / (drawn + 1), n_simulations=drawn)


@dataclass(frozen=True)
class DriftSeries:
    """One reviewer's weekly series of one quantity and its CUSUM test."""

    reviewer: str
    quantity: str  # leniency / position_trend
    week_start: list[str]  # ISO date of each week's first day
    weekly_mean: list[float]
    weekly_se: list[float]
    weekly_sessions: list[int]
    cusum_statistic: float
    p_value: float  # Monte Carlo, per series
    holm_p: float  # over every (reviewer, quantity) series in the report
    changed_from: str | None  # start of the first week at the new level (when detected)
    detected: bool
    # the CUSUM's estimate of the first week at a new level, shown as ``changed_from`` when
    # the report-wide procedure makes the series a finding
    likely_change_from: str | None = None


@dataclass(frozen=True)
class Drift:
    series: list[DriftSeries]
    n_weeks: int
    n_untimed_sessions: int  # sessions whose timestamp could not be read (left out)
    significance_level: float
    series_skipped: list[str] = field(default_factory=list)  # "reviewer/quantity": < 3 weeks


def drift_by_reviewer(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05, seed: int = 0
) -> Drift | None:
    """Weekly leniency and position-trend series per reviewer, CUSUM-tested."""
    untimed_row = connection.execute(
        "SELECT count(DISTINCT session) FILTER (WHERE time IS NULL) FROM records"
    ).fetchone()
    n_untimed = int(untimed_row[0]) if untimed_row else 0
    start_row = connection.execute("SELECT epoch(min(time)) FROM records").fetchone()
    if start_row is None or start_row[0] is None:
        return None
    start = datetime.fromtimestamp(float(start_row[0]), UTC)
    columns = ", ".join(f"{sql} AS {name}" for name, sql in _QUANTITIES.items())
    rows = connection.execute(
        f"""WITH timed AS (
                SELECT session, min(time) AS time FROM records
                WHERE time IS NOT NULL GROUP BY session)
            SELECT s.reviewer_index, s.session,
                   floor((epoch(any_value(t.time)) - ?) / 604800)::BIGINT
                       AS week,
                   {columns}
            FROM scored s JOIN timed t USING (session)
            WHERE NOT s.is_self
            GROUP BY s.reviewer_index, s.session
            ORDER BY s.reviewer_index, s.session""",
        [float(start_row[0])],
    ).fetchnumpy()
    if len(rows["session"]) == 0:
        return None
    # integer reviewer indices (numbered in id order), not a million id strings
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    reviewer = np.asarray(rows["reviewer_index"], dtype=np.int64)
    week = np.asarray(rows["week"], dtype=np.int64)
    n_weeks = int(week.max()) + 1
    tested: list[tuple[str, str, WeeklySeries, CusumTest]] = []
    skipped: list[str] = []
    for name, index in sorted((names[i], i) for i in np.unique(reviewer).tolist()):
        mine = reviewer == index
        for quantity in _QUANTITIES:
            series = weekly_series(nullable_floats(rows[quantity])[mine], week[mine])
            if series is None:
                skipped.append(f"{name}/{quantity}")
                continue
            tested.append((name, quantity, series, refined_cusum_test(series, seed=seed)))
    holm = holm_adjusted([test.p_value for _, _, _, test in tested])
    week_start = [(start + timedelta(weeks=w)).date().isoformat() for w in range(n_weeks)]
    result = []
    for (name, quantity, series, test), adjusted in zip(tested, holm, strict=True):
        weeks = series.weeks.tolist()
        detected = bool(adjusted < significance_level)
        change = weeks[test.change_after_index + 1]
        result.append(
            DriftSeries(
                reviewer=name,
                quantity=quantity,
                week_start=[week_start[w] for w in weeks],
                weekly_mean=[float(v) for v in series.means],
                weekly_se=[float(v) for v in series.standard_errors],
                weekly_sessions=[int(v) for v in series.n_sessions],
                cusum_statistic=test.statistic,
                p_value=test.p_value,
                holm_p=float(adjusted),
                changed_from=week_start[change] if detected else None,
                detected=detected,
                likely_change_from=week_start[change],
            )
        )
    return Drift(result, n_weeks, n_untimed, significance_level, skipped)
