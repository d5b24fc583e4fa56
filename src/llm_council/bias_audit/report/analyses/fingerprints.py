r"""A reviewer's history split where its fingerprint changed, and what moved with it.

Each review record carries the reviewer's fingerprint (provider, model id, prompt, rubric,
temperature, scale, options; ADR 0062). Per reviewer, its sessions in time order are cut
into **segments**: maximal runs of sessions with one fingerprint (records without one,
written before the field existed, form "unrecorded" segments). Between consecutive
segments the report names the components that differ (``model: a -> b``).

**Leniency in a segment** is the mean paired deviation of the reviewer's scores there: its
score minus the mean of the other reviewers' scores of the same answer (self-reviews left
out), so the answers' quality cancels. Relative, like every leniency in the report: a
provider update that moves every judge alike does not show here (the canary in
``calibrate --canary`` sees it). With :math:`d_i` the deviations, :math:`g` the sessions
(clusters) and :math:`G` their number, the estimate is :math:`\bar d` and its
cluster-robust standard error

.. math::

    \mathrm{SE}^2 = \frac{G}{G-1}\,\frac{\sum_g \big(\sum_{i \in g} (d_i - \bar d)\big)^2}{n^2}

(Liang & Zeger 1986; the :math:`G/(G-1)` small-sample factor of Cameron & Miller 2015), with
a t interval on :math:`G - 1` degrees of freedom.

**The change between two consecutive segments** is tested: the difference of their
leniencies, standard error :math:`\sqrt{\mathrm{SE}_1^2 + \mathrm{SE}_2^2}` (the segments'
sessions are disjoint), a two-sided t test on :math:`\min(G_1, G_2) - 1` degrees of freedom
(conservative: Welch's df is at least that). It is a finding only through the report's one
multiplicity procedure (report/hypotheses.py). Its false-flag rate and power on the
independent generator are in docs/bias-report.md. Segments with fewer than
:data:`MIN_SEGMENT_SESSIONS` sessions get no interval and their changes are not tested.

References
----------
Liang, K.-Y. & Zeger, S. L. (1986). Longitudinal data analysis using generalized linear
models. Biometrika 73, 13-22. Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide
to cluster-robust inference. Journal of Human Resources 50, 317-372.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
from pydantic import ValidationError

from llm_council.bias_audit.records.schema import ReviewerFingerprint
from llm_council.bias_audit.report.estimates import Interval
from llm_council.judge_fingerprint import fingerprint_changes

#: a segment needs this many sessions with paired deviations for an interval and a test
MIN_SEGMENT_SESSIONS = 3


@dataclass(frozen=True)
class FingerprintSegment:
    """A run of a reviewer's sessions under one fingerprint."""

    fingerprint: dict[str, Any] | None  # None: records without a fingerprint
    first_session: str
    last_session: str
    first_time: str | None  # ISO 8601, UTC
    last_time: str | None
    n_sessions: int
    n_scores: int  # paired deviations (non-self scores with 2+ other reviewers' scores)
    leniency: Interval  # mean paired deviation, cluster-robust t interval


@dataclass(frozen=True)
class ComponentChange:
    """One fingerprint component that differs between consecutive segments."""

    component: str
    before: Any
    after: Any


@dataclass(frozen=True)
class SegmentChange:
    """What changed between segment ``index`` and ``index + 1``, and how leniency moved."""

    index: int
    components: list[ComponentChange]  # empty when either side has no fingerprint
    difference: Interval  # later minus earlier leniency, with its test's p-value
    degrees_of_freedom: float
    finding: bool = False  # decided by the report-wide procedure


@dataclass(frozen=True)
class ReviewerFingerprints:
    """One reviewer's segments in time order, and the changes between them."""

    reviewer: str
    segments: list[FingerprintSegment]
    changes: list[SegmentChange]


@dataclass(frozen=True)
class FingerprintHistory:
    """The section: reviewers whose fingerprint changed (others have one segment)."""

    reviewers: list[ReviewerFingerprints]
    n_reviewers_with_fingerprints: int
    n_reviewers_single_fingerprint: int
    n_invalid_fingerprints: int  # distinct stored fingerprints that failed validation


