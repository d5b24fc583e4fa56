"""The reference design's ``llm_council.bias_aggregation``, as a thin facade over our statistics.

Its users call ``run_aggregated_bias_audit(records, min_sessions=10)`` (the design blog's
cross-session audit) and the report helpers; they work here with those signatures
(ADR 0039). The numbers come from our statistics modules:

- **length**: one Pearson r per session of ln(response characters) against the score,
  pooled on Fisher's z scale with weights n_s - 3 and a between-session (cluster robust)
  variance: :func:`llm_council.stats.pooling.fisher_z_pooled_correlation` (Fisher 1921,
  Metron 1; pooling as in Hedges & Olkin 1985, *Statistical Methods for Meta-Analysis*,
  ch. 11). The reference pooled all records as if independent (an interval far too
  narrow when a session's records share answers and judges).
- **position**: the mean score per display slot, descriptive only, from records whose
  ``position`` is a display slot (schema >= 1.2.0). It cannot tell a slot effect from
  answer quality when orders were fixed; ``llm-council bias-report`` fits and tests that.
- **reviewers**: mean, sample sd and a Student-t 95% interval per reviewer, and
  ``harshness_z_score`` = (reviewer mean - mean of reviewer means) / sd of reviewer means
  (descriptive, as in the reference; the report's leniency test compares reviewers on the
  same answers instead).

Confidence levels (the blog's): insufficient < 10 sessions <= preliminary < 20 <=
moderate < 50 <= high. Below ``min_sessions`` nothing is estimated.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.bias_persistence import BiasMetricRecord, read_bias_records
from llm_council.stats.distribution_functions import t_ppf
from llm_council.stats.pooling import fisher_z_pooled_correlation


class StatisticalConfidence(Enum):
    """How much the number of sessions supports (the design blog's four levels)."""

    INSUFFICIENT = "insufficient"
    PRELIMINARY = "preliminary"
    MODERATE = "moderate"
    HIGH = "high"


def determine_confidence_level(n_sessions: int) -> StatisticalConfidence:
    """< 10 insufficient, < 20 preliminary, < 50 moderate, else high."""
    if n_sessions < 10:
        return StatisticalConfidence.INSUFFICIENT
    if n_sessions < 20:
        return StatisticalConfidence.PRELIMINARY
    if n_sessions < 50:
        return StatisticalConfidence.MODERATE
    return StatisticalConfidence.HIGH


@dataclass(frozen=True)
class LengthCorrelationReport:
    """Pooled per-session correlation of ln(length) with score, with its 95% interval."""

    point_estimate: float
    ci_lower: float
    ci_upper: float
    p_value: float
    sessions_pooled: int
    method: str = "Fisher-z pooled per-session Pearson r, weights n-3, cluster-robust variance"


@dataclass(frozen=True)
class PositionBiasReport:
    """Mean score per display slot (0 = shown first): a description, not a test."""

    position_means: dict[int, float]
    position_counts: dict[int, int]
    spread: float  # variance of the slot means (points^2), unweighted


@dataclass(frozen=True)
class ReviewerProfile:
    reviewer_id: str
    sample_size: int
    mean_score: float
    std_score: float | None  # sample sd; None below two scores
    harshness_z_score: float | None  # None when the reviewer means do not vary
    ci_lower: float | None
    ci_upper: float | None


@dataclass
class AggregatedBiasResult:
    """The cross-session audit of the design blog: counts, confidence, three sections."""

    sessions_analyzed: int
    total_reviews: int
    confidence_level: StatisticalConfidence
    min_sessions: int
    length_correlation: LengthCorrelationReport | None = None
    position_bias: PositionBiasReport | None = None
    reviewer_profiles: dict[str, ReviewerProfile] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


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


def pooled_length_correlation(
    records: Sequence[BiasMetricRecord],
) -> LengthCorrelationReport | None:
    """Fisher-z pooling of per-session correlations; None with fewer than 2 usable sessions."""
    r_values, weights = _session_length_correlations(records)
    pooled = fisher_z_pooled_correlation(r_values, weights)
    if pooled.n_clusters < 2 or not math.isfinite(pooled.estimate):
        return None
    return LengthCorrelationReport(
        point_estimate=pooled.estimate,
        ci_lower=pooled.ci_low,
        ci_upper=pooled.ci_high,
        p_value=pooled.p_value,
        sessions_pooled=pooled.n_clusters,
    )


def aggregate_position_bias(records: Sequence[BiasMetricRecord]) -> PositionBiasReport | None:
    """Mean score per display slot; None with fewer than two slots among display-order
    records (a record below schema 1.2.0 holds a ranking index, never pooled as a slot)."""
    by_slot: dict[int, list[float]] = defaultdict(list)
    for record in records:
        if record.position_is_display_order:
            by_slot[record.position].append(record.score_value)
    if len(by_slot) < 2:
        return None
    means = {slot: float(np.mean(scores)) for slot, scores in sorted(by_slot.items())}
    return PositionBiasReport(
        position_means=means,
        position_counts={slot: len(scores) for slot, scores in sorted(by_slot.items())},
        spread=float(np.var(list(means.values()))),
    )


def aggregate_reviewer_profiles(records: Sequence[BiasMetricRecord]) -> dict[str, ReviewerProfile]:
    """Per reviewer: mean, sd, t interval of the mean, and the z of its mean among reviewers."""
    by_reviewer: dict[str, list[float]] = defaultdict(list)
    for record in records:
        if record.reviewer_id:
            by_reviewer[record.reviewer_id].append(record.score_value)
    means = {reviewer: float(np.mean(scores)) for reviewer, scores in by_reviewer.items()}
    spread = float(np.std(list(means.values()), ddof=1)) if len(means) > 1 else 0.0
    centre = float(np.mean(list(means.values()))) if means else 0.0
    profiles = {}
    for reviewer, scores in by_reviewer.items():
        n = len(scores)
        sd = float(np.std(scores, ddof=1)) if n > 1 else None
        half = float(t_ppf(0.975, n - 1)) * sd / math.sqrt(n) if sd is not None else None
        profiles[reviewer] = ReviewerProfile(
            reviewer_id=reviewer,
            sample_size=n,
            mean_score=means[reviewer],
            std_score=sd,
            harshness_z_score=(means[reviewer] - centre) / spread if spread > 0 else None,
            ci_lower=None if half is None else means[reviewer] - half,
            ci_upper=None if half is None else means[reviewer] + half,
        )
    return profiles


def run_aggregated_bias_audit(
    records: Sequence[BiasMetricRecord] | None = None,
    min_sessions: int = 10,
    *,
    store_path: Path | None = None,
    max_sessions: int | None = None,
    max_days: int | None = None,
) -> AggregatedBiasResult:
    """The cross-session audit of ``records`` (default: read from ``store_path``).

    Below ``min_sessions`` sessions the result has the counts, the confidence level and a
    warning, and no estimate.
    """
    if records is None:
        records = read_bias_records(store_path, max_sessions=max_sessions, max_days=max_days)
    n_sessions = len({record.session_id for record in records})
    result = AggregatedBiasResult(
        sessions_analyzed=n_sessions,
        total_reviews=len(records),
        confidence_level=determine_confidence_level(n_sessions),
        min_sessions=min_sessions,
    )
    if n_sessions < min_sessions:
        result.warnings.append(
            f"{n_sessions} sessions: at least {min_sessions} are needed for an estimate"
        )
        return result
    result.length_correlation = pooled_length_correlation(records)
    result.position_bias = aggregate_position_bias(records)
    result.reviewer_profiles = aggregate_reviewer_profiles(records)
    if result.confidence_level is StatisticalConfidence.PRELIMINARY:
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
    result = run_aggregated_bias_audit(
        read_bias_records(store_path, max_sessions=max_sessions, max_days=max_days)
    )
    lines = [
        "LLM Council - Cross-Session Bias Audit",
        "======================================",
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"Sessions Analyzed: {result.sessions_analyzed}",
        f"Total Reviews: {result.total_reviews}",
        f"Confidence Level: {result.confidence_level.name}",
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
        for reviewer, profile in sorted(profiles.items()):
            z = profile.harshness_z_score
            lines.append(
                f"{reviewer}: mean {profile.mean_score:.2f} over {profile.sample_size} scores"
                + ("" if z is None else f", z {z:+.2f}")
            )
    else:
        lines.append("Insufficient data for reviewer profiles.")
    for warning in list(result.warnings or []):
        lines.append(f"warning: {warning}")
    lines.append("For tested effects with intervals: llm-council bias-report")
    return "\n".join(lines) + "\n"


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
    "AggregatedBiasResult",
    "BiasMetricRecord",
    "LengthCorrelationReport",
    "PositionBiasReport",
    "ReviewerProfile",
    "StatisticalConfidence",
    "aggregate_position_bias",
    "aggregate_reviewer_profiles",
    "determine_confidence_level",
    "generate_bias_report_csv",
    "generate_bias_report_text",
    "pooled_length_correlation",
    "run_aggregated_bias_audit",
]
