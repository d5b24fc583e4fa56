"""The length family: answer length against the consensus score, reported, never a risk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from llm_council.bias_audit.session.score_table import ScoreTable
from llm_council.bias_audit.session.session_model import SessionModel, finite_or_none
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.stats.inference.correlation import pearson_correlation_t_test


@dataclass(frozen=True)
class LengthOutcome:
    """Pearson r of log word count with the consensus score, its exact t-test p-value, the
    flag (significant and at least the threshold) and the note on what it can mean."""

    correlation: float | None
    p_value: float | None
    detected: bool
    n_pairs: int
    note: str

    def result_fields(self) -> dict[str, Any]:
        """This family's :class:`~llm_council.bias_audit.session.result.BiasAuditResult` fields."""
        return {
            "length_score_correlation": self.correlation,
            "length_score_p_value": self.p_value,
            "length_bias_detected": self.detected,
            "length_score_pairs": self.n_pairs,
        }


def length_family(
    table: ScoreTable, model: SessionModel, thresholds: AuditThresholds
) -> LengthOutcome:
    """Length vs score, one pair per answer so pairs are independent under the null."""
    log_words = np.log(np.maximum(table.length_words, 1.0))
    correlation = pearson_correlation_t_test(log_words, model.consensus)
    few_pairs = (
        f"only {correlation.n_pairs} length-score pairs, so the test has little power; "
        if correlation.n_pairs < thresholds.minimum_length_pairs
        else ""
    )
    note = (
        f"{few_pairs}length_score_correlation is the correlation of answer length with the "
        "consensus score: it cannot tell 'judges reward length' from 'longer answers were "
        "better', so length_bias_detected never raises overall_bias_risk. The padding "
        "probe and `llm-council bias-report`'s reviewer x length term separate the two"
    )
    detected = (
        correlation.r is not None
        and correlation.p_value is not None
        and correlation.p_value < thresholds.significance_level
        and abs(correlation.r) >= thresholds.length_correlation_threshold
    )
    return LengthOutcome(
        correlation=finite_or_none(correlation.r),
        p_value=finite_or_none(correlation.p_value),
        detected=bool(detected),
        n_pairs=correlation.n_pairs,
        note=note,
    )