#: a segment, its leniency's standard error and its number of sessions with deviations
_Built = tuple[FingerprintSegment, float, int]


def cluster_mean(counts: np.ndarray, sums: np.ndarray) -> tuple[float, float, int]:
    """``(mean, cluster-robust SE, clusters)`` from each cluster's number of deviations and
    their sum (module docstring: :math:`\\sum_{i \\in g} (d_i - \\bar d) = S_g - n_g \\bar d`);
    clusters without a deviation are left out."""
    present = counts > 0
    counts, sums = counts[present].astype(float), sums[present].astype(float)
    n = float(counts.sum())
    if n == 0:
        return math.nan, math.nan, 0
    mean = float(sums.sum()) / n
    groups = int(counts.size)
    if groups < 2:
        return mean, math.nan, groups
    residual_sums = sums - counts * mean
    variance = groups / (groups - 1) * float(np.sum(residual_sums**2)) / n**2
    return mean, math.sqrt(variance), groups


def _t_interval(mean: float, se: float, df: float, level: float = 0.95) -> Interval:
    if not (math.isfinite(se) and df >= 1):
        return Interval(mean, math.nan, math.nan)
    from scipy import stats  # not at import: the report's modules load without scipy.stats

    quantile = float(stats.t.ppf(0.5 + level / 2, df))
    p_value = float(2 * stats.t.sf(abs(mean) / se, df)) if se > 0 else math.nan
    return Interval(mean, mean - quantile * se, mean + quantile * se, p_value)


def _valid_fingerprints(
    connection: duckdb.DuckDBPyConnection,
) -> tuple[dict[int, dict[str, Any]], list[int]]:
    """Each stored fingerprint key's validated fingerprint, and the keys that failed."""
    exists = connection.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'reviewer_fingerprints'"
    ).fetchone()
    if not exists or not exists[0]:
        return {}, []
    valid: dict[int, dict[str, Any]] = {}
    invalid: list[int] = []
    for key, text in connection.execute(
        "SELECT fingerprint, fingerprint_text FROM reviewer_fingerprints"
    ).fetchall():
        try:
            parsed = ReviewerFingerprint.model_validate(json.loads(text))
        except (ValueError, ValidationError, RecursionError):
            invalid.append(int(key))
            continue
        fingerprint = parsed.model_dump(mode="json")
        fingerprint["scale"] = list(fingerprint["scale"])
        valid[int(key)] = fingerprint
    return valid, invalid


def _segment(rows: list[tuple[Any, ...]], fingerprint: dict[str, Any] | None) -> _Built:
    """The segment of ``rows`` (one per session, in time order: session, session_id, time,
    fingerprint, deviations, their sum), with its SE and clusters."""
    counts = np.asarray([row[4] for row in rows], dtype=float)
    sums = np.asarray([row[5] for row in rows], dtype=float)
    mean, se, groups = cluster_mean(counts, sums)
    leniency = (
        _t_interval(mean, se, groups - 1)
        if groups >= MIN_SEGMENT_SESSIONS
        else Interval(mean, math.nan, math.nan)
    )
    first, last = rows[0], rows[-1]
    segment = FingerprintSegment(
        fingerprint=fingerprint,
        first_session=str(first[1]),
        last_session=str(last[1]),
        first_time=first[2],
        last_time=last[2],
        n_sessions=len(rows),
        n_scores=int(counts.sum()),
        leniency=Interval(leniency.estimate, leniency.ci_low, leniency.ci_high),
    )
    return segment, se, groups


