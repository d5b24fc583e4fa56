"""The reference design's ``llm_council.bias_aggregation`` at its import path (shim, ADR 0066).

Implemented in :mod:`llm_council.bias_audit.reference.aggregation`.
Every other attribute read, write or delete goes to the implementation, so a test
that patches a private name here patches what the implementation calls (ADR 0039).
"""

from __future__ import annotations

from llm_council.bias_audit.reference import aggregation as _implementation
from llm_council.bias_audit.reference.aggregation import (
    AggregatedBiasAuditResult,
    AggregatedBiasResult,
    BiasMetricRecord,
    LengthCorrelationReport,
    PositionBiasReport,
    ReviewerProfile,
    StatisticalConfidence,
    aggregate_position_bias,
    aggregate_reviewer_profiles,
    detect_anomalies,
    detect_temporal_trends,
    determine_confidence_level,
    generate_bias_report_csv,
    generate_bias_report_json,
    generate_bias_report_text,
    pooled_correlation_with_ci,
    pooled_length_correlation,
    run_aggregated_bias_audit,
)
from llm_council.bias_audit.reference.forwarding import forward_to_implementation

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

forward_to_implementation(__name__, _implementation)
