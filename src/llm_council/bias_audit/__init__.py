"""Opt-in bias audit of the stage-2 reviewers: per-session statistics and JSONL records.

The reference design's names are here too (``run_bias_audit``, ``derive_position_mapping``,
``calculate_length_correlation``, ``audit_reviewer_calibration``,
``calculate_position_bias``, ``extract_scores_from_stage2``), so its users' imports work.
"""

from __future__ import annotations

from llm_council.anonymize import derive_position_mapping
from llm_council.bias_audit.audit import audit_score_table, run_bias_audit
from llm_council.bias_audit.record_schema import SCHEMA_VERSION, ReviewRecord, upgrade_record
from llm_council.bias_audit.record_stores import open_store, store_spec
from llm_council.bias_audit.reference_api import (
    audit_reviewer_calibration,
    calculate_length_correlation,
    calculate_position_bias,
)
from llm_council.bias_audit.result import BiasAuditResult
from llm_council.bias_audit.stage2_scores import extract_scores_from_stage2
from llm_council.bias_audit.store import (
    IncompleteSessionWarning,
    MalformedRecordWarning,
    PartialWriteError,
    RecordReader,
    TornRecordWarning,
    append_records,
    read_records,
    store_path,
)
from llm_council.bias_audit.thresholds import AuditThresholds, load_thresholds

__all__ = [
    "IncompleteSessionWarning",
    "PartialWriteError",
    "open_store",
    "store_spec",
    "SCHEMA_VERSION",
    "AuditThresholds",
    "BiasAuditResult",
    "MalformedRecordWarning",
    "RecordReader",
    "ReviewRecord",
    "TornRecordWarning",
    "append_records",
    "audit_reviewer_calibration",
    "audit_score_table",
    "calculate_length_correlation",
    "calculate_position_bias",
    "derive_position_mapping",
    "extract_scores_from_stage2",
    "load_thresholds",
    "read_records",
    "run_bias_audit",
    "store_path",
    "upgrade_record",
]