def _change(index: int, before: _Built, after: _Built) -> SegmentChange:
    """The components that differ and the test of the leniency difference."""
    earlier, se_1, groups_1 = before
    later, se_2, groups_2 = after
    components = []
    if earlier.fingerprint is not None and later.fingerprint is not None:
        components = [
            ComponentChange(name, old, new)
            for name, old, new in fingerprint_changes(earlier.fingerprint, later.fingerprint)
        ]
    difference = later.leniency.estimate - earlier.leniency.estimate
    df = float(min(groups_1, groups_2) - 1)
    tested = min(groups_1, groups_2) >= MIN_SEGMENT_SESSIONS
    se = math.sqrt(se_1**2 + se_2**2) if tested else math.nan
    return SegmentChange(index, components, _t_interval(difference, se, df), df)


#: one (reviewer, session) row: session index, session id, time, fingerprint identity (its
#: canonical text, "null" without a valid one), paired deviations and their sum
SessionRow = tuple[int, Any, Any, str, int, float]

#: each (reviewer, session)'s first time, fingerprint and paired deviations, in the order
#: a reviewer's history is read (time, then session id; no time last)
SESSION_ROWS_SQL = """WITH deviations AS (
       SELECT reviewer, session, count(*) AS n, sum(deviation) AS total FROM scored
       WHERE NOT is_self AND deviation IS NOT NULL GROUP BY reviewer, session)
   SELECT r.reviewer, r.session, any_value(r.session_id), min(r.time)::VARCHAR,
          mode(r.fingerprint), coalesce(any_value(d.n), 0),
          coalesce(any_value(d.total), 0.0), epoch_us(min(r.time))
   FROM records r LEFT JOIN deviations d USING (reviewer, session)
   GROUP BY r.reviewer, r.session
   ORDER BY r.reviewer, min(r.time) NULLS LAST, r.session"""


def canonical_fingerprints(
    connection: duckdb.DuckDBPyConnection,
) -> tuple[dict[int, str], list[int]]:
    """Each stored key's canonical text (two texts of one fingerprint in another key order
    are one), and the keys of the stored fingerprints that failed validation."""
    valid, invalid = _valid_fingerprints(connection)
    canonical = {key: json.dumps(value, sort_keys=True) for key, value in valid.items()}
    return canonical, invalid


def history_from_rows(
    by_reviewer: dict[str, list[SessionRow]], n_invalid: int
) -> FingerprintHistory:
    """The section from each reviewer's session rows in time order (:data:`SessionRow`)."""
    reviewers = []
    with_fingerprints = single = 0
    for reviewer, rows in sorted(by_reviewer.items()):
        runs: list[list[SessionRow]] = []
        for row in rows:
            if runs and runs[-1][-1][3] == row[3]:
                runs[-1].append(row)
            else:
                runs.append([row])
        if all(run[0][3] == "null" for run in runs):
            continue
        with_fingerprints += 1
        if len(runs) == 1:
            single += 1
            continue
        built = [_segment(run, json.loads(run[0][3])) for run in runs]
        reviewers.append(
            ReviewerFingerprints(
                reviewer=reviewer,
                segments=[segment for segment, _, _ in built],
                changes=[_change(i, built[i], built[i + 1]) for i in range(len(built) - 1)],
            )
        )
    return FingerprintHistory(
        reviewers=reviewers,
        n_reviewers_with_fingerprints=with_fingerprints,
        n_reviewers_single_fingerprint=single,
        n_invalid_fingerprints=n_invalid,
    )


def fingerprint_history(connection: duckdb.DuckDBPyConnection) -> FingerprintHistory | None:
    """The section from ``records`` and ``scored``; ``None`` when no record has a
    fingerprint (an older store: nothing to split on)."""
    canonical, invalid = canonical_fingerprints(connection)
    if not canonical and not invalid:
        return None
    by_reviewer: dict[str, list[SessionRow]] = {}
    for reviewer, session, session_id, time, key, n, total, _ in connection.execute(
        SESSION_ROWS_SQL
    ).fetchall():
        # an invalid fingerprint reads as unrecorded ("null")
        identity = "null" if key is None else canonical.get(int(key), "null")
        by_reviewer.setdefault(str(reviewer), []).append(
            (int(session), session_id, time, identity, n, total)
        )
    return history_from_rows(by_reviewer, len(invalid))
