"""The result types of the reference design's ``bias_aggregation``, with its field names.

Re-exported by :mod:`llm_council.bias_aggregation`; split out so that module holds the
computations only. Where a reference field is a number we cannot honestly give, it is
None here ("not computed"), never a placeholder 0.0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


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
    """Pooled per-session correlation of ln(length) with score, with its interval.

    The reference's fields (``sample_size`` = records in the pooled sessions;
    ``fisher_z``/``fisher_se`` on Fisher's scale, the se between sessions) and ours
    (``p_value``, ``sessions_pooled``, ``method``).
    """

    metric_name: str = "length_correlation"
    point_estimate: float = 0.0
    ci_lower: float = 0.0
    ci_upper: float = 0.0
    sample_size: int = 0
    window_start: str | None = None
    window_end: str | None = None
    statistical_confidence: str = "insufficient"
    fisher_z: float = 0.0
    fisher_se: float = 0.0
    p_value: float = 1.0
    sessions_pooled: int = 0
    method: str = "Fisher-z pooled per-session Pearson r, weights n-3, cluster-robust variance"


@dataclass(frozen=True)
class PositionBiasReport:
    """Mean score per display slot (0 = shown first): a description, not a test.

    ``point_estimate`` (= ``spread``) is the unweighted variance of the slot means; there
    is no interval (``ci_lower``/``ci_upper`` None: not computed, where the reference
    wrote 0.0).
    """

    position_means: dict[int, float] = field(default_factory=dict)
    position_counts: dict[int, int] = field(default_factory=dict)
    spread: float = 0.0  # variance of the slot means (points^2), unweighted
    metric_name: str = "position_bias"
    sample_size: int = 0
    statistical_confidence: str = "insufficient"
    window_start: str | None = None
    window_end: str | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None

    @property
    def point_estimate(self) -> float:
        return self.spread


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
class AggregatedBiasAuditResult:
    """The cross-session audit: window, counts, confidence, three sections (reference names).

    ``overall_confidence`` is the level's value: insufficient < 10 sessions <=
    preliminary < 20 <= moderate < 50 <= high. Below ``min_sessions`` nothing is
    estimated (the sections are None, the profiles empty) and ``warnings`` says why.
    """

    window_start: str | None = None
    window_end: str | None = None
    unique_sessions: int = 0
    total_records: int = 0
    overall_confidence: str = "insufficient"
    length_correlation: LengthCorrelationReport | None = None
    position_bias: PositionBiasReport | None = None
    reviewer_profiles: list[ReviewerProfile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    min_sessions: int = 10

    # the names of this facade before the reference's were adopted (ADR 0058)
    @property
    def sessions_analyzed(self) -> int:
        return self.unique_sessions

    @property
    def total_reviews(self) -> int:
        return self.total_records

    @property
    def confidence_level(self) -> StatisticalConfidence:
        return StatisticalConfidence(self.overall_confidence)


#: this facade's name for the result before ADR 0058
AggregatedBiasResult = AggregatedBiasAuditResult
