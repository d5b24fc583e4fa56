"""The reference design's ``llm_council.bias_aggregation``, as a thin facade over our statistics.

Its users call ``run_aggregated_bias_audit(store_path, max_sessions, max_days)`` and get
an ``AggregatedBiasAuditResult`` (``unique_sessions``, ``total_records``,
``overall_confidence``, a list of ``reviewer_profiles``), plus the report helpers,
``pooled_correlation_with_ci``, ``detect_temporal_trends`` and ``detect_anomalies``; they
work here with those signatures and field names (ADR 0039, ADR 0058). The numbers come
from our statistics modules:

- **length**: one Pearson r per session of ln(response characters) against the score,
  pooled on Fisher's z scale with weights n_s - 3 and a between-session (cluster robust)
  variance: :func:`llm_council.stats.inference.pooling.fisher_z_pooled_correlation` (Fisher 1921,
  Metron 1; pooling as in Hedges & Olkin 1985, *Statistical Methods for Meta-Analysis*,
  ch. 11). The reference pooled all records as if independent (an interval far too
  narrow when a session's records share answers and judges).
- **position**: the mean score per display slot, descriptive only, from records whose
  ``position`` is a display slot (schema >= 1.2.0). It cannot tell a slot effect from
  answer quality when orders were fixed; ``llm-council bias-report`` fits and tests that.
- **reviewers**: mean, sample sd and a Student-t 95% interval per reviewer, and
  ``harshness_z_score`` = (reviewer mean - mean of reviewer means) / sd of reviewer means
  (descriptive, as in the reference; the report's leniency test compares reviewers on the
  same answers instead). The reference's "appears harsh (z < -1.5)" warnings are not
  raised: that rule has no known false-positive rate.
- **trends and anomalies**: over one mean score per session
  (:mod:`llm_council.stats.bias_effects.session_shifts`): Welch's t test of the later half of the
  sessions against the earlier half, and a leave-one-out prediction t per session with
  Bonferroni, each with its p-value (the reference compared a difference with 0.5 points
  and a session mean with the *record* sd, with no known error rate).

Confidence levels (the blog's): insufficient < 10 sessions <= preliminary < 20 <=
moderate < 50 <= high. Below ``min_sessions`` nothing is estimated.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.bias_audit.reference.persistence import BiasMetricRecord, read_bias_records
from llm_council.errors import InputError
from llm_council.integrations.reference_aggregation_types import (
    AggregatedBiasAuditResult,
    AggregatedBiasResult,
    LengthCorrelationReport,
    PositionBiasReport,
    ReviewerProfile,
    StatisticalConfidence,
    determine_confidence_level,
)
from llm_council.integrations.reference_session_shifts import (
    detect_anomalies,
    detect_temporal_trends,
)
from llm_council.stats.inference.pooling import fisher_z_pooled_correlation
from llm_council.stats.numerics.distribution_functions import t_ppf


def _session_length_correlations(
    records: Sequence[BiasMetricRecord],
) -> tuple[np.ndarray, np.ndarray]:
    """Per session: Pearson r of ln(max(chars, 1)) vs score, and its weight n - 3."""
    by_session: dict[str, list[BiasMetricRecord]] = defaultdict(list)
    for record in records:
        by_session[record.session_id].append(record)
    r_values, weights = [], []
    for rows in by_session.values():
        x = np.log(np.maximum([row.response_length_chars for row in rows], 1.0))
        y = np.asarray([row.score_value for row in rows], dtype=float)
        if len(rows) < 4 or np.ptp(x) == 0 or np.ptp(y) == 0:
            continue  # r undefined, or no weight on Fisher's scale
        r_values.append(float(np.corrcoef(x, y)[0, 1]))
        weights.append(len(rows) - 3.0)
    return np.asarray(r_values), np.asarray(weights)


def _window(records: Sequence[BiasMetricRecord]) -> tuple[str | None, str | None]:
    stamps = [record.timestamp for record in records if record.timestamp]
    return (min(stamps), max(stamps)) if stamps else (None, None)


def pooled_length_correlation(
    records: Sequence[BiasMetricRecord], confidence: float = 0.95
) -> LengthCorrelationReport | None:
    """Fisher-z pooling of per-session correlations; None with fewer than 2 usable sessions."""
    by_session: dict[str, int] = defaultdict(int)
    for record in records:
        by_session[record.session_id] += 1
    r_values, weights = _session_length_correlations(records)
    pooled = fisher_z_pooled_correlation(r_values, weights, confidence)
    if pooled.n_clusters < 2 or not math.isfinite(pooled.estimate):
        return None
    start, end = _window(records)
    return LengthCorrelationReport(
        point_estimate=pooled.estimate,
        ci_lower=pooled.ci_low,
        ci_upper=pooled.ci_high,
        sample_size=int(weights.sum() + 3 * weights.size),  # records in the pooled sessions
        window_start=start,
        window_end=end,
        statistical_confidence=determine_confidence_level(pooled.n_clusters).value,
        fisher_z=float(np.arctanh(np.clip(pooled.estimate, -0.999999, 0.999999))),
        fisher_se=pooled.standard_error,
        p_value=pooled.p_value,
        sessions_pooled=pooled.n_clusters,
    )


def pooled_correlation_with_ci(
    records: Sequence[BiasMetricRecord], alpha: float = 0.05
) -> LengthCorrelationReport | None:
    """The reference's name: :func:`pooled_length_correlation` at level ``1 - alpha``."""
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha must be between 0 and 1, got {alpha!r}")
    return pooled_length_correlation(records, 1.0 - alpha)


