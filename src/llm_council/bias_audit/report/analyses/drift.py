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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.session_rows import group_starts, session_ids_of
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


@dataclass(frozen=True)
class DriftSummary:
    """Per session (sorted by id): its first timed record (epoch seconds, NaN if none) and
    whether any record is untimed; per (reviewer, session), sorted by reviewer then
    session id: the reviewer's leniency and position trend that session (NaN if undefined).
    """

    session_id: np.ndarray
    session_time: np.ndarray
    session_untimed: np.ndarray
    row_reviewer: np.ndarray
    row_session: np.ndarray
    leniency: np.ndarray
    position_trend: np.ndarray


def _review_quantities(connection: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, ...]:
    r"""Per (session, reviewer): the mean paired deviation on others' answers and its
    slope on display slot, :math:`\hat\beta = \sum (x - \bar x)(y - \bar y) / \sum (x -
    \bar x)^2` over the cells with a deviation (DuckDB's ``avg`` and ``regr_slope``:
    NaN where no cell has one or every slot is the same), from rows in a fixed order."""
    rows = connection.execute(
        """SELECT session, reviewer_index, position, deviation FROM scored WHERE NOT is_self
           ORDER BY session, reviewer_index, model_index, position"""
    ).fetchnumpy()
    session = np.asarray(rows["session"], dtype=np.int64)
    reviewer = np.asarray(rows["reviewer_index"], dtype=np.int64)
    deviation = nullable_floats(rows["deviation"])
    valid = np.isfinite(deviation)
    x = np.where(valid, np.asarray(rows["position"], dtype=float), 0.0)
    y = np.where(valid, deviation, 0.0)
    starts = group_starts(session, reviewer)
    if starts.size == 0:
        empty = np.zeros(0)
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), empty, empty
    sizes = np.diff(np.r_[starts, session.size])
    count = np.add.reduceat(valid.astype(float), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_x = np.add.reduceat(x, starts) / count
        mean_y = np.add.reduceat(y, starts) / count
        dx = np.where(valid, x - np.repeat(mean_x, sizes), 0.0)
        dy = np.where(valid, y - np.repeat(mean_y, sizes), 0.0)
        sxx = np.add.reduceat(dx * dx, starts)
        slope = np.where(sxx > 0, np.add.reduceat(dx * dy, starts) / sxx, np.nan)
    leniency = np.where(count > 0, mean_y, np.nan)
    return session[starts], reviewer[starts], leniency, np.where(count > 0, slope, np.nan)


def _sort_rows(summary: DriftSummary) -> DriftSummary:
    sessions = np.argsort(summary.session_id, kind="stable")
    rows = np.lexsort((summary.row_session, summary.row_reviewer))
    return DriftSummary(
        summary.session_id[sessions],
        summary.session_time[sessions],
        summary.session_untimed[sessions],
        summary.row_reviewer[rows],
        summary.row_session[rows],
        summary.leniency[rows],
        summary.position_trend[rows],
    )


class DriftSection:
    """:func:`drift_by_reviewer` as an incremental section (ADR 0073): per-session rows
    merge by concatenation; the weekly series and their CUSUM tests are computed when
    finishing, seeded as before (one stream per series, not per session)."""

    name = "drift"
    version = 1

    def __init__(self, significance_level: float = 0.05, seed: int = 0) -> None:
        self.significance_level = significance_level
        self.seed = seed

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> DriftSummary:
        timing = connection.execute(
            """SELECT session, epoch(min(time)) AS time, bool_or(time IS NULL) AS untimed
               FROM records GROUP BY session"""
        ).fetchnumpy()
        sessions, reviewers, leniency, trend = _review_quantities(connection)
        names = dict(
            connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall()
        )
        return _sort_rows(
            DriftSummary(
                session_ids_of(connection, np.asarray(timing["session"], dtype=np.int64)),
                nullable_floats(timing["time"]),
                np.asarray(timing["untimed"], dtype=bool),
                np.asarray([str(names[int(i)]) for i in reviewers.tolist()], dtype=str),
                session_ids_of(connection, sessions),
                leniency,
                trend,
            )
        )

    def merge(self, saved: DriftSummary, new: DriftSummary) -> DriftSummary:
        fields = DriftSummary.__dataclass_fields__
        return _sort_rows(
            DriftSummary(
                **{f: np.concatenate([getattr(saved, f), getattr(new, f)]) for f in fields}
            )
        )

    def finish(self, summary: DriftSummary) -> Drift | None:
        return _drift(summary, self.significance_level, self.seed)

    def to_payload(self, summary: DriftSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {field: getattr(summary, field) for field in DriftSummary.__dataclass_fields__}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> DriftSummary:
        fields = list(DriftSummary.__dataclass_fields__)
        missing = sorted(set(fields) - set(arrays))
        if missing:
            raise ValueError(f"drift summary: no array {missing[0]!r}")
        if (
            len({arrays[f].shape for f in fields[:3]}) != 1
            or len({arrays[f].shape for f in fields[3:]}) != 1
        ):
            raise ValueError("drift summary: arrays of different lengths")
        return DriftSummary(**{field: arrays[field] for field in fields})


def _drift(summary: DriftSummary, significance_level: float, seed: int) -> Drift | None:
    """Weekly leniency and position-trend series per reviewer, CUSUM-tested, from the
    summary of every session; weeks count from the first timed record."""
    times = summary.session_time
    if not np.isfinite(times).any():
        return None
    n_untimed = int(summary.session_untimed.sum())
    start_epoch = float(np.nanmin(times))
    start = datetime.fromtimestamp(start_epoch, UTC)
    at = np.searchsorted(summary.session_id, summary.row_session)
    row_time = times[at] if at.size else np.zeros(0)
    timed = np.isfinite(row_time)
    if not timed.any():
        return None
    week = np.floor((row_time[timed] - start_epoch) / 604800).astype(np.int64)
    reviewer = summary.row_reviewer[timed]
    quantities = {
        "leniency": summary.leniency[timed],
        "position_trend": summary.position_trend[timed],
    }
    n_weeks = int(week.max()) + 1
    tested: list[tuple[str, str, WeeklySeries, CusumTest]] = []
    skipped: list[str] = []
    for name in sorted(set(reviewer.tolist())):
        mine = reviewer == name
        for quantity in _QUANTITIES:
            series = weekly_series(quantities[quantity][mine], week[mine])
            if series is None:
                skipped.append(f"{name}/{quantity}")
                continue
            tested.append((name, quantity, series, refined_cusum_test(series, seed=seed)))
    week_start = [(start + timedelta(weeks=w)).date().isoformat() for w in range(n_weeks)]
    series_found = _drift_series(tested, week_start, significance_level)
    return Drift(series_found, n_weeks, n_untimed, significance_level, skipped)


def _drift_series(
    tested: list[tuple[str, str, WeeklySeries, CusumTest]],
    week_start: list[str],
    significance_level: float,
) -> list[DriftSeries]:
    """Each tested series with its Holm-adjusted p over all of them."""
    holm = holm_adjusted([test.p_value for _, _, _, test in tested])
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
    return result


def drift_by_reviewer(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05, seed: int = 0
) -> Drift | None:
    """Weekly leniency and position-trend series per reviewer, CUSUM-tested (every session
    of ``connection``: :class:`DriftSection` with nothing saved)."""
    section = DriftSection(significance_level, seed)
    return section.finish(section.summarize(connection))
