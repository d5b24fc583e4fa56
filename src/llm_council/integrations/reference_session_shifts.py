"""The reference design's ``detect_temporal_trends`` and ``detect_anomalies``, tested.

Both work on one mean score per session (a session's records share answers and judges,
so they are not independent) through :mod:`llm_council.stats.bias_effects.session_shifts`, and say
how sure they are: the reference compared an early/late difference with a fixed 0.5
points and a session mean with the sd of single *records*, neither with a known error
rate. Re-exported by :mod:`llm_council.bias_aggregation`, where the reference's users
import them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llm_council.stats.bias_effects.session_shifts import early_late_shift, outlying_sessions

if TYPE_CHECKING:
    from llm_council.bias_audit.reference.persistence import BiasMetricRecord

#: the level of both tests (two-sided; Bonferroni over the sessions for anomalies)
SIGNIFICANCE_LEVEL = 0.05


def _session_means(records: Sequence[BiasMetricRecord]) -> tuple[list[str], np.ndarray]:
    """Session ids in time order (first timestamp, then id) and each session's mean score."""
    scores: dict[str, list[float]] = defaultdict(list)
    first_seen: dict[str, str] = {}
    for record in records:
        if not record.session_id or not math.isfinite(record.score_value):
            continue
        scores[record.session_id].append(record.score_value)
        stamp = record.timestamp or ""
        first_seen[record.session_id] = min(first_seen.get(record.session_id, stamp), stamp)
    order = sorted(scores, key=lambda session: (first_seen[session], session))
    return order, np.asarray([np.mean(scores[session]) for session in order])


def detect_temporal_trends(
    records: Sequence[BiasMetricRecord], window_size: int = 7
) -> dict[str, Any] | None:
    """Did the mean score move between the earlier and the later half of the sessions?

    Welch's t test on one mean per session (:func:`~llm_council.stats.bias_effects.session_shifts.
    early_late_shift`); ``trend_direction`` is "increasing"/"decreasing" only when
    p < 0.05, else "stable". None below 10 records or 2 sessions per half.
    ``window_size`` is accepted for the reference's signature and, as there, unused.
    """
    if len(records) < 10:
        return None
    _, means = _session_means(records)
    shift = early_late_shift(means)
    if shift is None:
        return None
    direction = "stable"
    if shift.p_value < SIGNIFICANCE_LEVEL:
        direction = "increasing" if shift.difference > 0 else "decreasing"
    return {
        "trend_direction": direction,
        "early_mean": shift.early_mean,
        "late_mean": shift.late_mean,
        "difference": shift.difference,
        "sample_size": len(records),
        "n_sessions": shift.n_early + shift.n_late,
        "t_statistic": shift.t_statistic,
        "df": shift.df,
        "p_value": shift.p_value,
        "method": "Welch t test, later vs earlier half of the session means",
    }


def detect_anomalies(
    records: Sequence[BiasMetricRecord], z_threshold: float = 2.5
) -> list[dict[str, Any]]:
    """Sessions whose mean score is far from what the other sessions predict.

    A session is listed when its leave-one-out prediction t (:func:`~llm_council.stats.
    session_shifts.outlying_sessions`) exceeds ``z_threshold`` in size *and* its
    Bonferroni-adjusted p is below 0.05, so a store without outlying sessions lists one
    in at most 5% of audits. Empty below 10 records or 4 sessions.
    """
    if len(records) < 10:
        return []
    sessions, means = _session_means(records)
    return [
        {
            "type": "outlier_session",
            "session_id": sessions[found.index],
            "session_mean": float(means[found.index]),
            "z_score": found.t_statistic,
            "p_value": found.p_value,
            "adjusted_p_value": found.adjusted_p_value,
            "direction": "low" if found.t_statistic < 0 else "high",
        }
        for found in outlying_sessions(means)
        if abs(found.t_statistic) > z_threshold and found.adjusted_p_value < SIGNIFICANCE_LEVEL
    ]