def aggregate_position_bias(records: Sequence[BiasMetricRecord]) -> PositionBiasReport | None:
    """Mean score per display slot; None with fewer than two slots among display-order
    records (a record below schema 1.2.0 holds a ranking index, never pooled as a slot)."""
    by_slot: dict[int, list[float]] = defaultdict(list)
    used = [record for record in records if record.position_is_display_order]
    for record in used:
        by_slot[record.position].append(record.score_value)
    if len(by_slot) < 2:
        return None
    means = {slot: float(np.mean(scores)) for slot, scores in sorted(by_slot.items())}
    start, end = _window(used)
    return PositionBiasReport(
        position_means=means,
        position_counts={slot: len(scores) for slot, scores in sorted(by_slot.items())},
        spread=float(np.var(list(means.values()))),
        sample_size=len(used),
        statistical_confidence=determine_confidence_level(
            len({record.session_id for record in used})
        ).value,
        window_start=start,
        window_end=end,
    )


def aggregate_reviewer_profiles(records: Sequence[BiasMetricRecord]) -> list[ReviewerProfile]:
    """Per reviewer (sorted by id): mean, sd, t interval of the mean, and the z of its mean
    among the reviewer means."""
    by_reviewer: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.reviewer_id:
            by_reviewer[record.reviewer_id].append(record.score_value)
    means = {reviewer: float(np.mean(scores)) for reviewer, scores in by_reviewer.items()}
    spread = float(np.std(list(means.values()), ddof=1)) if len(means) > 1 else 0.0
    centre = float(np.mean(list(means.values()))) if means else 0.0
    profiles = []
    for reviewer, scores in sorted(by_reviewer.items()):
        n = len(scores)
        sd = float(np.std(scores, ddof=1)) if n > 1 else None
        half = float(t_ppf(0.975, n - 1)) * sd / math.sqrt(n) if sd is not None else None
        profiles.append(
            ReviewerProfile(
                reviewer_id=reviewer,
                sample_size=n,
                mean_score=means[reviewer],
                std_score=sd,
                harshness_z_score=(means[reviewer] - centre) / spread if spread > 0 else None,
                ci_lower=None if half is None else means[reviewer] - half,
                ci_upper=None if half is None else means[reviewer] + half,
            )
        )
    return profiles


def run_aggregated_bias_audit(
    store_path: Path | str | Sequence[BiasMetricRecord] | None = None,
    max_sessions: int | None = None,
    max_days: int | None = None,
    *,
    records: Sequence[BiasMetricRecord] | None = None,
    min_sessions: int = 10,
) -> AggregatedBiasAuditResult:
    """The cross-session audit of a store (the reference's call) or of ``records``.

    ``store_path``: a JSONL file of the reference's lines or ours (default: our store);
    ``max_sessions`` / ``max_days``: the last N sessions / days of it. Records may be given
    instead (``records=``, or a list as the first argument: this facade's earlier call);
    the store filters do not apply to them. Below ``min_sessions`` sessions the result has
    the window, the counts, the confidence level and a warning, and no estimate.
    """
    if isinstance(store_path, list | tuple):
        records, store_path = list(store_path), None
    if records is None:
        if not isinstance(store_path, str | Path | None):
            raise InputError(f"store_path must be a path, got {type(store_path).__name__}")
        records = read_bias_records(
            None if store_path is None else Path(store_path),
            max_sessions=max_sessions,
            max_days=max_days,
        )
    elif max_sessions is not None or max_days is not None:
        raise InputError("max_sessions and max_days filter a store: pass store_path, not records")
    n_sessions = len({record.session_id for record in records})
    start, end = _window(records)
    confidence = determine_confidence_level(n_sessions)
    result = AggregatedBiasAuditResult(
        window_start=start,
        window_end=end,
        unique_sessions=n_sessions,
        total_records=len(records),
        overall_confidence=confidence.value,
        min_sessions=min_sessions,
    )
    if not records:
        result.warnings.append("No bias data found in store")
        return result
    if n_sessions < min_sessions:
        result.warnings.append(
            f"{n_sessions} sessions: at least {min_sessions} are needed for an estimate"
        )
        return result
    result.length_correlation = pooled_length_correlation(records)
    result.position_bias = aggregate_position_bias(records)
    result.reviewer_profiles = aggregate_reviewer_profiles(records)
    if confidence is StatisticalConfidence.PRELIMINARY:
        result.warnings.append(f"{n_sessions} sessions: the estimates are preliminary")
    return result


def _generate_ascii_chart(data: dict[str, float], title: str, width: int = 40) -> str:
    """Bars scaled to the largest absolute value, largest first, ``label |bar| value``."""
    if not data:
        return ""
    largest = max(abs(value) for value in data.values())
    lines = [f"\n{title}:"]
    for label, value in sorted(data.items(), key=lambda item: item[1], reverse=True):
        length = int(abs(value) / largest * width) if largest > 0 else 0
        lines.append(f"{label[:15]:<15} |{'█' * length:<{width}}| {value:.2f}")
    return "\n".join(lines)


def generate_bias_report_text(
    store_path: Path | None = None,
    max_sessions: int | None = None,
    max_days: int | None = None,
    verbose: bool = False,
) -> str:
    """A plain-text summary of :func:`run_aggregated_bias_audit` (``bias-report`` has more)."""
    result = run_aggregated_bias_audit(store_path, max_sessions, max_days)
    lines = [
        "LLM Council - Cross-Session Bias Audit",
        "======================================",
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"Sessions Analyzed: {result.unique_sessions}",
        f"Total Reviews: {result.total_records}",
        f"Confidence Level: {str(result.overall_confidence).upper()}",
        "",
        "1. Response Length Correlation (pooled per session, Fisher z)",
    ]
    length = result.length_correlation
    if length:
        lines.append(
            f"r = {length.point_estimate:.3f}, 95% CI [{length.ci_lower:.3f}, "
            f"{length.ci_upper:.3f}]"
        )
    else:
        lines.append("Insufficient data for a pooled length correlation.")
    lines += ["", "2. Score by Display Position (descriptive)"]
    if result.position_bias:
        means = {
            f"Pos {slot}": value for slot, value in result.position_bias.position_means.items()
        }
        lines.append(_generate_ascii_chart(means, "Average Score per Position (0 = shown first)"))
    else:
        lines.append("Insufficient data for position analysis.")
    lines += ["", "3. Reviewer Profiles"]
    profiles = result.reviewer_profiles
    if profiles:
        for profile in profiles.values() if isinstance(profiles, dict) else profiles:
            z = profile.harshness_z_score
            lines.append(
                f"{profile.reviewer_id}: mean {profile.mean_score:.2f} over "
                f"{profile.sample_size} scores" + ("" if z is None else f", z {z:+.2f}")
            )
    else:
        lines.append("Insufficient data for reviewer profiles.")
    for warning in list(result.warnings or []):
        lines.append(f"warning: {warning}")
    lines.append("For tested effects with intervals: llm-council bias-report")
    return "\n".join(lines) + "\n"


def generate_bias_report_json(
    store_path: Path | None = None,
    max_sessions: int | None = None,
    max_days: int | None = None,
) -> str:
    """:func:`run_aggregated_bias_audit` as indented JSON (NaN and infinities as null)."""
    result = run_aggregated_bias_audit(store_path, max_sessions, max_days)
    return json.dumps(_finite_only(asdict(result)), indent=2, default=str, allow_nan=False)


def _finite_only(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _finite_only(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_only(item) for item in value]
    return value


def generate_bias_report_csv(
    store_path: Path | None = None,
    max_sessions: int | None = None,
    max_days: int | None = None,
) -> str:
    """The records as CSV, one row each; ``schema_version`` says what ``position`` means."""
    output = io.StringIO()
    writer = csv.writer(output)
    writer.writerow(
        [
            "schema_version",
            "session_id",
            "timestamp",
            "reviewer_id",
            "model_id",
            "position",
            "score",
            "length_chars",
            "query_category",
            "token_bucket",
        ]
    )
    for record in read_bias_records(store_path, max_sessions=max_sessions, max_days=max_days):
        metadata: dict[str, Any] = record.query_metadata or {}
        writer.writerow(
            [
                record.schema_version,
                record.session_id,
                record.timestamp,
                record.reviewer_id,
                record.model_id,
                record.position,
                record.score_value,
                record.response_length_chars,
                metadata.get("category", ""),
                metadata.get("token_bucket", ""),
            ]
        )
    return output.getvalue()


__all__ = [
    "AggregatedBiasAuditResult",
    "AggregatedBiasResult",
    "BiasMetricRecord",
    "LengthCorrelationReport",
    "PositionBiasReport",
    "ReviewerProfile",
    "StatisticalConfidence",
    "aggregate_position_bias",
    "aggregate_reviewer_profiles",
    "detect_anomalies",
    "detect_temporal_trends",
    "determine_confidence_level",
    "generate_bias_report_csv",
    "generate_bias_report_json",
    "generate_bias_report_text",
    "pooled_correlation_with_ci",
    "pooled_length_correlation",
    "run_aggregated_bias_audit",
]
